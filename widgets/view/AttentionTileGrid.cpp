#include "view/AttentionTileGrid.h"

#include "plots/AttentionOverlay.h"
#include "plots/HeadAblationPlot.h"
#include "plots/PlotHover.h"

#include <attnscope/Analyses.h>

#include <QContextMenuEvent>
#include <QMenu>
#include <QMouseEvent>
#include <QPainter>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

namespace attnscope {

namespace {
constexpr int kLabel = 28; // room for the row and column labels
constexpr int kGap = 3;
// Tiles are rendered once at kRenderTile and drawn at the size that fits the widget, kMinTile to kRenderTile: a whole
// 12 x 12 grid (13 columns with the mean) shows in a dock a third of a 1280 x 800 screen high.
constexpr int kRenderTile = 56;
constexpr int kMinTile = 14;
} // namespace

AttentionTileGrid::AttentionTileGrid(QWidget* parent)
    : QWidget(parent)
{
    setAccessibleName(tr("Layers by heads"));
    setMouseTracking(true); // hovering a tile names it and the patch under the pointer
}

void AttentionTileGrid::setRows(const QueryRows& trace, const Image& shown)
{
    m_tiles.clear();
    m_maps.clear();
    m_gridH = trace.gridHeight;
    m_gridW = trace.gridWidth;
    m_prefix = trace.numPrefixTokens;
    m_depth = trace.depth;
    m_windows = trace.windows;
    const auto patch = queryPatchOf(trace.query, trace.numPrefixTokens, trace.gridWidth);
    // Tiles are rendered at the size they are drawn (device pixels), over the image scaled once: 156 maps at
    // 224 px and a downscale at paint time cost 16 times as much (docs/performance.md, click path).
    const int side = int(std::ceil(kRenderTile * devicePixelRatioF()));
    const QImage small = shown.empty() ? QImage()
                                       : toQImage(shown).scaled(side, side, Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
    // An attention-pool head's map is the last row, "pool": its query is the head's own, no patch.
    const int rows = lastMapLayer(trace);
    for (int l = 1; l <= rows; ++l) {
        std::vector<QImage> row;
        std::vector<Tensor> maps;
        // A Swin block has its stage's heads: the columns past them are empty, the mean stays last.
        const int heads = trace.hierarchical() ? trace.windows[size_t(l - 1)].heads : trace.numHeads;
        for (int h = 0; h <= trace.numHeads; ++h) {
            if (h >= heads && h < trace.numHeads) {
                row.emplace_back();
                maps.emplace_back();
                continue;
            }
            const AttentionMap map = attentionMap(trace, l, h == trace.numHeads ? -1 : h);
            row.push_back(renderAttentionOverlay(small, map, trace.gridHeight, trace.gridWidth, 0.7, m_colormap,
                                                 l > trace.depth ? std::nullopt : patch));
            maps.push_back(map.patches);
        }
        m_tiles.push_back(std::move(row));
        m_maps.push_back(std::move(maps));
    }
    m_tile = fittingTile(size());
    updateGeometry();
    update();
}

int AttentionTileGrid::fittingTile(const QSize& area) const
{
    const int rows = int(m_tiles.size()), cols = m_tiles.empty() ? 0 : int(m_tiles.front().size());
    if (rows == 0 || cols == 0)
        return kRenderTile;
    const int byWidth = (area.width() - kLabel - 2 * kGap) / cols - kGap;
    const int byHeight = (area.height() - kLabel) / rows - kGap;
    return std::clamp(std::min(byWidth, byHeight), kMinTile, kRenderTile);
}

void AttentionTileGrid::resizeEvent(QResizeEvent*)
{
    m_tile = fittingTile(size());
    update();
}

QSize AttentionTileGrid::minimumSizeHint() const
{
    const int rows = int(m_tiles.size()), cols = m_tiles.empty() ? 0 : int(m_tiles.front().size());
    return { kLabel + cols * (kMinTile + kGap) + kGap * 2, kLabel + rows * (kMinTile + kGap) };
}

void AttentionTileGrid::setSelection(int layer, int head)
{
    m_layer = layer;
    m_head = head;
    update();
}

void AttentionTileGrid::setColormap(Colormap colormap) { m_colormap = colormap; }

void AttentionTileGrid::setImportance(std::vector<HeadAblationRow> rows, const QString& source)
{
    m_importance = std::move(rows);
    m_importanceSource = source;
    std::tie(m_klLow, m_klHigh) = klRange(m_importance); // the head_ablation figure's log scale
    m_mostImportant = mostImportantHeads(m_importance);
    update();
}

void AttentionTileGrid::setAblatedHead(int layer, int head)
{
    m_ablatedLayer = layer;
    m_ablatedHead = head;
    update();
}

QSize AttentionTileGrid::sizeHint() const
{
    const int rows = int(m_tiles.size()), cols = m_tiles.empty() ? 0 : int(m_tiles.front().size());
    return { kLabel + cols * (kRenderTile + kGap) + kGap * 2, kLabel + rows * (kRenderTile + kGap) };
}

QRect AttentionTileGrid::tileRect(int layerIndex, int column) const
{
    const int cols = m_tiles.empty() ? 0 : int(m_tiles.front().size());
    const int extra = column == cols - 1 ? kGap * 2 : 0; // the mean column stands apart
    return { kLabel + column * (m_tile + kGap) + extra, kLabel + layerIndex * (m_tile + kGap), m_tile, m_tile };
}

std::optional<std::pair<int, int>> AttentionTileGrid::tileAt(const QPoint& pos) const
{
    for (size_t l = 0; l < m_tiles.size(); ++l)
        for (size_t c = 0; c < m_tiles[l].size(); ++c)
            if (!m_tiles[l][c].isNull() && tileRect(int(l), int(c)).contains(pos))
                return std::make_pair(int(l) + 1, c + 1 == m_tiles[l].size() ? -1 : int(c));
    return std::nullopt;
}

QString AttentionTileGrid::hoverText(const QPoint& pos) const
{
    const auto tile = tileAt(pos);
    if (!tile)
        return {};
    const int l = tile->first - 1, c = tile->second < 0 ? int(m_tiles[size_t(l)].size()) - 1 : tile->second;
    const QRect r = tileRect(l, c);
    const QString layer = tile->first > m_depth             ? tr("attention pool")
        : size_t(tile->first) <= m_windows.size() ? tr("layer %1 (%2)").arg(tile->first).arg(QString::fromStdString(blockName(m_windows[size_t(l)])))
                                                  : tr("layer %1").arg(tile->first);
    QString text = tile->second < 0 ? tr("%1 · mean of heads").arg(layer) : tr("%1 · head %2").arg(layer).arg(tile->second);
    if (m_gridH <= 0 || m_gridW <= 0 || r.width() <= 0 || r.height() <= 0)
        return text;
    const int col = std::min(m_gridW - 1, (pos.x() - r.left()) * m_gridW / r.width());
    const int row = std::min(m_gridH - 1, (pos.y() - r.top()) * m_gridH / r.height());
    const Tensor& map = m_maps[size_t(l)][size_t(c)];
    text += tr(" · token %1 · patch (%2, %3)").arg(m_prefix + row * m_gridW + col).arg(row).arg(col);
    // A Swin block's map is at its stage's grid: the patch's token there, outside the window or not.
    if (const auto v = mapValueAt(AttentionMap { map }, m_gridH, m_gridW, row, col))
        text += std::isnan(*v) ? tr(" · outside the window") : tr(" · attention %1").arg(*v, 0, 'g', 4);
    for (const auto& r : m_importance)
        if (r.layer == tile->first && r.head == tile->second)
            text += tr("\nablated over %1: KL %2 · %3% of predictions flipped").arg(m_importanceSource).arg(r.kl.mean, 0, 'g', 3).arg(100.0 * r.flipShare, 0, 'f', 1)
                + (r.accuracy.n > 0 ? tr(" · accuracy %1 pt").arg(100.0 * r.accuracy.mean, 0, 'f', 1) : QString());
    if (tile->second >= 0)
        text += tr("\nright-click: ablate this head on the image");
    return text;
}

void AttentionTileGrid::mouseMoveEvent(QMouseEvent* event)
{
    showHoverText(this, event->globalPosition().toPoint(), hoverText(event->position().toPoint()));
}

void AttentionTileGrid::clear()
{
    m_tiles.clear();
    m_maps.clear();
    updateGeometry();
    update();
}

void AttentionTileGrid::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.fillRect(rect(), palette().window());
    if (m_tiles.empty())
        return;
    p.setRenderHint(QPainter::SmoothPixmapTransform, m_tile != kRenderTile);
    p.setPen(palette().windowText().color());
    const int cols = int(m_tiles.front().size());
    // Small tiles are labelled with the head's number alone; the mean's label may run past its tile, it being the last.
    const bool roomy = m_tile >= 28;
    for (int c = 0; c < cols; ++c) {
        const QRect tile = tileRect(0, c);
        const bool mean = c == cols - 1;
        const int w = mean ? std::max(m_tile, fontMetrics().horizontalAdvance(tr("mean")) + 4) : m_tile;
        p.drawText(QRect(tile.center().x() - w / 2, 0, w, kLabel), Qt::AlignCenter,
                   mean ? tr("mean") : roomy ? tr("h%1").arg(c) : QString::number(c));
    }
    // Head importance: a bar along the tile's bottom, its colour and length by the head's mean KL (log scale), the
    // most important heads numbered; the head ablated on this image crossed out.
    const auto paintImportance = [&](const QRect& r, int layer, int head) {
        for (const auto& row : m_importance) {
            if (row.layer != layer || row.head != head)
                continue;
            const double v = std::isfinite(row.kl.mean) ? std::clamp(row.kl.mean, m_klLow, m_klHigh) : m_klLow;
            const double t = std::log(v / m_klLow) / std::log(m_klHigh / m_klLow);
            const int h = std::max(3, m_tile / 8);
            p.fillRect(QRect(r.left(), r.bottom() - h + 1, r.width(), h), QColor(0, 0, 0, 140));
            p.fillRect(QRect(r.left(), r.bottom() - h + 1, std::max(1, int(std::round(t * r.width()))), h),
                       QColor::fromRgb(colormapColor(Colormap::Magma, 0.25 + 0.75 * t)));
            for (size_t k = 0; k < m_mostImportant.size(); ++k)
                if (m_mostImportant[k] == &row) {
                    const QRect badge(r.left() + 1, r.top() + 1, std::max(12, m_tile / 4), std::max(12, m_tile / 4));
                    p.fillRect(badge, QColor(0, 0, 0, 170));
                    p.setPen(Qt::white);
                    p.drawText(badge, Qt::AlignCenter, QString::number(k + 1));
                    p.setPen(palette().windowText().color());
                }
        }
        if (layer == m_ablatedLayer && head == m_ablatedHead) {
            p.setPen(QPen(QColor(0xd5, 0x5e, 0x00), 3));
            p.drawLine(r.topLeft() + QPoint(3, 3), r.bottomRight() - QPoint(3, 3));
            p.drawLine(r.topRight() + QPoint(-3, 3), r.bottomLeft() + QPoint(3, -3));
            p.setPen(palette().windowText().color());
        }
    };
    for (size_t l = 0; l < m_tiles.size(); ++l) {
        p.drawText(QRect(0, tileRect(int(l), 0).top(), kLabel - 2, m_tile), Qt::AlignRight | Qt::AlignVCenter,
                   int(l) + 1 > m_depth ? tr("pool") : QString::number(l + 1));
        if (l > 0 && l < m_windows.size() && m_windows[l].stage != m_windows[l - 1].stage) { // a patch merge
            const int y = tileRect(int(l), 0).top() - kGap / 2 - 1;
            p.setPen(QPen(palette().mid().color(), 1, Qt::DashLine));
            p.drawLine(0, y, tileRect(int(l), cols - 1).right(), y);
            p.setPen(palette().windowText().color());
        }
        for (int c = 0; c < cols; ++c) {
            const QRect r = tileRect(int(l), c);
            if (m_tiles[l][size_t(c)].isNull()) // a head this Swin block has not
                continue;
            p.drawImage(r, m_tiles[l][size_t(c)]);
            const int head = c == cols - 1 ? -1 : c;
            if (head >= 0)
                paintImportance(r, int(l) + 1, head);
            if (int(l) + 1 == m_layer && head == m_head) {
                p.setPen(QPen(palette().highlight().color(), 3));
                p.drawRect(r.adjusted(-1, -1, 1, 1));
                p.setPen(palette().windowText().color());
            }
        }
    }
}

std::unique_ptr<QMenu> AttentionTileGrid::tileMenu(const QPoint& pos)
{
    const auto tile = tileAt(pos);
    if (!tile || tile->second < 0 || tile->first > m_depth) // the pool head is not ablated
        return nullptr;
    auto menu = std::make_unique<QMenu>(this);
    const int layer = tile->first, head = tile->second;
    menu->addAction(tr("Ablate layer %1 head %2 on this image").arg(layer).arg(head), this, [this, layer, head] { emit ablationRequested(layer, head); });
    if (m_ablatedLayer > 0)
        menu->addAction(tr("Restore every head"), this, [this] { emit ablationRequested(0, 0); });
    return menu;
}

void AttentionTileGrid::contextMenuEvent(QContextMenuEvent* event)
{
    if (auto menu = tileMenu(event->pos()))
        menu->exec(event->globalPos());
}

void AttentionTileGrid::mousePressEvent(QMouseEvent* event)
{
    if (event->button() != Qt::LeftButton) // the right button opens the menu; it selects nothing
        return;
    if (const auto tile = tileAt(event->position().toPoint()))
        emit tileClicked(tile->first, tile->second);
}

} // namespace attnscope
