#pragma once

#include "plots/PlotStyle.h"

#include <attnscope/Summary.h>
#include <vector>

class QCustomPlot;

namespace attnscope {

// SNR in dB against layer (docs/analyses.md section 4): one curve per (summary, perturbation, tap); colour = summary
// and perturbation, line style = tap (solid X_l, dashed U_l, dotted R_l), 95% bands, a 0 dB reference line.
void buildSnrPlot(QCustomPlot* plot, const std::vector<AnalysisSummary>& series, const PlotStyle& style);

// Proposition 3.1 and Theorem 4.1 diagnostics as three panels in one plot: (a) alpha, beta, gamma; (b) the SNR gain
// of each attention sub-block against its lower bound; (c) the sensitivity K_l on a log axis. One colour per
// (summary, perturbation).
void buildSnrDiagnosticsPlot(QCustomPlot* plot, const std::vector<AnalysisSummary>& series, const PlotStyle& style);

} // namespace attnscope
