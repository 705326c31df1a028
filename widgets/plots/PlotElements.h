#pragma once

// Pieces the plot builders share: a fresh layout with a title, legends, confidence bands, integer layer ticks,
// and the wording of provenance (models, image counts, options) that every figure carries.

#include "plots/PlotStyle.h"

#include <QString>
#include <QStringList>
#include <QVector>
#include <attnscope/Summary.h>
#include <vector>

class QCustomPlot;
class QCPAxis;
class QCPAxisRect;
class QCPColorGradient;
class QCPColorMap;
class QCPColorScale;
class QCPGraph;
class QCPLayoutGrid;
class QCPLegend;
class QCPMarginGroup;

namespace attnscope {

// Removes every plottable, item, axis rect and legend, and leaves an empty main layout with a title row (and a
// subtitle row when `subtitle` is not empty). Returns the row index where the builder's content goes.
int resetPlot(QCustomPlot* plot, const QString& title, const QString& subtitle, const PlotStyle& style);

// A styled axis rect placed in `layout` at (row, column).
QCPAxisRect* addAxisRect(QCustomPlot* plot, QCPLayoutGrid* layout, int row, int column, const PlotStyle& style);

// A legend for `rect`, placed as `style.legendPlacement` says (Below/Right: in the plot's main layout next to the
// element at `contentRow`; Inside*: in the rect's inset layout). Builders call it only when it will have entries.
QCPLegend* addLegend(QCustomPlot* plot, QCPAxisRect* rect, int contentRow, const PlotStyle& style);
// A second legend for line-style keys ("dashed: patch tokens"), on its own row under `primary` (Below), under it
// in the same column (Right), or `primary` itself (Inside*), so that colour entries and style keys each keep
// their natural spacing.
QCPLegend* addKeyLegend(QCustomPlot* plot, QCPLegend* primary, const PlotStyle& style);
// Call once the items are in: lays them out in up to `maxColumns` columns (one for side and inset legends), as many
// as fit the plot's width, and fixes the legend at its natural size. The plot fits it again when its width changes.
void finishLegend(QCPLegend* legend, int maxColumns);
// A legend in a row of its own at `row` of `layout` (inserted there), centred (panel figures).
QCPLegend* addLegendBelow(QCustomPlot* plot, QCPLayoutGrid* layout, int row, const PlotStyle& style);

// A line graph of (x, y), in `color` with `penStyle`, named for the legend (not added to any legend).
QCPGraph* addLine(QCPAxisRect* rect, const QVector<double>& x, const QVector<double>& y, const QColor& color,
    Qt::PenStyle penStyle, const QString& name, const PlotStyle& style);
// A translucent band between `low` and `high` (95% interval); returns the upper graph, whose fill draws it.
QCPGraph* addBand(QCPAxisRect* rect, const QVector<double>& x, const QVector<double>& low, const QVector<double>& high,
    const QColor& color, const PlotStyle& style);
// A data-less graph whose only use is a legend entry that explains a line style ("dashed: patch tokens").
QCPGraph* addStyleKey(
    QCPAxisRect* rect, QCPLegend* legend, const QString& name, Qt::PenStyle penStyle, const PlotStyle& style);

// A row of panels in row `row` of the plot's layout (SNR diagnostics, high-norm tokens): titles in its row 0, axis rects
// in row 1 (addLayerPanel), line-style keys in row 2 (addPanelStyleKey). finishPanelRow, once the panels are in, gives
// the title and key rows their natural height.
QCPLayoutGrid* addPanelRow(QCustomPlot* plot, int row);
void finishPanelRow(QCPLayoutGrid* panels);

// Panel `column` of a row of panels over layers: its bold title in row 0 of `panels`, its axis rect in row 1 (sharing
// top and bottom margins through `group`), x labelled `xLabel` with layer ticks from firstLayer to lastLayer, y `yLabel`.
QCPAxisRect* addLayerPanel(QCustomPlot* plot, QCPLayoutGrid* panels, int column, const QString& title, QCPMarginGroup* group,
    const QString& xLabel, const QString& yLabel, int firstLayer, int lastLayer, const PlotStyle& style);

// The line-style key of one panel of a row of panels (SNR diagnostics, high-norm tokens): under the panel in row `row`
// and column `column` of `panels`, in a box so that its natural width does not cap the column; one key per name, in
// penStyleFor's order.
void addPanelStyleKey(QCustomPlot* plot, QCPLayoutGrid* panels, int row, int column, QCPAxisRect* rect, const QStringList& names,
    const PlotStyle& style);

// The legend of a plot of two curve kinds per model: a key per plotted model (its colour, filled disc), then two
// neutral keys for the kinds (solid line with discs: `first`; dashed with open circles: `second`).
void addModelsAndTwoKindsLegend(QCustomPlot* plot, QCPAxisRect* rect, int row, const std::vector<AnalysisSummary>& series,
    const std::vector<int>& plotted, const QString& first, const QString& second, const PlotStyle& style);

// Layers on an axis: a tick at every integer, or every 2nd, 3rd, 4th, 5th, 10th... so that there are at most
// `maxTicks`; the range is padded by 0.4 on both sides.
void setLayerAxis(QCPAxis* axis, int firstLayer, int lastLayer, int maxTicks = 16);
// A centred note in an axis rect ("no data for this tap").
void addNote(QCPAxisRect* rect, const QString& text, const PlotStyle& style);
// A hierarchical model's patch merges on a layer axis (AnalysisSummary::blockStages of the first series that has them):
// a dashed line before each stage's first block, the stage named at the bottom.
void addStageBoundaries(QCPAxisRect* rect, const std::vector<AnalysisSummary>& series, const PlotStyle& style);
// A colour bar on the right with a log scale from `low` to `high` (head kernels, head ablation), labelled.
void setLogColourScale(QCPColorScale* scale, const QCPColorGradient& gradient, double low, double high, const QString& label,
                       const PlotStyle& style);
// A heat map coloured on that scale: `gradient` over `low` to `high`, log-scaled, one flat colour per cell, its colour
// bar `scale`.
void setLogColours(QCPColorMap* map, QCPColorScale* scale, const QCPColorGradient& gradient, double low, double high);

// Pen styles for the second categorical dimension of a plot (token set, tap, quantity).
Qt::PenStyle penStyleFor(int index);

QString tapDescription(Tap tap); // "block outputs X_l"
QString tapSymbol(Tap tap); // "X_l" (Unicode subscript)
QString tapName(Tap tap); // "block", "attn", "residual" (the CSV spelling)
QString tokenSetName(TokenSet set); // "all tokens", "patch tokens"

// "ViT-S/16 vs DeiT-S", "1000 images" or "1000 / 500 images", options joined; pieces joined with " · ".
// The palette index of each series: a model keeps its colour whatever else is shown. The models' own series (label
// equal to the model) take 0, 1, ... in the order their models first appear; variants ("model (NeuTRENO 0.6)") take
// the indices after all of them, so that adding a variant never recolours a compared model.
std::vector<int> seriesColours(const std::vector<AnalysisSummary>& series);
QString describeModels(const std::vector<AnalysisSummary>& series);
QString describeImages(const std::vector<AnalysisSummary>& series);
QString describeOptions(const std::vector<AnalysisSummary>& series);
QString joinProvenance(const QStringList& parts);
// `perturbations` joined, less those the options string already names.
QString perturbationsNotIn(const QStringList& perturbations, const QString& options);

QString fromStd(const std::string& s);

} // namespace attnscope
