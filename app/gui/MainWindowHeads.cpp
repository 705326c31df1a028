// Head importance (docs/analyses.md section 8) in the window: the image set's ablation on the tiles and one head
// ablated on the current image; and the Query-key map dock (section 9, QueryKeyDock) placed and connected.
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

// A worker channel of its own, so that an ablation, a query-key map (QueryKeyDock) and an export never supersede each other.
constexpr int kAblationChannel = 8;

QString percent(double p) { return QStringLiteral("%1%").arg(100.0 * p, 0, 'f', 1); }

} // namespace

struct MainWindow::ShownAblation {
    QString path;
    std::shared_ptr<const EngineModel> model;
    int layer = 0, head = 0;
    HeadAblation result;
};

void MainWindow::buildHeadDocks(QDockWidget* besideDock)
{
    connect(m_importance, &QCheckBox::toggled, this, &MainWindow::setHeadImportance);
    connect(m_tiles, &AttentionTileGrid::ablationRequested, this, &MainWindow::ablateHead);
    connect(m_slots[0], &ModelSlot::setUpdated, this, &MainWindow::refreshImportance);
    connect(m_slots[0], &ModelSlot::modelLoaded, this, &MainWindow::refreshImportance); // its set summary is gone
    refreshImportance();

    m_queryKeyDock = new QueryKeyDock(m_worker.get(), [this] {
        const auto& trace = m_slots[0]->trace();
        return QueryKeyDock::Inputs { m_view, m_slots[0]->model(), m_slots[0]->name(), trace ? trace->path : QString(), m_images->paths() };
    }, this);
    addDockWidget(Qt::BottomDockWidgetArea, m_queryKeyDock);
    tabifyDockWidget(besideDock, m_queryKeyDock);
    m_viewMenu->addAction(m_queryKeyDock->toggleViewAction());
    connect(m_queryKeyDock, &QueryKeyDock::shown, this, &MainWindow::queryKeyMapShown);
    connect(m_queryKeyDock, &QueryKeyDock::pointPicked, this, [this](const QString& image, int token) {
        const int row = int(m_images->paths().indexOf(image));
        setQuery(token);
        if (row >= 0)
            selectImage(row);
        refreshQueryKeyMap();
    });
    for (auto signal : { &QAbstractItemModel::rowsInserted, &QAbstractItemModel::rowsRemoved })
        connect(m_images, signal, this, &MainWindow::refreshQueryKeyMap);
    connect(m_images, &QAbstractItemModel::modelReset, this, &MainWindow::refreshQueryKeyMap);

    connect(m_worker.get(), &EngineWorker::taskFinished, this, [this](quint64 id) {
        if (id == m_ablationJob && m_pendingAblation) {
            m_ablation = std::move(m_pendingAblation);
            refreshAblation();
        }
    });
    connect(m_worker.get(), &EngineWorker::failed, this, [this](quint64 id, const QString& message) {
        if (id == m_ablationJob && m_pendingAblation) {
            m_pendingAblation = nullptr;
            m_ablation = nullptr;
            refreshAblation();
            showError(message);
        }
    });
}

void MainWindow::setSetAblation(bool on) { m_setDock->setAblation(on); }

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
    m_worker->cancel(EngineWorker::TaskJob, kAblationChannel);
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
    m_ablationJob = m_worker->runTask(
        [pending](EngineBackend& engine, const std::function<bool()>& cancelled, const EngineWorker::Progress&) {
            auto a = engine.ablate(*pending->model, pending->path, HeadRef { pending->layer, pending->head }, cancelled);
            if (!a)
                return QString::fromStdString(a.message());
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

void MainWindow::setQueryKeyMethod(QueryKeyMethod method) { m_queryKeyDock->setMethod(method); }

void MainWindow::refreshQueryKeyMap()
{
    if (m_queryKeyDock)
        m_queryKeyDock->refresh();
}
