#pragma once

#include "attnscope/Image.h"
#include "attnscope/ModelConfig.h"

#include <ATen/Tensor.h>

namespace attnscope {

// Image -> normalised input [C, H, W] as `config` says (DESIGN.md, Preprocessing). The model's channel count
// decides RGB vs grey (ITU-R 601 luma, as PIL's "L"). `shown` receives the resized and cropped 8-bit image,
// the one the heatmap is drawn over.
at::Tensor preprocessImage(const Image& image, const PreprocessConfig& config, int channels, Image* shown);

} // namespace attnscope
