#pragma once

#include "attnscope/ModelConfig.h"

#include <torch/nn/modules/linear.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attnscope {

// The CPU float32 forward's linear layers through oneDNN's matmul with the weights reordered once into its blocked
// layout, instead of at::linear, where OpenBLAS packs every weight again at every call: a ViT-S forward's products
// go from 84 to 103 GFLOP/s on one thread here (docs/performance.md). Everything else (another device or dtype, a
// build without oneDNN, a shape or ISA oneDNN has no fast kernel for, autograd) goes through at::linear, so the
// results never depend on whether this path ran beyond float rounding.
//
// One per loaded model, shared by the threads that run its forwards: the packed weights and primitives are made on
// the first forward that needs them (per layer, row count and thread count) and kept until the model goes. The
// layers must outlive it and their weights must not change while it lives (a loaded Model's never do): entries are
// found by the layer's and its tensors' addresses.
class PackedLinears {
public:
    PackedLinears();
    ~PackedLinears();
    PackedLinears(const PackedLinears&) = delete;
    PackedLinears& operator=(const PackedLinears&) = delete;

    // y = x W^T + b for x [..., in]: the packed path when it applies, else layer->forward(x). With an activation,
    // act(x W^T + b), applied by the product's own epilogue on the packed path (the MLP's first layer).
    at::Tensor forward(torch::nn::Linear& layer, const at::Tensor& x, std::optional<Activation> activation = {});

    // layer->forward(x) cut into `parts` equal pieces along its last dimension ([..., out / parts] each), each
    // contiguous on the packed path (one product per piece of the weight rows: the qkv projection's q, k and v,
    // each [B, N, D], for the attention's products) and views of one result otherwise.
    std::vector<at::Tensor> forwardSplit(torch::nn::Linear& layer, const at::Tensor& x, int parts);

    // Whether the packed path is on: oneDNN found at configure time, and ATTNSCOPE_PLAIN_LINEAR not set.
    static bool available();
    // The oneDNN kernel the packed path runs on this CPU ("brg:avx512_core" with AVX-512, "jit_1x1:avx2" with AVX2),
    // or "" when it has none here (or is off) and every linear layer goes through at::linear. Found once, by asking
    // oneDNN for a ViT-sized layer.
    static const std::string& kernelHere();

private:
    struct State;
    std::unique_ptr<State> m_state;
};

// The MLP's activation, as timm, Hugging Face and CLIP define each (docs/models.md, "Configs and activations").
at::Tensor applyActivation(const at::Tensor& x, Activation a);

// layer->forward(x), through `packed` when given (the inference forward) and straight otherwise (training).
inline at::Tensor applyLinear(torch::nn::Linear& layer, const at::Tensor& x, PackedLinears* packed)
{
    return packed ? packed->forward(layer, x) : layer->forward(x);
}

} // namespace attnscope
