#pragma once

#include "plots/PlotStyle.h"

#include <attnscope/Analyses.h>
#include <attnscope/LogitDecompositionInfo.h>

class QCustomPlot;

namespace attnscope {

// The four terms of layer 1's logits for one head (docs/analyses.md section 5), or their mean over the heads (head < 0,
// what the window shows while "mean of heads" or a view of no single head is selected): TT, TP, PT, PP as N x N
// heatmaps side by side (rows: query token, columns: key token), one diverging colour scale symmetric about 0 shared by
// all four, and a colour bar. The subtitle names the head and gives the spread of the cross terms TP + PT against
// TT + PP.
void buildLogitDecompositionFigure(QCustomPlot* plot, const LogitDecomposition& decomposition, int head,
    const LogitDecompositionInfo& info, const PlotStyle& style);

} // namespace attnscope
