#include "view/QueryKeyMapView.h"

#include "plots/PlotHover.h"

#include <QMouseEvent>
#include <QPainter>

namespace attnscope {

namespace {
constexpr double kPointRadius = 2.4;
constexpr double kPickRadius = 6; // a click or hover within this many pixels of a point is on it
} // namespace

QueryKeyMapView::QueryKeyMapView(QWidget* parent)
    : QWidget(parent)
{
    setAccessibleName(tr("Query-key map"));
    setMouseTracking(true);
    setMessage(tr("Choose a head (not the mean) to map its queries and keys."));
}

void QueryKeyMapView::setMap(std::shared_ptr<const QueryKeyMap> map, const QStringList& images)
{
    m_map = std::move(map);
    m_images = images;
    if (m_map)
        m_message.clear();
    update();
}

void QueryKeyMapView::setMessage(const QString& message)
{
    m_map = nullptr;
    m_message = message;
    update();
}

void QueryKeyMapView::setColouring(QueryKeyColouring colouring)
{
    m_colouring = colouring;
    update();
}

void QueryKeyMapView::setHighlight(std::optional<std::pair<int, int>> imageAndToken)
{
    m_highlight = imageAndToken;
    update();
}

ScatterFrame QueryKeyMapView::frame() const
{
    const QRectF area = QRectF(rect()).adjusted(8, 24, -8, -8);
    return m_map ? scatterFrame(*m_map, area) : ScatterFrame { area };
}

QPointF QueryKeyMapView::pointPosition(size_t index) const
{
    if (!m_map || index >= m_map->points.size())
        return {};
    return frame().toScreen(m_map->points[index].x, m_map->points[index].y);
}

std::optional<size_t> QueryKeyMapView::pointAt(const QPoint& pos) const
{
    if (!m_map)
        return std::nullopt;
    return nearestPoint(frame(), *m_map, QPointF(pos), kPickRadius);
}

QString QueryKeyMapView::hoverText(const QPoint& pos) const
{
    const auto at = pointAt(pos);
    if (!at)
        return {};
    const QueryKeyPoint& p = m_map->points[*at];
    const QString image = p.image < m_images.size() ? m_images[p.image] : tr("image %1").arg(p.image);
    const QString place = p.row < 0 ? (p.token == 0 ? tr("CLS token") : tr("prefix token %1").arg(p.token))
                                    : tr("patch (%1, %2)").arg(p.row).arg(p.col);
    return tr("%1 · %2 of token %3 · %4").arg(image, p.key ? tr("key") : tr("query")).arg(p.token).arg(place);
}

void QueryKeyMapView::paintEvent(QPaintEvent*)
{
    QPainter painter(this);
    painter.fillRect(rect(), Qt::white);
    const PlotStyle style;
    painter.setPen(style.mutedText);
    painter.setFont(style.font(style.subtitleFontPx));
    if (!m_map) {
        painter.drawText(rect().adjusted(12, 12, -12, -12), Qt::AlignCenter | Qt::TextWordWrap, m_message);
        return;
    }
    const QString method = m_map->method == QueryKeyMethod::Tsne ? tr("t-SNE") : tr("PCA");
    painter.drawText(QRectF(8, 2, width() - 16, 20), Qt::AlignLeft | Qt::AlignVCenter,
                     tr("layer %1 · head %2%7 · %3 images · %4 · agreement %5 · %6")
                         .arg(m_map->layer)
                         .arg(m_map->head)
                         .arg(m_map->images)
                         .arg(method)
                         .arg(m_map->agreement, 0, 'f', 2)
                         .arg(m_colouring == QueryKeyColouring::Kind  ? tr("blue queries, orange keys")
                                  : m_colouring == QueryKeyColouring::Row ? tr("colour: patch row (keys lighter)")
                                                                          : tr("colour: patch column (keys lighter)"))
                         .arg(m_map->rotated  ? tr(" (q, k rotated by RoPE)")
                              : m_map->stage >= 0 ? tr(" (stage %1, %2×%3 tokens%4)")
                                                        .arg(m_map->stage + 1)
                                                        .arg(m_map->gridHeight)
                                                        .arg(m_map->gridWidth)
                                                        .arg(m_map->cosine ? tr(", unit q and k") : QString())
                                                  : QString()));
    paintQueryKeyScatter(painter, frame(), *m_map, m_colouring, kPointRadius, style, m_highlight);
}

void QueryKeyMapView::mouseMoveEvent(QMouseEvent* event)
{
    showHoverText(this, event->globalPosition().toPoint(), hoverText(event->position().toPoint()));
}

void QueryKeyMapView::mousePressEvent(QMouseEvent* event)
{
    if (event->button() != Qt::LeftButton) // the right button opens the menu; it selects nothing
        return;
    if (const auto at = pointAt(event->position().toPoint()))
        emit pointClicked(m_map->points[*at].image, m_map->points[*at].token);
}

} // namespace attnscope
