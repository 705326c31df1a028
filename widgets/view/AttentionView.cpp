#include "view/AttentionView.h"

#include "io/DialogFolder.h"
#include "plots/AttentionOverlay.h"
#include "plots/PlotHover.h"
#include "plots/PlotStyle.h"

#include <cmath>
#include <QMouseEvent>
#include <QPainter>

namespace attnscope {

AttentionView::AttentionView(QWidget* parent)
    : QWidget(parent)
{
    setMinimumSize(200, 200);
    setCursor(Qt::CrossCursor);
    setAccessibleName(tr("Attention view"));
    setFocusPolicy(Qt::ClickFocus); // a click on the view makes Ctrl+C copy it
    setMouseTracking(true);         // hovering shows the patch's token and value
    addCopyAction(this, [this] { return m_rendered.isNull() ? QImage() : composed(); });
}

void AttentionView::setImage(const Image& shown, int gridH, int gridW, int numPrefixTokens)
{
    m_shown = shown;
    m_message.clear();
    m_gridH = gridH;
    m_gridW = gridW;
    m_prefix = numPrefixTokens;
    m_map.reset();
    rerender();
}

void AttentionView::setMap(const AttentionMap& map)
{
    m_map = map;
    rerender();
}

void AttentionView::setQuery(int query)
{
    if (query == m_query)
        return;
    m_query = query;
    update(); // the ring is painted over the rendering (paintMarked): a click renders the map once, in setMap
}

void AttentionView::setOpacity(double opacity)
{
    m_opacity = opacity;
    rerender();
}

void AttentionView::setColormap(Colormap colormap)
{
    m_colormap = colormap;
    rerender();
}

void AttentionView::setShowGrid(bool show)
{
    m_showGrid = show;
    update();
}

void AttentionView::setValueCaption(const QString& caption)
{
    m_valueCaption = caption;
    update();
}

void AttentionView::setMarkedPatches(std::vector<QPoint> patches)
{
    if (patches == m_marked)
        return;
    m_marked = std::move(patches);
    update();
}

void AttentionView::paintMarked(QPainter& p, const QRect& image) const
{
    if (m_gridW <= 0 || m_gridH <= 0)
        return;
    // The query patch: a thin ring just outside it, white on a dark rim (visible over any colour), drawn at the
    // display's resolution so that it never covers the patch it marks, however coarse the model's grid.
    if (const auto q = m_map ? queryPatchOf(m_query, m_prefix, m_gridW) : std::nullopt; q && q->y() < m_gridH) {
        // At a Swin block's stage grid, the query's token there: the f x f patches it covers, cut at the image's edge.
        const int f = mapCellPatches(*m_map, m_gridH, m_gridW), x0 = q->x() / f * f, y0 = q->y() / f * f;
        const double cw = image.width() / double(m_gridW), ch = image.height() / double(m_gridH);
        const QRectF cell(image.left() + x0 * cw, image.top() + y0 * ch, std::min(f, m_gridW - x0) * cw, std::min(f, m_gridH - y0) * ch);
        p.save();
        p.setRenderHint(QPainter::Antialiasing, true);
        p.setBrush(Qt::NoBrush);
        p.setPen(QPen(QColor(0, 0, 0, 200), 3.0));
        p.drawRect(cell.adjusted(-2.0, -2.0, 2.0, 2.0));
        p.setPen(QPen(Qt::white, 1.4));
        p.drawRect(cell.adjusted(-2.0, -2.0, 2.0, 2.0));
        p.restore();
    }
    if (m_marked.empty())
        return;
    p.save();
    p.setRenderHint(QPainter::Antialiasing, true);
    p.setBrush(Qt::NoBrush);
    const double cw = image.width() / double(m_gridW), ch = image.height() / double(m_gridH);
    for (const QPoint& c : m_marked) {
        const QRectF cell(image.left() + c.x() * cw, image.top() + c.y() * ch, cw, ch);
        p.setPen(QPen(QColor(0, 0, 0, 160), 3.0));
        p.drawRect(cell.adjusted(1.5, 1.5, -1.5, -1.5));
        p.setPen(QPen(QColor(0xd5, 0x5e, 0x00), 1.6)); // vermillion (PlotStyle's palette)
        p.drawRect(cell.adjusted(1.5, 1.5, -1.5, -1.5));
    }
    p.restore();
}

void AttentionView::setCaption(const QString& caption)
{
    m_caption = caption;
    update();
}

void AttentionView::clear()
{
    m_shown = {};
    m_map.reset();
    m_rendered = {};
    m_message.clear();
    update();
}

void AttentionView::setPlaceholder(const QString& text)
{
    m_placeholder = text;
    update();
}

void AttentionView::showMessage(const QString& message)
{
    clear();
    m_message = message;
}

void AttentionView::rerender()
{
    ++m_renders;
    if (m_shown.empty()) {
        m_rendered = {};
    } else if (m_map) {
        m_rendered = renderAttentionOverlay(m_shown, *m_map, m_gridH, m_gridW, m_opacity, m_colormap, std::nullopt); // query: paintMarked
    } else {
        m_rendered = toQImage(m_shown);
    }
    update();
}

namespace {

// The colour bar, its tick labels and its rotated title, right of the image: 12 + 14 (bar) + 4 (ticks) + up to ~40
// (labels such as "0.0125") + the title's line, so that a narrow view (compare mode) never clips the title.
constexpr int kBarWidth = 96;
constexpr int kCaptionHeight = 22;

} // namespace

QRect AttentionView::imageRect() const
{
    if (m_rendered.isNull())
        return {};
    const int top = m_caption.isEmpty() ? 0 : kCaptionHeight;
    const int bar = m_map ? kBarWidth : 0;
    const QSize space(std::max(1, width() - bar), std::max(1, height() - top));
    const QSize s = m_rendered.size().scaled(space, Qt::KeepAspectRatio);
    return QRect(QPoint((space.width() - s.width()) / 2, top + (space.height() - s.height()) / 2), s);
}

QRect AttentionView::barRect(const QRect& image) const
{
    return QRect(image.right() + 12, image.top() + image.height() / 8, 14, image.height() * 3 / 4);
}

QImage AttentionView::composed(double scale) const
{
    if (m_rendered.isNull())
        return {};
    const int side = 480;
    const QSize s = m_rendered.size().scaled(side, side, Qt::KeepAspectRatio);
    const int top = m_caption.isEmpty() ? 8 : kCaptionHeight + 8;
    const QSize logical(8 + s.width() + (m_map ? kBarWidth + 8 : 8), top + s.height() + 8);
    QImage out(logical * scale, QImage::Format_ARGB32);
    out.setDevicePixelRatio(scale);
    out.fill(Qt::white);
    QPainter p(&out);
    const QRect image(QPoint(8, top), s);
    if (!m_caption.isEmpty())
        p.drawText(QRect(0, 4, logical.width(), kCaptionHeight), Qt::AlignCenter, m_caption);
    p.drawImage(image, m_rendered);
    paintMarked(p, image);
    if (m_map)
        paintColorBar(p, barRect(image), m_colormap, { 0.0, mapMaximum(*m_map) }, Qt::Vertical, m_valueCaption, PlotStyle {});
    return out;
}

std::optional<QPoint> AttentionView::patchAt(const QPoint& pos) const
{
    const QRect r = imageRect();
    if (!r.contains(pos) || m_gridH <= 0 || m_gridW <= 0)
        return std::nullopt;
    const int col = std::min(m_gridW - 1, (pos.x() - r.left()) * m_gridW / r.width());
    const int row = std::min(m_gridH - 1, (pos.y() - r.top()) * m_gridH / r.height());
    return QPoint(col, row);
}

void AttentionView::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.fillRect(rect(), palette().window());
    if (m_rendered.isNull()) {
        p.drawText(rect().adjusted(12, 12, -12, -12), Qt::AlignCenter | Qt::TextWordWrap, shownText());
        return;
    }
    const QRect r = imageRect();
    if (!m_caption.isEmpty())
        p.drawText(QRect(0, 0, width(), kCaptionHeight), Qt::AlignCenter, m_caption);
    p.setRenderHint(QPainter::SmoothPixmapTransform, false); // patches stay crisp when enlarged
    p.drawImage(r, m_rendered);
    paintMarked(p, r);
    if (m_map) {
        p.setRenderHint(QPainter::Antialiasing, true);
        paintColorBar(p, barRect(r), m_colormap, { 0.0, mapMaximum(*m_map) }, Qt::Vertical, m_valueCaption, PlotStyle {});
    }
    if (m_showGrid && m_gridW > 0 && m_gridH > 0) {
        p.setPen(QPen(QColor(255, 255, 255, 90), 1));
        for (int c = 1; c < m_gridW; ++c)
            p.drawLine(r.left() + c * r.width() / m_gridW, r.top(), r.left() + c * r.width() / m_gridW, r.bottom());
        for (int row = 1; row < m_gridH; ++row)
            p.drawLine(r.left(), r.top() + row * r.height() / m_gridH, r.right(), r.top() + row * r.height() / m_gridH);
    }
}

QString AttentionView::hoverText(const QPoint& pos) const
{
    const auto patch = patchAt(pos);
    if (!patch || m_rendered.isNull())
        return {};
    QString text = tr("token %1 · patch (%2, %3)").arg(m_prefix + patch->y() * m_gridW + patch->x()).arg(patch->y()).arg(patch->x());
    if (const auto v = m_map ? mapValueAt(*m_map, m_gridH, m_gridW, patch->y(), patch->x()) : std::nullopt)
        text += std::isnan(*v) ? tr(" · outside the window") : tr(" · %1 %2").arg(m_valueCaption).arg(*v, 0, 'g', 4);
    return text;
}

void AttentionView::mouseMoveEvent(QMouseEvent* event)
{
    showHoverText(this, event->globalPosition().toPoint(), hoverText(event->position().toPoint()));
}

void AttentionView::mousePressEvent(QMouseEvent* event)
{
    if (event->button() != Qt::LeftButton) // the right button opens the menu (Copy): the picture stays the one looked at
        return;
    if (const auto patch = patchAt(event->position().toPoint()))
        emit queryRequested(m_prefix + patch->y() * m_gridW + patch->x());
}

} // namespace attnscope
