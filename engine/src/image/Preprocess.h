#pragma once

#include "attnscope/Image.h"
#include "attnscope/ModelConfig.h"

#include <ATen/Tensor.h>

namespace attnscope {

// Image -> normalised input [C, H, W] as `config` says (docs/design.md section 4, "Preprocessing"). The model's channel
// count decides RGB vs grey (ITU-R 601 luma, as PIL's "L"). `shown` receives the resized and cropped 8-bit image, the
// one the heatmap is drawn over.
at::Tensor preprocessImage(const Image& image, const PreprocessConfig& config, int channels, Image* shown);

// `config` (a model's own, for the size it was trained for) made for another input size height x width
// (Model::withInputSize), following timm's eval transform (timm/data/transforms_factory.py, transforms_imagenet_eval)
// with input_size (C, height, width):
// - A resize followed by a centre crop keeps its margin: each side s is resized to floor(s / crop_pct) (crop_pct from
//   the config, or else crop / resize), then the centre height x width is cropped. For a square result that is the
//   shorter side; for a non-square one the smallest size of the image's aspect ratio that covers it (ResizeMode::Cover,
//   timm's ResizeKeepRatio), so no side is padded and nothing is squashed. An exact resize (timm's crop_mode squash,
//   Hugging Face's size {height, width}) scales both sides the same way and stays exact.
// - Without a centre crop (a resize straight to the input size, or a shortest-edge resize alone) the image is resized
//   to height x width exactly, as Hugging Face's processors do with size {height, width}.
// - Without a resize but with a crop, the centre height x width of the image as it is.
// The interpolation, rescale and normalisation stay the config's.
// What preprocessImage does to an image of width x height with `channels` (Model::describePreparation).
std::string describePreparation(int width, int height, int channels, const PreprocessConfig& config, int modelChannels);

PreprocessConfig preprocessAtInputSize(const PreprocessConfig& config, int height, int width);

} // namespace attnscope
