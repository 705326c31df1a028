#pragma once

#include "plots/PlotStyle.h"

#include <QPolygonF>
#include <attnscope/Summary.h>
#include <vector>

class QCustomPlot;

namespace attnscope {

// Head centres (docs/analyses.md section 3), Cordonnier et al. Fig. 4/6 style: one square panel per layer showing the
// offset plane around the query (x = Δx right, y = Δy down, as image rows; the query at the origin, marked ×), each
// head's centre as a dot in its colour and the outlines of its 50% and 90% mass regions (the offset-map cells with
// M >= contour50, solid, and M >= contour90, dashed).
// Limits are [-R-0.5, R+0.5], widened only if a centre lies outside. A hollow dot marks a head that puts more than
// half of its attention on prefix tokens: its centre says little about locality. Outlines are drawn inset by a
// small step per head index (at most 0.34 cell) so that heads sharing cell edges stay distinguishable.
void buildHeadCentresPlot(QCustomPlot* plot, const AnalysisSummary& summary, const PlotStyle& style);

// The boundary of the cells of a (2R+1)^2 offset map (rows dy = -R..R, columns dx = -R..R) whose value is >= level,
// as closed polygons in (dx, dy) coordinates (cell (dy, dx) spans dx ± 0.5, dy ± 0.5). Each polygon is moved
// `inset` cells towards the inside of the region (0 = on the cell edges), so coinciding outlines of several heads
// can be told apart. Holes come out as separate polygons.
std::vector<QPolygonF> levelSetOutline(
    const std::vector<double>& offsetMap, int radius, double level, double inset = 0.0);

} // namespace attnscope
