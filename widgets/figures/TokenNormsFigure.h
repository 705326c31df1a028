#pragma once

#include "plots/Colormap.h"
#include "plots/PlotStyle.h"

#include <QImage>
#include <attnscope/Summary.h>

namespace attnscope {

// The layer whose norms the figure lays over the image: the one with the most high-norm outliers (the deepest of
// equals), or the last when no layer has any.
int tokenNormsShownLayer(const TokenNorms& norms);

// One image's token norms (Analyses.h, section 7). Left: the image the model saw with the norms of the shown layer's
// patch tokens as a heatmap and its high-norm outliers outlined, over a colour bar. Right: one histogram per layer of
// the patch norms over the layer's patch median (a shared axis; bars scaled to each row's fullest bin), the outlier
// cut as a dashed line, the CLS token and the registers as ticks, and per layer the outlier count and the share of
// the next layer's attention they absorb. `scale`: device pixels per logical pixel of the returned image.
QImage renderTokenNormsFigure(const TokenNormsFigure& figure, double scale = 2.0, const PlotStyle& text = {});

} // namespace attnscope
