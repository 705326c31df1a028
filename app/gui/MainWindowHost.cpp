// MainWindow on a remote engine: the host's files in the remote file dialog and the host's thumbnails in the image
// strip (docs/remote.md), both asked through the worker, as every request to the host is.
#include "gui/MainWindow.h"
#include "gui/RemoteBackend.h"
#include "gui/TaskFollow.h"

#include <QTimer>

using namespace attnscope;

namespace {

// Task channels of their own: tasks on one channel supersede each other.
int nextHostChannel()
{
    static int channel = 1000;
    return ++channel;
}

// Runs `ask` on the host through `worker` and gives its result to `done` on the GUI thread, or the error.
template <class T>
void askHost(EngineWorker* worker, QObject* context, std::function<Result<T>(RemoteBackend&)> ask, std::function<void(Result<T>)> done)
{
    auto result = std::make_shared<Result<T>>(Error { "the host did not answer" });
    followTask(
        worker, context,
        [&] {
            return worker->runTask(
                [ask, result](EngineBackend& engine, const std::function<bool()>&, const EngineWorker::Progress&) {
                    auto* host = dynamic_cast<RemoteBackend*>(&engine);
                    *result = host ? ask(*host) : Result<T>(Error { "the engine is this machine's: no host to ask" });
                    return QString();
                },
                nextHostChannel());
        },
        [result, done] { done(*result); }, [done](const QString& message) { done(Error { message.toStdString() }); });
}

} // namespace

HostFileDialog::Lister MainWindow::hostLister()
{
    return [this](const QString& path, std::function<void(Result<RemoteBackend::HostListing>)> done) {
        askHost<RemoteBackend::HostListing>(m_worker.get(), this, [path](RemoteBackend& host) { return host.listHost(path); }, std::move(done));
    };
}

void MainWindow::openImagesOnHost()
{
    HostFileDialog dialog(this, m_worker->endpoint().section(':', 0, 0), HostFileDialog::Images, hostLister());
    dialog.list(QString());
    if (dialog.exec() == QDialog::Accepted)
        addImages(dialog.selectedPaths());
}

void MainWindow::openModelOnHost()
{
    HostFileDialog dialog(this, m_worker->endpoint().section(':', 0, 0), HostFileDialog::Model, hostLister());
    dialog.list(QString());
    if (dialog.exec() == QDialog::Accepted && !dialog.selectedPaths().isEmpty())
        openModel(dialog.selectedPaths().front());
}

void MainWindow::askThumbnails(const QString& path)
{
    // The strip asks for each row it shows; the rows asked in one turn of the event loop go to the host together.
    m_thumbnailsWanted << path;
    if (m_thumbnailsWanted.size() == 1)
        QTimer::singleShot(0, this, &MainWindow::sendThumbnailRequest);
}

void MainWindow::sendThumbnailRequest()
{
    const QStringList paths = m_thumbnailsWanted.mid(0, 64);
    m_thumbnailsWanted.remove(0, paths.size());
    if (!m_thumbnailsWanted.isEmpty())
        QTimer::singleShot(0, this, &MainWindow::sendThumbnailRequest);
    if (paths.isEmpty())
        return;
    askHost<std::vector<QImage>>(m_worker.get(), this, [paths](RemoteBackend& host) { return host.thumbnails(paths, 64); },
                                 [this, paths](const Result<std::vector<QImage>>& images) {
                                     for (int i = 0; i < paths.size(); ++i) { // an error: the crossed boxes
                                         QImage image = images ? (*images)[size_t(i)] : QImage();
                                         // Fitted to the strip's square as a file here is (QImageReader's scaled read).
                                         if (!image.isNull())
                                             image = image.scaled(image.size().scaled(64, 64, Qt::KeepAspectRatio).expandedTo({ 1, 1 }),
                                                                  Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
                                         m_images->setThumbnail(paths[i], image);
                                     }
                                 });
}
