#pragma once

// The query-key joint embedding drawn (docs/analyses.md section 9, AttentionViz's views): one head's queries and keys
// as a scatter, and the global view, a layers x heads grid of small scatters. The painter is shared with the window's
// "Query-key map" dock, which adds hovering and clicking on the points it draws.

#include "plots/PlotStyle.h"

#include <QImage>
#include <QPointF>
#include <QRectF>
#include <attnscope/QueryKey.h>

#include <optional>
#include <utility>

class QPainter;

namespace attnscope {

enum class QueryKeyColouring { Kind, Row, Column }; // queries and keys in two colours, or each by its patch's row or column

// Where a map's points go in a rectangle: equal scales on both axes, the points' extent fitted with a margin.
struct ScatterFrame {
    QRectF area;
    double scale = 1, cx = 0, cy = 0;
    QPointF toScreen(double x, double y) const { return { area.center().x() + (x - cx) * scale, area.center().y() - (y - cy) * scale }; }
};
ScatterFrame scatterFrame(const QueryKeyMap& map, const QRectF& area);

// Paints every point of `map` into frame.area (keys first, queries over them); `highlight` (image, token) has its
// query and key ringed. `radius`: of a point, in the painter's units.
void paintQueryKeyScatter(QPainter& painter, const ScatterFrame& frame, const QueryKeyMap& map, QueryKeyColouring colouring,
                          double radius, const PlotStyle& style, std::optional<std::pair<int, int>> highlight = {});

// The point of `map` nearest `at` within `within` (painter units), or none.
std::optional<size_t> nearestPoint(const ScatterFrame& frame, const QueryKeyMap& map, const QPointF& at, double within);

// The figure of figure.maps[figure.focus], and the global view of every map, as images at `scale` device pixels per
// logical pixel (for exportImage).
QImage renderQueryKeyFigure(const QueryKeyFigure& figure, QueryKeyColouring colouring = QueryKeyColouring::Kind, double scale = 2.0);
QImage renderQueryKeyGrid(const QueryKeyFigure& figure, double scale = 2.0);

} // namespace attnscope
