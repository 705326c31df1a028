#pragma once

#include "plots/Colormap.h"
#include "plots/PlotStyle.h"

#include <QImage>
#include <attnscope/Summary.h>

namespace attnscope {

struct GridStyle {
    int tileSize = 88; // logical pixels per tile side
    int spacing = 3; // between tiles
    double opacity = 0.65; // of the attention colour over the image
    Colormap colormap = Colormap::Viridis;
    // false: each tile is scaled from 0 to its own maximum (printed in its corner), which shows where every head
    // looks even when its weights are small; true: one scale, 0 to the largest weight of any head tile.
    bool sharedScale = false;
    bool annotateMaxima = true; // print each tile's maximum in its corner
    double scale = 2.0; // device pixels per logical pixel of the returned image
    PlotStyle text; // fonts and colours of titles and labels
};

// The layers x heads figure of one image and query (docs/analyses.md section 2): one row per layer, one column per head
// and a last column for the head mean, each tile the map bilinearly upsampled and blended over the image the model saw;
// under them the image with the query marked and the attention rollout; a colour bar stating the scale. The title names
// the model, the image and the query. The returned image has devicePixelRatio `style.scale`.
QImage renderAttentionGrid(const AttentionGrid& grid, const GridStyle& style = {});

} // namespace attnscope
