#include "gui/QueryKeyDock.h"

#include <attnscope/Image.h>

#include <QComboBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include <algorithm>

using namespace attnscope;

namespace {

constexpr int kQueryKeyChannel = 9; // a worker channel of its own: a map never supersedes an ablation or an export

// A Swin's query is a patch of the first grid, and a map's tokens are at its block's stage grid, each the 2^s x 2^s
// patches merged into it: a patch to its token, and a token to its top-left patch. A ViT's are the same tokens.
int tokenOfQuery(const QueryKeyMap& map, const ModelConfig& c, int query)
{
    if (map.stage < 0 || query < 0)
        return query;
    const int across = c.imageWidth / c.patchSize;
    return ((query / across) >> map.stage) * map.gridWidth + ((query % across) >> map.stage);
}

int queryOfToken(const QueryKeyMap& map, const ModelConfig& c, int token)
{
    if (map.stage < 0)
        return token;
    return ((token / map.gridWidth) << map.stage) * (c.imageWidth / c.patchSize) + ((token % map.gridWidth) << map.stage);
}

} // namespace

struct QueryKeyDock::Shown {
    QString key; // what it is of: the model, the head, the method and the images
    std::shared_ptr<const EngineModel> model;
    int layer = 0, head = 0;
    QueryKeyMethod method = QueryKeyMethod::Pca;
    QStringList candidates;   // the strip's first images
    QStringList paths, names; // those that were read, by QueryKeyPoint::image
    std::shared_ptr<const QueryKeyMap> map;
    QString error;
};

QueryKeyDock::QueryKeyDock(EngineWorker* worker, Reader read, QWidget* parent)
    : QDockWidget(tr("Query-key map"), parent)
    , m_worker(worker)
    , m_read(std::move(read))
{
    setObjectName("queryKeyDock");
    auto* content = new QWidget;
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(4, 4, 4, 4);
    auto* row = new QHBoxLayout;
    m_colouring = new QComboBox(content);
    m_colouring->setAccessibleName(tr("Colour the points by"));
    m_colouring->addItems({ tr("queries and keys"), tr("patch row"), tr("patch column") });
    m_method = new QComboBox(content);
    m_method->setAccessibleName(tr("Projection"));
    m_method->addItems({ tr("PCA"), tr("t-SNE") });
    m_method->setToolTip(tr("PCA: exact, signs fixed. t-SNE: exact, perplexity 30, seeded (slower)."));
    row->addWidget(new QLabel(tr("Colour"), content));
    row->addWidget(m_colouring);
    row->addWidget(new QLabel(tr("Projection"), content));
    row->addWidget(m_method);
    row->addStretch(1);
    m_view = new QueryKeyMapView(content);
    m_view->setToolTip(tr("The selected head's queries and keys over the strip's first %1 images, normalised as "
                          "AttentionViz does. Click a point to make its image and token the query.").arg(kImages));
    layout->addLayout(row);
    layout->addWidget(m_view, 1);
    setWidget(content);

    connect(m_colouring, &QComboBox::currentIndexChanged, this,
            [this](int index) { m_view->setColouring(QueryKeyColouring(std::clamp(index, 0, 2))); });
    connect(m_method, &QComboBox::currentIndexChanged, this, &QueryKeyDock::refresh);
    connect(m_view, &QueryKeyMapView::pointClicked, this, [this](int image, int token) {
        if (m_shown && m_shown->map && image >= 0 && image < m_shown->paths.size())
            emit pointPicked(m_shown->paths[image], queryOfToken(*m_shown->map, m_shown->model->config(), token));
    });
    connect(this, &QDockWidget::visibilityChanged, this, [this](bool visible) {
        if (visible)
            refresh();
    });
    connect(m_worker, &EngineWorker::taskFinished, this, [this](quint64 id) {
        if (id == m_job && m_pending) {
            m_shown = std::move(m_pending);
            refresh();
        }
    });
    connect(m_worker, &EngineWorker::failed, this, [this](quint64 id, const QString& message) {
        if (id == m_job && m_pending) {
            m_shown = std::move(m_pending);
            m_shown->error = message; // said in the dock, and not asked again for the same head and images
            refresh();
        }
    });
}

void QueryKeyDock::setMethod(QueryKeyMethod method)
{
    const int index = method == QueryKeyMethod::Tsne ? 1 : 0;
    if (m_method->currentIndex() != index)
        m_method->setCurrentIndex(index); // comes back through refresh
    else
        refresh();
}

void QueryKeyDock::refresh()
{
    if (!m_read)
        return;
    const Inputs in = m_read();
    const auto say = [this](const QString& message) {
        m_view->setMessage(message);
        emit shown();
    };
    if (!in.model)
        return say(tr("No model."));
    const ModelConfig& c = in.model->config();
    if (c.attention == AttentionKind::Quadratic)
        return say(tr("%1 has quadratic attention: its logits come from positions alone, without queries and keys.").arg(in.modelName));
    const int layer = std::clamp(in.view.layer, 1, c.depth);
    const int head = in.view.head.isSingle() ? in.view.head.head : -1;
    if (head < 0 || head >= c.headsAt(layer)) // a Swin block has its stage's heads
        return say(tr("Choose a head (not the mean, rollout, relevance or norms) to map its queries and keys."));
    const QStringList candidates = in.strip.mid(0, kImages);
    if (candidates.isEmpty())
        return say(tr("Add images to the strip: the map is of their queries and keys."));
    const QueryKeyMethod method = m_method->currentIndex() == 1 ? QueryKeyMethod::Tsne : QueryKeyMethod::Pca;
    const QString key = QStringLiteral("%1|%2|%3|%4|%5")
                            .arg(quintptr(in.model.get()))
                            .arg(layer)
                            .arg(head)
                            .arg(QString::fromLatin1(toString(method)), candidates.join(QLatin1Char('\n')));
    if (m_shown && m_shown->key == key) {
        if (!m_shown->map)
            return say(tr("No map of layer %1 head %2: %3").arg(layer).arg(head).arg(m_shown->error));
        if (m_view->map() != m_shown->map)
            m_view->setMap(m_shown->map, m_shown->names);
        const int image = in.imageShown.isEmpty() ? -1 : int(m_shown->paths.indexOf(in.imageShown));
        const int token = tokenOfQuery(*m_shown->map, c, in.view.query);
        m_view->setHighlight(image >= 0 ? std::optional<std::pair<int, int>>({ image, token }) : std::nullopt);
        emit shown();
        return;
    }
    // Computed only while the dock shows: another head or image set is asked for when it is looked at.
    if (!m_view->isVisible() || (m_pending && m_pending->key == key))
        return;
    start(key, in, layer, head, method);
}

void QueryKeyDock::start(const QString& key, const Inputs& in, int layer, int head, QueryKeyMethod method)
{
    auto pending = std::make_shared<Shown>();
    pending->key = key;
    pending->model = in.model;
    pending->layer = layer;
    pending->head = head;
    pending->method = method;
    pending->candidates = in.strip.mid(0, kImages);
    m_pending = pending;
    m_view->setMessage(tr("Mapping the queries and keys of layer %1 head %2 over %n image(s)…", nullptr, int(pending->candidates.size()))
                           .arg(layer)
                           .arg(head));
    m_job = m_worker->runTask(
        [pending](EngineBackend& engine, const std::function<bool()>&, const EngineWorker::Progress&) {
            QueryKeyOptions options;
            options.method = pending->method;
            auto map = engine.queryKeyMap(*pending->model, pending->candidates, pending->layer, pending->head, options, pending->paths);
            for (const QString& path : pending->paths)
                pending->names << QFileInfo(path).completeBaseName();
            if (!map)
                return QString::fromStdString(map.message());
            pending->map = std::make_shared<const QueryKeyMap>(std::move(*map));
            return QString();
        },
        kQueryKeyChannel);
}
