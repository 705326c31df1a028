#pragma once

#include "attnscope/ModelConfig.h"

#include <ATen/Tensor.h>

#include <vector>

namespace attnscope {

// The sines and cosines of the angles a rotary position embedding turns the patch tokens' queries and keys by
// (ModelConfig::rope), one per pair of channels: [gh * gw, d / 2], or [H, gh * gw, d / 2] when each head has its own
// (RoPE-Mixed), float32. Pair i of a head vector is channels (2i, 2i + 1) (interleaved) or (i, i + d / 2) (half), and
// (v1, v2) becomes (v1 cos - v2 sin, v2 cos + v1 sin): timm's v cos + rot(v) sin. Prefix tokens are not rotated.
struct RopeAngles {
    at::Tensor sin, cos;
    bool half = true;
    bool defined() const { return sin.defined(); }
};

// DINOv3's (timm's RotaryEmbeddingDinoV3 at inference, DINOv3's RopePositionEmbedding): each patch's centre,
// (y + 0.5) / gh and (x + 0.5) / gw mapped to [-1, 1]; for a head width d, the angles 2 pi y / p_i and 2 pi x / p_i with
// the periods p_i = temperature^(4 i / d), i < d / 4, pairs [y angles, x angles] (half).
RopeAngles dinoV3Angles(int64_t gridH, int64_t gridW, int64_t headDim, double temperature, const at::Device& device);
// timm's RotaryEmbeddingCat (EVA-02, RoPE-Axial): coordinates c = index * reference / grid per axis (the index itself
// without a reference grid), frequencies f_i = temperature^(-i / (d / 4)), i < d / 4, angles [c0 f, c1 f] with
// (c0, c1) = (y, x), or (x, y) when xy; pairs interleaved unless half.
RopeAngles axialAngles(int64_t gridH, int64_t gridW, int64_t headDim, double temperature, bool xy, bool half,
                       int64_t referenceH, int64_t referenceW, const at::Device& device);
// RoPE-Mixed's for one layer: freqs [2, H, d / 2] learned, angles x freqs[0] + y freqs[1] per head, interleaved.
RopeAngles mixedAngles(int64_t gridH, int64_t gridW, const at::Tensor& layerFreqs);
// Every layer's angles for a forward on a gh x gw grid: one entry shared by all layers, or one per layer (Mixed, which
// reads `mixedFreqs` [2, L, H, d / 2]); empty without a rotary embedding. Made once per forward.
std::vector<RopeAngles> ropeAngles(const ModelConfig& c, int64_t gridH, int64_t gridW, const at::Tensor& mixedFreqs,
                                   const at::Device& device);
// Layer `layer`'s (1-based) of what ropeAngles made; undefined when it made none.
inline RopeAngles layerAngles(const std::vector<RopeAngles>& all, int layer)
{
    return all.empty() ? RopeAngles {} : all[all.size() == 1 ? 0 : size_t(layer - 1)];
}
// x: [..., N, d] with N = prefix + gh * gw (queries or keys, head by head: [B, H, N, d] for per-head angles); returns
// the rotated copy, in x's dtype.
at::Tensor rotate(const at::Tensor& x, const RopeAngles& angles);

} // namespace attnscope
