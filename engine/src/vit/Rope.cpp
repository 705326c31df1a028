#include "vit/Rope.h"

#include <ATen/ATen.h>

#include <cmath>

namespace attnscope {

at::Tensor rotateDinoV3(const at::Tensor& x, int64_t gridH, int64_t gridW, double temperature)
{
    const int64_t d = x.size(-1), patches = gridH * gridW, prefix = x.size(-2) - patches;
    TORCH_CHECK(d % 4 == 0 && prefix >= 0, "rotary position embedding: head width ", d, " or ", x.size(-2), " tokens for a ",
                gridH, "x", gridW, " grid");
    const auto f = at::TensorOptions().dtype(at::kFloat);
    // In float32, as timm computes them.
    const auto periods = at::pow(temperature, 2.0 * at::arange(d / 4, f) / double(d / 2));
    const auto ys = (2.0 * ((at::arange(gridH, f) + 0.5) / double(gridH)) - 1.0).repeat_interleave(gridW);
    const auto xs = (2.0 * ((at::arange(gridW, f) + 0.5) / double(gridW)) - 1.0).repeat({ gridH });
    const auto angles = at::cat({ 2 * M_PI * ys.unsqueeze(1) / periods, 2 * M_PI * xs.unsqueeze(1) / periods }, 1); // [P, d/2]
    const auto sin = at::cat({ angles.sin(), angles.sin() }, 1).to(x.device());
    const auto cos = at::cat({ angles.cos(), angles.cos() }, 1).to(x.device());
    const auto patch = x.narrow(-2, prefix, patches);
    const auto halves = patch.chunk(2, -1);
    const auto rotated = (patch * cos + at::cat({ -halves[1], halves[0] }, -1) * sin).to(x.scalar_type());
    return prefix > 0 ? at::cat({ x.narrow(-2, 0, prefix), rotated }, -2) : rotated;
}

} // namespace attnscope
