#pragma once

#include "vit/Attention.h"
#include "attnscope/Model.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <functional>
#include <vector>

namespace attnscope {

class AttentionProducts;
class PackedLinears;

// One forward's state: the variant values, what to record and the recorded tensors, batched ([B, ...]) and
// indexed by layer as in Trace.
struct ForwardState {
    RecordSpec spec;
    std::function<bool()> isCancelled;
    double neutrenoLambda = 0.0;
    double boostT = 0.0;
    std::vector<at::Tensor> attention, attnBranch, residual, blocks;
    // Head ablation: [L + 1, B, H], 1 keeps a head's output and 0 ablates it (row l for layer l); undefined: none.
    at::Tensor headMask;
    bool ablateMean = false;

    // The attention-pool head's map [B, H, gh * gw] (ModelConfig::Pooling::AttentionPool), recorded with the attention.
    at::Tensor poolAttention;
    at::Tensor x0;          // X_0, for Boost
    at::Tensor firstValues; // V_1, for NeuTRENO
    at::Tensor positions;   // bilateral attention's position table [1, N, D]
    std::vector<RopeAngles> rope; // the rotary embedding's angles for this forward's grid (ModelConfig::rope), made once
    int gridH = 0, gridW = 0;
    // tokenPositions(knownGridH, knownGridW), made once at load (Model::Impl::positions): a forward on that grid uses
    // it instead of resampling the position table again. Undefined: always computed.
    at::Tensor knownPositions;
    std::vector<RopeAngles> knownRope; // ropeAngles at that grid, likewise (Model::Impl::rope)
    int knownGridH = 0, knownGridW = 0;
    PackedLinears* linears = nullptr;        // set by the inference forward: its linear layers (PackedLinear.h)
    AttentionProducts* products = nullptr;   // ... and its attention products (AttentionProducts.h)

    // With stackTaps (the batched device path) the taps are written, as the forward goes, into one tensor per tap kind
    // ([L + 1 - first, B, ...]: its layers from the first it records, 1 but for X, which has layer 0) and the vectors
    // above hold its rows: the batched analyses read a tap's layers as one view of it (stackOf) instead of stacking one
    // tensor per layer. Each is made at the first tap of its kind. Where the forward can, it writes a tap straight into
    // its row (row(): the attention's softmax, R's and X's sums); keep() copies the others.
    struct TapStack {
        at::Tensor rows;
        int first = 0; // the layer of rows[0]
    };
    bool stackTaps = false;
    TapStack attentionStack, attnBranchStack, residualStack, blocksStack;
    // The row of `stack` (one of the four above, `taps` its vector) for layer `layer`'s tap, of these sizes and options
    // (the stack made at the kind's first tap); undefined without stackTaps.
    at::Tensor row(std::vector<at::Tensor>& taps, TapStack& stack, int layer, at::IntArrayRef sizes, const at::TensorOptions& options);
    // taps[layer] = t, through its stack's row with stackTaps (copied there unless t is that row already).
    void keep(std::vector<at::Tensor>& taps, TapStack& stack, int layer, const at::Tensor& t);
    // The stack behind `taps` (one of the four vectors); its rows undefined when they were not kept stacked.
    const TapStack& stackOf(const std::vector<at::Tensor>& taps) const;

    void reset(int depth);
    bool wants(int layer) const { return spec.wants(layer); }
};

// Thrown between blocks when the run's isCancelled callback says so.
struct RunCancelled { };

// Module and parameter names mirror timm's checkpoint keys (`blocks.3.attn.qkv.weight`), so that loading is a
// walk over named_parameters(). Each forward starts with the shapes it takes.
// A convolution (`proj`), or a linear layer over each patch's flattened pixels (`linear`, after `norm_in` when the
// model has it); `norm` on the tokens when the model has it (ModelConfig::PatchEmbedding).
class PatchEmbedImpl : public torch::nn::Module {
public:
    explicit PatchEmbedImpl(const ModelConfig& c);
    at::Tensor forward(const at::Tensor& x); // [B, C, H, W] -> [B, gh*gw, D]
    const at::Tensor& weight() const;        // the projection's weight, whichever it is
    torch::nn::Conv2d proj { nullptr };
    torch::nn::LayerNorm norm_in { nullptr };
    torch::nn::Linear linear { nullptr };
    torch::nn::LayerNorm norm { nullptr };
    PatchEmbedding kind;
    int64_t patchSize;
};
TORCH_MODULE(PatchEmbed);

// fc2(act(fc1 x)), or gated: fc2(norm(act(gate) * value)) with fc1 x = [gate, value] (ModelConfig::mlpGated).
class MlpImpl : public torch::nn::Module {
public:
    explicit MlpImpl(const ModelConfig& c);
    at::Tensor forward(const at::Tensor& x, PackedLinears* linears); // [B, N, D] -> [B, N, D]
    torch::nn::Linear fc1 { nullptr };
    torch::nn::LayerNorm norm { nullptr }; // over the hidden width (ModelConfig::mlpNorm)
    torch::nn::Linear fc2 { nullptr };
    Activation activation;
    bool gated;
};
TORCH_MODULE(Mlp);

// Per-channel scaling of a residual branch (DINOv2, DeiT-3); the identity when the model has none.
class LayerScaleImpl : public torch::nn::Module {
public:
    LayerScaleImpl(int width, bool enabled);
    at::Tensor forward(const at::Tensor& x);
    at::Tensor gamma;
};
TORCH_MODULE(LayerScale);

class BlockImpl : public torch::nn::Module {
public:
    explicit BlockImpl(const ModelConfig& c);
    // [B, N, D] -> [B, N, D]; records A_l, U_l, R_l of layer `layer` as `state` asks.
    at::Tensor forward(const at::Tensor& x, int layer, ForwardState& state);
    torch::nn::LayerNorm norm1 { nullptr };
    std::shared_ptr<AttentionBase> attn;
    LayerScale ls1 { nullptr };
    torch::nn::LayerNorm norm2 { nullptr };
    Mlp mlp { nullptr };
    LayerScale ls2 { nullptr };
    BlockNorm placement;
    BlockKind kind;
    int64_t numHeads;
};
TORCH_MODULE(Block);

// SigLIP's attention-pool head (timm's AttentionPoolLatent, global_pool "map"): one learned query (`latent`, projected by
// `q`) attends over the patch tokens with the model's heads (keys and values from `kv`), the heads concatenated and
// projected (`proj`), then x + mlp(norm(x)). Its attention [B, H, patches] is the model's last map, "pool".
class AttentionPoolImpl : public torch::nn::Module {
public:
    explicit AttentionPoolImpl(const ModelConfig& c);
    at::Tensor forward(const at::Tensor& patches, at::Tensor* attnOut); // [B, P, D] -> [B, D]
    at::Tensor latent;
    torch::nn::Linear q { nullptr };
    torch::nn::Linear kv { nullptr };
    torch::nn::Linear proj { nullptr };
    torch::nn::LayerNorm norm { nullptr };
    Mlp mlp { nullptr };
    int64_t heads;
};
TORCH_MODULE(AttentionPool);

class VisionTransformerImpl : public torch::nn::Module {
public:
    explicit VisionTransformerImpl(const ModelConfig& c);
    // [B, C, H, W] normalised images -> logits [B, K] (pooled features [B, D] without a head).
    at::Tensor forward(const at::Tensor& x, ForwardState& state);
    // The position table for a gh x gw grid: the trained one, or its patch part resampled bicubically.
    at::Tensor positionEmbedding(int gridH, int gridW) const;
    // [B, C, H, W] -> the tokens [B, N, D] before positions are added: [prefix; PatchEmbed(x)].
    at::Tensor tokens(const at::Tensor& x);
    // The position row each token receives [1, N, D] (zeros for tokens that get none, or without pos_embed).
    at::Tensor tokenPositions(int gridH, int gridW) const;

    ModelConfig config;
    PatchEmbed patch_embed { nullptr };
    at::Tensor cls_token, dist_token, reg_token, pos_embed;
    torch::nn::LayerNorm norm_pre { nullptr };
    torch::nn::ModuleList blocks;
    torch::nn::LayerNorm norm { nullptr };
    torch::nn::LayerNorm fc_norm { nullptr };
    AttentionPool attn_pool { nullptr };
    torch::nn::Linear head { nullptr };
    torch::nn::Linear head_dist { nullptr };
    // RoPE-Mixed's learned frequencies, `rope.freqs` [2, L, H, d / 2] as timm names them (ModelConfig::Rope::Mixed).
    std::shared_ptr<torch::nn::Module> rope;
    at::Tensor ropeFreqs;
};
TORCH_MODULE(VisionTransformer);

// vit-pytorch's fixed 2-D sin-cos position table for a gridH x gridW grid [1, gridH * gridW, width] (ModelConfig::posFixedSinCos).
at::Tensor sinCosPositions(int gridH, int gridW, int width);

} // namespace attnscope
