#include "figures/AttentionGridFigure.h"

#include "plots/AttentionOverlay.h"
#include "plots/PlotElements.h"

#include <QFontMetricsF>
#include <QPainter>
#include <algorithm>
#include <cmath>
#include <optional>

namespace attnscope {

namespace {

    // "rollout: Abnar & Zuidema (2020)", with the fusion and discard share when they are not the paper's.
    QString rolloutDescription(const RolloutOptions& o)
    {
        QString text = QStringLiteral("rollout: Abnar & Zuidema (2020)");
        if (o.fusion != HeadFusion::Mean)
            text += QStringLiteral(", %1 of heads").arg(QString::fromLatin1(toString(o.fusion)));
        if (o.discard > 0)
            text += QStringLiteral(", lowest %1% discarded").arg(o.discard * 100, 0, 'g', 3);
        return text;
    }

    QString queryDescription(const AttentionGrid& grid)
    {
        if (const auto patch = queryPatchOf(grid.query, grid.numPrefixTokens, grid.gridWidth))
            return QStringLiteral("patch (row %1, column %2)").arg(patch->y()).arg(patch->x());
        if (grid.query == 0 && grid.numPrefixTokens >= 1)
            return QStringLiteral("the CLS token");
        return QStringLiteral("prefix token %1").arg(grid.query);
    }

    // A row's name: "layer 3", or a hierarchical model's "stage 2, block 1 (shifted)".
    QString rowLabel(const AttentionGrid& grid, int l)
    {
        return size_t(l) < grid.windows.size() ? fromStd(blockName(grid.windows[size_t(l)]))
                                               : QStringLiteral("layer %1").arg(l + 1);
    }

    void drawTile(QPainter& painter, const QRectF& target, const QImage& tile, const QColor& frame)
    {
        painter.drawImage(target, tile);
        painter.setPen(QPen(frame, 0.8));
        painter.setBrush(Qt::NoBrush);
        painter.drawRect(target);
    }

    void drawCornerValue(QPainter& painter, const QRectF& target, const QString& text, const QFont& font)
    {
        const QFontMetricsF metrics(font);
        const QRectF box(target.left() + 2, target.bottom() - metrics.height() - 2, metrics.horizontalAdvance(text) + 6,
            metrics.height());
        painter.setPen(Qt::NoPen);
        painter.setBrush(QColor(0, 0, 0, 150));
        painter.drawRoundedRect(box, 2, 2);
        painter.setFont(font);
        painter.setPen(Qt::white);
        painter.drawText(box, Qt::AlignCenter, text);
    }

    // The title and subtitle, centred over the figure's width.
    void drawTitles(QPainter& painter, const QString& title, const QString& subtitle, const QFont& titleFont,
        const QFont& subtitleFont, double margin, double width, const PlotStyle& ts)
    {
        painter.setPen(ts.foreground);
        painter.setFont(titleFont);
        painter.drawText(QRectF(margin, margin, width - 2 * margin, QFontMetricsF(titleFont).height()),
            Qt::AlignHCenter | Qt::AlignTop, title);
        painter.setPen(ts.mutedText);
        painter.setFont(subtitleFont);
        painter.drawText(QRectF(margin, margin + QFontMetricsF(titleFont).height() + 2, width - 2 * margin,
                             QFontMetricsF(subtitleFont).height()),
            Qt::AlignHCenter | Qt::AlignTop, subtitle);
    }

    // The largest weight of any map in the grid: the one scale of a shared-scale figure.
    double gridMaximum(const AttentionGrid& grid)
    {
        double sharedMax = 0;
        for (const auto& row : grid.maps)
            for (const auto& map : row)
                sharedMax = std::max(sharedMax, mapMaximum(map));
        return sharedMax;
    }

    // Where the tiles go (logical pixels) and what they are drawn from: a row per layer under a header of column names,
    // the last column (the head mean) set apart from the heads'; under the grid, the input and the rollout.
    struct Tiles {
        int columns = 0, heads = 0;
        double tileW = 0, tileH = 0, gap = 0, meanGap = 0;
        double gridLeft = 0, gridTop = 0, headerHeight = 0, rowLabelWidth = 0, bottomTop = 0;
        QImage base; // the image at tile resolution (black without one): every tile blends over it
        double opacity = 1.0;
        std::optional<QPoint> query; // the query's patch, marked on every tile
        QFont labelFont, cornerFont;

        double columnLeft(int c) const
        {
            return gridLeft + c * (tileW + gap) + (c == columns - 1 && heads > 0 ? meanGap - gap : 0);
        }
    };

    // The column headers, and per layer its label and its maps.
    void drawMapGrid(
        QPainter& painter, const AttentionGrid& grid, const GridStyle& style, const Tiles& t, double sharedMax)
    {
        const PlotStyle& ts = style.text;
        const int layers = int(grid.maps.size());
        auto rangeFor = [&](const AttentionMap& map) {
            return ValueRange { 0.0, style.sharedScale ? sharedMax : mapMaximum(map) };
        };

        painter.setFont(t.labelFont);
        painter.setPen(ts.foreground);
        for (int c = 0; c < t.columns; ++c) {
            const QString header
                = c == t.columns - 1 && t.heads > 0 ? QStringLiteral("mean") : QStringLiteral("head %1").arg(c);
            painter.drawText(QRectF(t.columnLeft(c), t.gridTop - t.headerHeight, t.tileW, t.headerHeight),
                Qt::AlignHCenter | Qt::AlignBottom, header);
        }
        for (int l = 0; l < layers; ++l) {
            const double top = t.gridTop + l * (t.tileH + t.gap);
            painter.setFont(t.labelFont);
            painter.setPen(ts.foreground);
            painter.drawText(QRectF(t.gridLeft - t.rowLabelWidth, top, t.rowLabelWidth - 8, t.tileH),
                Qt::AlignRight | Qt::AlignVCenter, rowLabel(grid, l));
            if (l > 0 && size_t(l) < grid.windows.size()
                && grid.windows[size_t(l)].stage != grid.windows[size_t(l - 1)].stage) { // a patch merge
                painter.setPen(QPen(ts.mutedText, 1.0, Qt::DashLine));
                painter.drawLine(QPointF(t.gridLeft - t.rowLabelWidth, top - t.gap / 2),
                    QPointF(t.columnLeft(t.columns - 1) + t.tileW, top - t.gap / 2));
            }
            const auto& row = grid.maps[size_t(l)];
            for (int c = 0; c < int(row.size()); ++c) {
                const AttentionMap& map = row[size_t(c)];
                const QImage tile = renderAttentionOverlay(
                    t.base, map, grid.gridHeight, grid.gridWidth, t.opacity, style.colormap, t.query, rangeFor(map));
                // the head mean in the last column, whatever the row's heads (a hierarchical model's stages differ)
                const int column = c + 1 == int(row.size()) ? t.columns - 1 : c;
                const QRectF target(t.columnLeft(column), top, t.tileW, t.tileH);
                drawTile(painter, target, tile, ts.grid.darker(115));
                if (style.annotateMaxima && !style.sharedScale)
                    drawCornerValue(painter, target, QString::number(mapMaximum(map), 'g', 2), t.cornerFont);
            }
        }
    }

    // Under the grid: the input with the query's patch outlined (when there is an image), and the rollout.
    void drawInputAndRollout(
        QPainter& painter, const AttentionGrid& grid, const GridStyle& style, const Tiles& t, bool imageShown)
    {
        const PlotStyle& ts = style.text;
        painter.setFont(t.labelFont);
        painter.setPen(ts.foreground);
        const QRectF inputRect(t.gridLeft, t.bottomTop, t.tileW, t.tileH);
        const QRectF rolloutRect(t.gridLeft + t.tileW + t.gap, t.bottomTop, t.tileW, t.tileH);
        painter.drawText(QRectF(inputRect.left() - 20, t.bottomTop - t.headerHeight, t.tileW + 40, t.headerHeight),
            Qt::AlignHCenter | Qt::AlignBottom, QStringLiteral("input"));
        painter.drawText(QRectF(rolloutRect.left() - 20, t.bottomTop - t.headerHeight, t.tileW + 40, t.headerHeight),
            Qt::AlignHCenter | Qt::AlignBottom, QStringLiteral("rollout"));
        if (imageShown) {
            drawTile(painter, inputRect, t.base, ts.grid.darker(115));
            if (t.query) {
                const double cw = t.tileW / std::max(1, grid.gridWidth), ch = t.tileH / std::max(1, grid.gridHeight);
                const QRectF cell(inputRect.left() + t.query->x() * cw, inputRect.top() + t.query->y() * ch, cw, ch);
                painter.setBrush(Qt::NoBrush);
                painter.setPen(QPen(QColor(0, 0, 0, 200), 3.0));
                painter.drawRect(cell);
                painter.setPen(QPen(Qt::white, 1.5));
                painter.drawRect(cell);
            }
        }
        if (!grid.rolloutRefused.empty()) {
            painter.setPen(ts.mutedText);
            painter.setFont(t.cornerFont);
            painter.drawRect(rolloutRect);
            painter.drawText(rolloutRect.adjusted(4, 4, -4, -4), Qt::AlignCenter | Qt::TextWordWrap,
                QStringLiteral("no rollout: a hierarchical model's tokens change at every merge"));
        } else if (!grid.rollout.patches.empty()) {
            const QImage tile = renderAttentionOverlay(
                t.base, grid.rollout, grid.gridHeight, grid.gridWidth, t.opacity, style.colormap, t.query);
            drawTile(painter, rolloutRect, tile, ts.grid.darker(115));
            if (style.annotateMaxima)
                drawCornerValue(painter, rolloutRect, QString::number(mapMaximum(grid.rollout), 'g', 2), t.cornerFont);
        }
    }

} // namespace

QImage renderAttentionGrid(const AttentionGrid& grid, const GridStyle& style)
{
    const PlotStyle& ts = style.text;
    const QFont titleFont = ts.font(ts.titleFontPx, true);
    const QFont subtitleFont = ts.font(ts.subtitleFontPx);
    const QFont labelFont = ts.font(ts.labelFontPx - 1);
    const QFont cornerFont = ts.font(std::max(8, ts.tickFontPx - 3));
    const QFontMetricsF labelMetrics(labelFont);

    const int layers = int(grid.maps.size());
    int columns = 0;
    for (const auto& row : grid.maps)
        columns = std::max(columns, int(row.size()));
    const int heads = std::max(0, columns - 1); // the last entry of each row is the head mean

    const QImage shown = toQImage(grid.shown);
    const double aspect = !shown.isNull() ? double(shown.height()) / shown.width()
        : grid.gridWidth > 0              ? double(grid.gridHeight) / grid.gridWidth
                                          : 1.0;
    const double tileW = style.tileSize, tileH = std::round(style.tileSize * aspect);
    const double gap = style.spacing, meanGap = 3 * style.spacing + 4;
    const double margin = 14;

    const QString title = QStringLiteral("Attention of %1").arg(queryDescription(grid));
    const QString subtitle = joinProvenance({ fromStd(grid.model), fromStd(grid.image),
        QStringLiteral("%1, opacity %2").arg(colormapName(style.colormap)).arg(style.opacity),
        grid.rolloutRefused.empty() ? rolloutDescription(grid.rolloutOptions)
                                    : QStringLiteral("hatched: outside the query's window") });
    double rowLabelWidth = 0;
    for (int l = 0; l < layers; ++l)
        rowLabelWidth = std::max(rowLabelWidth, labelMetrics.horizontalAdvance(rowLabel(grid, l)));
    rowLabelWidth += 10;

    const double gridWidth = columns > 0 ? columns * tileW + (columns - 1) * gap + (heads > 0 ? meanGap - gap : 0) : 0;
    const double titleHeight = QFontMetricsF(titleFont).height() + QFontMetricsF(subtitleFont).height() + 10;
    const double headerHeight = labelMetrics.height() + 4;
    const double gridTop = margin + titleHeight + headerHeight;
    double gridLeft = margin + rowLabelWidth;
    const double gridBottom = gridTop + layers * tileH + std::max(0, layers - 1) * gap;

    // Bottom row: the input with the query marked, the rollout, and the colour bar beside them when it fits.
    const double bottomTop = gridBottom + 16 + headerHeight;
    const double barWidthWanted = 300, barHeight = 58;
    const double contentWidth = std::max(gridLeft + gridWidth, gridLeft + 2 * tileW + gap + 250) + margin;
    double width = std::max(contentWidth,
        margin
            + std::max(QFontMetricsF(titleFont).horizontalAdvance(title),
                QFontMetricsF(subtitleFont).horizontalAdvance(subtitle))
            + margin);
    // A title wider than the tiles: centre the tiles under it.
    const double shift = (width - contentWidth) / 2;
    gridLeft += shift;
    const double barLeft = gridLeft + 2 * tileW + gap + 28;
    const bool barBeside = width - margin - shift - barLeft >= 220;
    const QRectF barArea = barBeside
        ? QRectF(barLeft, bottomTop + (tileH - barHeight) / 2,
            std::min(barWidthWanted, width - margin - shift - barLeft), barHeight)
        : QRectF(gridLeft, bottomTop + tileH + 14, std::min(barWidthWanted, width - margin - gridLeft), barHeight);
    if (!barBeside)
        width = std::max(width, barArea.right() + margin);
    const double height = (barBeside ? bottomTop + tileH : barArea.bottom()) + margin;

    QImage image(QSize(int(std::ceil(width * style.scale)), int(std::ceil(height * style.scale))),
        QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(style.scale);
    image.fill(ts.background);
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setRenderHint(QPainter::SmoothPixmapTransform);

    drawTitles(painter, title, subtitle, titleFont, subtitleFont, margin, width, ts);

    if (layers == 0 || columns == 0) {
        painter.setPen(ts.mutedText);
        painter.setFont(labelFont);
        painter.drawText(QRectF(0, gridTop, width, tileH), Qt::AlignCenter, QStringLiteral("No attention maps"));
        return image;
    }

    // The image once at tile resolution; every tile blends over it.
    const QSize tilePixels(int(std::round(tileW * style.scale)), int(std::round(tileH * style.scale)));
    // Without an image the maps are drawn opaque over black.
    QImage blank(tilePixels, QImage::Format_RGB32);
    blank.fill(Qt::black);
    const Tiles tiles { columns, heads, tileW, tileH, gap, meanGap, gridLeft, gridTop, headerHeight, rowLabelWidth,
        bottomTop, shown.isNull() ? blank : shown.scaled(tilePixels, Qt::IgnoreAspectRatio, Qt::SmoothTransformation),
        shown.isNull() ? 1.0 : style.opacity, queryPatchOf(grid.query, grid.numPrefixTokens, grid.gridWidth), labelFont,
        cornerFont };

    const double sharedMax = gridMaximum(grid);
    drawMapGrid(painter, grid, style, tiles, sharedMax);
    drawInputAndRollout(painter, grid, style, tiles, !shown.isNull());

    const QString caption = style.sharedScale ? QStringLiteral("attention weight (rollout: own scale, max in corner)")
                                              : QStringLiteral("attention \u00f7 tile maximum (in each tile's corner)");
    paintColorBar(painter, barArea, style.colormap,
        style.sharedScale ? ValueRange { 0.0, sharedMax } : ValueRange { 0.0, 1.0 }, Qt::Horizontal, caption, ts);
    return image;
}

} // namespace attnscope
