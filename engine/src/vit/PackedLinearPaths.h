#pragma once

// What the two packed paths of PackedLinears share (PackedLinear.cpp: oneDNN 2 linked directly, with Debian's
// LibTorch 1.13; PackedLinearTorch.cpp: LibTorch 2.x's own oneDNN 3 through its operators): which calls they take,
// and at::linear for every other call.

#include "vit/PackedLinear.h"

#include <ATen/ATen.h>
#include <ATen/Config.h>
#include <c10/core/GradMode.h>
#include <torch/version.h>

#include <algorithm>
#include <optional>
#include <vector>

// LibTorch 2.x built with oneDNN, and not Debian's oneDNN 2 linked beside it: PackedLinearTorch.cpp's path.
#if !defined(ATTNSCOPE_HAVE_DNNL) && TORCH_VERSION_MAJOR >= 2 && AT_MKLDNN_ENABLED()
#define ATTNSCOPE_TORCH_ONEDNN 1
#endif

namespace attnscope::packed {

inline at::Tensor plainForward(torch::nn::Linear& layer, const at::Tensor& x, std::optional<Activation> activation)
{
    return activation ? applyActivation(layer->forward(x), *activation) : layer->forward(x);
}

// layer->forward(x) cut into `parts` along its last dimension: views, not copies.
inline std::vector<at::Tensor> plainSplit(torch::nn::Linear& layer, const at::Tensor& x, int parts)
{
    return layer->forward(x).chunk(std::max(parts, 1), -1);
}

// The calls a packed path takes: CPU float32 inference of a 2-D weight (and a contiguous bias) on a non-empty input.
inline bool eligible(const torch::nn::Linear& layer, const at::Tensor& x)
{
    const at::Tensor& w = layer->weight;
    return PackedLinears::available() && x.device().is_cpu() && w.device().is_cpu() && x.scalar_type() == at::kFloat
        && w.scalar_type() == at::kFloat && w.dim() == 2 && x.dim() >= 1 && x.size(-1) == w.size(1)
        && x.numel() > 0
        && (!layer->bias.defined() || (layer->bias.scalar_type() == at::kFloat && layer->bias.is_contiguous() && layer->bias.device().is_cpu()))
        && (!c10::GradMode::is_enabled() || (!x.requires_grad() && !w.requires_grad()));
}

// x [..., in] as its rows [rows, in], contiguous.
inline at::Tensor rowsOf(const at::Tensor& x, int64_t in) { return x.contiguous().view({ -1, in }); }

// x's shape with its last dimension `last`: a product's output shape.
inline std::vector<int64_t> shapeWithLast(const at::Tensor& x, int64_t last)
{
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape.back() = last;
    return shape;
}

// The layer's weight and bias cut into `parts` equal blocks of rows (views): the qkv projection's q, k and v.
struct WeightParts {
    std::vector<at::Tensor> weights, biases; // a bias part undefined where the layer has no bias
};
inline WeightParts cutIntoParts(const torch::nn::Linear& layer, int parts)
{
    WeightParts out;
    const int64_t each = layer->weight.size(0) / parts;
    for (int p = 0; p < parts; ++p) {
        out.weights.push_back(layer->weight.narrow(0, p * each, each));
        out.biases.push_back(layer->bias.defined() ? layer->bias.narrow(0, p * each, each) : at::Tensor());
    }
    return out;
}

} // namespace attnscope::packed
