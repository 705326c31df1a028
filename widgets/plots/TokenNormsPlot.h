#pragma once

#include "plots/PlotStyle.h"

#include <attnscope/Summary.h>

#include <vector>

class QCustomPlot;

namespace attnscope {

// High-norm tokens through depth (Analyses.h section 7), per model over its images: (a) the largest patch token's norm
// and the CLS token's over the layer's patch median, (b) the high-norm outliers per image, (c) the share of the next
// layer's attention on the outliers and on the prefix tokens (attention sinks); 95% bands.
void buildTokenNormsPlot(QCustomPlot* plot, const std::vector<AnalysisSummary>& series, const PlotStyle& style);

} // namespace attnscope
