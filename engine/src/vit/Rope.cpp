#include "vit/Rope.h"

#include <ATen/ATen.h>

#include <cmath>

namespace attnscope {

RopeAngles dinoV3Angles(int64_t gridH, int64_t gridW, int64_t headDim, double temperature, const at::Device& device)
{
    TORCH_CHECK(headDim % 4 == 0, "rotary position embedding: head width ", headDim, " is not a multiple of 4");
    const auto f = at::TensorOptions().dtype(at::kFloat);
    // In float32, as timm computes them.
    const auto periods = at::pow(temperature, 2.0 * at::arange(headDim / 4, f) / double(headDim / 2));
    const auto ys = (2.0 * ((at::arange(gridH, f) + 0.5) / double(gridH)) - 1.0).repeat_interleave(gridW);
    const auto xs = (2.0 * ((at::arange(gridW, f) + 0.5) / double(gridW)) - 1.0).repeat({ gridH });
    const auto angles = at::cat({ 2 * M_PI * ys.unsqueeze(1) / periods, 2 * M_PI * xs.unsqueeze(1) / periods }, 1); // [P, d/2]
    return { at::cat({ angles.sin(), angles.sin() }, 1).to(device), at::cat({ angles.cos(), angles.cos() }, 1).to(device) };
}

at::Tensor rotate(const at::Tensor& x, const RopeAngles& angles)
{
    const int64_t patches = angles.sin.size(0), prefix = x.size(-2) - patches;
    TORCH_CHECK(prefix >= 0 && x.size(-1) == angles.sin.size(1), "rotary position embedding: ", x.size(-2), " tokens of width ",
                x.size(-1), " for ", patches, " patches of width ", angles.sin.size(1));
    const auto patch = x.narrow(-2, prefix, patches);
    const auto halves = patch.chunk(2, -1);
    const auto rotated = (patch * angles.cos + at::cat({ -halves[1], halves[0] }, -1) * angles.sin).to(x.scalar_type());
    return prefix > 0 ? at::cat({ x.narrow(-2, 0, prefix), rotated }, -2) : rotated;
}

} // namespace attnscope
