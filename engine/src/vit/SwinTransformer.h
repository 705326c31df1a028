#pragma once

// Swin and Swin v2 (ModelConfig::Hierarchy; docs/models.md, "Swin"): the forward of timm's SwinTransformer and
// SwinTransformerV2 (and transformers' Swin/Swinv2, renamed to timm's names at load), recording per block what
// ForwardState asks: A_l per window [B, nW, H, w*w, w*w], U_l, R_l and X_l over the stage's grid [B, h*w, C].
#include "attnscope/ModelConfig.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <utility>
#include <vector>

namespace attnscope {

struct ForwardState;

// Module and parameter names are timm's (`layers.1.blocks.0.attn.qkv.weight`, `layers.1.downsample.reduction.weight`),
// so that loading is a walk over named_parameters() as for the ViT.
class SwinTransformerImpl : public torch::nn::Module {
public:
    explicit SwinTransformerImpl(const ModelConfig& c);
    // After the parameters are loaded: each block's position bias [H, w*w, w*w] and shifted windows' mask
    // [nW, w*w, w*w], made once for the model's input size.
    void makeBlockTables(const at::Device& device);
    // [B, C, H, W] at the model's input size -> logits [B, K] (pooled features [B, D] without a head).
    at::Tensor forward(const at::Tensor& x, ForwardState& state);

    // Block l's (1-based) queries and keys over its stage's grid, [B, h*w, C] each in float64 on the host, as its window
    // attention multiplies them (qkv is a per-token map: the windows do not change a row), from X_{l-1} [B, h'*w', C']:
    // the stem's tokens for the first block, else the previous block's output, merged here at a stage's first block.
    // Swin v2's are before its per-head normalisation (its logits are their cosines).
    std::pair<at::Tensor, at::Tensor> queriesAndKeys(const at::Tensor& previous, int l) const;

private:
    at::Tensor merge(const at::Tensor& x, size_t stage) const; // [B, h, w, C] -> the next stage's [B, h/2, w/2, C']
    at::Tensor block(const at::Tensor& x, int l, ForwardState& state);
    at::Tensor windowAttention(const at::Tensor& x, int l, ForwardState& state);

    // The parameters by handle (loading replaces their data in place): the stem, each stage's patch merging (none in
    // the first), each block.
    struct Stem {
        at::Tensor projW, projB, normW, normB;
    };
    struct Merge {
        at::Tensor normW, normB, reductionW;
    };
    struct Block {
        at::Tensor n1w, n1b, qkvW, qkvB, projW, projB, table, logitScale, cpb0W, cpb0B, cpb2W, n2w, n2b, fc1W, fc1B,
            fc2W, fc2B;
    };

    ModelConfig m_config;
    std::vector<WindowBlock> m_blocks;
    Stem m_stem;
    std::vector<Merge> m_merges;
    std::vector<Block> m_weights;
    at::Tensor m_normW, m_normB, m_headW, m_headB;
    std::vector<at::Tensor> m_bias, m_mask; // per block (m_mask undefined without a shift)
};
TORCH_MODULE(SwinTransformer);

} // namespace attnscope
