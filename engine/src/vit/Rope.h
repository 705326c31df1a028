#pragma once

#include <ATen/Tensor.h>

namespace attnscope {

// DINOv3's rotary position embedding (timm's RotaryEmbeddingDinoV3 at inference, DINOv3's RopePositionEmbedding): each
// patch's centre, (y + 0.5) / gh and (x + 0.5) / gw mapped to [-1, 1]; for a head width d, the angles 2 pi y / p_i and
// 2 pi x / p_i with the periods p_i = temperature^(4 i / d), i < d / 4, laid out [y angles, x angles] twice ("rotate
// half"); a vector v becomes v cos + (-v2, v1) sin, v1 and v2 its halves. Prefix tokens are not rotated.
struct RopeAngles {
    at::Tensor sin, cos; // [gh * gw, d], float32
    bool defined() const { return sin.defined(); }
};
// Made once per forward (VisionTransformerImpl::forward) and read by every layer.
RopeAngles dinoV3Angles(int64_t gridH, int64_t gridW, int64_t headDim, double temperature, const at::Device& device);
// x: [..., N, d] with N = prefix + gh * gw (queries or keys, head by head); returns the rotated copy, x's dtype.
at::Tensor rotate(const at::Tensor& x, const RopeAngles& angles);

} // namespace attnscope
