// Head importance (docs/analyses.md section 8) and the query-key map (section 9) in the window: the image set's
// ablation on the tiles, one head ablated on the current image, and the selected head's queries and keys over the
// strip.
#include "gui/MainWindow.h"

#include <attnscope/Analyses.h>
#include <attnscope/Image.h>
#include <attnscope/QueryKey.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QMenu>
#include <QStatusBar>
#include <QVBoxLayout>

using namespace attnscope;

namespace {

// Worker channels of their own, so that an ablation, a map and an export never supersede each other.
constexpr int kAblationChannel = 8;
constexpr int kQueryKeyChannel = 9;
constexpr int kQueryKeyImages = 16; // the strip's first images, as the CLI's --qk-images default

QString percent(double p) { return QStringLiteral("%1%").arg(100.0 * p, 0, 'f', 1); }

} // namespace

struct MainWindow::ShownAblation {
    QString path;
    std::shared_ptr<const Model> model;
    int layer = 0, head = 0;
    HeadAblation result;
};

struct MainWindow::ShownQueryKey {
    QString key; // what it is of: the model, the head, the method and the images
    std::shared_ptr<const Model> model;
    int layer = 0, head = 0;
    QueryKeyMethod method = QueryKeyMethod::Pca;
    QStringList candidates;     // the strip's first images
    QStringList paths, names;   // those that were read, by QueryKeyPoint::image
    std::shared_ptr<const QueryKeyMap> map;
    QString error;
};

void MainWindow::buildHeadDocks(QDockWidget* besideDock)
{
    connect(m_importance, &QCheckBox::toggled, this, &MainWindow::setHeadImportance);
    connect(m_tiles, &AttentionTileGrid::ablationRequested, this, &MainWindow::ablateHead);
    connect(m_slots[0], &ModelSlot::setUpdated, this, &MainWindow::refreshImportance);
    connect(m_slots[0], &ModelSlot::modelLoaded, this, &MainWindow::refreshImportance); // its set summary is gone
    refreshImportance();

    auto* content = new QWidget;
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(4, 4, 4, 4);
    auto* row = new QHBoxLayout;
    m_queryKeyColouring = new QComboBox(content);
    m_queryKeyColouring->setAccessibleName(tr("Colour the points by"));
    m_queryKeyColouring->addItems({ tr("queries and keys"), tr("patch row"), tr("patch column") });
    m_queryKeyMethod = new QComboBox(content);
    m_queryKeyMethod->setAccessibleName(tr("Projection"));
    m_queryKeyMethod->addItems({ tr("PCA"), tr("t-SNE") });
    m_queryKeyMethod->setToolTip(tr("PCA: exact, signs fixed. t-SNE: exact, perplexity 30, seeded (slower)."));
    row->addWidget(new QLabel(tr("Colour"), content));
    row->addWidget(m_queryKeyColouring);
    row->addWidget(new QLabel(tr("Projection"), content));
    row->addWidget(m_queryKeyMethod);
    row->addStretch(1);
    m_queryKeyView = new QueryKeyMapView(content);
    m_queryKeyView->setToolTip(tr("The selected head's queries and keys over the strip's first %1 images, normalised as "
                                  "AttentionViz does. Click a point to make its image and token the query.").arg(kQueryKeyImages));
    layout->addLayout(row);
    layout->addWidget(m_queryKeyView, 1);
    m_queryKeyDock = new QDockWidget(tr("Query-key map"), this);
    m_queryKeyDock->setObjectName("queryKeyDock");
    m_queryKeyDock->setWidget(content);
    addDockWidget(Qt::BottomDockWidgetArea, m_queryKeyDock);
    tabifyDockWidget(besideDock, m_queryKeyDock);
    m_viewMenu->addAction(m_queryKeyDock->toggleViewAction());
    connect(m_queryKeyColouring, &QComboBox::currentIndexChanged, this,
            [this](int index) { m_queryKeyView->setColouring(QueryKeyColouring(std::clamp(index, 0, 2))); });
    connect(m_queryKeyMethod, &QComboBox::currentIndexChanged, this,
            [this](int index) { setQueryKeyMethod(index == 1 ? QueryKeyMethod::Tsne : QueryKeyMethod::Pca); });
    connect(m_queryKeyView, &QueryKeyMapView::pointClicked, this, &MainWindow::selectQueryKeyPoint);
    connect(m_queryKeyDock, &QDockWidget::visibilityChanged, this, [this](bool visible) {
        if (visible)
            refreshQueryKeyMap();
    });
    for (auto signal : { &QAbstractItemModel::rowsInserted, &QAbstractItemModel::rowsRemoved })
        connect(m_images, signal, this, &MainWindow::refreshQueryKeyMap);
    connect(m_images, &QAbstractItemModel::modelReset, this, &MainWindow::refreshQueryKeyMap);

    connect(&m_worker, &EngineWorker::taskFinished, this, [this](quint64 id) {
        if (id == m_ablationJob && m_pendingAblation) {
            m_ablation = std::move(m_pendingAblation);
            refreshAblation();
        } else if (id == m_queryKeyJob && m_pendingQueryKey) {
            m_queryKey = std::move(m_pendingQueryKey);
            refreshQueryKeyMap();
        }
    });
    connect(&m_worker, &EngineWorker::failed, this, [this](quint64 id, const QString& message) {
        if (id == m_ablationJob && m_pendingAblation) {
            m_pendingAblation = nullptr;
            m_ablation = nullptr;
            refreshAblation();
            showError(message);
        } else if (id == m_queryKeyJob && m_pendingQueryKey) {
            m_queryKey = std::move(m_pendingQueryKey);
            m_queryKey->error = message; // said in the dock, and not asked again for the same head and images
            refreshQueryKeyMap();
        }
    });
}

void MainWindow::setSetAblation(bool on) { m_setAblation->setChecked(on); }

void MainWindow::setHeadImportance(bool on)
{
    if (on && !m_importance->isEnabled()) { // nothing to show: said, not ticked
        statusBar()->showMessage(m_importance->toolTip(), 8000);
        return;
    }
    if (m_importance->isChecked() != on)
        m_importance->setChecked(on); // comes back here through toggled
    else
        refreshImportance();
}

void MainWindow::refreshImportance()
{
    // Offered only once the image set's summary holds a head ablation: a tick that would show nothing is not offered.
    const auto& s = m_slots[0]->setSummary();
    const bool available = s && !s->ablation.empty();
    m_importance->setEnabled(available);
    m_importance->setToolTip(available
            ? tr("A bar under each head: its mean KL when ablated over the image set (Image set, \"Head ablation\"); the heads "
                 "that flip the most predictions numbered. Right-click a head to ablate it on this image.")
            : tr("Head importance: tick \"Head ablation\" under Image set and analyse the image set first. Right-click a "
                 "head to ablate it on this image."));
    if (!available && m_importance->isChecked()) {
        const QSignalBlocker quiet(m_importance);
        m_importance->setChecked(false);
    }
    if (m_importance->isChecked())
        m_tiles->setImportance(s->ablation, s->images == 1 ? tr("1 image") : tr("%1 images").arg(s->images));
    else
        m_tiles->setImportance({}, {});
}

void MainWindow::ablateHead(int layer, int head)
{
    m_worker.cancel(EngineWorker::TaskJob, kAblationChannel);
    m_pendingAblation = nullptr;
    m_ablation = nullptr;
    const auto& model = m_slots[0]->model();
    const auto& trace = m_slots[0]->trace();
    if (layer <= 0 || !model || !trace) {
        refreshAblation();
        return;
    }
    const auto& c = model->config();
    if (c.numClasses <= 0 || c.headIsProjection) {
        refreshAblation();
        showError(tr("Head ablation needs a classification head: %1 has none").arg(m_slots[0]->name()));
        return;
    }
    auto pending = std::make_shared<ShownAblation>();
    pending->path = trace->path;
    pending->model = model;
    pending->layer = layer;
    pending->head = head;
    m_pendingAblation = pending;
    m_ablationJob = m_worker.runTask(
        [pending](const std::function<bool()>& cancelled, const EngineWorker::Progress&) {
            const std::string path = pending->path.toStdString();
            auto image = decodeImage(path);
            if (!image)
                return QString::fromStdString(path + ": " + image.message());
            auto prepared = pending->model->prepare(*image);
            if (!prepared)
                return QString::fromStdString(path + ": " + prepared.message());
            RunOptions run;
            run.isCancelled = cancelled;
            auto a = headAblation(*pending->model, prepared->input, AblationMode::Zero, run, 0, { HeadRef { pending->layer, pending->head } });
            if (!a)
                return QString::fromStdString(path + ": " + a.message());
            pending->result = std::move(*a);
            return QString();
        },
        kAblationChannel);
    m_footers[0]->setAblation(tr("Ablating layer %1 head %2…").arg(layer).arg(head));
    m_tiles->setAblatedHead(layer, head);
}

void MainWindow::refreshAblation()
{
    const auto& trace = m_slots[0]->trace();
    const auto& model = m_slots[0]->model();
    const bool shown = m_ablation && trace && m_ablation->path == trace->path && m_ablation->model == model && !m_ablation->result.heads.empty();
    const bool coming = m_pendingAblation && trace && m_pendingAblation->path == trace->path && m_pendingAblation->model == model;
    if (!shown) {
        if (!coming) {
            m_footers[0]->setAblation({});
            m_tiles->setAblatedHead(0, 0);
        }
        emit ablationShown();
        return;
    }
    const HeadAblation& a = m_ablation->result;
    const HeadAblationEffect& e = a.heads.front();
    const auto& labels = model->info().labels;
    const auto name = [&](int c) { return className(labels, c); };
    const QString before = QStringLiteral("%1 %2").arg(name(a.predicted), percent(a.probability));
    const QString after = e.flip ? QStringLiteral("%1 %2").arg(name(e.predicted), percent(e.probability))
                                 : QStringLiteral("%1 %2").arg(name(a.predicted), percent(a.probability + e.dprob));
    m_footers[0]->setAblation(tr("Layer %1 head %2 ablated: %3 → %4 · KL %5%6")
                                  .arg(e.layer)
                                  .arg(e.head)
                                  .arg(before, after)
                                  .arg(e.kl, 0, 'g', 3)
                                  .arg(e.flip ? tr(" · the prediction changes") : QString()));
    m_tiles->setAblatedHead(e.layer, e.head);
    emit ablationShown();
}

void MainWindow::setQueryKeyMethod(QueryKeyMethod method)
{
    const int index = method == QueryKeyMethod::Tsne ? 1 : 0;
    if (m_queryKeyMethod->currentIndex() != index)
        m_queryKeyMethod->setCurrentIndex(index); // comes back here
    else
        refreshQueryKeyMap();
}

void MainWindow::refreshQueryKeyMap()
{
    if (!m_queryKeyView)
        return;
    const auto& model = m_slots[0]->model();
    const auto& trace = m_slots[0]->trace();
    if (!model) {
        m_queryKeyView->setMessage(tr("No model."));
        emit queryKeyMapShown();
        return;
    }
    if (model->config().attention == AttentionKind::Quadratic) {
        m_queryKeyView->setMessage(tr("%1 has quadratic attention: its logits come from positions alone, without queries and keys.")
                                       .arg(m_slots[0]->name()));
        emit queryKeyMapShown();
        return;
    }
    const int layer = std::clamp(m_view.layer, 1, model->config().depth), head = m_view.head.isSingle() ? m_view.head.head : -1;
    if (head < 0 || head >= model->config().numHeads) {
        m_queryKeyView->setMessage(tr("Choose a head (not the mean, rollout, relevance or norms) to map its queries and keys."));
        emit queryKeyMapShown();
        return;
    }
    const QStringList candidates = m_images->paths().mid(0, kQueryKeyImages);
    if (candidates.isEmpty()) {
        m_queryKeyView->setMessage(tr("Add images to the strip: the map is of their queries and keys."));
        emit queryKeyMapShown();
        return;
    }
    const QueryKeyMethod method = m_queryKeyMethod->currentIndex() == 1 ? QueryKeyMethod::Tsne : QueryKeyMethod::Pca;
    const QString key = QStringLiteral("%1|%2|%3|%4|%5")
                            .arg(quintptr(model.get()))
                            .arg(layer)
                            .arg(head)
                            .arg(QString::fromLatin1(toString(method)), candidates.join(QLatin1Char('\n')));
    if (m_queryKey && m_queryKey->key == key) {
        if (m_queryKey->map) {
            if (m_queryKeyView->map() != m_queryKey->map)
                m_queryKeyView->setMap(m_queryKey->map, m_queryKey->names);
            const int image = trace ? int(m_queryKey->paths.indexOf(trace->path)) : -1;
            m_queryKeyView->setHighlight(image >= 0 ? std::optional<std::pair<int, int>>({ image, m_view.query }) : std::nullopt);
        } else {
            m_queryKeyView->setMessage(tr("No map of layer %1 head %2: %3").arg(layer).arg(head).arg(m_queryKey->error));
        }
        emit queryKeyMapShown();
        return;
    }
    // Computed only while the dock shows: another head or image set is asked for when it is looked at.
    if (!m_queryKeyView->isVisible() || (m_pendingQueryKey && m_pendingQueryKey->key == key))
        return;
    auto pending = std::make_shared<ShownQueryKey>();
    pending->key = key;
    pending->model = model;
    pending->layer = layer;
    pending->head = head;
    pending->method = method;
    pending->candidates = candidates;
    m_pendingQueryKey = pending;
    m_queryKeyView->setMessage(tr("Mapping the queries and keys of layer %1 head %2 over %n image(s)…", nullptr, int(candidates.size()))
                                   .arg(layer)
                                   .arg(head));
    m_queryKeyJob = m_worker.runTask(
        [pending](const std::function<bool()>&, const EngineWorker::Progress&) {
            std::vector<Tensor> inputs;
            for (const QString& path : pending->candidates) {
                auto image = decodeImage(path.toStdString());
                auto prepared = image ? pending->model->prepare(*image) : Result<Model::Prepared>(image.error());
                if (!prepared)
                    continue; // the strip shows which images cannot be read
                inputs.push_back(prepared->input);
                pending->paths << path;
                pending->names << QFileInfo(path).completeBaseName();
            }
            if (inputs.empty())
                return QObject::tr("none of the strip's first images could be read");
            QueryKeyOptions options;
            options.method = pending->method;
            auto map = queryKeyMap(*pending->model, inputs, pending->layer, pending->head, options);
            if (!map)
                return QString::fromStdString(map.message());
            pending->map = std::make_shared<const QueryKeyMap>(std::move(*map));
            return QString();
        },
        kQueryKeyChannel);
}

void MainWindow::selectQueryKeyPoint(int image, int token)
{
    if (!m_queryKey || image < 0 || image >= m_queryKey->paths.size())
        return;
    const int row = int(m_images->paths().indexOf(m_queryKey->paths[image]));
    setQuery(token);
    if (row >= 0)
        selectImage(row);
    refreshQueryKeyMap();
}
