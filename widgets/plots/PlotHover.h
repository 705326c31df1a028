#pragma once

#include <QPointF>
#include <QString>

class QCustomPlot;
class QWidget;

namespace attnscope {

// Hovering a plot shows the values under the pointer in a tool tip: the nearest point of a named curve (its
// name, the x and y axis labels and values) within 24 px, or the cell of a heatmap.
void enableHoverValues(QCustomPlot* plot);
// The tool-tip text for a pointer at `pos` (widget pixels); empty when nothing is near.
QString valuesAt(QCustomPlot* plot, const QPointF& pos);
// `text` as the tool tip of `widget` at the global position `at`, or no tool tip when it is empty: what every
// hover of the window (plots, the view, the tiles) shows.
void showHoverText(QWidget* widget, const QPoint& at, const QString& text);

} // namespace attnscope
