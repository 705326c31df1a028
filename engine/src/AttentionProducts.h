#pragma once

#include <ATen/core/Tensor.h>

#include <memory>

namespace attnscope {

// The attention's two batched products through oneDNN's matmul on the CPU, reading q, k and v where the qkv
// projection left them (strided views, no copies) and writing A V straight into the [B, N, H, d] layout the output
// projection reads. at::matmul would copy the views, call OpenBLAS once per head (packing both operands each time)
// and run on one thread when OpenBLAS is held at one beside oneDNN (Model.cpp), and a further copy would
// interleave the heads. On strided views oneDNN picks its jit gemm rather than brgemm; dense copies of q, k and v
// for brgemm were measured and lost (a 1-thread ViT-S forward 106-109 ms against 100-103), at the price of the jit
// gemm generating its kernels on its first call in a process (about 40 ms, once). Like PackedLinears, everything oneDNN has no fast kernel for (another device or dtype,
// autograd, a build without oneDNN, a layout only its reference kernel takes) goes through at::matmul, so the
// results never depend on which path ran beyond float rounding.
//
// One per loaded model, shared by the threads that run its forwards; primitives are made per shape, layout and
// thread count on first use and kept.
class AttentionProducts {
public:
    AttentionProducts();
    ~AttentionProducts();
    AttentionProducts(const AttentionProducts&) = delete;
    AttentionProducts& operator=(const AttentionProducts&) = delete;

    // scale * q k^T for q, k [B, H, N, d]: the logits [B, H, N, N], contiguous.
    at::Tensor scores(const at::Tensor& q, const at::Tensor& k, double scale);
    // attn v for attn [B, H, N, M], v [B, H, M, d]: [B, H, N, d], laid out as [B, N, H, d] in memory (so that
    // transpose(1, 2) of the result is contiguous).
    at::Tensor mix(const at::Tensor& attn, const at::Tensor& v);

    // Whether the oneDNN path is on (AttentionProducts.cpp says why it is off for now).
    static bool enabled();

private:
    struct State;
    std::unique_ptr<State> m_state;
};

// The same products through `products` when given (the inference forward) and at::matmul otherwise (training).
at::Tensor attentionScores(const at::Tensor& q, const at::Tensor& k, double scale, AttentionProducts* products);
at::Tensor attentionMix(const at::Tensor& attn, const at::Tensor& v, AttentionProducts* products);

} // namespace attnscope
