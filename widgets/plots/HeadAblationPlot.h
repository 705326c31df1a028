#pragma once

#include "plots/PlotStyle.h"

#include <attnscope/Summary.h>

#include <utility>
#include <vector>

class QCustomPlot;

namespace attnscope {

// The heads that matter most (docs/analyses.md section 8): those of `rows` whose ablation flips the most predictions,
// ties broken by the mean KL; heads that flip nothing are not named. At most `count`, pointing into `rows`.
std::vector<const HeadAblationRow*> mostImportantHeads(const std::vector<HeadAblationRow>& rows, int count = 3);

// The log scale of mean KL the figure and the tiles draw: from the largest down to the smallest, four decades at most.
std::pair<double, double> klRange(const std::vector<HeadAblationRow>& rows);

// Head importance by ablation (Analyses.h section 8): per model, a layers x heads map of the mean KL divergence of the
// prediction when the head is ablated (layer 1 at the top, log colour scale shared by the models), the heads that flip
// the most predictions numbered on the map and named under it.
void buildHeadAblationPlot(QCustomPlot* plot, const std::vector<AnalysisSummary>& series, const PlotStyle& style);

} // namespace attnscope
