#include "plots/TokenNormsPlot.h"

#include "plots/PlotElements.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <qcustomplot.h>

namespace attnscope {

namespace {

struct Quantity {
    QString name;
    Estimate TokenNormRow::*field;
};
struct Panel {
    QString title, yLabel;
    std::vector<Quantity> quantities;
    double floor; // the y range starts here at most (NaN: at the data)
};

} // namespace

void buildTokenNormsPlot(QCustomPlot* plot, const std::vector<AnalysisSummary>& series, const PlotStyle& style)
{
    const QString subtitle = joinProvenance({ describeModels(series), describeImages(series),
        QStringLiteral("X_l: block outputs; attention: of layer l+1, which reads X_l"), QStringLiteral("bands: 95% CI") });
    const int row = resetPlot(plot, QStringLiteral("High-norm tokens through depth"), subtitle, style);
    QCPLayoutGrid* panels = addPanelRow(plot, row);
    auto* group = new QCPMarginGroup(plot);
    const std::vector<Panel> spec = {
        { QStringLiteral("(a) Norms over the median"), QStringLiteral("|x| / patch median"),
          { { QStringLiteral("largest patch token"), &TokenNormRow::maxRatio }, { QStringLiteral("CLS token"), &TokenNormRow::clsRatio } },
          1.0 },
        { QStringLiteral("(b) High-norm outliers"), QStringLiteral("Per image"),
          { { QStringLiteral("outliers"), &TokenNormRow::outliers } }, 0.0 },
        { QStringLiteral("(c) Attention they absorb"), QStringLiteral("Share of layer l+1's attention"),
          { { QStringLiteral("on the outliers"), &TokenNormRow::outlierAttention },
            { QStringLiteral("on the prefix tokens"), &TokenNormRow::prefixAttention } },
          0.0 },
    };
    const std::vector<int> colours = seriesColours(series);
    int firstLayer = std::numeric_limits<int>::max(), lastLayer = std::numeric_limits<int>::min();
    for (const auto& s : series)
        for (const auto& r : s.tokenNorms) {
            firstLayer = std::min(firstLayer, r.layer);
            lastLayer = std::max(lastLayer, r.layer);
        }
    if (firstLayer > lastLayer)
        firstLayer = 0, lastLayer = 12;
    for (size_t p = 0; p < spec.size(); ++p) {
        const Panel& panel = spec[p];
        const int column = int(p);
        QCPAxisRect* rect = addLayerPanel(plot, panels, column, panel.title, group, QStringLiteral("Layer l (X_l)"), panel.yLabel,
                                          firstLayer, lastLayer, style);
        QCPAxis* y = rect->axis(QCPAxis::atLeft);
        double low = std::numeric_limits<double>::infinity(), high = -low;
        for (size_t k = 0; k < series.size(); ++k) {
            std::vector<const TokenNormRow*> rows;
            for (const auto& r : series[k].tokenNorms)
                rows.push_back(&r);
            std::sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->layer < b->layer; });
            for (size_t q = 0; q < panel.quantities.size(); ++q) {
                QVector<double> layer, mean, lo, hi;
                for (const auto* r : rows) {
                    const Estimate& e = r->*panel.quantities[q].field;
                    if (e.n <= 0 || !std::isfinite(e.mean))
                        continue;
                    const double band = std::isfinite(e.ci95) ? e.ci95 : 0.0;
                    layer << r->layer;
                    mean << e.mean;
                    lo << e.mean - band;
                    hi << e.mean + band;
                }
                if (layer.isEmpty())
                    continue;
                low = std::min(low, *std::min_element(lo.begin(), lo.end()));
                high = std::max(high, *std::max_element(hi.begin(), hi.end()));
                addBand(rect, layer, lo, hi, style.color(colours[k]), style);
                QCPGraph* line = addLine(rect, layer, mean, style.color(colours[k]), penStyleFor(int(q)),
                                         fromStd(series[k].label) + QStringLiteral(" · ") + panel.quantities[q].name, style);
                line->setScatterStyle(QCPScatterStyle(q == 0 ? QCPScatterStyle::ssDisc : QCPScatterStyle::ssCircle, style.color(colours[k]),
                                                      q == 0 ? style.color(colours[k]) : style.background, style.markerSize - 1));
            }
        }
        if (!std::isfinite(low)) {
            y->setRange(0, 1);
            addNote(rect, QStringLiteral("No data"), style);
        } else {
            low = std::min(low, panel.floor);
            const double span = std::max(high - low, p == 1 ? 1.0 : 0.05);
            y->setRange(low - 0.04 * span, low + 1.08 * span);
        }
        QStringList names;
        for (const auto& q : panel.quantities)
            names << q.name;
        addPanelStyleKey(plot, panels, 2, column, rect, names, style);
    }
    finishPanelRow(panels);
    if (series.size() > 1) {
        QCPLegend* legend = addLegendBelow(plot, plot->plotLayout(), row + 1, style);
        QCPAxisRect* first = plot->axisRect(0);
        for (size_t k = 0; k < series.size(); ++k)
            addLine(first, {}, {}, style.color(colours[k]), Qt::SolidLine, fromStd(series[k].label), style)->addToLegend(legend);
        finishLegend(legend, 4);
    }
}

} // namespace attnscope
