#pragma once

#include "plots/PlotStyle.h"

#include <attnscope/Summary.h>
#include <vector>

class QCustomPlot;

namespace attnscope {

// Mean attention distance in pixels against layer (docs/analyses.md section 3; Dosovitskiy et al. 2021, Fig. 7): one
// dot per head, models side by side at each layer (a small horizontal offset per model), a thin line through each
// model's mean over heads.
void buildAttentionDistancePlot(QCustomPlot* plot, const std::vector<AnalysisSummary>& series, const PlotStyle& style);

} // namespace attnscope
