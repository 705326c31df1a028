#include "plots/HeadAblationPlot.h"

#include "plots/Colormap.h"
#include "plots/PlotElements.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <qcustomplot.h>

namespace attnscope {

namespace {

QString percent(double share) { return QStringLiteral("%1%").arg(100.0 * share, 0, 'f', 1); }

QString headName(const HeadAblationRow& r) { return QStringLiteral("layer %1 head %2").arg(r.layer).arg(r.head); }

// "+1.5 pt", "-2.0 pt", "0.0 pt" (no "-0.0").
QString points(double share)
{
    const double pt = std::round(1000.0 * share) / 10.0;
    return pt == 0 ? QStringLiteral("0.0 pt") : QStringLiteral("%1%2 pt").arg(pt > 0 ? "+" : "").arg(pt, 0, 'f', 1);
}

} // namespace

std::pair<double, double> klRange(const std::vector<HeadAblationRow>& rows)
{
    double high = 0, low = std::numeric_limits<double>::infinity();
    for (const auto& r : rows)
        if (std::isfinite(r.kl.mean) && r.kl.mean > 0) {
            high = std::max(high, r.kl.mean);
            low = std::min(low, r.kl.mean);
        }
    if (!(high > 0))
        return { 1e-4, 1.0 };
    low = std::max(low, high * 1e-4);
    return { low < high ? low : high / 10, high };
}

std::vector<const HeadAblationRow*> mostImportantHeads(const std::vector<HeadAblationRow>& all, int count)
{
    std::vector<const HeadAblationRow*> rows;
    for (const auto& r : all)
        if (r.flipShare > 0)
            rows.push_back(&r);
    std::stable_sort(rows.begin(), rows.end(), [](const HeadAblationRow* a, const HeadAblationRow* b) {
        if (a->flipShare != b->flipShare)
            return a->flipShare > b->flipShare;
        return a->kl.mean > b->kl.mean;
    });
    rows.resize(std::min(rows.size(), size_t(std::max(0, count))));
    return rows;
}

void buildHeadAblationPlot(QCustomPlot* plot, const std::vector<AnalysisSummary>& series, const PlotStyle& style)
{
    std::vector<const AnalysisSummary*> shown;
    for (const auto& s : series)
        if (!s.ablation.empty())
            shown.push_back(&s);
    QString mode;
    for (const auto* s : shown)
        if (!s->ablationMode.empty())
            mode = QStringLiteral("%1 ablation").arg(fromStd(s->ablationMode));
    const QString subtitle = joinProvenance({ describeModels(series), describeImages(series), mode,
        QStringLiteral("colour: mean KL(p \u2016 p ablated)"), QStringLiteral("numbers: most predictions flipped") });
    const int row = resetPlot(plot, QStringLiteral("Which heads matter: head ablation"), subtitle, style);
    auto* body = new QCPLayoutGrid;
    plot->plotLayout()->addElement(row, 0, body);
    body->setColumnSpacing(14);

    if (shown.empty()) {
        QCPAxisRect* rect = addAxisRect(plot, body, 0, 0, style);
        addNote(rect, QStringLiteral("No head ablation (the \"ablation\" analysis)"), style);
        return;
    }
    // One log colour scale for every model.
    std::vector<HeadAblationRow> all;
    for (const auto* s : shown)
        all.insert(all.end(), s->ablation.begin(), s->ablation.end());
    const auto [low, high] = klRange(all);
    QCPColorGradient gradient = colorGradient(Colormap::Viridis);
    gradient.setNanHandling(QCPColorGradient::nhTransparent);
    auto* scale = new QCPColorScale(plot);
    auto* group = new QCPMarginGroup(plot);
    for (size_t k = 0; k < shown.size(); ++k) {
        const AnalysisSummary& s = *shown[k];
        int layers = 0, heads = 0;
        for (const auto& r : s.ablation) {
            layers = std::max(layers, r.layer);
            heads = std::max(heads, r.head + 1);
        }
        QCPAxisRect* rect = addAxisRect(plot, body, 0, int(k), style);
        rect->setMarginGroup(QCP::msTop | QCP::msBottom, group);
        QCPAxis* x = rect->axis(QCPAxis::atBottom);
        QCPAxis* y = rect->axis(QCPAxis::atLeft);
        x->setRange(-0.5, heads - 0.5);
        y->setRange(0.5, layers + 0.5);
        y->setRangeReversed(true); // layer 1 at the top, as the tiles of the window
        x->setLabel(QStringLiteral("Head"));
        y->setLabel(k == 0 ? QStringLiteral("Layer") : QString());
        for (QCPAxis* axis : { x, y }) {
            axis->grid()->setVisible(false);
            auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
            ticker->setTickStep(std::max(heads, layers) > 12 ? 2 : 1);
            ticker->setScaleStrategy(std::max(heads, layers) > 12 ? QCPAxisTickerFixed::ssMultiples : QCPAxisTickerFixed::ssNone);
            axis->setTicker(ticker);
            axis->setSubTicks(false);
        }
        if (shown.size() > 1) {
            QCPAxis* top = rect->axis(QCPAxis::atTop);
            top->setVisible(true);
            top->setTicks(false);
            top->setTickLabels(false);
            top->setBasePen(Qt::NoPen);
            top->setLabel(fromStd(s.label));
            top->setLabelFont(style.font(style.labelFontPx, true));
        }
        auto* map = new QCPColorMap(x, y);
        map->data()->setSize(heads, layers);
        map->data()->setRange(QCPRange(0, heads - 1), QCPRange(1, std::max(1, layers)));
        for (int h = 0; h < heads; ++h)
            for (int l = 0; l < layers; ++l)
                map->data()->setCell(h, l, std::nan(""));
        for (const auto& r : s.ablation)
            map->data()->setCell(r.head, r.layer - 1, std::isfinite(r.kl.mean) ? std::max(r.kl.mean, low) : r.kl.mean);
        setLogColours(map, scale, gradient, low, high);
        map->setName(fromStd(s.label) + QStringLiteral(": mean KL, x = head, y = layer"));
        map->setSelectable(QCP::stNone);

        const auto top = mostImportantHeads(s.ablation);
        QStringList named;
        for (size_t i = 0; i < top.size(); ++i) {
            const HeadAblationRow& r = *top[i];
            auto* number = new QCPItemText(plot);
            number->setClipAxisRect(rect);
            number->position->setAxisRect(rect);
            number->position->setAxes(x, y);
            number->position->setCoords(r.head, r.layer);
            number->setText(QString::number(i + 1));
            number->setFont(style.font(style.tickFontPx, true));
            number->setColor(Qt::white);
            number->setBrush(QBrush(QColor(0, 0, 0, 150)));
            number->setPadding(QMargins(3, 0, 3, 0));
            number->setSelectable(false);
            QString text = QStringLiteral("%1  %2: %3 flipped, KL %4").arg(i + 1).arg(headName(r), percent(r.flipShare)).arg(r.kl.mean, 0, 'g', 3);
            if (r.accuracy.n > 0)
                text += QStringLiteral(", accuracy %1").arg(points(r.accuracy.mean));
            named << text;
        }
        // Under each map, a line per head it numbers.
        auto* caption = new QCPTextElement(plot, named.isEmpty() ? QStringLiteral("no ablation flips a prediction") : named.join(QLatin1Char('\n')),
                                           style.font(style.subtitleFontPx));
        caption->setTextColor(style.mutedText);
        caption->setTextFlags(Qt::AlignLeft | Qt::AlignTop);
        caption->setSelectable(false);
        body->addElement(1, int(k), caption);
    }
    body->addElement(0, int(shown.size()), scale);
    body->setColumnStretchFactor(int(shown.size()), 0.001);
    setLogColourScale(scale, gradient, low, high, QStringLiteral("mean KL"), style);
    scale->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    body->setRowStretchFactor(1, 0.001);
}

} // namespace attnscope
