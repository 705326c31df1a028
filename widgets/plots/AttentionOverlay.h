#pragma once

// Attention maps drawn over the image the model saw (docs/analyses.md section 2): bilinear upsampling of the [gh, gw]
// patch map, a colormap, alpha blending. The GUI's main view and the layers x heads figure share these functions.

#include "plots/Colormap.h"
#include "plots/PlotStyle.h"

#include <QImage>
#include <QPainter>
#include <QPoint>
#include <attnscope/Analyses.h>
#include <attnscope/Image.h>
#include <optional>

namespace attnscope {

// An 8-bit grey or RGB Image as a QImage (a deep copy, Format_RGB32). Empty in, null out.
QImage toQImage(const Image& image);

// The patch (x = column, y = row) of token `query`, or nothing for a prefix token (CLS, registers).
std::optional<QPoint> queryPatchOf(int query, int numPrefixTokens, int gridWidth);

// `map.patches` ([gridH, gridW]) upsampled bilinearly to the size of `shown` (half-pixel centres, as
// torch.nn.functional.interpolate with align_corners=False), coloured with `colormap` over `range` (default: 0 to
// the map's maximum, so the scale reads "fraction of the peak") and blended over `shown` with `opacity` in [0, 1].
// `queryPatch` is outlined. An empty `shown` gives the map alone at 16 px per patch. A hierarchical model's map at a
// coarser stage grid (AttentionMap) is drawn token by token over the patches each covers, its query's token outlined,
// and its NaN cells (outside the window) as the image greyed under hatching.
QImage renderAttentionOverlay(const Image& shown, const AttentionMap& map, int gridH, int gridW, double opacity,
    Colormap colormap, std::optional<QPoint> queryPatch, std::optional<ValueRange> range = std::nullopt);
// The same over an image already converted (the grid figure scales the image once and reuses it for every tile).
QImage renderAttentionOverlay(const QImage& shown, const AttentionMap& map, int gridH, int gridW, double opacity,
    Colormap colormap, std::optional<QPoint> queryPatch, std::optional<ValueRange> range = std::nullopt);

// How many patches on a side one cell of `map` covers: 2^stage for a hierarchical model's map at a stage's grid, 1 for
// a map at the patch grid.
int mapCellPatches(const AttentionMap& map, int gridH, int gridW);
// The map's value over patch (row, col) of the image's gridH x gridW grid: its cell, or a stage map's token covering it
// (NaN outside a window); nothing for a map of another grid.
std::optional<double> mapValueAt(const AttentionMap& map, int gridH, int gridW, int row, int col);

// The largest value of the map (0 for an empty map), NaN cells skipped.
double mapMaximum(const AttentionMap& map);

// Paints a colour bar into `area` of `painter` (logical coordinates): a gradient strip, ticks with values and a
// caption. Horizontal bars have their ticks below the strip, vertical ones right of it.
void paintColorBar(QPainter& painter, const QRectF& area, Colormap colormap, ValueRange range,
    Qt::Orientation orientation, const QString& caption, const PlotStyle& style);
// The same as an image of `size` logical pixels, rendered at `scale` device pixels per logical pixel.
QImage renderColorBar(Colormap colormap, ValueRange range, QSize size, Qt::Orientation orientation,
    const QString& caption, const PlotStyle& style, double scale = 2.0);

} // namespace attnscope
