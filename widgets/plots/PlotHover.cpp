#include "plots/PlotHover.h"

#include <QToolTip>
#include <qcustomplot.h>

#include <cmath>
#include <limits>

namespace attnscope {

namespace {

QString axisName(QCPAxis* axis, const QString& fallback)
{
    QString label = axis->label();
    label = label.section(QLatin1Char('('), 0, 0).trimmed(); // "Layer (0 = embeddings)" -> "Layer"
    return label.isEmpty() ? fallback : label;
}

QString number(double v)
{
    return std::abs(v - std::round(v)) < 1e-9 && std::abs(v) < 1e6 ? QString::number(qint64(std::llround(v))) : QString::number(v, 'g', 4);
}

// The nearest named curve point to `pos` (pixels) within `radius`, as tool-tip text.
QString nearestPoint(QCustomPlot* plot, const QPointF& pos, double radius)
{
    double best = radius * radius;
    QString text;
    for (int i = 0; i < plot->graphCount(); ++i) {
        QCPGraph* graph = plot->graph(i);
        const bool drawn = graph->lineStyle() != QCPGraph::lsNone && graph->pen().style() != Qt::NoPen;
        if (!graph->visible() || graph->name().isEmpty() || graph->data()->isEmpty() || (!drawn && graph->scatterStyle().isNone()))
            continue;
        if (!graph->keyAxis()->axisRect()->rect().contains(pos.toPoint()))
            continue;
        for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it) {
            if (std::isnan(it->value))
                continue;
            const QPointF p = graph->coordsToPixels(it->key, it->value);
            const double d = (p.x() - pos.x()) * (p.x() - pos.x()) + (p.y() - pos.y()) * (p.y() - pos.y());
            if (d < best) {
                best = d;
                text = QStringLiteral("<b>%1</b><br>%2 %3<br>%4 %5")
                           .arg(graph->name().toHtmlEscaped(), axisName(graph->keyAxis(), QStringLiteral("x")).toHtmlEscaped(),
                                number(it->key), axisName(graph->valueAxis(), QStringLiteral("y")).toHtmlEscaped(), number(it->value));
            }
        }
    }
    return text;
}

QString heatmapCell(QCustomPlot* plot, const QPointF& pos)
{
    for (int i = 0; i < plot->plottableCount(); ++i) {
        auto* map = qobject_cast<QCPColorMap*>(plot->plottable(i));
        if (!map || !map->visible() || !map->keyAxis()->axisRect()->rect().contains(pos.toPoint()))
            continue;
        double key = 0, value = 0;
        map->pixelsToCoords(pos, key, value);
        int cx = 0, cy = 0;
        map->data()->coordToCell(key, value, &cx, &cy);
        if (cx < 0 || cy < 0 || cx >= map->data()->keySize() || cy >= map->data()->valueSize())
            continue;
        map->data()->cellToCoord(cx, cy, &key, &value); // the cell's own coordinates (a token, a layer), not the pointer's
        const QString title = map->name().isEmpty() ? QString() : QStringLiteral("<b>%1</b><br>").arg(map->name().toHtmlEscaped());
        return title + QStringLiteral("%1 %2, %3 %4<br>value %5")
                           .arg(axisName(map->keyAxis(), QStringLiteral("x")).toHtmlEscaped(), number(key),
                                axisName(map->valueAxis(), QStringLiteral("y")).toHtmlEscaped(), number(value),
                                number(map->data()->cell(cx, cy)));
    }
    return {};
}

} // namespace

QString valuesAt(QCustomPlot* plot, const QPointF& pos)
{
    const QString text = nearestPoint(plot, pos, 24);
    return text.isEmpty() ? heatmapCell(plot, pos) : text;
}

void showHoverText(QWidget* widget, const QPoint& at, const QString& text)
{
    if (text.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(at, text, widget);
}

void enableHoverValues(QCustomPlot* plot)
{
    plot->setMouseTracking(true);
    QObject::connect(plot, &QCustomPlot::mouseMove, plot, [plot](QMouseEvent* event) {
        showHoverText(plot, event->globalPosition().toPoint(), valuesAt(plot, event->position()));
    });
}

} // namespace attnscope
