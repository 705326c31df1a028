#include "MainWindow.h"

#include "ImageSetFigures.h"

#include <Colormap.h>
#include <FigureExport.h>
#include <PlotStyle.h>
#include <TokenSimilarityPlot.h>

#include <attnscope/Analyses.h>
#include <attnscope/AnalysisRun.h>

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <QSlider>
#include <QSpinBox>
#include <QStatusBar>
#include <QToolBar>
#include <QDirIterator>
#include <QDoubleSpinBox>
#include <QGroupBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <qcustomplot.h>

using namespace attnscope;

namespace {

bool isImageFile(const QString& path)
{
    static const QStringList suffixes { "png", "jpg", "jpeg", "bmp", "tif", "tiff", "webp", "pgm", "ppm" };
    return suffixes.contains(QFileInfo(path).suffix().toLower());
}

} // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent)
{
    setWindowTitle(tr("attnscope"));
    setAcceptDrops(true);
    m_view = new AttentionView(this);
    setCentralWidget(m_view);
    buildActions();
    buildDocks();
    connect(m_view, &AttentionView::queryRequested, this, &MainWindow::setQuery);

    connect(&m_worker, &EngineWorker::modelLoaded, this, [this](quint64 job, std::shared_ptr<const Model> model) {
        if (job != m_modelJob)
            return; // superseded
        m_model = std::move(model);
        m_layerBox->setRange(1, m_model->config().depth);
        m_layerBox->setValue(m_model->config().depth);
        m_headBox->blockSignals(true);
        m_headBox->clear();
        m_headBox->addItem(tr("mean of heads"), -1);
        m_headBox->addItem(tr("rollout"), -2);
        for (int h = 0; h < m_model->config().numHeads; ++h)
            m_headBox->addItem(tr("head %1").arg(h), h);
        m_headBox->blockSignals(false);
        m_query = m_model->config().numPrefixTokens() > 0 ? 0 : m_model->config().numPatches() / 2;
        m_lambda->setValue(m_model->config().neutrenoLambda);
        m_boost->setValue(m_model->config().boostT);
        m_variant.reset();
        refreshModelInfo();
        rememberModel(QString::fromStdString(m_model->info().path));
        statusBar()->showMessage(tr("Loaded %1").arg(QString::fromStdString(m_model->info().path)), 5000);
        emit modelReady();
        selectImage(std::max(0, m_images->currentRow()));
    });
    connect(&m_worker, &EngineWorker::imageTraced, this, [this](quint64 job, std::shared_ptr<const ImageTrace> result) {
        if (job == m_variantJob) {
            m_variant = std::move(result);
            refreshPlot();
            emit variantReady();
            return;
        }
        if (job != m_imageJob)
            return;
        m_current = std::move(result);
        m_variant.reset();
        m_tilesTrace = nullptr; // a new trace may reuse the old one's address
        const Trace& t = m_current->trace;
        m_view->setImage(m_current->shown, t.gridHeight, t.gridWidth, t.numPrefixTokens);
        m_query = std::min(m_query, t.numPrefixTokens + t.gridHeight * t.gridWidth - 1);
        refreshMap();
        refreshPlot();
        emit imageReady();
    });
    connect(&m_worker, &EngineWorker::failed, this, [this](quint64 job, const QString& message) {
        if (job == m_setJob)
            m_setButton->setText(tr("Analyse image set"));
        showError(message);
    });
    connect(&m_worker, &EngineWorker::setProgress, this, [this](quint64 job, int done, int total, double rate) {
        if (job != m_setJob)
            return;
        m_setProgress->setRange(0, total);
        m_setProgress->setValue(done);
        const double left = rate > 0 ? (total - done) / rate : 0;
        m_setProgress->setFormat(tr("%v/%m images · %1 img/s · %2 s left").arg(rate, 0, 'f', 1).arg(left, 0, 'f', 0));
    });
    connect(&m_worker, &EngineWorker::setAnalysed, this, [this](quint64 job, std::shared_ptr<const AnalysisSummary> s, bool complete) {
        if (job != m_setJob)
            return;
        m_setSummary = std::move(s);
        showSetFigure(m_setFigure->currentIndex());
        if (complete) {
            m_setButton->setText(tr("Analyse image set"));
            emit setFinished(true);
        }
    });
    connect(&m_worker, &EngineWorker::cancelled, this, [this](quint64 job) {
        if (job == m_setJob) {
            m_setButton->setText(tr("Analyse image set"));
            m_setProgress->setFormat(tr("cancelled at %v/%m"));
            emit setFinished(false);
        }
    });

    QSettings settings;
    restoreGeometry(settings.value("window/geometry").toByteArray());
    restoreState(settings.value("window/state").toByteArray());
}

MainWindow::~MainWindow() = default;

void MainWindow::buildActions()
{
    auto* file = menuBar()->addMenu(tr("&File"));
    auto* toolbar = addToolBar(tr("Main"));
    toolbar->setObjectName("mainToolbar");
    auto* openModel = file->addAction(tr("Open &model file…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open model"), {}, tr("Models (*.safetensors *.pt *.pth *.json);;All files (*)"));
        if (!path.isEmpty())
            this->openModel(path);
    });
    openModel->setShortcut(QKeySequence::Open);
    file->addAction(tr("Open model &folder…"), this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Open model folder"));
        if (!dir.isEmpty())
            this->openModel(dir);
    });
    auto* openImages = file->addAction(tr("Open &images…"), this, [this] {
        const QStringList paths = QFileDialog::getOpenFileNames(this, tr("Open images"), {}, tr("Images (*.png *.jpg *.jpeg *.bmp *.tif *.tiff *.webp)"));
        addImages(paths);
    });
    openImages->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_I));
    file->addAction(tr("Open image folder…"), this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Open image folder"));
        if (!dir.isEmpty())
            addImages({ dir });
    });
    m_recent = file->addMenu(tr("Recent models"));
    refreshRecent();
    auto* exportAction = file->addAction(tr("&Export view…"), this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export view"), "attention.png", tr("PNG (*.png);;SVG (*.svg);;PDF (*.pdf)"));
        if (!path.isEmpty())
            exportView(path);
    });
    exportAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    file->addSeparator();
    auto* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);
    auto* viewMenu = menuBar()->addMenu(tr("&View"));
    auto* full = viewMenu->addAction(tr("&Full screen"), this, [this] { isFullScreen() ? showNormal() : showFullScreen(); });
    full->setShortcut(QKeySequence::FullScreen);

    toolbar->addAction(openModel);
    toolbar->addAction(openImages);
    m_builtin = new QComboBox(this);
    m_builtin->addItem(tr("Embedded models…"));
    for (const auto& name : builtinModelNames())
        m_builtin->addItem(QString::fromStdString(name));
    connect(m_builtin, &QComboBox::activated, this, [this](int index) {
        if (index > 0)
            this->openModel("builtin:" + m_builtin->itemText(index));
        m_builtin->setCurrentIndex(0);
    });
    toolbar->addWidget(m_builtin);
    toolbar->addAction(exportAction);
}

void MainWindow::buildDocks()
{
    auto* left = new QDockWidget(tr("Model and images"), this);
    left->setObjectName("modelDock");
    auto* leftWidget = new QWidget(left);
    auto* leftLayout = new QVBoxLayout(leftWidget);
    m_modelInfo = new QLabel(tr("No model. Open one (Ctrl+O) or pick an embedded one."), leftWidget);
    m_modelInfo->setWordWrap(true);
    m_modelInfo->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_images = new QListWidget(leftWidget);
    m_images->setViewMode(QListView::IconMode);
    m_images->setIconSize({ 64, 64 });
    m_images->setResizeMode(QListView::Adjust);
    m_images->setAccessibleName(tr("Images"));
    connect(m_images, &QListWidget::currentRowChanged, this, &MainWindow::selectImage);
    leftLayout->addWidget(m_modelInfo);
    leftLayout->addWidget(m_images, 1);
    left->setWidget(leftWidget);
    addDockWidget(Qt::LeftDockWidgetArea, left);

    auto* right = new QDockWidget(tr("Attention"), this);
    right->setObjectName("attentionDock");
    auto* form = new QWidget(right);
    auto* layout = new QFormLayout(form);
    m_layerBox = new QSpinBox(form);
    m_layerBox->setRange(1, 1);
    connect(m_layerBox, &QSpinBox::valueChanged, this, &MainWindow::setLayer);
    m_headBox = new QComboBox(form);
    connect(m_headBox, &QComboBox::currentIndexChanged, this, [this](int i) { setHead(i < 0 ? -1 : m_headBox->itemData(i).toInt()); });
    m_opacity = new QSlider(Qt::Horizontal, form);
    m_opacity->setRange(0, 100);
    m_opacity->setValue(60);
    connect(m_opacity, &QSlider::valueChanged, this, [this](int v) { m_view->setOpacity(v / 100.0); });
    m_colormap = new QComboBox(form);
    for (auto c : allColormaps())
        m_colormap->addItem(colormapName(c));
    connect(m_colormap, &QComboBox::currentTextChanged, this, [this](const QString& name) {
        if (auto c = colormapFromName(name))
            m_view->setColormap(*c);
    });
    m_grid = new QCheckBox(tr("patch grid"), form);
    connect(m_grid, &QCheckBox::toggled, m_view, &AttentionView::setShowGrid);
    m_queryLabel = new QLabel(form);
    layout->addRow(tr("Layer"), m_layerBox);
    layout->addRow(tr("Head"), m_headBox);
    layout->addRow(tr("Opacity"), m_opacity);
    layout->addRow(tr("Colour map"), m_colormap);
    layout->addRow(QString(), m_grid);
    layout->addRow(tr("Query"), m_queryLabel);
    right->setWidget(form);
    addDockWidget(Qt::RightDockWidgetArea, right);

    auto* variantBox = new QGroupBox(tr("Variant (reruns in the background)"), form);
    auto* variantForm = new QFormLayout(variantBox);
    m_lambda = new QDoubleSpinBox(variantBox);
    m_lambda->setRange(-2, 2);
    m_lambda->setSingleStep(0.1);
    m_lambda->setToolTip(tr("NeuTRENO: O = A V + λ (V₁ − V)"));
    m_boost = new QDoubleSpinBox(variantBox);
    m_boost->setRange(0, 1);
    m_boost->setSingleStep(0.1);
    m_boost->setToolTip(tr("Boost: R = U + t X₀ + (1 − t) X"));
    auto* apply = new QPushButton(tr("Run variant"), variantBox);
    connect(apply, &QPushButton::clicked, this, [this] { runVariant(m_lambda->value(), m_boost->value()); });
    variantForm->addRow(tr("NeuTRENO λ"), m_lambda);
    variantForm->addRow(tr("Boost t"), m_boost);
    variantForm->addRow(QString(), apply);
    layout->addRow(variantBox);

    auto* tilesDock = new QDockWidget(tr("Layers × heads"), this);
    tilesDock->setObjectName("tilesDock");
    auto* scroll = new QScrollArea(tilesDock);
    m_tiles = new AttentionTileGrid(scroll);
    scroll->setWidget(m_tiles);
    scroll->setWidgetResizable(false);
    tilesDock->setWidget(scroll);
    addDockWidget(Qt::BottomDockWidgetArea, tilesDock);
    connect(m_tiles, &AttentionTileGrid::tileClicked, this, [this](int layer, int head) {
        m_layer = layer;
        m_layerBox->blockSignals(true);
        m_layerBox->setValue(layer);
        m_layerBox->blockSignals(false);
        setHead(head);
    });

    auto* bottom = new QDockWidget(tr("Token similarity of this image"), this);
    bottom->setObjectName("similarityDock");
    m_plot = new QCustomPlot(bottom);
    m_plot->setMinimumHeight(260);
    bottom->setWidget(m_plot);
    addDockWidget(Qt::BottomDockWidgetArea, bottom);
    splitDockWidget(tilesDock, bottom, Qt::Horizontal);
    resizeDocks({ tilesDock, bottom }, { 420, 700 }, Qt::Horizontal);
    resizeDocks({ tilesDock }, { 320 }, Qt::Vertical);

    auto* setDock = new QDockWidget(tr("Image set"), this);
    setDock->setObjectName("setDock");
    auto* setWidget = new QWidget(setDock);
    auto* setLayout = new QVBoxLayout(setWidget);
    auto* setRow = new QHBoxLayout;
    m_setButton = new QPushButton(tr("Analyse image set"), setWidget);
    connect(m_setButton, &QPushButton::clicked, this, [this] {
        m_setButton->text() == tr("Cancel") ? cancelImageSet() : analyseImageSet();
    });
    m_setProgress = new QProgressBar(setWidget);
    m_setProgress->setTextVisible(true);
    m_setFigure = new QComboBox(setWidget);
    m_setFigure->addItems({ tr("Token similarity"), tr("SNR"), tr("SNR diagnostics"), tr("Head centres"), tr("Attention distance") });
    connect(m_setFigure, &QComboBox::currentIndexChanged, this, &MainWindow::showSetFigure);
    auto* exportSet = new QPushButton(tr("Export…"), setWidget);
    connect(exportSet, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Export image-set results into"));
        if (!dir.isEmpty())
            exportImageSet(dir);
    });
    setRow->addWidget(m_setButton);
    setRow->addWidget(m_setProgress, 1);
    setRow->addWidget(m_setFigure);
    setRow->addWidget(exportSet);
    m_setPlot = new QCustomPlot(setWidget);
    m_setPlot->setMinimumHeight(260);
    setLayout->addLayout(setRow);
    setLayout->addWidget(m_setPlot, 1);
    setDock->setWidget(setWidget);
    addDockWidget(Qt::BottomDockWidgetArea, setDock);
    tabifyDockWidget(bottom, setDock);
    bottom->raise();
}

void MainWindow::openModel(const QString& path)
{
    statusBar()->showMessage(tr("Loading %1…").arg(path));
    m_modelJob = m_worker.loadModel(path);
}

void MainWindow::addImages(const QStringList& paths)
{
    QStringList files;
    for (const auto& p : paths) {
        if (QFileInfo(p).isDir()) {
            QDirIterator it(p, QDir::Files, QDirIterator::Subdirectories);
            QStringList found;
            while (it.hasNext())
                if (const QString f = it.next(); isImageFile(f))
                    found << f;
            found.sort();
            files << found;
        } else if (QFileInfo(p).isFile()) {
            files << p;
        }
    }
    const bool wasEmpty = m_images->count() == 0;
    for (const auto& f : files) {
        auto* item = new QListWidgetItem(QIcon(f), QFileInfo(f).fileName(), m_images);
        item->setData(Qt::UserRole, f);
        item->setToolTip(f);
    }
    if (wasEmpty && m_images->count() > 0)
        m_images->setCurrentRow(0);
}

void MainWindow::selectImage(int row)
{
    if (!m_model || row < 0 || row >= m_images->count())
        return;
    if (m_images->currentRow() != row)
        m_images->setCurrentRow(row);
    m_imageJob = m_worker.traceImage(m_model, m_images->item(row)->data(Qt::UserRole).toString());
    statusBar()->showMessage(tr("Running %1…").arg(m_images->item(row)->text()));
}

void MainWindow::setQuery(int token)
{
    m_query = token;
    refreshMap(); // a kept Trace: no forward pass
}

void MainWindow::setLayer(int layer)
{
    m_layer = layer;
    if (m_layerBox->value() != layer)
        m_layerBox->setValue(layer);
    refreshMap();
}

void MainWindow::setHead(int head)
{
    m_head = head;
    const int index = m_headBox->findData(head);
    if (index >= 0 && m_headBox->currentIndex() != index)
        m_headBox->setCurrentIndex(index);
    refreshMap();
}

void MainWindow::refreshMap()
{
    if (!m_current)
        return;
    const Trace& t = m_current->trace;
    const int layer = std::clamp(m_layer, 1, t.depth);
    const AttentionMap map = m_head == -2 ? rolloutMap(t, attentionRollout(t), m_query) : attentionMap(t, layer, m_head, m_query);
    m_view->setQuery(m_query);
    m_view->setMap(map);
    if (m_tilesTrace != &t || m_tilesQuery != m_query) {
        m_tiles->setTrace(t, m_current->shown, m_query);
        m_tiles->resize(m_tiles->sizeHint());
        m_tilesTrace = &t;
        m_tilesQuery = m_query;
    }
    m_tiles->setSelection(layer, m_head);
    const QString where = m_query < t.numPrefixTokens
        ? (m_query == 0 ? tr("CLS token") : tr("prefix token %1").arg(m_query))
        : tr("patch (%1, %2)").arg((m_query - t.numPrefixTokens) / t.gridWidth).arg((m_query - t.numPrefixTokens) % t.gridWidth);
    m_queryLabel->setText(tr("%1 · prefix mass %2").arg(where).arg(map.prefixMass, 0, 'f', 3));
    statusBar()->showMessage(tr("%1 · layer %2 · %3").arg(QFileInfo(m_current->path).fileName()).arg(layer).arg(m_headBox->currentText()));
}

void MainWindow::refreshPlot()
{
    AnalysisSummary s;
    s.model = m_model ? QFileInfo(QString::fromStdString(m_model->info().path)).fileName().toStdString() : "";
    s.label = s.model;
    s.images = 1;
    for (const auto& p : tokenSimilarity(m_current->trace))
        s.tokenSimilarity.push_back({ p.layer, p.tap, p.tokens, { p.value, 0, 0, 1 } });
    std::vector<AnalysisSummary> series { s };
    if (m_variant) {
        AnalysisSummary v = s;
        v.label = m_variantLabel.toStdString();
        v.tokenSimilarity.clear();
        for (const auto& p : tokenSimilarity(m_variant->trace))
            v.tokenSimilarity.push_back({ p.layer, p.tap, p.tokens, { p.value, 0, 0, 1 } });
        series.push_back(v);
    }
    buildTokenSimilarityPlot(m_plot, series, Tap::Block, PlotStyle {});
    m_plot->replot();
}

void MainWindow::refreshModelInfo()
{
    const auto& i = m_model->info();
    const auto& c = i.config;
    m_modelInfo->setText(tr("<b>%1</b><br>%2, %3 naming<br>%4 layers · %5 heads · width %6<br>patch %7 · input %8×%9 · %10 parameters")
                             .arg(QString::fromStdString(i.path).toHtmlEscaped(), QString::fromStdString(i.family),
                                  QString::fromStdString(i.naming))
                             .arg(c.depth).arg(c.numHeads).arg(c.width).arg(c.patchSize).arg(c.imageHeight).arg(c.imageWidth)
                             .arg(i.parameterCount));
}

void MainWindow::runVariant(double neutrenoLambda, double boostT)
{
    if (!m_model || !m_current)
        return;
    m_variantLabel = tr("%1 (NeuTRENO %2, Boost %3)")
                         .arg(QFileInfo(QString::fromStdString(m_model->info().path)).fileName())
                         .arg(neutrenoLambda)
                         .arg(boostT);
    m_variantJob = m_worker.traceImage(m_model, m_current->path, neutrenoLambda, boostT);
    statusBar()->showMessage(tr("Running the variant…"));
}

void MainWindow::analyseImageSet()
{
    if (!m_model || m_images->count() == 0)
        return;
    QStringList paths;
    for (int i = 0; i < m_images->count(); ++i)
        paths << m_images->item(i)->data(Qt::UserRole).toString();
    AnalysisOptions options;
    options.perturbations = { *Perturbation::parse("gaussian:sigma=8") };
    m_setJob = m_worker.analyseSet(m_model, paths, options, std::max(1, int(paths.size()) / 20));
    m_setButton->setText(tr("Cancel"));
}

void MainWindow::cancelImageSet() { m_worker.cancelSet(); }

void MainWindow::showSetFigure(int index)
{
    if (!m_setSummary)
        return;
    buildSetFigure(m_setPlot, *m_setSummary, index);
    m_setPlot->replot();
}

bool MainWindow::exportImageSet(const QString& dir)
{
    if (!m_setSummary) {
        showError(tr("Analyse the image set first"));
        return false;
    }
    auto csvs = writeSummaryCsvs(dir.toStdString(), *m_setSummary);
    if (!csvs) {
        showError(QString::fromStdString(csvs.message()));
        return false;
    }
    QString error;
    if (!exportImageSetFigures(dir, *m_setSummary, m_model ? m_model->config().depth : 4, &error)) {
        showError(error);
        return false;
    }
    statusBar()->showMessage(tr("Image-set results written to %1").arg(dir), 5000);
    return true;
}

void MainWindow::refreshRecent()
{
    m_recent->clear();
    for (const auto& path : QSettings().value("recentModels").toStringList())
        m_recent->addAction(path, this, [this, path] { openModel(path); });
    m_recent->setEnabled(!m_recent->isEmpty());
}

void MainWindow::rememberModel(const QString& path)
{
    QSettings settings;
    QStringList recent = settings.value("recentModels").toStringList();
    recent.removeAll(path);
    recent.prepend(path);
    settings.setValue("recentModels", recent.mid(0, 10));
    refreshRecent();
}

bool MainWindow::exportView(const QString& path)
{
    QString error;
    if (m_view->rendered().isNull() || !exportImage(m_view->rendered(), path, &error)) {
        showError(path + ": " + (error.isEmpty() ? tr("nothing to export") : error));
        return false;
    }
    return true;
}

void MainWindow::showError(const QString& message)
{
    m_lastError = message;
    statusBar()->showMessage(message, 10000);
    emit errorShown(message);
    if (QGuiApplication::platformName() != QLatin1String("offscreen")) {
        auto* box = new QMessageBox(QMessageBox::Warning, tr("attnscope"), message, QMessageBox::Ok, this);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open(); // window-modal, never blocks the event loop
    }
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    if (event->mimeData()->hasUrls())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    QStringList images;
    for (const auto& url : event->mimeData()->urls()) {
        const QString path = url.toLocalFile();
        const QString suffix = QFileInfo(path).suffix().toLower();
        if (suffix == "safetensors" || suffix == "pt" || suffix == "pth" || suffix == "json")
            openModel(path);
        else
            images << path;
    }
    addImages(images);
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    m_worker.cancelAll();
    QSettings settings;
    settings.setValue("window/geometry", saveGeometry());
    settings.setValue("window/state", saveState());
    QMainWindow::closeEvent(event);
}
