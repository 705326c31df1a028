#include "gui/MainWindow.h"

#include "gui/LaunchArguments.h"
#include "gui/Session.h"

#include <figures/AttentionGridFigure.h>
#include <figures/FigureExport.h>
#include <Figures.h>
#include <Report.h>

#include <attnscope/Files.h>

#include <attnscope/Analyses.h>
#include <attnscope/AnalysisRun.h>

#include <QAction>
#include <QCheckBox>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QListView>
#include <QMenuBar>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QVBoxLayout>

using namespace attnscope;

namespace {

// The same place in another model's token grid: prefix tokens map to prefix tokens (or the centre patch when
// there are none), patches by their centre's relative position.
int mapQuery(int query, const Trace& from, const Trace& to)
{
    if (query < from.numPrefixTokens || from.gridWidth <= 0) {
        if (to.numPrefixTokens > 0)
            return std::min(query, to.numPrefixTokens - 1);
        return (to.gridHeight / 2) * to.gridWidth + to.gridWidth / 2;
    }
    const int p = query - from.numPrefixTokens;
    const int row = (2 * (p / from.gridWidth) + 1) * to.gridHeight / (2 * from.gridHeight);
    const int col = (2 * (p % from.gridWidth) + 1) * to.gridWidth / (2 * from.gridWidth);
    return to.numPrefixTokens + std::min(row, to.gridHeight - 1) * to.gridWidth + std::min(col, to.gridWidth - 1);
}

// The view selection with one field changed.
template <typename T>
ViewSelection changed(ViewSelection view, T ViewSelection::*field, T value)
{
    view.*field = std::move(value);
    return view;
}

QString describeQuery(int query, const Trace& t)
{
    if (query < t.numPrefixTokens)
        return query == 0 ? QObject::tr("CLS token") : QObject::tr("prefix token %1").arg(query);
    return QObject::tr("patch (%1, %2)").arg((query - t.numPrefixTokens) / t.gridWidth).arg((query - t.numPrefixTokens) % t.gridWidth);
}

// A Swin's query at block `layer`: its token at the block's stage and the window it is in (docs/analyses.md,
// "Hierarchical models").
QString describeWindowQuery(int query, const Trace& t, int layer, const AttentionMap& map)
{
    const WindowBlock& b = t.windows.at(size_t(layer - 1));
    const int y = (query / t.gridWidth) >> b.stage, x = (query % t.gridWidth) >> b.stage;
    QString text = QObject::tr("%1 · %2 · token (%3, %4) of %5×%6, window %7 of %8")
                       .arg(describeQuery(query, t), QString::fromStdString(blockName(b)))
                       .arg(y)
                       .arg(x)
                       .arg(b.gridH)
                       .arg(b.gridW)
                       .arg(b.place(y, x).window)
                       .arg(b.numWindows());
    if (map.paddingMass > 0)
        text += QObject::tr(" · padding share %1").arg(map.paddingMass, 0, 'f', 3);
    return text;
}

} // namespace

MainWindow::MainWindow(QWidget* parent, std::unique_ptr<EngineBackend> backend)
    : QMainWindow(parent)
    , m_worker(std::make_unique<EngineWorker>(nullptr, std::move(backend)))
{
    setWindowTitle(tr("attnscope"));
    setAcceptDrops(true);
    m_images = new ImageListModel(this);
    if (m_worker->isRemote()) // a host image's thumbnail is the host's (MainWindowHost.cpp)
        m_images->setThumbnailSource([this](const QString& path) { askThumbnails(path); });
    m_centre = new QSplitter(Qt::Horizontal, this);
    for (int i = 0; i < 2; ++i) {
        m_slots[i] = new ModelSlot(m_worker.get(), i, this);
        m_viewColumns[i] = new QWidget(m_centre);
        auto* column = new QVBoxLayout(m_viewColumns[i]);
        column->setContentsMargins(0, 0, 0, 0);
        column->setSpacing(0);
        m_views[i] = new AttentionView(m_viewColumns[i]);
        m_footers[i] = new ViewFooter(m_viewColumns[i]);
        column->addWidget(m_views[i], 1);
        column->addWidget(m_footers[i]);
        m_centre->addWidget(m_viewColumns[i]);
        connectSlot(i);
    }
    m_viewColumns[1]->hide();
    setCentralWidget(m_centre);
    buildActions();
    buildDocks();
    connect(m_views[0], &AttentionView::queryRequested, this, &MainWindow::setQuery);
    connect(m_views[1], &AttentionView::queryRequested, this, [this](int token) {
        const auto& a = m_slots[0]->trace();
        const auto& b = m_slots[1]->trace();
        if (a && b)
            setQuery(mapQuery(token, b->trace, a->trace));
    });

    QSettings settings;
    restoreGeometry(settings.value("window/geometry").toByteArray());
    restoreState(settings.value("window/state").toByteArray());
    // A layout saved before the Attention dock ran the full height keeps its docks where they were, not its corners.
    setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
    setCorner(Qt::TopRightCorner, Qt::RightDockWidgetArea);
}

MainWindow::~MainWindow()
{
    m_worker->cancelAll();
    // The docks hide as the window goes: nothing may answer them with members already gone.
    if (m_queryKeyDock)
        m_queryKeyDock->detach();
    m_images->disconnect(this);
}

void MainWindow::connectSlot(int index)
{
    ModelSlot* slot = m_slots[index];
    connect(slot, &ModelSlot::failed, this, [this, index](const QString& message, ModelSlot::Failure what) {
        showError(message, what == ModelSlot::Failure::Model   ? ErrorOf::Model
                               : what == ModelSlot::Failure::Image ? ErrorOf::Image
                               : what == ModelSlot::Failure::Link  ? ErrorOf::Link
                                                                   : ErrorOf::Other);
        if (what == ModelSlot::Failure::Link && index == 0) {
            m_tiles->clear(); // they were another query's: the rows of this one did not come
            m_tilesTrace = nullptr;
        }
    });
    connect(slot, &ModelSlot::needsOtherHalf, this, [this, index](const QString& path, const QString& description, int missing,
                                                                  const QString& message) {
        askForOtherHalf(index, path, description, missing, message);
    });
    // An image that could not be run: its error in the view, and nothing of the image before left anywhere.
    connect(slot, &ModelSlot::imageFailed, this, [this, index](const QString& message) {
        statusBar()->clearMessage(); // not "Running broken.jpg…" beside its error
        m_views[index]->showMessage(message);
        if (index == 0) {
            m_tiles->clear();
            m_tilesTrace = nullptr;
            m_controls->setQueryText(QString());
        }
        refreshImagePlots();
        m_imagePanel->setStatus(message);
        refreshPredictions();
        m_footers[index]->setNoPrediction(tr("Prediction: none, the image could not be run"));
        refreshQueryKeyMap(); // no query of the image before ringed
    });
    connect(slot, &ModelSlot::analysisFailed, this, [this](const QString& message) {
        refreshImagePlots();
        m_imagePanel->setStatus(tr("not analysed: %1").arg(message));
    });
    connect(slot, &ModelSlot::modelLoaded, this, [this, index, slot] {
        const auto& model = slot->model();
        const QString path = QString::fromStdString(model->info().path);
        rememberModel(slot->path(), slot->description());
        statusBar()->showMessage(tr("Loaded %1").arg(path), 5000);
        if (index == 0) {
            const auto& c = model->config();
            m_controls->setModel(c.depth, c.maxHeads(), c.neutrenoLambda, c.boostT, c.pooling == Pooling::AttentionPool, !c.hierarchical());
            QStringList labels;
            for (int k = 0; k < c.numClasses; ++k)
                labels << (size_t(k) < model->info().labels.size() ? QString::fromStdString(model->info().labels[size_t(k)]) : QString());
            m_controls->setClasses(c.headIsProjection ? QStringList() : labels);
            m_controls->setInputSize(c.imageHeight, c.imageWidth, model->info().trainedHeight, model->info().trainedWidth);
            // A new model: its last layer, the mean of its heads, its CLS token (or its centre patch), the predicted class.
            m_view.layer = c.depth;
            m_view.head = HeadChoice();
            m_view.relevanceClass = -1;
            m_view.query = c.numPrefixTokens() > 0 ? 0 : (c.gridHeight() / 2) * c.gridWidth() + c.gridWidth() / 2;
            showViewSelection();
            m_views[0]->clear();
            m_tiles->clear(); // the previous model's image until this one's trace comes
            m_tilesTrace = nullptr;
            m_controls->setQueryText(QString());
            refreshModelInfo();
            applyPerturbation();
            clearError(ErrorOf::Model);
            emit modelReady();
        } else {
            m_views[1]->clear();
            m_viewColumns[1]->show();
            m_views[0]->setCaption(m_slots[0]->name());
            m_views[1]->setCaption(slot->name());
            m_slots[1]->setAnalysisOptions(m_slots[0]->analysisOptions());
            m_slots[1]->setVariant(m_slots[0]->variant()); // a variant running runs for the compared model too
            emit compareReady();
        }
        refreshImagePlots();
        m_setDock->refreshPlots();
        refreshPredictions();
        refreshPlaceholders();
        if (!currentPath().isEmpty())
            slot->showImage(currentPath());
        if (index == 0)
            applyPendingSession();
    });
    connect(slot, &ModelSlot::traceReady, this, [this, index, slot] {
        const Trace& t = slot->trace()->trace;
        m_views[index]->setImage(slot->trace()->shown, t.gridHeight, t.gridWidth, t.numPrefixTokens);
        if (index == 0) {
            m_tilesTrace = nullptr; // a new trace may reuse the old one's address
            m_view.query = std::min(m_view.query, t.numPrefixTokens + t.gridHeight * t.gridWidth - 1);
        }
        refreshMaps();
        refreshPredictions();
        if (index == 0) {
            clearError(ErrorOf::Image);
            emit imageReady();
        }
    });
    connect(slot, &ModelSlot::variantTraceReady, this, [this, slot] {
        if (!slot->variantTrace())
            return;
        statusBar()->showMessage(tr("Variant ready: %1").arg(slot->variantLabel()), 5000);
        refreshPredictions();
        emit variantReady();
    });
    connect(slot, &ModelSlot::relevanceReady, this, &MainWindow::refreshMaps);
    connect(slot, &ModelSlot::rowsReady, this, [this] {
        clearError(ErrorOf::Link); // the link is back
        refreshMaps();
    });
    connect(slot, &ModelSlot::analysisReady, this, [this] {
        refreshImagePlots();
        emit analysisReady();
    });
    // The image set's runs are the Image set dock's (ImageSetDock), which follows the slots itself.
}

void MainWindow::setQuery(int token) { setViewSelection(changed(m_view, &ViewSelection::query, token)); } // kept Traces: no forward pass
void MainWindow::setLayer(int layer) { setViewSelection(changed(m_view, &ViewSelection::layer, layer)); }
void MainWindow::setHead(HeadChoice head) { setViewSelection(changed(m_view, &ViewSelection::head, head)); }
void MainWindow::setRollout(const RolloutOptions& rollout) { setViewSelection(changed(m_view, &ViewSelection::rollout, rollout)); }
void MainWindow::setRelevanceClass(int label) { setViewSelection(changed(m_view, &ViewSelection::relevanceClass, label)); }

void MainWindow::setViewSelection(const ViewSelection& view)
{
    m_view = view;
    showViewSelection();
    refreshMaps();
}

void MainWindow::showViewSelection()
{
    m_controls->setLayer(m_view.layer);
    m_controls->setHead(m_view.head);
    m_controls->setRollout(m_view.rollout);
    m_controls->setRelevanceClass(m_view.relevanceClass);
    std::optional<RelevanceOptions> relevance;
    if (m_view.head.isRelevance()) {
        relevance.emplace();
        relevance->targetClass = m_view.relevanceClass;
    }
    for (ModelSlot* slot : m_slots)
        slot->setRelevance(relevance); // a job only when it changed
    // The logit decomposition's head: the one shown, or the mean over the heads for a view of no single head.
    m_imagePanel->setDecompositionHead(m_view.head.isSingle() ? m_view.head.head : -1);
}

int MainWindow::compareQuery() const
{
    const auto& a = m_slots[0]->trace();
    const auto& b = m_slots[1]->trace();
    return a && b ? mapQuery(m_view.query, a->trace, b->trace) : -1;
}

void MainWindow::refreshMaps()
{
    const auto& primary = m_slots[0]->trace();
    if (!primary)
        return;
    std::shared_ptr<const ImageRows> primaryRows;
    for (int i = 0; i < 2; ++i) {
        const auto& current = m_slots[i]->trace();
        if (!current || (i == 1 && !m_slots[1]->model()))
            continue;
        const Trace& t = current->trace;
        const int query = i == 0 ? m_view.query : mapQuery(m_view.query, primary->trace, t);
        const int layer = std::clamp(m_view.layer, 1, lastMapLayer(t)); // past the depth: an attention-pool head's map
        // A head the compared model (or a Swin's block, its stage's heads) has not: the mean of its heads.
        const int heads = t.hierarchical() ? t.windows[size_t(std::min(layer, t.depth) - 1)].heads : t.numHeads;
        const HeadChoice head = m_view.head.isSingle() && m_view.head.head >= heads ? HeadChoice() : m_view.head;
        // The query's rows, at hand for a trace held here, asked of the host for a remote one (the image alone until
        // they come: ModelSlot::rowsReady redraws).
        RowsRequest request;
        request.query = query;
        if (head.view == HeadView::Rollout)
            request.rollout = m_view.rollout;
        if (head.view == HeadView::TokenNorms)
            request.normsRatio = m_slots[i]->analysisOptions().outlierRatio;
        const auto rows = m_slots[i]->rows(request);
        if (i == 0)
            primaryRows = rows;
        AttentionMap map;
        std::vector<QPoint> marked;
        QString normsText;
        if (head.isRelevance()) {
            // The class relevance, once the worker has it for this image; the image alone meanwhile.
            const auto& r = m_slots[i]->relevance();
            if (r && r->path == current->path)
                map.patches = head.view == HeadView::Gae ? r->relevance.gae : r->relevance.gradCam;
        } else if (head.view == HeadView::TokenNorms && rows) {
            // The norms of X_l's patch tokens, the high-norm outliers outlined (Analyses.h section 7): from the trace.
            const TokenNorms& norms = rows->norms;
            for (const auto& l : norms.layers) {
                if (l.layer != layer)
                    continue;
                std::vector<float> patches(l.norms.begin() + std::min<size_t>(size_t(t.numPrefixTokens), l.norms.size()), l.norms.end());
                if (int64_t(patches.size()) == int64_t(t.gridHeight) * t.gridWidth)
                    map.patches = Tensor::fromVector({ t.gridHeight, t.gridWidth }, std::move(patches));
                QStringList cells;
                for (int token : l.outliers) {
                    const int p = token - t.numPrefixTokens;
                    marked.push_back(QPoint(p % t.gridWidth, p / t.gridWidth));
                    if (cells.size() < 6)
                        cells << QStringLiteral("(%1,%2)").arg(p / t.gridWidth).arg(p % t.gridWidth);
                }
                normsText = tr("X%1 · median %2 · %3 outlier(s) > %4× median%5%6")
                                .arg(layer)
                                .arg(l.patchMedian, 0, 'g', 3)
                                .arg(l.outliers.size())
                                .arg(norms.outlierRatio, 0, 'g', 3)
                                .arg(cells.isEmpty() ? QString() : QStringLiteral(" ") + cells.join(QStringLiteral(" ")))
                                .arg(std::isfinite(l.outlierAttention) && !l.outliers.empty()
                                         ? tr(" · %1% of A%2").arg(100.0 * l.outlierAttention, 0, 'f', 1).arg(layer + 1)
                                         : QString());
            }
        } else if (rows) {
            map = head.view == HeadView::Rollout ? rows->rollout : attentionMap(rows->rows, layer, head.isSingle() ? head.head : -1);
        }
        const bool attention = head.isSingle() || head.view == HeadView::Mean || head.view == HeadView::Rollout;
        const bool pool = layer > t.depth && (head.isSingle() || head.view == HeadView::Mean); // the pool head's own query, no patch
        m_views[i]->setQuery(!attention || pool ? -1 : query);
        m_views[i]->setValueCaption(head.view == HeadView::Gae       ? tr("relevance (GAE)")
                                    : head.view == HeadView::GradCam ? tr("Grad-CAM")
                                    : head.view == HeadView::TokenNorms ? tr("token norm")
                                                                        : tr("attention"));
        m_views[i]->setMarkedPatches(std::move(marked));
        m_views[i]->setMap(map);
        if (i == 0 && head.isRelevance()) {
            const auto& r = m_slots[0]->relevance();
            const QString method = head.view == HeadView::Gae ? tr("GAE") : tr("Grad-CAM on X%1").arg(r ? r->relevance.gradCamLayer : 0);
            m_controls->setQueryText(r && r->path == current->path
                    ? tr("%1 · p %2 · %3")
                          .arg(className(m_slots[0]->model()->info().labels, r->relevance.targetClass))
                          .arg(r->relevance.probability, 0, 'f', 3)
                          .arg(method)
                    : tr("computing the relevance…"));
        } else if (i == 0 && t.hierarchical() && head.view == HeadView::Rollout) {
            m_controls->setQueryText(QString::fromStdString(kNoHierarchicalRollout));
        } else if (i == 0 && t.hierarchical() && head.view == HeadView::TokenNorms) {
            m_controls->setQueryText(tr("token norms: not of a Swin yet (docs/analyses.md, \"Hierarchical models\")"));
        } else if (i == 0 && head.view == HeadView::TokenNorms) {
            m_controls->setQueryText(normsText);
        } else if (i == 0 && pool) {
            m_controls->setQueryText(tr("the attention-pool head's query"));
        } else if (i == 0 && !rows) {
            m_controls->setQueryText(tr("%1 · asking %2…").arg(describeQuery(query, t), m_worker->where()));
        } else if (i == 0 && t.hierarchical()) {
            m_controls->setQueryText(describeWindowQuery(query, t, layer, map));
        } else if (i == 0) {
            m_controls->setQueryText(tr("%1 · prefix mass %2").arg(describeQuery(query, t)).arg(map.prefixMass, 0, 'f', 3));
        }
    }
    const Trace& t = primary->trace;
    if (primaryRows && (m_tilesTrace != &t || m_tilesQuery != m_view.query)) {
        m_tiles->setRows(primaryRows->rows, primary->shown);
        m_tilesTrace = &t;
        m_tilesQuery = m_view.query;
    } else if (!primaryRows && m_tilesTrace != &t) {
        m_tiles->clear(); // another image's tiles; this one's rows are on their way
        m_tilesTrace = nullptr;
    }
    // The tiles mark one head, the mean column (-1) or the rollout row (-2); a relevance or norms view marks the mean.
    const HeadChoice h = m_view.head;
    m_tiles->setSelection(std::clamp(m_view.layer, 1, lastMapLayer(t)), h.isSingle() ? h.head : h.view == HeadView::Rollout ? -2 : -1);
    refreshQueryKeyMap();
    statusBar()->showMessage(tr("%1 · layer %2 · %3")
                                 .arg(QFileInfo(primary->path).fileName())
                                 .arg(t.hierarchical() ? QStringLiteral("%1 (%2)").arg(std::clamp(m_view.layer, 1, t.depth)).arg(QString::fromStdString(blockName(t, std::clamp(m_view.layer, 1, t.depth))))
                                                       : QString::fromStdString(mapLayerName(t, std::clamp(m_view.layer, 1, lastMapLayer(t)))))
                                 .arg(headChoiceText(m_view.head)));
}

void MainWindow::refreshPredictions()
{
    for (int i = 0; i < 2; ++i) {
        ViewFooter* footer = m_footers[i];
        const auto& model = m_slots[i]->model();
        const auto& current = m_slots[i]->trace();
        if (!model || !current) {
            footer->clear();
            continue;
        }
        const auto& c = model->config();
        footer->setPreparation(current->preparation,
                               tr("%1×%2 %3").arg(c.imageWidth).arg(c.imageHeight).arg(c.channels == 1 ? tr("grey") : tr("RGB")));
        if (c.numClasses == 0 || c.headIsProjection) {
            footer->setNoPrediction(tr("Prediction: none, %1 has no classification head").arg(m_slots[i]->name()));
            continue;
        }
        QStringList labels;
        for (const auto& label : model->info().labels)
            labels << QString::fromStdString(label);
        const auto& variant = m_slots[i]->variantTrace();
        const auto& v = m_slots[i]->variant();
        const bool showVariant = v && variant && variant->path == current->path;
        footer->setPrediction(topClasses(current->trace.logits, 5), labels,
                              showVariant ? tr("With NeuTRENO %1, Boost %2").arg(v->neutrenoLambda).arg(v->boostT) : QString(),
                              showVariant ? topClasses(variant->trace.logits, 5) : std::vector<ClassProbability> {});
    }
    refreshAblation();
}

void MainWindow::refreshImagePlots()
{
    std::vector<AnalysisSummary> series = m_slots[0]->imageSeries();
    if (m_slots[1]->model())
        for (auto& s : m_slots[1]->imageSeries())
            series.push_back(std::move(s));
    const auto& analysis = m_slots[0]->analysis();
    LogitDecompositionInfo info;
    info.model = m_slots[0]->name().toStdString();
    if (analysis)
        info.image = QFileInfo(analysis->path).fileName().toStdString();
    if (const auto& t = m_slots[0]->trace())
        info.numPrefixTokens = t->trace.numPrefixTokens;
    m_imagePanel->setData(std::move(series), analysis ? analysis->decomposition : nullptr, info);
    m_imagePanel->setStatus(analysis ? QFileInfo(analysis->path).fileName() : QString());
}

void MainWindow::runVariant(double neutrenoLambda, double boostT)
{
    m_controls->setVariantValues(neutrenoLambda, boostT);
    const auto variant = m_controls->variant();
    if (variant == m_slots[0]->variant())
        return; // the spin boxes echo a value already running
    for (ModelSlot* slot : m_slots)
        slot->setVariant(variant);
    refreshPredictions(); // the variant's line goes until its run is back
    if (variant)
        statusBar()->showMessage(tr("Running the variant…"));
    refreshImagePlots();
}

void MainWindow::setPerturbation(const Perturbation& perturbation)
{
    m_controls->setPerturbation(perturbation);
    applyPerturbation();
}

void MainWindow::applyPerturbation()
{
    AnalysisOptions options = m_slots[0]->analysisOptions();
    options.perturbations = { m_controls->perturbation() };
    for (ModelSlot* slot : m_slots)
        slot->setAnalysisOptions(options);
}

void MainWindow::analyseImageSet() { m_setDock->analyse(); }

void MainWindow::cancelImageSet() { m_setDock->cancel(); }

void MainWindow::showSetFigure(int index)
{
    m_setDock->showFigure(index);
    if (auto* dock = findChild<QDockWidget*>("setDock"))
        dock->raise();
}

void MainWindow::showError(const QString& message, ErrorOf kind)
{
    // One unreadable image stops its trace, its variant, its relevance and the compared model's run: one message.
    if (!m_errorLabel->isHidden() && m_errorLabel->fullText() == message)
        return;
    m_lastError = message;
    m_errorKind = kind;
    m_errorLabel->setFullText(message);
    m_errorLabel->show();
    emit errorShown(message);
}

void MainWindow::clearError(ErrorOf kind)
{
    if (kind != m_errorKind && kind != ErrorOf::Other)
        return; // an image shown does not answer a session's or an export's error; Other: dismissed
    m_errorLabel->hide();
    m_errorLabel->setFullText(QString());
}

QString MainWindow::shownError() const { return !m_errorLabel->isHidden() ? m_errorLabel->fullText() : QString(); }

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    if (event->mimeData()->hasUrls())
        event->acceptProposedAction();
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    m_worker->cancelAll();
    if (m_slots[0]->model()) { // where the user left off, for File -> Reopen last session
        QString error;
        QDir().mkpath(QFileInfo(lastSessionPath()).absolutePath());
        writeSession(lastSessionPath(), state(), &error);
    }
    QSettings settings;
    settings.setValue("window/geometry", saveGeometry());
    settings.setValue("window/state", saveState());
    QMainWindow::closeEvent(event);
}
