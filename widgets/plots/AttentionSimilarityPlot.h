#pragma once

#include "plots/PlotStyle.h"

#include <attnscope/Summary.h>

#include <vector>

class QCustomPlot;

namespace attnscope {

// Attention similarity through depth (docs/analyses.md section 2): per model, the cosine between the head-mean maps of
// layer l and l + 1 (solid, at l) and the mean pairwise cosine between the heads of layer l (dashed), each with its
// 95% band. High successive cosine: consecutive layers attend alike (attention collapse); high redundancy: the heads
// of a layer do the same thing.
void buildAttentionSimilarityPlot(QCustomPlot* plot, const std::vector<AnalysisSummary>& series, const PlotStyle& style);

} // namespace attnscope
