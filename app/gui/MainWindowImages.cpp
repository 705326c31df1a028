// The image strip: adding (files and folders, each file once, the first new one selected), removing, clearing, and the
// check an image-set run makes of the strip before it starts.
#include "gui/MainWindow.h"

#include "gui/LaunchArguments.h"

#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QImageReader>
#include <QItemSelectionModel>
#include <QLabel>
#include <QListView>
#include <QProgressBar>
#include <QStatusBar>

#include <map>
#include <set>

using namespace attnscope;

void MainWindow::addImages(const QStringList& paths)
{
    QStringList files;
    for (const auto& p : paths) {
        if (QFileInfo(p).isDir()) {
            QDirIterator it(p, QDir::Files, QDirIterator::Subdirectories);
            QStringList found;
            while (it.hasNext())
                if (const QString f = it.next(); hasImageSuffix(f))
                    found << f;
            found.sort();
            files << found;
        } else if (QFileInfo(p).isFile()) {
            files << QFileInfo(p).absoluteFilePath();
        } else if (m_worker->isRemote() && !p.isEmpty()) {
            files << p; // the host's (a file this machine has not): its trace or thumbnail says if it is not there
        } else if (!p.isEmpty()) {
            showError(tr("%1: no such file or folder").arg(p), ErrorOf::Image);
        }
    }
    if (files.isEmpty())
        return;
    m_images->addPaths(files); // a file already listed stays where it is, once
    // What was just opened is what the user wants to see: its first image (or the listed one it names).
    if (const int row = m_images->rowOf(files.front()); row != m_imageList->currentIndex().row())
        selectImage(row);
}

void MainWindow::removeImages(QList<int> rows)
{
    const QString current = currentPath();
    m_images->removeRowsAt(rows); // the list view moves its current row to a neighbour, which runs it
    if (m_images->rowCount() == 0) {
        clearImages();
        return;
    }
    if (!current.isEmpty() && m_images->rowOf(current) < 0 && !m_imageList->currentIndex().isValid())
        selectImage(std::min(rows.isEmpty() ? 0 : *std::min_element(rows.begin(), rows.end()), m_images->rowCount() - 1));
    // The neighbour the view moved to is the one shown: selected too, so that another Delete removes it.
    if (const QModelIndex shown = m_imageList->currentIndex(); shown.isValid())
        m_imageList->selectionModel()->select(shown, QItemSelectionModel::ClearAndSelect);
}

void MainWindow::clearImages()
{
    m_images->clear();
    for (ModelSlot* slot : m_slots)
        slot->clearImage();
    for (auto* view : m_views)
        view->clear();
    m_tiles->clear();
    m_tilesTrace = nullptr;
    m_controls->setQueryText(QString());
    refreshPlaceholders();
    refreshImagePlots();
    refreshPredictions();
}

void MainWindow::refreshImageCount()
{
    const int n = m_images->rowCount();
    m_imageCount->setText(n == 0 ? tr("No images") : n == 1 ? tr("1 image") : tr("%1 images").arg(n));
}

void MainWindow::refreshPlaceholders()
{
    const QString path = currentPath();
    for (int i = 0; i < 2; ++i)
        m_views[i]->setPlaceholder(!m_slots[i]->model() ? tr("Open a model (Ctrl+O) and an image")
                                       : path.isEmpty() ? tr("Open an image (Ctrl+I) or drop one here")
                                                        : tr("Running %1…").arg(QFileInfo(path).fileName()));
}

QString MainWindow::currentPath() const
{
    const QModelIndex index = m_imageList->currentIndex();
    return index.isValid() ? m_images->path(index.row()) : QString();
}

void MainWindow::selectImage(int row)
{
    if (row < 0 || row >= m_images->rowCount())
        return;
    if (m_imageList->currentIndex().row() != row) {
        m_imageList->setCurrentIndex(m_images->index(row)); // comes back here through currentChanged
        return;
    }
    const QString path = m_images->path(row);
    for (ModelSlot* slot : m_slots)
        slot->showImage(path);
    refreshPlaceholders();
    if (m_slots[0]->model())
        statusBar()->showMessage(tr("Running %1…").arg(QFileInfo(path).fileName()));
}

QString MainWindow::mixedImagesNote() const
{
    // Headers only (QImageReader reads no pixels for size() and imageFormat()), and at most a few thousand of them.
    std::map<std::pair<int, int>, int> sizes;
    std::set<bool> grey;
    const QStringList paths = m_images->paths();
    for (qsizetype i = 0; i < std::min<qsizetype>(paths.size(), 5000); ++i) {
        QImageReader reader(paths[i]);
        const QSize size = reader.size();
        if (!size.isValid())
            continue; // unreadable: the run skips and lists it
        ++sizes[{ size.width(), size.height() }];
        const QImage::Format f = reader.imageFormat();
        grey.insert(f == QImage::Format_Grayscale8 || f == QImage::Format_Grayscale16 || f == QImage::Format_Mono
                    || f == QImage::Format_MonoLSB || f == QImage::Format_Alpha8);
    }
    if (sizes.size() < 2 && grey.size() < 2)
        return {};
    QStringList parts;
    if (sizes.size() > 1) {
        QStringList listed;
        for (const auto& [wh, count] : sizes) {
            if (listed.size() == 3) {
                listed << tr("…");
                break;
            }
            listed << tr("%1×%2 (%3)").arg(wh.first).arg(wh.second).arg(count);
        }
        parts << tr("%n sizes: %1", nullptr, int(sizes.size())).arg(listed.join(QStringLiteral(", ")));
    }
    if (grey.size() > 1)
        parts << tr("grey and colour images");
    const auto& c = m_slots[0]->model()->config();
    return tr("The image set mixes %1: each image is converted to the model's %2×%3 %4 input, as the view shows it.")
        .arg(parts.join(tr(" and ")))
        .arg(c.imageWidth)
        .arg(c.imageHeight)
        .arg(c.channels == 1 ? tr("grey") : tr("colour"));
}
