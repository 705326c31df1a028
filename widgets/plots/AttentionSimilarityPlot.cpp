#include "plots/AttentionSimilarityPlot.h"

#include "plots/PlotElements.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <qcustomplot.h>

namespace attnscope {

namespace {

struct Curve {
    QVector<double> layer, mean, low, high;
};

Curve curveOf(const AnalysisSummary& summary, Estimate AttentionSimilarityRow::*field)
{
    std::vector<const AttentionSimilarityRow*> rows;
    for (const auto& row : summary.attentionSimilarity)
        if ((row.*field).n > 0 && std::isfinite((row.*field).mean))
            rows.push_back(&row);
    std::sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->layer < b->layer; });
    Curve c;
    for (const auto* row : rows) {
        const Estimate& e = row->*field;
        c.layer << row->layer;
        c.mean << e.mean;
        c.low << e.mean - (std::isfinite(e.ci95) ? e.ci95 : 0.0);
        c.high << e.mean + (std::isfinite(e.ci95) ? e.ci95 : 0.0);
    }
    return c;
}

} // namespace

void buildAttentionSimilarityPlot(QCustomPlot* plot, const std::vector<AnalysisSummary>& series, const PlotStyle& style)
{
    const QString subtitle = joinProvenance(
        { describeModels(series), describeImages(series), describeOptions(series), QStringLiteral("bands: 95% CI") });
    const int row = resetPlot(plot, QStringLiteral("Attention similarity through depth"), subtitle, style);
    QCPAxisRect* rect = addAxisRect(plot, plot->plotLayout(), row, 0, style);
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    x->setLabel(QStringLiteral("Layer l"));
    y->setLabel(QStringLiteral("Cosine similarity"));

    const std::pair<Estimate AttentionSimilarityRow::*, QString> kinds[] = {
        { &AttentionSimilarityRow::successiveCos, QStringLiteral("layer l vs l+1 (head means)") },
        { &AttentionSimilarityRow::headRedundancy, QStringLiteral("heads of layer l, pairwise") },
    };
    std::vector<int> plotted;
    const std::vector<int> colours = seriesColours(series);
    int firstLayer = std::numeric_limits<int>::max(), lastLayer = std::numeric_limits<int>::min();
    for (size_t i = 0; i < series.size(); ++i) {
        const QColor color = style.color(colours[i]);
        for (int k = 0; k < 2; ++k) {
            const Curve c = curveOf(series[i], kinds[k].first);
            if (c.layer.isEmpty())
                continue;
            firstLayer = std::min(firstLayer, int(c.layer.front()));
            lastLayer = std::max(lastLayer, int(c.layer.back()));
            addBand(rect, c.layer, c.low, c.high, color, style);
            QCPGraph* line = addLine(rect, c.layer, c.mean, color, penStyleFor(k),
                fromStd(series[i].label) + QStringLiteral(" · ") + kinds[k].second, style);
            line->setScatterStyle(QCPScatterStyle(k == 0 ? QCPScatterStyle::ssDisc : QCPScatterStyle::ssCircle, color,
                k == 0 ? color : style.background, style.markerSize - 1));
            if (plotted.empty() || plotted.back() != int(i))
                plotted.push_back(int(i));
        }
    }
    if (plotted.empty()) {
        setLayerAxis(x, 1, 12);
        y->setRange(0, 1);
        addNote(rect, QStringLiteral("No attention-similarity data"), style);
        return;
    }
    setLayerAxis(x, firstLayer, lastLayer);
    addStageBoundaries(rect, series, style);
    y->setRange(0.0, 1.0); // cosines of non-negative maps lie in [0, 1]

    addModelsAndTwoKindsLegend(plot, rect, row, series, plotted, kinds[0].second, kinds[1].second, style);
}

} // namespace attnscope
