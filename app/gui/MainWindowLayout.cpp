// MainWindow's menus, toolbar and docks: what goes where. Behaviour is in MainWindow.cpp.
#include "gui/MainWindow.h"

#include "gui/LaunchArguments.h"

#include <RemoteClient.h>

#include <io/DialogFolder.h>
#include <io/ElidedLabel.h>
#include <attnscope/CpuKernels.h>
#include <attnscope/Model.h>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QFileInfo>
#include <QMenu>
#include <QDockWidget>
#include <QFileDialog>
#include <QInputDialog>
#include <QCoreApplication>
#include <QProcess>
#include <QHBoxLayout>
#include <QLabel>
#include <QListView>
#include <QMenuBar>
#include <QGuiApplication>
#include <QMessageBox>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QStyle>
#include <QScrollArea>
#include <QScrollBar>
#include <QStatusBar>
#include <QToolBar>
#include <QVBoxLayout>

using namespace attnscope;

namespace {

QComboBox* builtinChooser(const QString& prompt, QWidget* parent)
{
    auto* box = new QComboBox(parent);
    box->addItem(prompt);
    for (const auto& name : builtinModelNames())
        box->addItem(QString::fromStdString(name));
    return box;
}

} // namespace

void MainWindow::buildActions()
{
    auto* file = menuBar()->addMenu(tr("&File"));
    auto* toolbar = addToolBar(tr("Main"));
    toolbar->setObjectName("mainToolbar");
    auto* openModel = file->addAction(tr("Open &model file…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open model"), dialogStart(),
                                                          tr("Models (*.safetensors *.pt *.pth *.json);;All files (*)"));
        rememberDialogChoice(path);
        if (!path.isEmpty())
            this->openModel(path);
    });
    openModel->setShortcut(QKeySequence::Open);
    file->addAction(tr("Open model &folder…"), this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Open model folder"), dialogStart());
        rememberDialogChoice(dir);
        if (!dir.isEmpty())
            this->openModel(dir);
    });
    auto* openImages = file->addAction(tr("Open &images…"), this, [this] {
        const QStringList paths = QFileDialog::getOpenFileNames(this, tr("Open images"), dialogStart(),
                                                                tr("Images (*.png *.jpg *.jpeg *.bmp *.tif *.tiff *.webp *.gif)"));
        rememberDialogChoice(paths.value(0));
        addImages(paths);
    });
    openImages->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_I));
    file->addAction(tr("Open image folder…"), this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Open image folder"), dialogStart());
        rememberDialogChoice(dir);
        if (!dir.isEmpty())
            addImages({ dir });
    });
    m_recent = file->addMenu(tr("Recent models"));
    refreshRecent();
    file->addSeparator();
    auto* openSessionAction = file->addAction(tr("Open &session…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open session"), dialogStart(), tr("attnscope sessions (*.json);;All files (*)"));
        rememberDialogChoice(path);
        if (!path.isEmpty())
            openSession(path);
    });
    openSessionAction->setShortcut(QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_O));
    auto* saveSessionAction = file->addAction(tr("Save session &as…"), this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Save session"), dialogStart("session.json"), tr("attnscope sessions (*.json)"));
        rememberDialogChoice(path);
        if (!path.isEmpty())
            saveSession(path);
    });
    saveSessionAction->setShortcut(QKeySequence::Save);
    auto* reopen = file->addAction(tr("&Reopen last session"), this, [this] { openSession(lastSessionPath()); });
    reopen->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R));
    connect(file, &QMenu::aboutToShow, reopen, [reopen] { reopen->setEnabled(QFileInfo::exists(lastSessionPath())); });
    // Another engine is another window: this one's models, traces and jobs belong to its engine.
    file->addAction(tr("Connect to remote en&gine…"), this, [this] {
        bool ok = false;
        const QString host = QInputDialog::getItem(this, tr("Connect to remote engine"),
                                                   tr("Host, as ssh takes it ([user@]host[:path to attnscope-cli]):"), recentRemoteHosts(), 0,
                                                   true, &ok)
                                 .trimmed();
        if (!ok || host.isEmpty())
            return;
        if (auto endpoint = attnscope::remote::parseEndpoint(host.toStdString()); !endpoint) {
            showError(host + ": " + QString::fromStdString(endpoint.message()));
            return;
        }
        rememberRemoteHost(host);
        const QString model = m_slots[0]->model() ? QString::fromStdString(m_slots[0]->model()->info().path) : QString();
        if (!QProcess::startDetached(QCoreApplication::applicationFilePath(), remoteWindowArguments(host, model, m_images->paths())))
            showError(tr("Could not start a window on %1").arg(host));
    });
    if (m_worker->isRemote()) {
        file->addAction(tr("Open images on the &host…"), this, &MainWindow::openImagesOnHost);
        file->addAction(tr("Open model on the h&ost…"), this, &MainWindow::openModelOnHost);
        file->addAction(tr("Reconnect to the &engine"), this, &MainWindow::reconnect);
    }
    file->addSeparator();
    auto* compare = file->addAction(tr("&Compare with model file…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Compare with"), dialogStart(),
                                                          tr("Models (*.safetensors *.pt *.pth *.json);;All files (*)"));
        rememberDialogChoice(path);
        if (!path.isEmpty())
            openCompareModel(path);
    });
    compare->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    file->addAction(tr("Close comparison"), this, &MainWindow::closeCompare);
    file->addSeparator();
    auto* exportAction = file->addAction(tr("&Export view…"), this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export view"), dialogStart("attention.png"),
                                                          tr("PNG (*.png);;SVG (*.svg);;PDF (*.pdf);;Data (*.csv)"));
        rememberDialogChoice(path);
        if (!path.isEmpty())
            exportView(path);
    });
    file->addAction(tr("Export layers × &heads…"), this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export layers × heads"), dialogStart("attention_grid.png"),
                                                          tr("PNG (*.png);;SVG (*.svg);;PDF (*.pdf);;Data (*.csv)"));
        rememberDialogChoice(path);
        if (!path.isEmpty())
            exportTiles(path);
    });
    exportAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    auto* exportAllAction = file->addAction(tr("Export &all…"), this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Export everything open into (the CLI's output folder)"), dialogStart());
        rememberDialogChoice(dir);
        if (!dir.isEmpty())
            exportAll(dir);
    });
    exportAllAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    if (m_worker->isRemote()) // a big set's folder stays where it was written, beside the GPU (docs/remote.md)
        file->addAction(tr("Export all on the &host…"), this, [this] {
            const QString folder = QInputDialog::getText(this, tr("Export all on the host"),
                                                         tr("A folder on %1 for the CLI's output folder:").arg(m_worker->endpoint()));
            if (!folder.trimmed().isEmpty())
                exportAll(QString(), folder.trimmed());
        });
    file->addSeparator();
    auto* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);
    auto* viewMenu = menuBar()->addMenu(tr("&View"));
    auto* full = viewMenu->addAction(tr("&Full screen"), this, [this] { isFullScreen() ? showNormal() : showFullScreen(); });
    full->setShortcut(QKeySequence::FullScreen);
    auto* next = viewMenu->addAction(tr("Next image"), this, [this] { selectImage(m_imageList->currentIndex().row() + 1); });
    next->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Right));
    auto* previous = viewMenu->addAction(tr("Previous image"), this, [this] { selectImage(m_imageList->currentIndex().row() - 1); });
    previous->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Left));
    m_viewMenu = viewMenu;
    auto* help = menuBar()->addMenu(tr("&Help"));
    auto* keys = help->addAction(tr("&Keyboard shortcuts"), this, [this] { showInformation(tr("Keyboard shortcuts"), shortcutsText()); });
    keys->setShortcut(QKeySequence::HelpContents);
    help->addAction(tr("&About attnscope"), this, [this] { showInformation(tr("About attnscope"), aboutText()); });

    toolbar->addAction(openModel);
    toolbar->addAction(openImages);
    m_builtin = builtinChooser(tr("Embedded models…"), this);
    m_builtin->setAccessibleName(tr("Embedded models"));
    connect(m_builtin, &QComboBox::activated, this, [this](int index) {
        if (index > 0)
            this->openModel("builtin:" + m_builtin->itemText(index));
        m_builtin->setCurrentIndex(0);
    });
    toolbar->addWidget(m_builtin);
    m_compareBuiltin = builtinChooser(tr("Compare with…"), this);
    m_compareBuiltin->setAccessibleName(tr("Compare with an embedded model"));
    connect(m_compareBuiltin, &QComboBox::activated, this, [this](int index) {
        if (index > 0)
            openCompareModel("builtin:" + m_compareBuiltin->itemText(index));
        m_compareBuiltin->setCurrentIndex(0);
    });
    toolbar->addWidget(m_compareBuiltin);
    toolbar->addAction(exportAction);
}

void MainWindow::buildStatusBar()
{
    m_deviceLabel = new QLabel(tr("No model"), this);
    m_deviceLabel->setObjectName("deviceLabel");
    m_deviceLabel->setToolTip(tr("Where the forward passes and the analyses run. The window takes a GPU when its LibTorch has "
                                 "CUDA and one is present, the CPU otherwise."));
    // The last error, until what it stopped succeeds: in the status line once, however many jobs one file stopped, and
    // never a box (an error needs no answer); elided, never widening the window; the whole of it in the tooltip.
    m_errorLabel = new ElidedLabel(this);
    m_errorLabel->setObjectName("errorLabel");
    m_errorLabel->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);
    m_errorLabel->setMaximumWidth(640);
    m_errorLabel->setStyleSheet(QStringLiteral("color: #b3261e;"));
    m_errorLabel->hide();
    connect(m_errorLabel, &ElidedLabel::clicked, this, [this] { clearError(ErrorOf::Other); }); // dismissed
    statusBar()->addPermanentWidget(m_errorLabel, 1);
    statusBar()->addPermanentWidget(m_deviceLabel);
    if (m_worker->isRemote()) {
        m_deviceLabel->setText(m_worker->where());
        m_deviceLabel->setToolTip(tr("The engine runs on this host, reached through your ssh (docs/remote.md): its device, its LibTorch "
                                     "and the last request's round trip."));
        connect(m_worker.get(), &EngineWorker::whereChanged, m_deviceLabel, &QLabel::setText);
    }
}

QWidget* MainWindow::buildImageSetPanel()
{
    m_setDock = new ImageSetDock(m_slots[0], m_slots[1], [this] {
        return ImageSetDock::Inputs { m_images->paths(), mixedImagesNote() };
    });
    connect(m_setDock, &ImageSetDock::started, this, &MainWindow::refreshImportance); // the previous set's summary is gone
    connect(m_setDock, &ImageSetDock::finished, this, &MainWindow::setFinished);
    connect(m_setDock, &ImageSetDock::message, this, [this](const QString& text, int ms) { statusBar()->showMessage(text, ms); });
    return m_setDock;
}

void MainWindow::buildDocks()
{
    // The Attention controls run the window's full height on the right (the corners, set in the constructor), so that on
    // a 1280 x 800 screen every one of them shows without scrolling; the bottom docks share the width left of them.
    const auto dock = [this](const QString& title, const char* name, QWidget* content, Qt::DockWidgetArea area) {
        auto* d = new QDockWidget(title, this);
        d->setObjectName(name);
        content->setParent(d);
        d->setWidget(content);
        addDockWidget(area, d);
        m_viewMenu->addAction(d->toggleViewAction());
        return d;
    };

    buildStatusBar();

    auto* left = new QWidget;
    auto* leftLayout = new QVBoxLayout(left);
    m_modelInfo = new QLabel(tr("No model. Open one (Ctrl+O) or pick an embedded one."), left);
    m_modelInfo->setWordWrap(true);
    m_modelInfo->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_imageList = new QListView(left);
    m_imageList->setModel(m_images);
    m_imageList->setViewMode(QListView::IconMode);
    m_imageList->setIconSize({ 64, 64 });
    m_imageList->setGridSize({ 96, 92 });
    m_imageList->setResizeMode(QListView::Adjust);
    m_imageList->setMovement(QListView::Static);
    m_imageList->setUniformItemSizes(true);
    m_imageList->setAccessibleName(tr("Images"));
    m_imageList->setSelectionMode(QAbstractItemView::ExtendedSelection);
    connect(m_imageList->selectionModel(), &QItemSelectionModel::currentChanged, this,
            [this](const QModelIndex& index) { selectImage(index.row()); });
    // Remove the selected images (Delete, or the strip's context menu), or all of them.
    m_imageList->setContextMenuPolicy(Qt::ActionsContextMenu);
    auto* remove = new QAction(tr("Remove selected images"), m_imageList);
    remove->setShortcut(QKeySequence::Delete);
    remove->setShortcutContext(Qt::WidgetShortcut);
    connect(remove, &QAction::triggered, this, [this] {
        QList<int> rows;
        for (const QModelIndex& index : m_imageList->selectionModel()->selectedIndexes())
            rows << index.row();
        removeImages(rows);
    });
    auto* clearAll = new QAction(tr("Clear all images"), m_imageList);
    connect(clearAll, &QAction::triggered, this, &MainWindow::clearImages);
    m_imageList->addActions({ remove, clearAll });
    m_imageCount = new QLabel(left);
    m_imageCount->setObjectName("imageCount");
    for (auto signal : { &QAbstractItemModel::rowsInserted, &QAbstractItemModel::rowsRemoved })
        connect(m_images, signal, this, &MainWindow::refreshImageCount);
    connect(m_images, &QAbstractItemModel::modelReset, this, &MainWindow::refreshImageCount);
    refreshImageCount();
    leftLayout->addWidget(m_modelInfo);
    leftLayout->addWidget(m_imageList, 1);
    leftLayout->addWidget(m_imageCount);
    dock(tr("Model and images"), "modelDock", left, Qt::LeftDockWidgetArea);

    auto* scrollControls = new QScrollArea;
    m_controls = new AttentionControls;
    scrollControls->setWidget(m_controls);
    scrollControls->setWidgetResizable(true);
    scrollControls->setFrameShape(QFrame::NoFrame);
    // On a short screen the controls scroll vertically; the dock is wide enough for them and that scroll bar, so that
    // no horizontal one hides their last row.
    scrollControls->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scrollControls->setMinimumWidth(m_controls->minimumSizeHint().width() + scrollControls->verticalScrollBar()->sizeHint().width());
    dock(tr("Attention"), "attentionDock", scrollControls, Qt::RightDockWidgetArea);
    connect(m_controls, &AttentionControls::layerChanged, this, &MainWindow::setLayer);
    connect(m_controls, &AttentionControls::headChanged, this, &MainWindow::setHead);
    connect(m_controls, &AttentionControls::rolloutChanged, this, [this] { setRollout(m_controls->rollout()); });
    connect(m_controls, &AttentionControls::inputSizeChanged, this, &MainWindow::setInputSize);
    connect(m_controls, &AttentionControls::relevanceChanged, this, [this] { setRelevanceClass(m_controls->relevanceClass()); });
    for (AttentionView* view : m_views) {
        connect(m_controls, &AttentionControls::opacityChanged, view, &AttentionView::setOpacity);
        connect(m_controls, &AttentionControls::colormapChanged, view, &AttentionView::setColormap);
        connect(m_controls, &AttentionControls::gridToggled, view, &AttentionView::setShowGrid);
    }
    connect(m_controls, &AttentionControls::variantChanged, this, [this] {
        const auto v = m_controls->variant();
        runVariant(v ? v->neutrenoLambda : m_slots[0]->model() ? m_slots[0]->model()->config().neutrenoLambda : 0,
                   v ? v->boostT : m_slots[0]->model() ? m_slots[0]->model()->config().boostT : 0);
    });
    connect(m_controls, &AttentionControls::perturbationChanged, this, &MainWindow::applyPerturbation);
    m_controls->announce();

    auto* scrollTiles = new QScrollArea;
    m_tiles = new AttentionTileGrid;
    scrollTiles->setWidget(m_tiles);
    scrollTiles->setWidgetResizable(true); // the tiles shrink to show the whole grid (AttentionTileGrid::minimumSizeHint)
    // Above the tiles, whether they show the image set's head importance (its head ablation).
    auto* tilesWidget = new QWidget;
    auto* tilesLayout = new QVBoxLayout(tilesWidget);
    tilesLayout->setContentsMargins(0, 0, 0, 0);
    tilesLayout->setSpacing(0);
    m_importance = new QCheckBox(tr("Head importance"), tilesWidget);
    m_importance->setEnabled(false); // until the image set's head ablation is there (refreshImportance)
    tilesLayout->addWidget(m_importance);
    tilesLayout->addWidget(scrollTiles, 1);
    auto* tilesDock = dock(tr("Layers × heads"), "tilesDock", tilesWidget, Qt::BottomDockWidgetArea);
    connect(m_tiles, &AttentionTileGrid::tileClicked, this, [this](int layer, int head) {
        ViewSelection v = m_view;
        v.layer = layer;
        v.head = head < 0 ? HeadChoice(HeadView::Mean) : HeadChoice::single(head); // -1: the mean column
        setViewSelection(v);
    });

    // Every figure but the head ablation, which is of an image set (the current image's is the footer's, one head at a time).
    std::vector<Figure> imageFigures;
    for (Figure f : allFigures())
        if (f != Figure::HeadAblation)
            imageFigures.push_back(f);
    m_imagePanel = new FigurePanel(imageFigures);
    auto* imageDock = dock(tr("This image"), "imageDock", m_imagePanel, Qt::BottomDockWidgetArea);
    splitDockWidget(tilesDock, imageDock, Qt::Horizontal);
    resizeDocks({ tilesDock, imageDock }, { 420, 700 }, Qt::Horizontal);
    resizeDocks({ tilesDock }, { 330 }, Qt::Vertical);

    QWidget* setWidget = buildImageSetPanel();
    auto* setDock = dock(tr("Image set"), "setDock", setWidget, Qt::BottomDockWidgetArea);
    tabifyDockWidget(imageDock, setDock);
    buildHeadDocks(setDock);
    imageDock->raise();
    for (FigurePanel* panel : { m_imagePanel, m_setDock->panel() }) {
        connect(panel, &FigurePanel::exportFailed, this, [this](const QString& message) { showError(message); });
        connect(panel, &FigurePanel::exported, this, [this](const QString& path) { statusBar()->showMessage(tr("Wrote %1").arg(path), 5000); });
    }
}

QString MainWindow::shortcutsText() const
{
    // A table, so that a long key ("Ctrl+Shift+R") never runs into its action as a tab stop lets it.
    QStringList rows;
    const auto row = [&](const QString& keys, const QString& what) {
        const QString r = QStringLiteral("<tr><td style=\"padding-right:18px\"><b>%1</b></td><td>%2</td></tr>")
                              .arg(keys.toHtmlEscaped(), what.toHtmlEscaped());
        if (!rows.contains(r))
            rows << r;
    };
    for (QAction* action : findChildren<QAction*>()) {
        const QString keys = action->shortcut().toString(QKeySequence::NativeText);
        if (!keys.isEmpty())
            row(keys, action->text().remove(QLatin1Char('&')).remove(QStringLiteral("…")));
    }
    row(tr("Click"), tr("a patch of the view: it becomes the query"));
    row(tr("Click"), tr("a tile: its layer and head"));
    row(tr("Right-click"), tr("the view or a plot: Copy; a tile: ablate its head"));
    return QStringLiteral("<table cellspacing=\"2\">") + rows.join(QString()) + QStringLiteral("</table>");
}

QString MainWindow::aboutText() const
{
    const ThreadSetup threads = threadSetup();
    const CpuKernels cpu = cpuKernels();
    return tr("attnscope %1\nLibTorch %2%3\nRuns on: %4\nThreads: %5 intra-op, %6 inter-op\nCPU kernels: %7 (linear layers: %8; "
              "attention products: %9)")
        .arg(QString::fromLatin1(version()), QString::fromStdString(libtorchVersion()),
             libtorchHasCuda() ? tr(" with CUDA") : tr(" (CPU)"), m_deviceLabel->text(), QString::number(threads.intraOp),
             QString::number(threads.interOp), QString::fromStdString(cpu.isa.empty() ? "-" : cpu.isa),
             QString::fromStdString(cpu.linear), QString::fromStdString(cpu.attention));
}

void MainWindow::showInformation(const QString& title, const QString& text)
{
    if (QGuiApplication::platformName() == QLatin1String("offscreen"))
        return;
    auto* box = new QMessageBox(QMessageBox::Information, title, text, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open(); // window-modal, never blocks the event loop
}

void MainWindow::fitToScreen(const QSize& wanted)
{
    const QScreen* screen = this->screen() ? this->screen() : QGuiApplication::primaryScreen();
    if (!screen) {
        resize(wanted);
        return;
    }
    const QRect inner = geometry(), outer = frameGeometry();
    QMargins frame(inner.left() - outer.left(), inner.top() - outer.top(), outer.right() - inner.right(), outer.bottom() - inner.bottom());
    if (!isVisible() && QGuiApplication::platformName() != QLatin1String("offscreen")) {
        // Not framed yet: a window manager's title bar and borders, as the style draws them.
        const int border = style()->pixelMetric(QStyle::PM_MdiSubWindowFrameWidth) + 1;
        frame = QMargins(border, style()->pixelMetric(QStyle::PM_TitleBarHeight) + border, border, border);
    }
    setGeometry(placeWithin(screen->availableGeometry(), frame, wanted, inner.topLeft()));
}
