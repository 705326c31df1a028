#pragma once

// The figures attnscope draws from analysis results, in one table that the window's plot panels, its "export"
// and the CLI's figures/ folder all go through: so a figure exported from the GUI is the file the CLI writes,
// with the same CSV of the plotted data beside it.

#include "LogitDecompositionPlot.h"
#include "PlotStyle.h"

#include <QSize>
#include <QString>
#include <attnscope/Summary.h>

#include <string>
#include <vector>

class QCustomPlot;

namespace attnscope {

enum class Figure { TokenSimilarity, Snr, SnrDiagnostics, HeadCentres, AttentionDistance, LogitDecomposition };

// What the figures are drawn from: one summary per curve (model, variant, compared model), and for the logit
// decomposition one image's decomposition (optional).
struct FigureData {
    std::vector<AnalysisSummary> series;
    const LogitDecomposition* decomposition = nullptr;
    LogitDecompositionInfo decompositionInfo;
    int decompositionHead = 0;
};

const std::vector<Figure>& allFigures();
QString figureTitle(Figure figure);          // "Token similarity"
std::string figureFileName(Figure figure);   // "token_similarity" (CLI figures/ names)
bool figureHasData(Figure figure, const FigureData& data);
QSize figureSize(Figure figure, const FigureData& data); // the export size (FigureSizes.h)
// Draws the figure into `plot`; without data, an empty plot with a note saying what is missing.
void buildFigure(QCustomPlot* plot, Figure figure, const FigureData& data, const PlotStyle& style = {});
// The plotted data as CSV text, with a header row.
std::string figureCsv(Figure figure, const FigureData& data);

} // namespace attnscope
