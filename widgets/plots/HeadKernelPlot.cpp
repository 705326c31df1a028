#include "plots/HeadKernelPlot.h"

#include "plots/Colormap.h"
#include "plots/PlotElements.h"
#include "plots/SquareAxisRect.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <qcustomplot.h>

namespace attnscope {

namespace {

    bool hasMap(const HeadCentreRow& row)
    {
        const size_t side = size_t(2 * row.radius + 1);
        return row.radius >= 0 && row.offsetMap.size() == side * side
            && std::any_of(row.offsetMap.begin(), row.offsetMap.end(), [](double v) { return std::isfinite(v); });
    }

    // The centroid (dy, dx) of a (2R+1)^2 offset map: the point the engine measures the bandwidth around.
    QPointF centroid(const HeadCentreRow& row)
    {
        const int side = 2 * row.radius + 1;
        double mass = 0, my = 0, mx = 0;
        for (int c = 0; c < side * side; ++c) {
            const double v = row.offsetMap[size_t(c)];
            if (!std::isfinite(v))
                continue;
            mass += v;
            my += v * (c / side - row.radius);
            mx += v * (c % side - row.radius);
        }
        return mass > 0 ? QPointF(mx / mass, my / mass) : QPointF(0, 0);
    }

    // A text element that does not cap the height of its grid row: QCPTextElement's maximum height is that of its
    // text, and a grid row is as high as its lowest maximum, which would squash the panels beside a layer label.
    class RowLabel : public QCPTextElement {
    public:
        using QCPTextElement::QCPTextElement;

    protected:
        QSize maximumOuterSizeHint() const override { return { QWIDGETSIZE_MAX, QWIDGETSIZE_MAX }; }
    };

    QCPTextElement* addLabel(QCustomPlot* plot, QCPLayoutGrid* grid, int row, int column, const QString& text,
        const QFont& font, const QColor& color)
    {
        auto* label = column == 0 ? new RowLabel(plot, text, font) : new QCPTextElement(plot, text, font);
        label->setTextColor(color);
        label->setMargins(QMargins(2, 1, 4, 1));
        label->setSelectable(false);
        grid->addElement(row, column, label);
        return label;
    }

    // A panel without visible axes: the heatmap fills it, a thin frame closes it, and the 2 px margins leave a gap to
    // the neighbours (no tick labels: the caption gives the offsets once for all panels).
    SquareAxisRect* addPanel(
        QCustomPlot* plot, QCPLayoutGrid* grid, int row, int column, int radius, const PlotStyle& style)
    {
        auto* rect = new SquareAxisRect(plot);
        grid->addElement(row, column, rect);
        rect->setupFullAxesBox(false);
        rect->setAutoMargins(QCP::msNone);
        rect->setMargins(QMargins(2, 2, 2, 2));
        rect->setMinimumSize(16, 16);
        const double limit = radius + 0.5;
        for (QCPAxis* axis : rect->axes()) {
            axis->setRange(-limit, limit);
            axis->setTicks(false);
            axis->setTickLabels(false);
            axis->grid()->setVisible(false);
            axis->setBasePen(QPen(style.neutral, 0.8));
        }
        // Δy grows downwards, like image rows.
        rect->axis(QCPAxis::atLeft)->setRangeReversed(true);
        rect->axis(QCPAxis::atRight)->setRangeReversed(true);
        return rect;
    }

    // White over a dark halo, so that the outline shows on viridis' yellow end as well as on its dark one.
    void addQueryCell(QCPAxisRect* rect)
    {
        for (const QPen& pen : { QPen(QColor(0, 0, 0, 110), 2.6), QPen(Qt::white, 1.2) }) {
            auto* cell = new QCPItemRect(rect->parentPlot());
            cell->setClipAxisRect(rect);
            for (auto* p : { cell->topLeft, cell->bottomRight })
                p->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
            cell->topLeft->setCoords(-0.5, -0.5);
            cell->bottomRight->setCoords(0.5, 0.5);
            cell->setPen(pen);
            cell->setBrush(Qt::NoBrush);
            cell->setSelectable(false);
        }
    }

    void addCircle(QCPAxisRect* rect, QPointF centre, double radius)
    {
        QVector<double> xs, ys;
        constexpr int points = 72;
        for (int i = 0; i <= points; ++i) {
            const double t = 2.0 * M_PI * i / points;
            xs << centre.x() + radius * std::cos(t);
            ys << centre.y() + radius * std::sin(t);
        }
        auto* curve = new QCPCurve(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
        curve->setData(xs, ys);
        curve->setPen(QPen(Qt::white, 1.2, Qt::DashLine));
        curve->setSelectable(QCP::stNone);
    }

} // namespace

void buildHeadKernelPlot(QCustomPlot* plot, const AnalysisSummary& summary, const PlotStyle& style)
{
    std::map<int, std::map<int, const HeadCentreRow*>> byLayer;
    int heads = 0, radius = 3;
    double high = 0, lowest = HUGE_VAL;
    for (const auto& row : summary.headCentres) {
        if (!hasMap(row))
            continue;
        byLayer[row.layer][row.head] = &row;
        heads = std::max(heads, row.head + 1);
        radius = row.radius;
        for (double v : row.offsetMap)
            if (std::isfinite(v) && v > 0) {
                high = std::max(high, v);
                lowest = std::min(lowest, v);
            }
    }
    // One logarithmic scale for all panels: a local head puts ~0.1 on a cell, a global one ~1/N on every cell (0.004
    // on a 16 x 16 grid), and a linear scale would paint every global head the same dark. Floored at 1/1000 of the
    // largest cell so that one near-empty cell does not squeeze the others into the top of the scale.
    if (!(high > 0))
        high = 1.0;
    double low = std::max(lowest, high * 1e-3);
    if (!(low < high))
        low = high / 10;

    const QString subtitle = joinProvenance({ fromStd(summary.label.empty() ? summary.model : summary.label),
        describeImages({ summary }), fromStd(summary.options),
        QStringLiteral("offset map M(\u03b4), R = %1, mean over interior queries").arg(radius) });
    const int row
        = resetPlot(plot, QStringLiteral("Head kernels: each head's mean attention around the query"), subtitle, style);
    auto* body = new QCPLayoutGrid;
    plot->plotLayout()->addElement(row, 0, body);
    body->setColumnSpacing(8);
    auto* panels = new QCPLayoutGrid;
    body->addElement(0, 0, panels);
    panels->setColumnSpacing(1);
    panels->setRowSpacing(1);
    if (byLayer.empty()) {
        QCPAxisRect* rect = addAxisRect(plot, panels, 0, 0, style);
        addNote(rect, QStringLiteral("No head-kernel data"), style);
        return;
    }

    const int layers = int(byLayer.size());
    // Labels shrink with the panels so that "head 11" still fits over a 55 px panel.
    const int labelPx = std::max(heads, layers) > 8 ? style.tickFontPx - 1 : style.tickFontPx;
    for (int h = 0; h < heads; ++h)
        addLabel(plot, panels, 0, h + 1, QStringLiteral("head %1").arg(h), style.font(labelPx), style.foreground);
    panels->setRowStretchFactor(0, 0.001);
    panels->setColumnStretchFactor(0, 0.001);

    const QCPColorGradient gradient = [] {
        QCPColorGradient g = colorGradient(Colormap::Viridis);
        g.setNanHandling(QCPColorGradient::nhTransparent);
        return g;
    }();
    auto* scale = new QCPColorScale(plot);
    bool offWindow = false;
    int r = 1;
    for (const auto& [layer, rowHeads] : byLayer) {
        addLabel(plot, panels, r, 0, QStringLiteral("layer %1").arg(layer), style.font(labelPx), style.foreground);
        for (int h = 0; h < heads; ++h) {
            const auto found = rowHeads.find(h);
            if (found == rowHeads.end()) {
                panels->addElement(r, h + 1, new QCPLayoutElement(plot));
                continue;
            }
            const HeadCentreRow& hc = *found->second;
            const int side = 2 * hc.radius + 1;
            SquareAxisRect* rect = addPanel(plot, panels, r, h + 1, hc.radius, style);
            QCPAxis* x = rect->axis(QCPAxis::atBottom);
            QCPAxis* y = rect->axis(QCPAxis::atLeft);

            auto* map = new QCPColorMap(x, y);
            map->data()->setSize(side, side);
            map->data()->setRange(QCPRange(-hc.radius, hc.radius), QCPRange(-hc.radius, hc.radius));
            for (int i = 0; i < side; ++i) // dy = i - R (value axis)
                for (int j = 0; j < side; ++j) { // dx = j - R (key axis)
                    const double v = hc.offsetMap[size_t(i * side + j)];
                    map->data()->setCell(j, i, std::isfinite(v) ? std::max(v, low) : v);
                }
            setLogColours(map, scale, gradient, low, high);
            map->setName(QStringLiteral("layer %1, head %2: M(\u03b4), x = \u0394x, y = \u0394y").arg(layer).arg(h));
            map->setSelectable(QCP::stNone);

            addQueryCell(rect);
            if (std::isfinite(hc.bandwidth.mean) && hc.bandwidth.mean > 0)
                addCircle(rect, centroid(hc), hc.bandwidth.mean);

            // The centre: over all queries, so it can fall outside the window; then it sits hollow on the edge.
            const double edge = hc.radius + 0.3;
            const double cx = hc.centreDx.mean, cy = hc.centreDy.mean;
            if (std::isfinite(cx) && std::isfinite(cy)) {
                const bool outside = std::max(std::abs(cx), std::abs(cy)) > edge;
                offWindow = offWindow || outside;
                QCPGraph* dot = plot->addGraph(x, y);
                dot->setData({ std::clamp(cx, -edge, edge) }, { std::clamp(cy, -edge, edge) });
                dot->setLineStyle(QCPGraph::lsNone);
                dot->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(Qt::white, 1.2),
                    outside ? QBrush(Qt::NoBrush) : QBrush(style.color(1)), style.markerSize));
                dot->setName(QStringLiteral("layer %1, head %2: centre \u0394").arg(layer).arg(h));
                dot->setSelectable(QCP::stNone);
            }
        }
        ++r;
    }

    body->addElement(0, 1, scale);
    body->setColumnStretchFactor(1, 0.001);
    setLogColourScale(scale, gradient, low, high, QStringLiteral("attention M(\u03b4)"), style);

    // One key for all panels, in two lines (the symbols as the head-centres figure writes its key): what a panel's
    // axes are and what is drawn on it.
    QString key
        = QStringLiteral("Each panel: \u0394x right, \u0394y down, %1 to %2 patches \u00b7 \u25a1 query cell \u00b7 "
                         "\u25cf centre \u0394 over all queries")
              .arg(-radius)
              .arg(radius);
    if (offWindow)
        key += QStringLiteral(" (\u25cb beyond the window)");
    key += QStringLiteral("\n- - - radius = bandwidth (mean over images), around the map's centroid");
    if (lowest < low)
        key += QStringLiteral(" \u00b7 cells < %1 drawn at %1").arg(low, 0, 'g', 2);
    auto* caption = new QCPTextElement(plot, key, style.font(style.subtitleFontPx));
    caption->setTextColor(style.mutedText);
    caption->setSelectable(false);
    plot->plotLayout()->insertRow(row + 1);
    plot->plotLayout()->addElement(row + 1, 0, caption);
    plot->plotLayout()->setRowStretchFactor(row + 1, 0.001);
}

} // namespace attnscope
