// MainWindow's models: opening one (a file, a folder, builtin:NAME, or a checkpoint paired with its description),
// asking for the half a user's model lacks, comparing, the input size, Recent models and the model panel.
#include "gui/MainWindow.h"

#include "gui/LaunchArguments.h"

#include <io/DialogFolder.h>
#include <attnscope/AnalysisRun.h>

#include <QAction>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QLabel>
#include <QMenu>
#include <QMimeData>
#include <QSettings>
#include <QStatusBar>

using namespace attnscope;

namespace {

// Recent models keep a checkpoint and its description as one entry: "path" or "path\ndescription".
QString recentEntry(const QString& path, const QString& description)
{
    return description.isEmpty() ? path : path + QLatin1Char('\n') + description;
}

QString joined(const std::vector<double>& values)
{
    QStringList parts;
    for (double v : values)
        parts << QString::number(v, 'g', 4);
    return parts.join(QStringLiteral(", "));
}

} // namespace

QString describeModelInput(const ModelInfo& info)
{
    const auto& c = info.config;
    const auto& p = info.preprocess;
    QString resize;
    switch (p.resize) {
    case ResizeMode::ShortestEdge:
        resize = QObject::tr("short side to %1").arg(p.resizeShortest);
        break;
    case ResizeMode::Exact:
    case ResizeMode::Cover:
        resize = QObject::tr("to %1×%2").arg(p.resizeWidth).arg(p.resizeHeight);
        break;
    case ResizeMode::None:
        resize = QObject::tr("none");
        break;
    }
    return QObject::tr("input %1×%2×%3 (%4) · resize %5 (%6)%7 · mean %8 · std %9")
        .arg(c.channels)
        .arg(c.imageHeight)
        .arg(c.imageWidth)
        .arg(c.channels == 1 ? QObject::tr("grey") : QObject::tr("RGB"), resize, QString::fromLatin1(toString(p.interpolation)),
             p.centerCrop ? QObject::tr(", centre crop %1×%2").arg(p.cropWidth).arg(p.cropHeight) : QString(), joined(p.mean),
             joined(p.std));
}

void MainWindow::openModel(const QString& path, const QString& description)
{
    statusBar()->showMessage(tr("Loading %1…").arg(path));
    m_slots[0]->load(path, description);
}

void MainWindow::reconnect()
{
    statusBar()->showMessage(tr("Reconnecting to %1…").arg(m_worker->where().section(QStringLiteral(" · "), 0, 0)));
    m_worker->reconnect(); // a new link, whatever the old one seems to be
    if (!m_slots[0]->model()) { // nothing to bring back: the model the window was asked for, again
        if (!m_slots[0]->path().isEmpty())
            m_slots[0]->load(m_slots[0]->path(), m_slots[0]->description());
        return;
    }
    for (ModelSlot* slot : m_slots)
        if (slot->model() && !currentPath().isEmpty())
            slot->showImage(currentPath()); // the model made again on the host first, then the image traced
}

void MainWindow::openCompareModel(const QString& path, const QString& description)
{
    statusBar()->showMessage(tr("Loading %1 to compare…").arg(path));
    m_slots[1]->load(path, description);
}

void MainWindow::setFileChooser(FileChooser chooser) { m_fileChooser = std::move(chooser); }

QString MainWindow::chooseFile(const QString& caption, const QString& filter, const QString& folder)
{
    if (m_fileChooser)
        return m_fileChooser(caption, filter, folder);
    if (QGuiApplication::platformName() == QLatin1String("offscreen"))
        return {}; // no one to answer a dialog
    const QString path = QFileDialog::getOpenFileName(this, caption, folder.isEmpty() ? dialogStart() : folder, filter);
    rememberDialogChoice(path);
    return path;
}

void MainWindow::askForOtherHalf(int index, const QString& path, const QString& description, int missing, const QString& message)
{
    const QFileInfo info(path);
    const QString name = info.fileName();
    // The other half usually lies beside the half the user opened: the dialog starts there, not in the last folder used.
    const QString beside = info.isDir() ? info.absoluteFilePath() : info.absolutePath();
    QString chosen;
    if (missing == EngineWorker::MissingDescription) {
        statusBar()->showMessage(tr("%1 needs a model description: choose its .json").arg(name));
        chosen = chooseFile(tr("%1: its tensor names follow no known convention. Choose the model description (.json) that "
                               "describes it")
                                .arg(name),
                            tr("Model descriptions (*.json);;All files (*)"), beside);
        if (!chosen.isEmpty()) {
            statusBar()->showMessage(tr("Loading %1 with %2…").arg(path, chosen));
            m_slots[index]->load(path, chosen);
            return;
        }
    } else {
        statusBar()->showMessage(tr("%1 names no weights: choose the checkpoint").arg(name));
        chosen = chooseFile(tr("%1 names no weights file. Choose the checkpoint it describes").arg(name),
                            tr("Checkpoints (*.safetensors *.pt *.pth *.bin);;All files (*)"), beside);
        if (!chosen.isEmpty()) {
            statusBar()->showMessage(tr("Loading %1 with %2…").arg(chosen, path));
            m_slots[index]->load(chosen, description.isEmpty() ? path : description);
            return;
        }
    }
    showError(message, ErrorOf::Model); // not paired: the reason stays in view
}

void MainWindow::setInputSize(int height, int width)
{
    const auto& model = m_slots[0]->model();
    if (!model)
        return;
    const auto& c = model->config();
    const int patch = c.patchSize;
    if (height % patch != 0 || width % patch != 0) {
        statusBar()->showMessage(tr("Input size %1,%2: not a multiple of the model's patch size %3").arg(height).arg(width).arg(patch), 8000);
        m_controls->setInputSize(c.imageHeight, c.imageWidth, model->info().trainedHeight, model->info().trainedWidth);
        return;
    }
    const int h = height ? height : model->info().trainedHeight, w = width ? width : model->info().trainedWidth;
    if (h == c.imageHeight && w == c.imageWidth)
        return;
    statusBar()->showMessage(tr("Loading %1 at %2x%3…").arg(QString::fromStdString(model->info().path)).arg(h).arg(w));
    for (ModelSlot* slot : m_slots)
        if (slot->model())
            slot->load(slot->path(), slot->description(), height, width);
}

void MainWindow::closeCompare()
{
    m_slots[1]->unload();
    m_views[1]->clear();
    m_viewColumns[1]->hide();
    m_views[0]->setCaption({});
    refreshImagePlots();
    m_setDock->refreshPlots();
    refreshPredictions();
}

void MainWindow::refreshModelInfo()
{
    const auto& i = m_slots[0]->model()->info();
    const auto& c = i.config;
    const QString described = m_slots[0]->description().isEmpty()
        ? QString()
        : tr("<br>described by %1").arg(QFileInfo(m_slots[0]->description()).fileName().toHtmlEscaped());
    // A Swin: its blocks over its stages, each stage's heads and widths.
    QStringList heads, widths;
    for (const SwinStage& s : c.stages) {
        heads << QString::number(s.heads);
        widths << QString::number(s.width);
    }
    const QString shape = c.hierarchical()
        ? tr("%1 blocks in %2 stages · heads %3 · width %4").arg(c.depth).arg(c.stages.size()).arg(heads.join(QStringLiteral("/")), widths.join(QStringLiteral("/")))
        : tr("%1 layers · %2 heads · width %3").arg(c.depth).arg(c.numHeads).arg(c.width);
    m_modelInfo->setText(tr("<b>%1</b>%9<br>%2, %3 naming<br>%4<br>patch %5 · %6×%7 · %8 parameters<br>%10")
                             .arg(QString::fromStdString(i.path).toHtmlEscaped(), QString::fromStdString(i.family),
                                  QString::fromStdString(i.naming), shape)
                             .arg(c.patchSize).arg(c.imageHeight).arg(c.imageWidth)
                             .arg(i.parameterCount)
                             .arg(described, describeModelInput(i).toHtmlEscaped()));
    // A value taken from a convention (heads = width/64) is said where the model is described, not left silent.
    for (const auto& guess : i.guesses)
        m_modelInfo->setText(m_modelInfo->text() + tr("<br><span style=\"color:#b35900\">⚠ %1</span>").arg(QString::fromStdString(guess).toHtmlEscaped()));
    if (!i.guesses.empty())
        statusBar()->showMessage(tr("Warning: %1").arg(QString::fromStdString(i.guesses.front())), 10000);
    if (m_worker->isRemote()) { // the host, its device and the link's round trip, kept current by whereChanged
        m_deviceLabel->setText(m_worker->where());
        return;
    }
    // The device, and for an image set how many images go through one forward.
    const QString device = QString::fromStdString(i.device);
    const int batch = defaultBatchSize(*m_slots[0]->model()->local, m_slots[0]->analysisOptions());
    const ThreadSetup threads = threadSetup();
    const int cpuThreads = std::max(threads.intraOp, threads.interOp);
    m_deviceLabel->setText(device != QLatin1String("cpu") ? tr("GPU %1 · image sets in batches of %2").arg(device).arg(batch)
                               : cpuThreads == 1 ? tr("CPU · 1 thread")
                                                 : tr("CPU · %1 threads").arg(cpuThreads));
}

void MainWindow::refreshRecent()
{
    m_recent->clear();
    for (const auto& entry : QSettings().value("recentModels").toStringList()) {
        const QString path = entry.section(QLatin1Char('\n'), 0, 0), description = entry.section(QLatin1Char('\n'), 1);
        const QString text = description.isEmpty() ? path : tr("%1 + %2").arg(path, QFileInfo(description).fileName());
        m_recent->addAction(text, this, [this, path, description] { openModel(path, description); });
    }
    m_recent->setEnabled(!m_recent->isEmpty());
}

void MainWindow::rememberModel(const QString& path, const QString& description)
{
    QSettings settings;
    QStringList recent = settings.value("recentModels").toStringList();
    const QString entry = recentEntry(path, description);
    recent.removeAll(entry);
    recent.prepend(entry);
    settings.setValue("recentModels", recent.mid(0, 10));
    refreshRecent();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    event->acceptProposedAction();
    QStringList paths;
    for (const auto& url : event->mimeData()->urls())
        if (!url.toLocalFile().isEmpty())
            paths << url.toLocalFile();
    openFiles(paths);
}

void MainWindow::openFiles(const QStringList& paths)
{
    QStringList images, models, descriptions;
    for (const QString& path : paths) {
        if (isModelDescription(path))
            descriptions << path;
        else if (isModelPath(path))
            models << path;
        else
            images << path;
    }
    // A checkpoint and its description dropped together are one model.
    if (models.size() == 1 && descriptions.size() == 1)
        openModel(models.front(), descriptions.front());
    else
        for (const QString& path : models + descriptions)
            openModel(path);
    addImages(images);
}
