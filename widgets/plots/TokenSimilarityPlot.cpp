#include "plots/TokenSimilarityPlot.h"

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

    Curve curveOf(const AnalysisSummary& summary, Tap tap, TokenSet tokens)
    {
        std::vector<const TokenSimilarityRow*> rows;
        for (const auto& row : summary.tokenSimilarity) {
            if (row.tap == tap && row.tokens == tokens && row.value.n > 0 && std::isfinite(row.value.mean))
                rows.push_back(&row);
        }
        std::sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->layer < b->layer; });
        Curve c;
        for (const auto* row : rows) {
            c.layer << row->layer;
            c.mean << row->value.mean;
            c.low << row->value.mean - row->value.ci95;
            c.high << row->value.mean + row->value.ci95;
        }
        return c;
    }

} // namespace

void buildTokenSimilarityPlot(
    QCustomPlot* plot, const std::vector<AnalysisSummary>& series, Tap tap, const PlotStyle& style)
{
    const QString subtitle = joinProvenance(
        { describeModels(series), describeImages(series), describeOptions(series), QStringLiteral("bands: 95% CI") });
    const int row
        = resetPlot(plot, QStringLiteral("Token cosine similarity of %1").arg(tapDescription(tap)), subtitle, style);
    QCPAxisRect* rect = addAxisRect(plot, plot->plotLayout(), row, 0, style);
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    x->setLabel(tap == Tap::Block ? QStringLiteral("Layer (0 = embeddings)") : QStringLiteral("Layer"));
    y->setLabel(QStringLiteral("Mean pairwise cosine similarity"));

    const TokenSet sets[] = { TokenSet::All, TokenSet::Patches };
    std::vector<int> plotted; // series with at least one curve, for the legend
    const std::vector<int> colours = seriesColours(series);
    int firstLayer = std::numeric_limits<int>::max(), lastLayer = std::numeric_limits<int>::min();
    double lowest = 0.0, highest = 1.0;
    bool anyData = false;
    for (size_t i = 0; i < series.size(); ++i) {
        const QColor color = style.color(colours[i]);
        for (int k = 0; k < 2; ++k) {
            const Curve c = curveOf(series[i], tap, sets[k]);
            if (c.layer.isEmpty())
                continue;
            anyData = true;
            firstLayer = std::min(firstLayer, int(c.layer.front()));
            lastLayer = std::max(lastLayer, int(c.layer.back()));
            lowest = std::min(lowest, *std::min_element(c.low.begin(), c.low.end()));
            highest = std::max(highest, *std::max_element(c.high.begin(), c.high.end()));
            addBand(rect, c.layer, c.low, c.high, color, style);
            QCPGraph* line = addLine(rect, c.layer, c.mean, color, penStyleFor(k),
                fromStd(series[i].label) + QStringLiteral(" · ") + tokenSetName(sets[k]), style);
            // Markers make the layers readable where curves of two models cross.
            line->setScatterStyle(QCPScatterStyle(k == 0 ? QCPScatterStyle::ssDisc : QCPScatterStyle::ssCircle, color,
                k == 0 ? color : style.background, style.markerSize - 1));
            if (plotted.empty() || plotted.back() != int(i))
                plotted.push_back(int(i));
        }
    }

    if (!anyData) {
        setLayerAxis(x, 0, 12);
        y->setRange(0, 1);
        addNote(rect, QStringLiteral("No token-similarity data for the %1 tap").arg(tapName(tap)), style);
        return;
    }
    setLayerAxis(x, firstLayer, lastLayer);
    addStageBoundaries(rect, series, style);
    // Cosine similarity lies in [-1, 1]; over-smoothing studies read it on 0..1, so keep that frame unless the
    // data leave it (a negative mean, or a band reaching below 0).
    if (lowest < 0.0)
        y->setRange(std::max(-1.0, lowest - 0.05), std::min(1.0, highest) + 0.02);
    else
        y->setRange(0.0, 1.0);

    addModelsAndTwoKindsLegend(plot, rect, row, series, plotted, tokenSetName(TokenSet::All), tokenSetName(TokenSet::Patches), style);
}

} // namespace attnscope
