#include "plots/SnrPlot.h"

#include "plots/PlotElements.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <qcustomplot.h>

namespace attnscope {

namespace {

    // A (summary, perturbation) pair: one colour in both figures.
    struct SeriesKey {
        size_t summary;
        std::string perturbation;
    };

    template <typename Row>
    std::vector<SeriesKey> seriesKeys(
        const std::vector<AnalysisSummary>& series, std::vector<Row> AnalysisSummary::*rows)
    {
        std::vector<SeriesKey> keys;
        for (size_t i = 0; i < series.size(); ++i) {
            for (const auto& row : series[i].*rows) {
                const bool known = std::any_of(keys.begin(), keys.end(),
                    [&](const SeriesKey& k) { return k.summary == i && k.perturbation == row.perturbation; });
                if (!known)
                    keys.push_back({ i, row.perturbation });
            }
        }
        return keys;
    }

    QStringList perturbationsOf(const std::vector<SeriesKey>& keys)
    {
        QStringList list;
        for (const auto& k : keys) {
            const QString p = fromStd(k.perturbation);
            if (!p.isEmpty() && !list.contains(p))
                list << p;
        }
        return list;
    }

    // The colour of each key: a summary's first key has the summary's colour (seriesColours: a model keeps its own); its
    // other perturbations take the indices after every summary's.
    std::vector<int> keyColours(const std::vector<AnalysisSummary>& series, const std::vector<SeriesKey>& keys)
    {
        const std::vector<int> byModel = seriesColours(series);
        int next = byModel.empty() ? 0 : *std::max_element(byModel.begin(), byModel.end()) + 1;
        std::vector<int> colours;
        std::vector<size_t> seen;
        for (const auto& k : keys) {
            const bool first = std::find(seen.begin(), seen.end(), k.summary) == seen.end();
            colours.push_back(first ? byModel[k.summary] : next++);
            seen.push_back(k.summary);
        }
        return colours;
    }

    // The legend name of a key: only the parts that vary between keys.
    QString keyName(
        const std::vector<AnalysisSummary>& series, const std::vector<SeriesKey>& keys, const SeriesKey& key)
    {
        const bool manySummaries
            = std::any_of(keys.begin(), keys.end(), [&](auto& k) { return k.summary != key.summary; });
        const bool manyPerturbations = perturbationsOf(keys).size() > 1;
        QStringList parts;
        if (manySummaries || !manyPerturbations)
            parts << fromStd(series[key.summary].label);
        if (manyPerturbations)
            parts << fromStd(key.perturbation);
        return parts.join(QStringLiteral(", "));
    }

    struct Curve {
        QVector<double> layer, mean, low, high;
        void add(int l, const Estimate& e)
        {
            layer << l;
            mean << e.mean;
            low << e.mean - e.ci95;
            high << e.mean + e.ci95;
        }
        bool empty() const { return layer.isEmpty(); }
    };

    void addReferenceLine(QCPAxisRect* rect, double y, const PlotStyle& style)
    {
        auto* line = new QCPItemStraightLine(rect->parentPlot());
        line->setClipAxisRect(rect);
        line->point1->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
        line->point2->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
        line->point1->setCoords(0, y);
        line->point2->setCoords(1, y);
        line->setPen(QPen(style.neutral, 1.0, Qt::DashLine));
        line->setSelectable(false);
        line->setLayer(QStringLiteral("grid"));
    }

    QCPRange paddedRange(double low, double high, double minimumSpan)
    {
        if (!(high > low))
            high = low + minimumSpan;
        const double pad = 0.06 * (high - low);
        return { low - pad, high + pad };
    }

} // namespace

void buildSnrPlot(QCustomPlot* plot, const std::vector<AnalysisSummary>& series, const PlotStyle& style)
{
    const std::vector<SeriesKey> keys = seriesKeys(series, &AnalysisSummary::snr);
    const std::vector<int> colours = keyColours(series, keys);
    const QStringList perturbations = perturbationsOf(keys);
    const QString options = describeOptions(series);
    const QString subtitle = joinProvenance({ describeModels(series), describeImages(series),
        perturbations.size() == 1 ? perturbationsNotIn(perturbations, options) : QString(), options,
        QStringLiteral("bands: 95% CI") });
    const int row = resetPlot(plot, QStringLiteral("Signal-to-noise ratio through depth"), subtitle, style);
    QCPAxisRect* rect = addAxisRect(plot, plot->plotLayout(), row, 0, style);
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    x->setLabel(QStringLiteral("Layer (0 = embeddings)"));
    y->setLabel(QStringLiteral("SNR (dB)"));

    const Tap taps[] = { Tap::Block, Tap::Attn, Tap::Residual };
    bool tapUsed[3] = { false, false, false };
    int firstLayer = std::numeric_limits<int>::max(), lastLayer = std::numeric_limits<int>::min();
    double low = std::numeric_limits<double>::infinity(), high = -low;
    for (size_t k = 0; k < keys.size(); ++k) {
        const QColor color = style.color(colours[k]);
        for (int t = 0; t < 3; ++t) {
            std::vector<const SnrRow*> rows;
            for (const auto& r : series[keys[k].summary].snr) {
                if (r.perturbation == keys[k].perturbation && r.tap == taps[t] && r.snrDb.n > 0
                    && std::isfinite(r.snrDb.mean))
                    rows.push_back(&r);
            }
            if (rows.empty())
                continue;
            std::sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->layer < b->layer; });
            Curve c;
            for (const auto* r : rows)
                c.add(r->layer, r->snrDb);
            tapUsed[t] = true;
            firstLayer = std::min(firstLayer, int(c.layer.front()));
            lastLayer = std::max(lastLayer, int(c.layer.back()));
            low = std::min(low, *std::min_element(c.low.begin(), c.low.end()));
            high = std::max(high, *std::max_element(c.high.begin(), c.high.end()));
            addBand(rect, c.layer, c.low, c.high, color, style);
            addLine(rect, c.layer, c.mean, color, penStyleFor(t), keyName(series, keys, keys[k]) + QStringLiteral(" · ") + tapSymbol(taps[t]), style);
        }
    }
    if (firstLayer > lastLayer) {
        setLayerAxis(x, 0, 12);
        y->setRange(-10, 40);
        addNote(rect, QStringLiteral("No SNR data (run with a perturbation)"), style);
        return;
    }
    setLayerAxis(x, firstLayer, lastLayer);
    addStageBoundaries(rect, series, style);
    y->setRange(paddedRange(std::min(low, 0.0), high, 10.0));
    addReferenceLine(rect, 0.0, style);

    QCPLegend* legend = addLegend(plot, rect, row, style);
    for (const auto& key : keys) {
        const QColor color = style.color(colours[size_t(&key - keys.data())]);
        addLine(rect, {}, {}, color, Qt::SolidLine, keyName(series, keys, key), style)->addToLegend(legend);
    }
    QCPLegend* tapKeys = addKeyLegend(plot, legend, style);
    const int tapsShown = int(std::count(std::begin(tapUsed), std::end(tapUsed), true));
    for (int t = 0; t < 3; ++t) {
        if (tapUsed[t] && (tapsShown > 1 || t != 0))
            addStyleKey(rect, tapKeys, tapDescription(taps[t]), penStyleFor(t), style);
    }
    finishLegend(legend, 4);
    if (tapKeys != legend)
        finishLegend(tapKeys, 4);
}

void buildSnrDiagnosticsPlot(QCustomPlot* plot, const std::vector<AnalysisSummary>& series, const PlotStyle& style)
{
    const std::vector<SeriesKey> keys = seriesKeys(series, &AnalysisSummary::snrDiagnostics);
    const std::vector<int> colours = keyColours(series, keys);
    const QStringList perturbations = perturbationsOf(keys);
    const QString options = describeOptions(series);
    const QString subtitle = joinProvenance({ describeModels(series), describeImages(series),
        perturbations.size() == 1 ? perturbationsNotIn(perturbations, options) : QString(), options,
        QStringLiteral("\u03b1, \u03b2 on centred tokens"), QStringLiteral("bands: 95% CI") });
    const int row = resetPlot(plot, QStringLiteral("Noise through the attention sub-blocks"), subtitle, style);

    QCPLayoutGrid* panels = addPanelRow(plot, row);
    auto* group = new QCPMarginGroup(plot);

    using Getter = std::function<const Estimate&(const SnrDiagnosticsRow&)>;
    struct Quantity {
        QString name;
        Getter get;
    };
    struct Panel {
        QString title, yLabel;
        std::vector<Quantity> quantities;
        bool log;
        double reference; // NaN: none
    };
    const double none = std::numeric_limits<double>::quiet_NaN();
    const std::vector<Panel> spec = { { QStringLiteral("(a) \u03b1, \u03b2, \u03b3"), QStringLiteral("Value"),
        // docs/analyses.md section 4 writes u, û for the centred X_{l-1}, U_l and η, η̂ for their perturbations;
        // combining hats do not survive small print, so the key names the taps.
        { { QStringLiteral("\u03b1 = \u2016U\u2097\u2016 / \u2016X\u2097\u208b\u2081\u2016"),
            [](auto& r) -> auto& { return r.alpha;
}
} // namespace attnscope
, { QStringLiteral("\u03b2 = cos(X\u2097\u208b\u2081, U\u2097)"), [](auto& r) -> auto& { return r.beta;
}
}
,
{
    QStringLiteral("\u03b3 = \u2016\u0394U\u2097\u2016 / \u2016\u0394X\u2097\u208b\u2081\u2016"), [](auto& r) -> auto&
    {
        return r.gamma;
    }
}
}
, false, none
}
,
    { QStringLiteral("(b) SNR gain vs bound"), QStringLiteral("SNR out / SNR in"),
        { { QStringLiteral("gain"), [](auto& r) -> auto& { return r.gain;
}
}
,
{
    QStringLiteral("lower bound"), [](auto& r) -> auto& { return r.bound; }
}
}
, false, 1.0
}
,
    { QStringLiteral("(c) Sensitivity K\u2097"),
        QStringLiteral("K\u2097 = \u2016\u0394X\u2097\u2016 / \u2016\u0394X\u2080\u2016"),
        { { QStringLiteral("K\u2097"), [](auto& r) -> auto& { return r.sensitivity;
}
}
}
, true, 1.0
}
,
}
;

int firstLayer = std::numeric_limits<int>::max(), lastLayer = std::numeric_limits<int>::min();
for (const auto& s : series) {
    for (const auto& r : s.snrDiagnostics) {
        firstLayer = std::min(firstLayer, r.layer);
        lastLayer = std::max(lastLayer, r.layer);
    }
}
const bool anyData = firstLayer <= lastLayer;
if (!anyData)
    firstLayer = 1, lastLayer = 12;

for (size_t p = 0; p < spec.size(); ++p) {
    const Panel& panel = spec[p];
    const int column = int(p);
    QCPAxisRect* rect = addLayerPanel(plot, panels, column, panel.title, group, QStringLiteral("Layer"), panel.yLabel, firstLayer,
        lastLayer, style);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    if (panel.log) {
        y->setScaleType(QCPAxis::stLogarithmic);
        auto ticker = QSharedPointer<QCPAxisTickerLog>::create();
        ticker->setLogBase(10);
        ticker->setSubTickCount(8);
        y->setTicker(ticker);
        y->setSubTicks(true);
        y->setNumberFormat(QStringLiteral("gb"));
        y->setNumberPrecision(6);
    }

    double low = std::numeric_limits<double>::infinity(), high = -low;
    for (size_t k = 0; k < keys.size(); ++k) {
        std::vector<const SnrDiagnosticsRow*> rows;
        for (const auto& r : series[keys[k].summary].snrDiagnostics) {
            if (r.perturbation == keys[k].perturbation)
                rows.push_back(&r);
        }
        std::sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->layer < b->layer; });
        for (size_t q = 0; q < panel.quantities.size(); ++q) {
            Curve c;
            for (const auto* r : rows) {
                const Estimate& e = panel.quantities[q].get(*r);
                if (e.n > 0 && std::isfinite(e.mean) && (!panel.log || e.mean > 0))
                    c.add(r->layer, e);
            }
            if (c.empty())
                continue;
            if (panel.log) {
                // A band reaching 0 or below cannot be drawn on a log axis; clip it at a tenth of the mean.
                for (int i = 0; i < c.low.size(); ++i)
                    c.low[i] = std::max(c.low[i], 0.1 * c.mean[i]);
            }
            low = std::min(low, *std::min_element(c.low.begin(), c.low.end()));
            high = std::max(high, *std::max_element(c.high.begin(), c.high.end()));
            addBand(rect, c.layer, c.low, c.high, style.color(colours[k]), style);
            addLine(rect, c.layer, c.mean, style.color(colours[k]), penStyleFor(int(q)),
                keyName(series, keys, keys[k]) + QStringLiteral(" · ") + panel.quantities[q].name, style);
        }
    }
    if (!std::isfinite(low)) {
        y->setRange(panel.log ? QCPRange(0.5, 10) : QCPRange(0, 1));
        addNote(rect, QStringLiteral("No data"), style);
    } else if (panel.log) {
        low = std::min(low, panel.reference);
        high = std::max(high, panel.reference);
        y->setRange(low / 1.4, high * 1.4);
    } else {
        if (std::isfinite(panel.reference)) {
            low = std::min(low, panel.reference);
            high = std::max(high, panel.reference);
        }
        y->setRange(paddedRange(std::min(low, 0.0), high, 1.0));
    }
    if (std::isfinite(panel.reference))
        addReferenceLine(rect, panel.reference, style);

    QStringList names;
    for (const auto& q : panel.quantities)
        names << q.name;
    addPanelStyleKey(plot, panels, 2, column, rect, names, style);
}
finishPanelRow(panels);

if (keys.size() > 1 || (keys.size() == 1 && series.size() > 1)) {
    QCPLegend* legend = addLegendBelow(plot, plot->plotLayout(), row + 1, style);
    QCPAxisRect* first = plot->axisRect(0);
    for (size_t k = 0; k < keys.size(); ++k)
        addLine(first, {}, {}, style.color(colours[k]), Qt::SolidLine, keyName(series, keys, keys[k]), style)
            ->addToLegend(legend);
    finishLegend(legend, 4);
}
}

} // namespace attnscope
