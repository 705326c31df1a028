#include "vit/Rope.h"

#include <ATen/ATen.h>

#include <cmath>

namespace attnscope {

namespace {

const auto kFloat32 = at::TensorOptions().dtype(at::kFloat);

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
    return { angles.sin().to(device), angles.cos().to(device), true };
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
    return { angles.sin().to(device), angles.cos().to(device), half };
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
    return { angles.sin(), angles.cos(), false };
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
    const int64_t patches = angles.sin.size(-2), pairs = angles.sin.size(-1), prefix = x.size(-2) - patches;
    TORCH_CHECK(prefix >= 0 && x.size(-1) == 2 * pairs, "rotary position embedding: ", x.size(-2), " tokens of width ",
                x.size(-1), " for ", patches, " patches of ", pairs, " angles");
    // In float32 at least, as timm multiplies a reduced-precision x by float32 sines and casts the result back.
    const bool reduced = x.scalar_type() != at::kFloat && x.scalar_type() != at::kDouble;
    const at::Tensor in = reduced ? x.to(at::kFloat) : x;
    if (in.requires_grad()) { // under autograd (class relevance): the same products, out of place
        const auto p = in.narrow(-2, prefix, patches);
        const auto v = angles.half ? p.unflatten(-1, { 2, pairs }).transpose(-1, -2) : p.unflatten(-1, { pairs, 2 }); // [..., pairs, 2]
        const auto v1 = v.select(-1, 0), v2 = v.select(-1, 1);
        const auto turned = at::stack({ v1 * angles.cos - v2 * angles.sin, v2 * angles.cos + v1 * angles.sin }, -1);
        const auto rotated = (angles.half ? turned.transpose(-1, -2) : turned).flatten(-2);
        return at::cat({ in.narrow(-2, 0, prefix), rotated }, -2).to(x.scalar_type());
    }
    at::Tensor out = at::empty(in.sizes(), in.options());
    if (prefix > 0) // the prefix tokens unrotated
        out.narrow(-2, 0, prefix).copy_(in.narrow(-2, 0, prefix));
    // Each pair (v1, v2) of a patch's vector turned by its angle: (v1 cos - v2 sin, v2 cos + v1 sin); a pair is channels
    // (i, i + d/2) in halves, (2i, 2i + 1) interleaved.
    const auto split = [&](const at::Tensor& t) -> std::pair<at::Tensor, at::Tensor> {
        const auto p = t.narrow(-2, prefix, patches);
        if (angles.half)
            return { p.narrow(-1, 0, pairs), p.narrow(-1, pairs, pairs) };
        const auto interleaved = p.unflatten(-1, { pairs, 2 });
        return { interleaved.select(-1, 0), interleaved.select(-1, 1) };
    };
    const auto [v1, v2] = split(in);
    auto [o1, o2] = split(out);
    at::mul_out(o1, v1, angles.cos).addcmul_(v2, angles.sin, -1);
    at::mul_out(o2, v2, angles.cos).addcmul_(v1, angles.sin, 1);
    return reduced ? out.to(x.scalar_type()) : out;
}

} // namespace attnscope
