#pragma once

#include "attnscope/ModelConfig.h"

#include <cstdint>

namespace attnscope {

// Resizes an 8-bit image of `channels` interleaved channels as PIL's Image.resize does (Pillow's Resample.c), so that
// a model's input equals what torchvision's Resize, timm's and Hugging Face's processors give it from a PIL image, to
// the grey level, enlarging as well as reducing:
// - bilinear and bicubic (a = -0.5): a separable filter whose support widens by the scale when reducing, each output
//   pixel's weights normalised to sum 1 and rounded to 22-bit fixed point; the horizontal pass first, rounded and
//   clipped to 8 bits, then the vertical pass over the rows it used;
// - nearest: the source pixel under the output pixel's centre (Pillow's positions: the first centre in / out / 2,
//   then a step of in / out each, truncated).
// `in` is inHeight x inWidth x channels, `out` outHeight x outWidth x channels, both row-major.
void pilResize(const uint8_t* in, int inHeight, int inWidth, int channels, uint8_t* out, int outHeight, int outWidth,
               Interpolation interpolation);

} // namespace attnscope
