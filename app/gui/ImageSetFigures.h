#pragma once

#include <attnscope/Summary.h>

#include <QString>

class QCustomPlot;

// The image-set figures of the window, drawn by the same builders as the CLI: 0 token similarity, 1 SNR,
// 2 SNR diagnostics, 3 head centres, 4 attention distance.
void buildSetFigure(QCustomPlot* plot, const attnscope::AnalysisSummary& summary, int index);

// The CSVs (named and laid out as the CLI writes them) and every figure in PNG, SVG and PDF, into `dir`.
bool exportImageSetFigures(const QString& dir, const attnscope::AnalysisSummary& summary, int layers, QString* error);
