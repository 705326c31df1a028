#pragma once

// The figures attnscope draws from analysis results, in one table that the window's plot panels, its "export"
// and the CLI's figures/ folder all go through: so a figure exported from the GUI is the file the CLI writes,
// with the same CSV of the plotted data beside it. The table and the CSVs are the engine's FigureData.h (no Qt); this
// adds the drawing.

#include "plots/PlotStyle.h"

#include <QImage>
#include <QSize>
#include <QString>
#include <attnscope/FigureData.h>

class QCustomPlot;

namespace attnscope {

QString figureTitle(Figure figure);                      // "Token similarity"
QSize figureSize(Figure figure, const FigureData& data); // the export size (FigureSizes.h)
// Draws the figure into `plot`; without data, an empty plot with a note saying what is missing.
void buildFigure(QCustomPlot* plot, Figure figure, const FigureData& data, const PlotStyle& style = {});

// The figures of one image (their CSVs: FigureData.h), as images at 2 device pixels per logical pixel, for
// exportImage: the layers x heads attention grid (AttentionGridFigure.h), the class relevance (RelevanceFigure.h) and
// the token norms (TokenNormsFigure.h).
QImage renderFigure(const AttentionGrid& grid);
QImage renderFigure(const RelevanceFigure& figure);
QImage renderFigure(const TokenNormsFigure& figure);

} // namespace attnscope
