#include "plots/AttentionDistancePlot.h"

#include "plots/PlotElements.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <qcustomplot.h>

namespace attnscope {

void buildAttentionDistancePlot(QCustomPlot* plot, const std::vector<AnalysisSummary>& series, const PlotStyle& style)
{
    QStringList patchSizes;
    for (const auto& s : series) {
        const QString p = QStringLiteral("%1 px patches").arg(s.patchSize);
        if (s.patchSize > 0 && !patchSizes.contains(p))
            patchSizes << p;
    }
    const QString subtitle = joinProvenance({ describeModels(series), describeImages(series), describeOptions(series),
        patchSizes.join(QStringLiteral(" / ")), QStringLiteral("one dot per head") });
    const int row = resetPlot(plot, QStringLiteral("Mean attention distance"), subtitle, style);
    QCPAxisRect* rect = addAxisRect(plot, plot->plotLayout(), row, 0, style);
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    x->setLabel(QStringLiteral("Layer"));
    y->setLabel(QStringLiteral("Mean attention distance (pixels)"));

    int firstLayer = std::numeric_limits<int>::max(), lastLayer = std::numeric_limits<int>::min();
    double highest = 0.0;
    std::vector<size_t> plotted;
    const std::vector<int> colours = seriesColours(series);
    const size_t models = series.size();
    for (size_t i = 0; i < models; ++i) {
        // Models side by side within a layer; heads of one model share an x so their spread reads vertically.
        const double offset
            = models > 1 ? (double(i) - 0.5 * double(models - 1)) * std::min(0.22, 0.6 / double(models)) : 0.0;
        const QColor color = style.color(colours[i]);
        QVector<double> xs, ys;
        std::map<int, std::pair<double, int>> perLayer; // sum, count
        for (const auto& h : series[i].headCentres) {
            if (h.meanDistancePx.n <= 0 || !std::isfinite(h.meanDistancePx.mean))
                continue;
            xs << h.layer + offset;
            ys << h.meanDistancePx.mean;
            perLayer[h.layer].first += h.meanDistancePx.mean;
            perLayer[h.layer].second += 1;
            firstLayer = std::min(firstLayer, h.layer);
            lastLayer = std::max(lastLayer, h.layer);
            highest = std::max(highest, h.meanDistancePx.mean);
        }
        if (xs.isEmpty())
            continue;
        plotted.push_back(i);
        QVector<double> mx, my;
        for (const auto& [layer, acc] : perLayer) {
            mx << layer + offset;
            my << acc.first / acc.second;
        }
        QColor faint = color;
        faint.setAlphaF(0.55);
        QCPGraph* mean = addLine(rect, mx, my, faint, Qt::SolidLine, {}, style);
        mean->setPen(QPen(faint, 1.2));
        QCPGraph* dots = plot->addGraph(x, y);
        dots->setData(xs, ys);
        dots->setLineStyle(QCPGraph::lsNone);
        QColor fill = color;
        fill.setAlphaF(0.75);
        dots->setScatterStyle(
            QCPScatterStyle(QCPScatterStyle::ssDisc, QPen(color.darker(125), 0.8), fill, style.markerSize));
        dots->setName(fromStd(series[i].label));
        dots->setSelectable(QCP::stNone);
    }
    if (plotted.empty()) {
        setLayerAxis(x, 1, 12);
        y->setRange(0, 100);
        addNote(rect, QStringLiteral("No head-centre data"), style);
        return;
    }
    setLayerAxis(x, firstLayer, lastLayer);
    addStageBoundaries(rect, series, style);
    y->setRange(0.0, highest > 0 ? highest * 1.08 : 1.0);

    QCPLegend* legend = addLegend(plot, rect, row, style);
    for (size_t i : plotted) {
        const QColor color = style.color(colours[i]);
        QCPGraph* key = addLine(rect, {}, {}, color, Qt::NoPen, fromStd(series[i].label), style);
        key->setLineStyle(QCPGraph::lsNone);
        key->setScatterStyle(
            QCPScatterStyle(QCPScatterStyle::ssDisc, QPen(color.darker(125), 0.8), color, style.markerSize + 1));
        key->addToLegend(legend);
    }
    QCPGraph* meanKey = addStyleKey(rect, legend, QStringLiteral("mean over heads"), Qt::SolidLine, style);
    meanKey->setPen(QPen(style.neutral, 1.2));
    finishLegend(legend, 5);
}

} // namespace attnscope
