#include "figures/QueryKeyFigure.h"

#include "plots/Colormap.h"

#include <QFontMetricsF>
#include <QPainter>

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnscope {

namespace {

QString methodName(const QueryKeyMap& map)
{
    return map.method == QueryKeyMethod::Tsne ? QStringLiteral("t-SNE (perplexity 30)") : QStringLiteral("joint PCA");
}

QString imagesText(const QueryKeyFigure& f)
{
    return f.images.size() == 1 ? QString::fromStdString(f.images.front()) : QStringLiteral("%1 images").arg(f.images.size());
}

QImage canvas(const QSizeF& size, double scale)
{
    QImage image(QSize(int(std::ceil(size.width() * scale)), int(std::ceil(size.height() * scale))), QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(scale);
    image.fill(Qt::white);
    return image;
}

void drawDisc(QPainter& painter, const QPointF& centre, double radius, const QColor& fill)
{
    painter.setBrush(fill);
    painter.drawEllipse(centre, radius, radius);
}

// "layer 3", or a Swin's "layer 3 (stage 2)": its points are at that stage's grid.
QString layerName(const QueryKeyMap& map)
{
    return map.stage >= 0 ? QStringLiteral("layer %1 (stage %2)").arg(map.layer).arg(map.stage + 1) : QStringLiteral("layer %1").arg(map.layer);
}

// The patch rows (or columns) of the map's grid, for colouring by them.
int gridSide(const QueryKeyMap& map, QueryKeyColouring colouring)
{
    int side = 1;
    for (const auto& q : map.points)
        side = std::max(side, (colouring == QueryKeyColouring::Row ? q.row : q.col) + 1);
    return side;
}

// Queries blue and keys orange (Okabe-Ito), or by the patch's row or column (viridis, keys a shade lighter so that both
// kinds stay told apart; prefix tokens grey).
QColor colourOf(const QueryKeyPoint& p, int side, QueryKeyColouring colouring, const PlotStyle& style)
{
    if (colouring == QueryKeyColouring::Kind)
        return p.key ? style.color(1) : style.color(0);
    if (p.row < 0)
        return style.neutral;
    const QColor c = colormapColor(Colormap::Viridis, side > 1 ? double(colouring == QueryKeyColouring::Row ? p.row : p.col) / (side - 1) : 0.5);
    return p.key ? c.lighter(130) : c;
}

} // namespace

ScatterFrame scatterFrame(const QueryKeyMap& map, const QRectF& area)
{
    double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
    for (const auto& p : map.points) {
        x0 = std::min(x0, p.x);
        x1 = std::max(x1, p.x);
        y0 = std::min(y0, p.y);
        y1 = std::max(y1, p.y);
    }
    ScatterFrame f;
    f.area = area;
    if (!(x1 >= x0) || !(y1 >= y0))
        return f;
    f.cx = (x0 + x1) / 2;
    f.cy = (y0 + y1) / 2;
    const double span = std::max({ x1 - x0, y1 - y0, 1e-12 });
    f.scale = 0.92 * std::min(area.width(), area.height()) / span;
    return f;
}

void paintQueryKeyScatter(QPainter& painter, const ScatterFrame& frame, const QueryKeyMap& map, QueryKeyColouring colouring,
                          double radius, const PlotStyle& style, std::optional<std::pair<int, int>> highlight)
{
    painter.save();
    painter.setClipRect(frame.area);
    painter.setRenderHint(QPainter::Antialiasing, true);
    painter.setPen(Qt::NoPen);
    // Keys first, then queries over them.
    const int side = gridSide(map, colouring);
    for (int pass = 0; pass < 2; ++pass)
        for (const auto& p : map.points) {
            if (p.key != (pass == 0))
                continue;
            QColor c = colourOf(p, side, colouring, style);
            c.setAlphaF(0.75);
            drawDisc(painter, frame.toScreen(p.x, p.y), radius, c);
        }
    if (highlight) {
        painter.setBrush(Qt::NoBrush);
        for (const auto& p : map.points)
            if (p.image == highlight->first && p.token == highlight->second) {
                painter.setPen(QPen(p.key ? style.color(1).darker(150) : style.foreground, 2));
                painter.drawEllipse(frame.toScreen(p.x, p.y), radius + 4, radius + 4);
            }
    }
    painter.restore();
}

std::optional<size_t> nearestPoint(const ScatterFrame& frame, const QueryKeyMap& map, const QPointF& at, double within)
{
    std::optional<size_t> best;
    double bestDistance = within * within;
    for (size_t i = 0; i < map.points.size(); ++i) {
        const QPointF d = frame.toScreen(map.points[i].x, map.points[i].y) - at;
        const double d2 = d.x() * d.x() + d.y() * d.y();
        if (d2 <= bestDistance) {
            bestDistance = d2;
            best = i;
        }
    }
    return best;
}

QImage renderQueryKeyFigure(const QueryKeyFigure& figure, QueryKeyColouring colouring, double scale)
{
    const PlotStyle style;
    const QSizeF size(760, 700);
    QImage image = canvas(size, scale);
    if (figure.maps.empty())
        return image;
    const QueryKeyMap& map = figure.maps[std::min(figure.focus, figure.maps.size() - 1)];
    QPainter painter(&image);
    painter.setPen(style.foreground);
    painter.setFont(style.font(style.titleFontPx, true));
    painter.drawText(QRectF(16, 10, size.width() - 32, 24), Qt::AlignLeft | Qt::AlignVCenter,
                     QStringLiteral("Queries and keys of %1, head %2").arg(layerName(map)).arg(map.head));
    painter.setFont(style.font(style.subtitleFontPx));
    painter.setPen(style.mutedText);
    painter.drawText(QRectF(16, 34, size.width() - 32, 18), Qt::AlignLeft | Qt::AlignVCenter,
                     QStringLiteral("%1 · %2 · %3 tokens each · %4 of normalised rows (AttentionViz)%6 · agreement %5")
                         .arg(QString::fromStdString(figure.model), imagesText(figure))
                         .arg(map.tokens)
                         .arg(methodName(map))
                         .arg(map.agreement, 0, 'f', 3)
                         .arg(map.rotated  ? QStringLiteral(", q and k rotated by RoPE")
                              : map.cosine ? QStringLiteral(", unit q and k (cosine attention)")
                                           : QString()));
    const QRectF area(40, 64, size.width() - 80, size.height() - 64 - 60);
    painter.setPen(QPen(style.grid, 1));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(area);
    paintQueryKeyScatter(painter, scatterFrame(map, area), map, colouring, 2.6, style);
    // The key under the scatter.
    painter.setFont(style.font(style.legendFontPx));
    double x = 40;
    const double y = size.height() - 40;
    const auto entry = [&](const QColor& c, const QString& text) {
        painter.setPen(Qt::NoPen);
        drawDisc(painter, QPointF(x + 6, y), 5, c);
        painter.setPen(style.foreground);
        const double w = QFontMetricsF(painter.font()).horizontalAdvance(text);
        painter.drawText(QRectF(x + 16, y - 10, w + 4, 20), Qt::AlignLeft | Qt::AlignVCenter, text);
        x += 16 + w + 24;
    };
    if (colouring == QueryKeyColouring::Kind) {
        entry(style.color(0), QStringLiteral("query q''"));
        entry(style.color(1), QStringLiteral("key k''"));
    } else {
        entry(colormapColor(Colormap::Viridis, 0), colouring == QueryKeyColouring::Row ? QStringLiteral("top row") : QStringLiteral("left column"));
        entry(colormapColor(Colormap::Viridis, 1), colouring == QueryKeyColouring::Row ? QStringLiteral("bottom row") : QStringLiteral("right column"));
        entry(style.neutral, QStringLiteral("prefix tokens (keys lighter)"));
    }
    painter.setPen(style.mutedText);
    painter.setFont(style.font(style.subtitleFontPx));
    painter.drawText(QRectF(x, y - 10, size.width() - x - 20, 20), Qt::AlignLeft | Qt::AlignVCenter,
                     map.stage >= 0 ? QStringLiteral("agreement: mean Spearman ρ of q·k and closeness in the plane, over each query's window")
                                    : QStringLiteral("agreement: mean Spearman ρ of q·k and closeness in the plane"));
    return image;
}

QImage renderQueryKeyGrid(const QueryKeyFigure& figure, double scale)
{
    const PlotStyle style;
    int layers = 0, heads = 0, firstLayer = std::numeric_limits<int>::max(), firstHead = std::numeric_limits<int>::max();
    for (const auto& m : figure.maps) {
        layers = std::max(layers, m.layer);
        heads = std::max(heads, m.head + 1);
        firstLayer = std::min(firstLayer, m.layer);
        firstHead = std::min(firstHead, m.head);
    }
    const int rows = figure.maps.empty() ? 1 : layers - firstLayer + 1, columns = figure.maps.empty() ? 1 : heads - firstHead;
    const double panel = std::clamp(900.0 / std::max(rows, columns), 44.0, 130.0), gap = 4, left = 70, top = 84;
    const QSizeF size(std::max(640.0, left + columns * (panel + gap) + 20), top + rows * (panel + gap) + 44);
    QImage image = canvas(size, scale);
    QPainter painter(&image);
    painter.setPen(style.foreground);
    painter.setFont(style.font(style.titleFontPx, true));
    painter.drawText(QRectF(16, 10, size.width() - 32, 24), Qt::AlignLeft | Qt::AlignVCenter,
                     QStringLiteral("Queries and keys of every head (global view)"));
    painter.setFont(style.font(style.subtitleFontPx));
    painter.setPen(style.mutedText);
    const QString method = figure.maps.empty() ? QString() : methodName(figure.maps.front());
    painter.drawText(QRectF(16, 34, size.width() - 32, 18), Qt::AlignLeft | Qt::AlignVCenter,
                     QStringLiteral("%1 · %2 · %3 per head · blue queries, orange keys · number: agreement")
                         .arg(QString::fromStdString(figure.model), imagesText(figure), method));
    painter.setFont(style.font(style.tickFontPx));
    painter.setPen(style.foreground);
    for (int h = 0; h < columns; ++h)
        painter.drawText(QRectF(left + h * (panel + gap), top - 22, panel, 20), Qt::AlignCenter, QStringLiteral("head %1").arg(firstHead + h));
    for (int l = 0; l < rows; ++l) {
        // A Swin's rows say their stage under the layer: its heads (columns) are the stage's.
        const auto m = std::find_if(figure.maps.begin(), figure.maps.end(), [&](const QueryKeyMap& q) { return q.layer == firstLayer + l; });
        const bool staged = m != figure.maps.end() && m->stage >= 0;
        painter.drawText(QRectF(4, top + l * (panel + gap), left - 10, panel), Qt::AlignRight | Qt::AlignVCenter,
                         staged ? QStringLiteral("layer %1\nstage %2").arg(firstLayer + l).arg(m->stage + 1) : QStringLiteral("layer %1").arg(firstLayer + l));
    }
    const double radius = std::clamp(panel / 90.0, 0.6, 1.4);
    for (const auto& m : figure.maps) {
        const QRectF area(left + (m.head - firstHead) * (panel + gap), top + (m.layer - firstLayer) * (panel + gap), panel, panel);
        painter.setPen(QPen(style.grid, 1));
        painter.setBrush(Qt::NoBrush);
        painter.drawRect(area);
        paintQueryKeyScatter(painter, scatterFrame(m, area), m, QueryKeyColouring::Kind, radius, style);
        painter.setPen(style.mutedText);
        painter.setFont(style.font(std::max(8, style.tickFontPx - 3)));
        painter.drawText(area.adjusted(3, 2, -3, -2), Qt::AlignRight | Qt::AlignTop, QString::number(m.agreement, 'f', 2));
    }
    return image;
}

} // namespace attnscope
