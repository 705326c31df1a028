#pragma once

#include "plots/PlotStyle.h"

#include <attnscope/Summary.h>

class QCustomPlot;

namespace attnscope {

// Head kernels (docs/analyses.md section 3, the kernel-regression view of seed 004): a grid of small panels, rows =
// layers, columns = heads, each the head's mean offset map M(δ) over δ in [-R, R]^2 (x = Δx right, y = Δy down, as
// image rows) as a heatmap, all panels on one logarithmic colour scale (a colour bar beside them). Over each map: the
// query cell outlined at the origin, the head's centre Δ as a dot (the mean over all patch queries, so it can lie off
// the map's own centroid; a centre beyond the window is drawn hollow on its edge), and a dashed circle of radius = the
// head's bandwidth (mean over images) around the centroid of the mean map, which is where the engine measures the
// bandwidth (Analyses.cpp, headCentres).
void buildHeadKernelPlot(QCustomPlot* plot, const AnalysisSummary& summary, const PlotStyle& style);

} // namespace attnscope
