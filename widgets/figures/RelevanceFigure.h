#pragma once

#include "plots/Colormap.h"
#include "plots/PlotStyle.h"

#include <QImage>
#include <attnscope/Summary.h>

namespace attnscope {

// One image's class relevance (Analyses.h, section 10): the image the model saw, GAE's map and Grad-CAM's map, each map
// bilinearly upsampled, scaled from 0 to its own maximum and blended over the image, with a colour bar. The title names
// the class and its probability, the subtitle the model, the image and the Grad-CAM layer. `scale`: device pixels per
// logical pixel of the returned image.
QImage renderRelevanceFigure(const RelevanceFigure& figure, double scale = 2.0, const PlotStyle& text = {});

} // namespace attnscope
