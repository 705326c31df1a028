#include "vit/Rope.h"

#include <ATen/ATen.h>

#include <cmath>

namespace attnscope {

namespace {

const auto kFloat32 = at::TensorOptions().dtype(at::kFloat);

// Per-pair angles [..., P, d/2] -> the per-channel layout [..., P, d].
at::Tensor channels(const at::Tensor& pairs, bool half)
{
    return half ? at::cat({ pairs, pairs }, -1) : pairs.repeat_interleave(2, -1);
}

// Row-major patch coordinates [P] of each axis, y and x, as float32 indices.
std::pair<at::Tensor, at::Tensor> indexGrid(int64_t gridH, int64_t gridW)
{
    return { at::arange(gridH, kFloat32).repeat_interleave(gridW), at::arange(gridW, kFloat32).repeat({ gridH }) };
}

} // namespace

RopeAngles dinoV3Angles(int64_t gridH, int64_t gridW, int64_t headDim, double temperature, const at::Device& device)
{
    TORCH_CHECK(headDim % 4 == 0, "rotary position embedding: head width ", headDim, " is not a multiple of 4");
    // In float32, as timm computes them.
    const auto periods = at::pow(temperature, 2.0 * at::arange(headDim / 4, kFloat32) / double(headDim / 2));
    const auto ys = (2.0 * ((at::arange(gridH, kFloat32) + 0.5) / double(gridH)) - 1.0).repeat_interleave(gridW);
    const auto xs = (2.0 * ((at::arange(gridW, kFloat32) + 0.5) / double(gridW)) - 1.0).repeat({ gridH });
    const auto angles = at::cat({ 2 * M_PI * ys.unsqueeze(1) / periods, 2 * M_PI * xs.unsqueeze(1) / periods }, 1); // [P, d/2]
    return { channels(angles.sin(), true).to(device), channels(angles.cos(), true).to(device), true };
}

RopeAngles axialAngles(int64_t gridH, int64_t gridW, int64_t headDim, double temperature, bool xy, bool half,
                       int64_t referenceH, int64_t referenceW, const at::Device& device)
{
    TORCH_CHECK(headDim % 4 == 0, "rotary position embedding: head width ", headDim, " is not a multiple of 4");
    const int64_t bands = headDim / 4;
    // timm's freq_bands(step 1): 1 / temperature^(i / bands), float32.
    const auto freqs = 1.0 / at::pow(temperature, at::arange(bands, kFloat32) / double(bands));
    auto [ys, xs] = indexGrid(gridH, gridW);
    if (referenceH > 0 && referenceW > 0) { // EVA's rescaling to the pretraining grid: index / grid * reference
        ys = ys / double(gridH) * double(referenceH);
        xs = xs / double(gridW) * double(referenceW);
    }
    const auto& first = xy ? xs : ys;
    const auto& second = xy ? ys : xs;
    const auto angles = at::cat({ first.unsqueeze(1) * freqs, second.unsqueeze(1) * freqs }, 1); // [P, d/2]
    return { channels(angles.sin(), half).to(device), channels(angles.cos(), half).to(device), half };
}

RopeAngles mixedAngles(int64_t gridH, int64_t gridW, const at::Tensor& layerFreqs)
{
    TORCH_CHECK(layerFreqs.dim() == 3 && layerFreqs.size(0) == 2, "RoPE-Mixed: frequencies of shape ", layerFreqs.sizes(),
                ", expected [2, H, d / 2]");
    const auto f = layerFreqs.to(at::kFloat);
    auto [ys, xs] = indexGrid(gridH, gridW);
    ys = ys.to(f.device());
    xs = xs.to(f.device());
    // [H, P, d/2]: x f_x + y f_y, computed as timm's get_mixed_freqs (outer products, then the sum).
    const auto angles = xs.view({ 1, -1, 1 }) * f[0].unsqueeze(1) + ys.view({ 1, -1, 1 }) * f[1].unsqueeze(1);
    return { channels(angles.sin(), false), channels(angles.cos(), false), false };
}

std::vector<RopeAngles> ropeAngles(const ModelConfig& c, int64_t gridH, int64_t gridW, const at::Tensor& mixedFreqs,
                                   const at::Device& device)
{
    switch (c.rope) {
    case ModelConfig::Rope::None:
        return {};
    case ModelConfig::Rope::DinoV3:
        return { dinoV3Angles(gridH, gridW, c.headDim(), c.ropeTemperature, device) };
    case ModelConfig::Rope::Axial:
        return { axialAngles(gridH, gridW, c.headDim(), c.ropeTemperature, c.ropeXY, c.ropeHalf, c.ropeReferenceGridH,
                             c.ropeReferenceGridW, device) };
    case ModelConfig::Rope::Mixed: {
        std::vector<RopeAngles> layers;
        for (int64_t l = 0; l < mixedFreqs.size(1); ++l) {
            RopeAngles a = mixedAngles(gridH, gridW, mixedFreqs.select(1, l));
            layers.push_back({ a.sin.to(device), a.cos.to(device), a.half });
        }
        return layers;
    }
    }
    return {};
}

at::Tensor rotate(const at::Tensor& x, const RopeAngles& angles)
{
    const int64_t patches = angles.sin.size(-2), prefix = x.size(-2) - patches;
    TORCH_CHECK(prefix >= 0 && x.size(-1) == angles.sin.size(-1), "rotary position embedding: ", x.size(-2), " tokens of width ",
                x.size(-1), " for ", patches, " patches of width ", angles.sin.size(-1));
    const auto patch = x.narrow(-2, prefix, patches);
    at::Tensor turned;
    if (angles.half) {
        const auto halves = patch.chunk(2, -1);
        turned = at::cat({ -halves[1], halves[0] }, -1);
    } else { // (-v1, v0, -v3, v2, ...)
        const auto pairs = patch.unflatten(-1, { patch.size(-1) / 2, 2 });
        turned = at::stack({ -pairs.select(-1, 1), pairs.select(-1, 0) }, -1).flatten(-2);
    }
    const auto rotated = (patch * angles.cos + turned * angles.sin).to(x.scalar_type());
    return prefix > 0 ? at::cat({ x.narrow(-2, 0, prefix), rotated }, -2) : rotated;
}

} // namespace attnscope
