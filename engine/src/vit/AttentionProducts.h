#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>

namespace attnscope {

// The attention's two batched products through oneDNN's brgemm matmul on the CPU, reading q, k and v where the
// qkv projection left them (PackedLinears::forwardSplit: each a contiguous [B, N, D], seen as [B, H, N, d] without
// a copy) and writing A V straight into the [B, N, H, d] layout the output projection reads. at::matmul would copy
// the views, call OpenBLAS once per head (packing both operands each time) and run on one thread when OpenBLAS is
// held at one beside oneDNN (Model.cpp), and a further copy would interleave the heads.
//
// Only brgemm is used (onednn::isUsableKernel): on other layouts, such as q, k and v as strided views of one [B, N, 3D]
// projection, oneDNN picks its gemm-based matmul, whose kernels corrupt the heap when a signal arrives while they run
// (OneDnnSupport.h). On a CPU without AVX-512 (no brgemm in oneDNN 2.6) the products run one head at a time through
// at::addmm on the same views, the heads spread over the OpenMP team. Everything else (another device or dtype,
// autograd, a build without oneDNN, a CPU where the linear layers have no oneDNN kernel either) goes through
// at::matmul, so the results never depend on which path ran beyond float rounding.
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

    // Whether the oneDNN path is on: oneDNN in this build, PackedLinears::available(), and ATTNSCOPE_PLAIN_ATTENTION
    // not set.
    static bool enabled();
    // Which path the forward's products take on this CPU: oneDNN's kernel ("oneDNN brg:avx512_core"), one product
    // per head ("per head (at::addmm)"), or "at::matmul". Found once, by asking oneDNN for ViT-S's products.
    static const std::string& pathHere();

private:
    struct State;
    std::unique_ptr<State> m_state;
};

// The same products through `products` when given (the inference forward) and at::matmul otherwise (training).
at::Tensor attentionScores(const at::Tensor& q, const at::Tensor& k, double scale, AttentionProducts* products);
at::Tensor attentionMix(const at::Tensor& attn, const at::Tensor& v, AttentionProducts* products);

} // namespace attnscope
