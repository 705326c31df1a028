#include "plots/LogitDecompositionPlot.h"

#include "plots/Colormap.h"
#include "plots/PlotElements.h"
#include "plots/SquareAxisRect.h"

#include <algorithm>
#include <attnscope/FigureData.h>
#include <cmath>
#include <qcustomplot.h>

namespace attnscope {

namespace {

    bool sameShape(const Tensor& a, const Tensor& b) { return a.shape() == b.shape(); }

    double standardDeviation(const float* a, const float* b, int64_t count)
    {
        double mean = 0, m2 = 0;
        for (int64_t i = 0; i < count; ++i) {
            const double v = double(a[i]) + double(b[i]);
            const double delta = v - mean;
            mean += delta / double(i + 1);
            m2 += delta * (v - mean);
        }
        return count > 1 ? std::sqrt(m2 / double(count - 1)) : 0.0;
    }

    void addBoundary(QCPAxisRect* rect, double at, bool vertical, const PlotStyle& style)
    {
        auto* line = new QCPItemStraightLine(rect->parentPlot());
        line->setClipAxisRect(rect);
        line->setSelectable(false);
        line->setPen(QPen(style.foreground, 0.8, Qt::DashLine));
        for (auto* p : { line->point1, line->point2 })
            p->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
        line->point1->setCoords(vertical ? at : 0, vertical ? 0 : at);
        line->point2->setCoords(vertical ? at : 1, vertical ? 1 : at);
    }

} // namespace

void buildLogitDecompositionFigure(QCustomPlot* plot, const LogitDecomposition& d, int head,
    const LogitDecompositionInfo& info, const PlotStyle& style)
{
    const bool valid = d.tt.dim() == 3 && d.tt.size(1) == d.tt.size(2) && sameShape(d.tt, d.tp) && sameShape(d.tt, d.pt)
        && sameShape(d.tt, d.pp) && head < d.tt.size(0) && d.tt.size(0) > 0;
    const int64_t n = valid ? d.tt.size(1) : 0;
    const int64_t cells = n * n;
    std::vector<float> values[4];
    if (valid) {
        int k = 0;
        for (const Tensor* t : { &d.tt, &d.tp, &d.pt, &d.pp })
            values[k++] = decompositionTerm(*t, head);
    }
    const QString headName = head < 0 ? QStringLiteral("mean of heads") : QStringLiteral("head %1").arg(head);

    double limit = 0;
    QString spread;
    if (valid) {
        for (const auto& v : values)
            for (const float x : v)
                limit = std::max(limit, double(std::abs(x)));
        // The filtering paper (Sec. 3.3) reads the cross terms as positional noise on the content/position signal.
        spread = QStringLiteral("sd(TP + PT) = %1, sd(TT + PP) = %2")
                     .arg(standardDeviation(values[1].data(), values[2].data(), cells), 0, 'g', 3)
                     .arg(standardDeviation(values[0].data(), values[3].data(), cells), 0, 'g', 3);
    }
    if (!(limit > 0))
        limit = 1.0;

    const QString subtitle = joinProvenance({ QString::fromStdString(info.model), QString::fromStdString(info.image),
        QStringLiteral("layer 1, %1").arg(headName), QStringLiteral("%1 tokens").arg(n), spread });
    const int row = resetPlot(
        plot, QStringLiteral("Layer-1 attention logits split into content and position terms"), subtitle, style);
    auto* panels = new QCPLayoutGrid;
    plot->plotLayout()->addElement(row, 0, panels);
    panels->setColumnSpacing(6);
    if (!valid) {
        QCPAxisRect* rect = addAxisRect(plot, panels, 0, 0, style);
        addNote(rect, QStringLiteral("No logit decomposition for the %1").arg(headName), style);
        return;
    }

    auto* scale = new QCPColorScale(plot);
    auto* group = new QCPMarginGroup(plot);
    const QString titles[]
        = { QStringLiteral("TT  content \u2192 content"), QStringLiteral("TP  content \u2192 position"),
              QStringLiteral("PT  position \u2192 content"), QStringLiteral("PP  position \u2192 position") };
    const QCPColorGradient gradient = colorGradient(Colormap::CoolWarm);
    for (int k = 0; k < 4; ++k) {
        auto* rect = new SquareAxisRect(plot);
        panels->addElement(0, k, rect);
        rect->setupFullAxesBox(false);
        applyStyle(rect, style);
        rect->setMarginGroup(QCP::msAll, group);
        if (k == 0)
            rect->setVerticalCompanion(scale);
        QCPAxis* x = rect->axis(QCPAxis::atBottom);
        QCPAxis* y = rect->axis(QCPAxis::atLeft);
        QCPAxis* top = rect->axis(QCPAxis::atTop);
        for (QCPAxis* axis : { x, y, top, rect->axis(QCPAxis::atRight) }) {
            axis->setRange(-0.5, double(n) - 0.5);
            axis->grid()->setVisible(false);
        }
        y->setRangeReversed(true); // query 0 at the top, like a matrix
        rect->axis(QCPAxis::atRight)->setRangeReversed(true);
        x->setLabel(QStringLiteral("key token"));
        y->setLabel(k == 0 ? QStringLiteral("query token") : QString());
        y->setTickLabels(k == 0);
        top->setLabel(titles[k]);
        top->setLabelFont(style.font(style.labelFontPx, true));
        top->setLabelPadding(4);

        auto* map = new QCPColorMap(x, y);
        map->data()->setSize(int(n), int(n));
        map->data()->setRange(QCPRange(0, double(n - 1)), QCPRange(0, double(n - 1)));
        const float* v = values[k].data();
        for (int64_t i = 0; i < n; ++i) // query (row, value axis)
            for (int64_t j = 0; j < n; ++j) // key (column, key axis)
                map->data()->setCell(int(j), int(i), double(v[i * n + j]));
        map->setInterpolate(false);
        map->setTightBoundary(false);
        map->setGradient(gradient);
        map->setDataRange(QCPRange(-limit, limit));
        map->setColorScale(scale);
        map->setSelectable(QCP::stNone);
        if (info.numPrefixTokens > 0 && info.numPrefixTokens < n) {
            addBoundary(rect, info.numPrefixTokens - 0.5, true, style);
            addBoundary(rect, info.numPrefixTokens - 0.5, false, style);
        }
    }
    panels->addElement(0, 4, scale);
    scale->setType(QCPAxis::atRight);
    scale->setGradient(gradient);
    scale->setDataRange(QCPRange(-limit, limit));
    scale->setBarWidth(12);
    scale->setRangeDrag(false);
    scale->setRangeZoom(false);
    scale->axis()->setLabel(QStringLiteral("logit term"));
    applyStyle(scale->axis(), style);
    scale->axis()->grid()->setVisible(false);
    panels->setColumnStretchFactor(4, 0.001);
}

} // namespace attnscope
