#pragma once

#include <QPointF>
#include <QString>

class QCustomPlot;

namespace attnscope {

// Hovering a plot shows the values under the pointer in a tool tip: the nearest point of a named curve (its
// name, the x and y axis labels and values) within 24 px, or the cell of a heatmap.
void enableHoverValues(QCustomPlot* plot);
// The tool-tip text for a pointer at `pos` (widget pixels); empty when nothing is near.
QString valuesAt(QCustomPlot* plot, const QPointF& pos);

} // namespace attnscope
