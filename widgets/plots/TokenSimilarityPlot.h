#pragma once

#include "plots/PlotStyle.h"

#include <attnscope/Summary.h>
#include <vector>

class QCustomPlot;

namespace attnscope {

// Token cosine similarity (docs/analyses.md section 1) against layer at `tap`: one colour per summary (model or
// variant), solid for all tokens, dashed for patch tokens, translucent 95% bands (mean ± ci95). The y axis spans 0..1
// unless a value is negative. Clears `plot` first; the title states the models, image counts, options and tap.
void buildTokenSimilarityPlot(
    QCustomPlot* plot, const std::vector<AnalysisSummary>& series, Tap tap, const PlotStyle& style);

} // namespace attnscope
