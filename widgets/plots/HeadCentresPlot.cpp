#include "plots/HeadCentresPlot.h"

#include "plots/PlotElements.h"
#include "plots/SquareAxisRect.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <qcustomplot.h>

namespace attnscope {

namespace {

    struct Edge {
        QPoint from, to;
        bool used = false;
    };

    QPoint direction(const Edge& e) { return e.to - e.from; }
    QPoint leftOf(QPoint d) { return { -d.y(), d.x() }; }

    // Head colours: the style's palette while it has enough entries, then Tableau 10, with a second marker shape
    // for heads beyond the palette.
    QColor headColor(const PlotStyle& style, int head, int heads)
    {
        if (heads <= int(style.palette.size()))
            return style.color(head);
        static const std::vector<QColor> wide = PlotStyle::tableau10();
        return wide[size_t(head) % wide.size()];
    }

    QCPScatterStyle::ScatterShape headShape(const PlotStyle& style, int head, int heads)
    {
        const int colours = heads <= int(style.palette.size()) ? int(style.palette.size()) : 10;
        static const QCPScatterStyle::ScatterShape shapes[] = { QCPScatterStyle::ssDisc, QCPScatterStyle::ssSquare,
            QCPScatterStyle::ssDiamond, QCPScatterStyle::ssTriangle };
        return shapes[size_t(head / std::max(1, colours)) % 4];
    }

    void addCellLines(QCPAxisRect* rect, double limit, const PlotStyle& style)
    {
        // Faint cell boundaries at half-integers: the 50% outlines run along them.
        QPen pen(style.grid, 0.8);
        for (double v = -std::floor(limit - 0.5) - 0.5; v <= limit; v += 1.0) {
            for (int vertical = 0; vertical < 2; ++vertical) {
                auto* line = new QCPItemStraightLine(rect->parentPlot());
                line->setClipAxisRect(rect);
                line->setLayer(QStringLiteral("grid"));
                line->setSelectable(false);
                line->setPen(pen);
                for (auto* p : { line->point1, line->point2 })
                    p->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
                if (vertical) {
                    line->point1->setCoords(v, 0);
                    line->point2->setCoords(v, 1);
                } else {
                    line->point1->setCoords(0, v);
                    line->point2->setCoords(1, v);
                }
            }
        }
    }

} // namespace

std::vector<QPolygonF> levelSetOutline(const std::vector<double>& offsetMap, int radius, double level, double inset)
{
    const int n = 2 * radius + 1;
    if (radius < 0 || offsetMap.size() != size_t(n) * size_t(n))
        return {};
    auto inside = [&](int i, int j) {
        return i >= 0 && j >= 0 && i < n && j < n && offsetMap[size_t(i) * size_t(n) + size_t(j)] >= level;
    };
    // Lattice vertices (u, v) = (column, row) boundaries. Edges are directed with their cell on the left (taking v
    // as pointing up), so following them walks every region boundary counter-clockwise and holes clockwise.
    std::vector<Edge> edges;
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
            if (!inside(i, j))
                continue;
            if (!inside(i - 1, j))
                edges.push_back({ { j, i }, { j + 1, i } });
            if (!inside(i, j + 1))
                edges.push_back({ { j + 1, i }, { j + 1, i + 1 } });
            if (!inside(i + 1, j))
                edges.push_back({ { j + 1, i + 1 }, { j, i + 1 } });
            if (!inside(i, j - 1))
                edges.push_back({ { j, i + 1 }, { j, i } });
        }
    }
    std::multimap<std::pair<int, int>, size_t> outgoing;
    for (size_t k = 0; k < edges.size(); ++k)
        outgoing.emplace(std::make_pair(edges[k].from.x(), edges[k].from.y()), k);

    std::vector<QPolygonF> polygons;
    for (size_t start = 0; start < edges.size(); ++start) {
        if (edges[start].used)
            continue;
        std::vector<QPoint> corners; // vertices where the direction changes
        std::vector<QPoint> dirs; // outgoing direction at each corner
        size_t current = start;
        QPoint previousDir = direction(edges[start]);
        do {
            Edge& e = edges[current];
            e.used = true;
            const QPoint d = direction(e);
            if (d != previousDir || corners.empty()) {
                corners.push_back(e.from);
                dirs.push_back(d);
            }
            previousDir = d;
            // Next edge from e.to: prefer a left turn, then straight on, then right, which keeps regions that touch
            // only at a corner apart.
            size_t next = edges.size();
            int bestRank = 3;
            auto [lo, hi] = outgoing.equal_range({ e.to.x(), e.to.y() });
            for (auto it = lo; it != hi; ++it) {
                const Edge& candidate = edges[it->second];
                if (candidate.used && it->second != start)
                    continue;
                const QPoint c = direction(candidate);
                const int rank = c == leftOf(d) ? 0 : c == d ? 1 : 2;
                if (rank < bestRank) {
                    bestRank = rank;
                    next = it->second;
                }
            }
            if (next == edges.size())
                break;
            current = next;
        } while (current != start);
        // The start edge may continue the last edge's direction: then the first corner is not a corner.
        if (corners.size() > 1 && dirs.front() == previousDir) {
            corners.erase(corners.begin());
            dirs.erase(dirs.begin());
        }
        const size_t m = corners.size();
        if (m < 4)
            continue;
        QPolygonF polygon;
        for (size_t c = 0; c < m; ++c) {
            const QPoint in = dirs[(c + m - 1) % m], out = dirs[c];
            // Offsetting both adjacent edges inward by `inset` moves a right-angle corner by the sum of the normals.
            const QPointF shift = inset * QPointF(leftOf(in) + leftOf(out));
            const QPointF p = QPointF(corners[c]) + shift;
            polygon << QPointF(p.x() - radius - 0.5, p.y() - radius - 0.5);
        }
        polygon << polygon.front();
        polygons.push_back(polygon);
    }
    return polygons;
}

void buildHeadCentresPlot(QCustomPlot* plot, const AnalysisSummary& summary, const PlotStyle& style)
{
    std::map<int, std::vector<const HeadCentreRow*>> byLayer;
    int heads = 0, radius = 3;
    double extent = 0.0;
    for (const auto& row : summary.headCentres) {
        byLayer[row.layer].push_back(&row);
        heads = std::max(heads, row.head + 1);
        radius = row.radius;
        if (std::isfinite(row.centreDx.mean) && std::isfinite(row.centreDy.mean))
            extent = std::max({ extent, std::abs(row.centreDx.mean), std::abs(row.centreDy.mean) });
    }
    const double limit = std::max(radius + 0.5, std::ceil(extent + 0.5) + 0.0);

    const QString subtitle = joinProvenance({ fromStd(summary.label.empty() ? summary.model : summary.label),
        describeImages({ summary }), fromStd(summary.options),
        QStringLiteral("window mass 50% \u2014, 90% - - (R = %1)").arg(radius),
        QStringLiteral("\u00d7 query, \u25cb prefix mass > 50%") });
    const int row = resetPlot(
        plot, QStringLiteral("Head centres: where each head looks, relative to the query"), subtitle, style);
    auto* panels = new QCPLayoutGrid;
    plot->plotLayout()->addElement(row, 0, panels);
    panels->setColumnSpacing(4);
    panels->setRowSpacing(4);

    const int layers = std::max(1, int(byLayer.size()));
    const int rows = (layers + 5) / 6;
    const int columns = (layers + rows - 1) / rows;
    auto* group = new QCPMarginGroup(plot);

    int index = 0;
    for (const auto& [layer, centres] : byLayer) {
        const int r = index / columns, c = index % columns;
        ++index;
        auto* rect = new SquareAxisRect(plot);
        panels->addElement(r, c, rect);
        rect->setupFullAxesBox(false);
        applyStyle(rect, style);
        rect->setMarginGroup(QCP::msAll, group);
        QCPAxis* x = rect->axis(QCPAxis::atBottom);
        QCPAxis* y = rect->axis(QCPAxis::atLeft);
        QCPAxis* top = rect->axis(QCPAxis::atTop);
        for (QCPAxis* axis : { x, y }) {
            auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
            ticker->setTickStep(limit > 6 ? 2.0 : 1.0);
            axis->setTicker(ticker);
            axis->setSubTicks(false);
            axis->setRange(-limit, limit);
            axis->grid()->setVisible(false);
            axis->setTickLabelFont(style.font(style.tickFontPx - 2));
        }
        rect->axis(QCPAxis::atRight)->setRange(-limit, limit);
        top->setRange(-limit, limit);
        y->setRangeReversed(true); // Δy grows downwards, like image rows
        rect->axis(QCPAxis::atRight)->setRangeReversed(true);
        top->setLabel(QStringLiteral("Layer %1").arg(layer));
        top->setLabelFont(style.font(style.labelFontPx - 1, true));
        top->setLabelPadding(3);
        addCellLines(rect, limit, style);

        // Outlines first, dots over them. Each head's outline is inset by a step that grows with the head index, so
        // heads whose 50% regions share edges (all of them, in late layers) read as nested outlines, not one line.
        const double step = 0.3 / std::max(1, heads - 1);
        // The 90% region (dashed, thinner) encloses the 50% one (solid): how far the head's kernel reaches.
        for (const HeadCentreRow* h : centres) {
            const QColor color = headColor(style, h->head, heads);
            const std::pair<double, QPen> levels[] = { { h->contour90, QPen(color, 0.9, Qt::DashLine) },
                                                       { h->contour50, QPen(color, 1.3) } };
            for (const auto& [level, pen] : levels)
                for (const QPolygonF& polygon : levelSetOutline(h->offsetMap, h->radius, level, 0.04 + step * h->head)) {
                    auto* curve = new QCPCurve(x, y);
                    QVector<double> xs, ys;
                    for (const QPointF& p : polygon) {
                        xs << p.x();
                        ys << p.y();
                    }
                    curve->setData(xs, ys);
                    curve->setPen(pen);
                    curve->setSelectable(QCP::stNone);
                }
        }
        for (const HeadCentreRow* h : centres) {
            const QColor color = headColor(style, h->head, heads);
            const bool prefixHead = h->prefixMass.mean > 0.5;
            QCPGraph* dot = plot->addGraph(x, y);
            dot->setData({ h->centreDx.mean }, { h->centreDy.mean });
            dot->setLineStyle(QCPGraph::lsNone);
            dot->setScatterStyle(QCPScatterStyle(headShape(style, h->head, heads), QPen(color.darker(130), 1.0),
                prefixHead ? QBrush(style.background) : QBrush(color), style.markerSize + 1));
            dot->setName(QStringLiteral("head %1").arg(h->head));
            dot->setSelectable(QCP::stNone);
        }
        QCPGraph* query = plot->addGraph(x, y);
        query->setData({ 0.0 }, { 0.0 });
        query->setLineStyle(QCPGraph::lsNone);
        query->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCross, QPen(style.foreground, 1.6), Qt::NoBrush, 9));
        query->setSelectable(QCP::stNone);
    }
    if (summary.headCentres.empty()) {
        QCPAxisRect* rect = addAxisRect(plot, panels, 0, 0, style);
        addNote(rect, QStringLiteral("No head-centre data"), style);
        return;
    }

    // One axis caption for all panels: per-panel labels would cost every panel the same margin.
    auto* caption
        = new QCPTextElement(plot, QStringLiteral("\u0394x (right), \u0394y (down): offset from the query in patches"),
            style.font(style.labelFontPx));
    caption->setTextColor(style.foreground);
    plot->plotLayout()->insertRow(row + 1);
    plot->plotLayout()->addElement(row + 1, 0, caption);
    plot->plotLayout()->setRowStretchFactor(row + 1, 0.001);

    QCPLegend* legend = addLegendBelow(plot, plot->plotLayout(), row + 2, style);
    legend->setIconSize(14, 12);
    QCPAxisRect* first = plot->axisRect(0);
    for (int h = 0; h < heads; ++h) {
        QCPGraph* key = plot->addGraph(first->axis(QCPAxis::atBottom), first->axis(QCPAxis::atLeft));
        const QColor color = headColor(style, h, heads);
        key->setLineStyle(QCPGraph::lsNone);
        key->setScatterStyle(QCPScatterStyle(
            headShape(style, h, heads), QPen(color.darker(130), 1.0), QBrush(color), style.markerSize + 1));
        key->setName(QStringLiteral("head %1").arg(h));
        key->addToLegend(legend);
    }
    finishLegend(legend, std::min(heads, 12));
}

} // namespace attnscope
