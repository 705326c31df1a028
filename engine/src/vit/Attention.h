#pragma once

#include "attnscope/ModelConfig.h"
#include "vit/Rope.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

namespace attnscope {

class AttentionProducts;
class PackedLinears;

// Parameter initialisation of newly built modules. Loading a checkpoint overwrites every parameter, so
// Model::load builds its network under a SkipParameterInit: the large matrices are then left unallocated
// (at::empty) instead of being filled with random numbers (0.4 s of a 330 MB ViT-B load; docs/performance.md).
class SkipParameterInit {
public:
    SkipParameterInit();
    ~SkipParameterInit();
    SkipParameterInit(const SkipParameterInit&) = delete;
    SkipParameterInit& operator=(const SkipParameterInit&) = delete;
    static bool active();

private:
    bool m_previous;
};

// torch::nn::Linear(in, out) with torch's default initialisation, or uninitialised under SkipParameterInit.
torch::nn::Linear makeLinear(int64_t in, int64_t out, bool bias = true);

// What an attention layer needs beyond its input, and where it leaves what the run records.
struct AttentionContext {
    at::Tensor* attnOut = nullptr; // receives A_l [B, H, N, N] when not null
    at::Tensor attnInto;           // where the softmax writes A_l when its shape and type allow (a stacked tap's row)
    // NeuTRENO (Nguyen et al., Eq. 26, Definition 1): lambda, and the first block's value vectors V_1 [B, H, N, d],
    // which layer 1 fills in and later layers read.
    double neutrenoLambda = 0.0;
    at::Tensor* firstValues = nullptr;
    bool isFirstLayer = false;
    at::Tensor positions; // bilateral: the position embedding of every token [1, N, D], kept out of the stream
    int gridH = 0, gridW = 0, prefix = 0;
    // Head ablation (docs/analyses.md section 8): [B, H], 0 where a head's output is ablated (zeros, or with ablateMean
    // the mean of its rows); undefined: none.
    at::Tensor headMask;
    bool ablateMean = false;
    RopeAngles rope;                       // the rotary embedding's angles for this forward's grid (Rope.h), if any
    PackedLinears* linears = nullptr;      // the inference forward's linear layers (PackedLinear.h)
    AttentionProducts* products = nullptr; // ... and attention products (AttentionProducts.h)
};

// The three attention kinds share this interface so that a Block holds whichever its config names.
class AttentionBase : public torch::nn::Module {
public:
    // [B, N, D] -> U [B, N, D] (before layer scale)
    virtual at::Tensor forward(const at::Tensor& x, AttentionContext& ctx) = 0;

protected:
    // softmax rows, record, A V with the NeuTRENO term, the ablated heads replaced, heads concatenated:
    // [B, H, N, N] x [B, H, N, d] -> [B, N, D]
    at::Tensor mix(const at::Tensor& logits, const at::Tensor& v, AttentionContext& ctx) const;
};

// softmax(Q K^T / sqrt(d)) with fused q|k|v projection (`qkv`) and output projection (`proj`), as timm.
class StandardAttention : public AttentionBase {
public:
    explicit StandardAttention(const ModelConfig& c);
    at::Tensor forward(const at::Tensor& x, AttentionContext& ctx) override;
    torch::nn::Linear qkv { nullptr };
    torch::nn::Linear proj { nullptr };
    torch::nn::LayerNorm norm { nullptr }; // over the heads' outputs before proj (ModelConfig::attnNorm)
    at::Tensor relative_position_bias_table; // [(2 gh - 1)(2 gw - 1) + 3, H] (ModelConfig::relativePositionBias)

protected:
    // The relative position bias of the logits [H, N, N], N = 1 + gh * gw; undefined without a table.
    at::Tensor relativeBias(int64_t tokens) const;

    int m_heads;
    double m_scale;
    at::Tensor m_relativeIndex; // [N * N]: each (query, key) pair's row of the table, as timm's gen_relative_position_index
};

// Bilateral attention (filtering paper, Eq. 24): logits = q_y.k_y / h_y^2 + (W_Q p_i).(W_K p_j) / h_p^2 with
// W = W_Q^T W_K shared, the token-position cross terms dropped. The paper leaves the bandwidths open: we learn
// one pair per head, h^2 = sqrt(d) exp(log_h), so that log_h = 0 is standard attention's scale. Positions enter
// raw (their scale is learned with them) and without the projection biases, which belong to the token term.
class BilateralAttention : public StandardAttention {
public:
    explicit BilateralAttention(const ModelConfig& c);
    at::Tensor forward(const at::Tensor& x, AttentionContext& ctx) override;
    at::Tensor log_hy, log_hp; // [H]
};

// Quadratic positional attention (Cordonnier et al., Eq. 9): per head a centre Delta_h = (dy, dx) in patches and
// a sharpness alpha_h; logits -alpha_h (|delta - Delta_h|^2 - |Delta_h|^2) with delta = pos_k - pos_q. Content
// plays no part in the weights; values are a projection `v` of the tokens. Patch tokens only (no prefix).
class QuadraticAttention : public AttentionBase {
public:
    explicit QuadraticAttention(const ModelConfig& c);
    at::Tensor forward(const at::Tensor& x, AttentionContext& ctx) override;
    torch::nn::Linear v { nullptr };
    torch::nn::Linear proj { nullptr };
    at::Tensor centre; // [H, 2] (dy, dx)
    at::Tensor alpha;  // [H]

private:
    int m_heads;
};

std::shared_ptr<AttentionBase> makeAttention(const ModelConfig& c);

} // namespace attnscope
