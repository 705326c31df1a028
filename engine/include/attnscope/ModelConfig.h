#pragma once

#include <string>
#include <vector>

namespace attnscope {

enum class Activation { Gelu, GeluTanh, QuickGelu, Relu, Silu };
enum class BlockNorm { Pre, Post }; // Post: nn.TransformerEncoderLayer's default (norm after each residual)
// What the classifier reads: the first prefix token, the mean of the patch tokens, both concatenated
// (HF Dinov2ForImageClassification), or the average of the CLS and distillation heads (DeiT distilled).
// AllTokensMean: the mean of every token, the prefix tokens included (vit-pytorch's "mean" pooling in its versions
// that always had a CLS token). AttentionPool: SigLIP's attention-pool head (timm's global_pool "map"), one learned
// query attending over the patch tokens, then an MLP; its map is the model's last, "pool".
enum class Pooling { Token, PatchMean, TokenAndPatchMean, Distilled, AllTokensMean, AttentionPool };
// How a patch becomes a token. Convolution: a stride-P convolution, `patch_embed.proj.weight` [D, C, P, P] (timm,
// Hugging Face, torchvision). Linear: a linear layer over the patch's pixels flattened in (p1 p2 c) order, channels
// fastest (vit-pytorch's Rearrange 'b c (h p1) (w p2) -> b (h w) (p1 p2 c)'), or in (c p1 p2) order, as
// `patch_embed.linear.weight` [D, P*P*C]; optionally with a LayerNorm over the flattened patch before it
// (`patch_embed.norm_in`, in the same order).
enum class PatchEmbedding { Convolution, LinearChannelsLast, LinearChannelsFirst };
// Where the final LayerNorm acts: on every token before pooling (timm `norm`), on the pooled vector only
// (timm `fc_norm`, HF CLIP `post_layernorm`), or nowhere.
enum class FinalNorm { AllTokens, Pooled, None };
// Attention kinds of docs/analyses.md section 6. Standard: softmax(QK^T/sqrt(d)). Bilateral (filtering paper,
// Eq. 24): token-token and position-position logits with their own bandwidths, cross terms dropped; positions
// are kept out of the token stream. Quadratic (Cordonnier et al., Eq. 9): logits -alpha_h(|delta - Delta_h|^2 -
// |Delta_h|^2) from relative patch positions alone, content terms off.
enum class AttentionKind { Standard, Bilateral, Quadratic };
// Standard blocks (attention and MLP sub-blocks with residuals), or a bare attention layer (X_l = U_l) as in
// the convolution-as-attention construction of Cordonnier et al., Lemma 1.
enum class BlockKind { Standard, AttentionOnly };

const char* toString(Activation a);
const char* toString(BlockNorm n);
const char* toString(Pooling p);
const char* toString(FinalNorm n);
const char* toString(AttentionKind k);
const char* toString(BlockKind k);
const char* toString(PatchEmbedding p);

// Hierarchical windowed attention (docs/models.md, "Swin"): stages of blocks over ever coarser grids, each block
// attending within windows of its stage's grid (every other block's windows shifted by half a window), 2 x 2 patches
// merged into one token between stages. Swin: scaled dot-product logits plus a learned relative position bias table per
// block; SwinV2: cosine logits times a learned per-head scale plus a bias made by a small MLP from log-spaced relative
// coordinates, and the block's norms after its attention and MLP instead of before.
enum class Hierarchy { None, Swin, SwinV2 };
const char* toString(Hierarchy h); // none | swin | swinv2
// One stage of a hierarchical model.
struct SwinStage {
    int depth = 0;     // blocks
    int heads = 0;
    int width = 0;     // the tokens' width C in this stage
    int mlpHidden = 0;
    int window = 0;    // the window's side as the model was built for (before it is clipped to a smaller grid)
    int pretrainedWindow = 0; // SwinV2: the window its position bias's coordinates are scaled to (0: the window)
};
// One block of a hierarchical model at the model's input size: its stage (0-based), index in the stage, the stage's
// grid, its window (clipped to the grid, as timm does) and its shift (0, or half the stage's window in odd blocks where
// the grid is larger than the window), and the windows of the grid padded to a multiple of the window.
struct WindowBlock {
    int stage = 0, index = 0;
    int gridH = 0, gridW = 0;
    int windowH = 0, windowW = 0;
    int shiftH = 0, shiftW = 0;
    int heads = 0, width = 0;
    int windowsDown() const { return (gridH + windowH - 1) / windowH; }
    int windowsAcross() const { return (gridW + windowW - 1) / windowW; }
    int numWindows() const { return windowsDown() * windowsAcross(); }
    int windowArea() const { return windowH * windowW; }
    // Where token (y, x) of the stage's grid is in this block's attention (Trace::attention[l] [nW, H, n, n]): the grid is
    // rolled by (-shiftH, -shiftW), padded at the bottom and right to whole windows, and cut into windows row-major; the
    // token's window and its row in that window.
    struct Place {
        int window = 0, row = 0;
    };
    Place place(int y, int x) const;
    // The token (y * gridW + x) that key `key` of window `window` is, the roll undone; -1 for a key in the padding.
    int tokenOf(int window, int key) const;
};

// The architecture of one vision transformer, whatever checkpoint convention it came from.
struct ModelConfig {
    int width = 768;        // D
    int depth = 12;         // L
    int numHeads = 12;      // H
    int mlpHidden = 3072;   // M
    int patchSize = 16;     // p (square patches)
    // The input size the model runs at: the one its position embedding was trained for, unless it was loaded at
    // another (LoadOptions::inputHeight, Model::withInputSize; ModelInfo::trainedHeight keeps the trained one).
    int imageHeight = 224;
    int imageWidth = 224;
    int channels = 3;
    int numClasses = 0;     // 0: no head; logits are the pooled features
    bool headIsProjection = false; // CLIP: the head maps to an embedding, not to classes

    bool classToken = true;
    bool distToken = false;
    int numRegisters = 0;
    bool posEmbed = true;
    bool posEmbedHasPrefix = true; // false: timm's no_embed_class (prefix tokens get no position)

    PatchEmbedding patchEmbedding = PatchEmbedding::Convolution;
    bool patchNormIn = false;  // Linear only: LayerNorm over the flattened patch (patch_embed.norm_in)
    bool patchNormOut = false; // LayerNorm on every embedded patch (patch_embed.norm: vit-pytorch, timm's embed norm)
    // The width of q, k and v, heads x head width, when it is not the model's width (vit-pytorch's heads * dim_head):
    // qkv [3 * attentionWidth, D], proj [D, attentionWidth]. 0: the model's width.
    int attentionWidth = 0;
    // pos_embed is a fixed 2-D sin-cos table (vit-pytorch's SimpleViT, posemb_sincos_2d), made at load, not read.
    bool posFixedSinCos = false;
    // A learned bias on every layer's attention logits, looked up by the relative position of the query's and the
    // key's patches, with three entries for the CLS token's row, column and itself (BEiT:
    // blocks.{i}.attn.relative_position_bias_table [(2 gh - 1)(2 gw - 1) + 3, H]). For the trained grid only.
    bool relativePositionBias = false;
    // A rotary position embedding of the patch tokens' queries and keys in every layer, the prefix tokens unrotated. It
    // has no tensor but Mixed's frequencies: a config states it (docs/models.md, "Families"). Any grid: the angles are
    // made for it (vit/Rope.h has the formulas).
    //  - DinoV3: patch centres normalised to [-1, 1] per axis, periods ropeTemperature^(4 i / d), "rotate half".
    //  - Axial (timm's RotaryEmbeddingCat: EVA-02, the RoPE-Axial ViTs): patch indices (rescaled so that the grid spans
    //    ropeReferenceGrid when one is given), frequencies ropeTemperature^(-4 i / d), the first coordinate's angles then
    //    the second's (y, x; x, y with ropeXY), rotated in interleaved pairs (in halves with ropeHalf).
    //  - Mixed (RoPE-Mixed): learned frequencies per layer and head (`rope.freqs` [2, L, H, d / 2]) over the x and y
    //    patch indices, interleaved pairs.
    enum class Rope { None, DinoV3, Axial, Mixed };
    Rope rope = Rope::None;
    double ropeTemperature = 100.0;
    bool ropeXY = false;
    bool ropeHalf = false;
    int ropeReferenceGridH = 0, ropeReferenceGridW = 0; // 0: the coordinates are the indices themselves
    // The MLP: fc2(act(fc1 x)), or gated (SwiGLU, EVA-02): fc1's rows are the gate's then the value's
    // (timm's GluMlp, or SwiGLU's fc1_g and fc1_x stacked), fc2(act(gate) * value); with mlpNorm a LayerNorm over the
    // hidden width before fc2 (EVA-02's scale_mlp, `mlp.norm`).
    bool mlpGated = false;
    bool mlpNorm = false;
    // A LayerNorm over the heads' concatenated outputs before the output projection (EVA's scale_attn_inner, `attn.norm`).
    bool attnNorm = false;
    // Pooling::AttentionPool: the width of its MLP (`attn_pool.mlp.fc1.weight` [poolMlpHidden, D]).
    int poolMlpHidden = 0;

    bool patchBias = true;
    bool qkvBias = true;
    bool projBias = true;
    bool preNorm = false;   // a LayerNorm on the token stream before the first block (CLIP's ln_pre)
    bool layerScale = false;
    BlockNorm blockNorm = BlockNorm::Pre;
    FinalNorm finalNorm = FinalNorm::AllTokens;
    Pooling pooling = Pooling::Token;
    Activation activation = Activation::Gelu;
    double layerNormEps = 1e-6;
    AttentionKind attention = AttentionKind::Standard;
    BlockKind block = BlockKind::Standard;
    // Variants the model was trained with (docs/analyses.md section 6); a run uses them unless told otherwise.
    double neutrenoLambda = 0.0; // NeuTRENO: O_l = A_l V_l + lambda (V_1 - V_l)
    double boostT = 0.0;         // Boost: R_l = U_l + t X_0 + (1 - t) X_{l-1}

    // Hierarchical models (Swin): the stages; width, numHeads and mlpHidden are then the last stage's, depth the blocks
    // of every stage, and gridHeight/gridWidth the first stage's grid. No prefix tokens, no position table.
    Hierarchy hierarchy = Hierarchy::None;
    std::vector<SwinStage> stages;
    bool hierarchical() const { return hierarchy != Hierarchy::None; }
    // The heads of block `layer` (1..depth): its stage's for a hierarchical model, numHeads otherwise; and the most of
    // any block.
    int headsAt(int layer) const;
    int maxHeads() const;

    int attnWidth() const { return attentionWidth > 0 ? attentionWidth : width; }
    int headDim() const { return attnWidth() / numHeads; }
    // How positions enter: "learned", "sincos2d" (a fixed table), "rotary", "relative-bias" (with "learned+" before it
    // when a table is added too), "attention" (bilateral or quadratic attention's own parameters) or "none".
    const char* positionScheme() const;
    int numPrefixTokens() const { return (classToken ? 1 : 0) + (distToken ? 1 : 0) + numRegisters; }
    int gridHeight() const { return imageHeight / patchSize; }
    int gridWidth() const { return imageWidth / patchSize; }
    int numPatches() const { return gridHeight() * gridWidth(); }
    int numTokens() const { return numPrefixTokens() + numPatches(); }
};

// Every block of a hierarchical model at its input size, in order (block l of Trace is windowBlocks(c)[l - 1]); empty
// for a model without stages.
std::vector<WindowBlock> windowBlocks(const ModelConfig& c);

// ShortestEdge: the shorter side to resizeShortest, the aspect ratio kept. Exact: to resizeHeight x resizeWidth (the
// aspect ratio not kept). Cover: the smallest size of the image's aspect ratio that covers resizeHeight x resizeWidth
// (timm's ResizeKeepRatio, for a non-square input size). None: as it is.
enum class ResizeMode { ShortestEdge, Exact, None, Cover };
enum class Interpolation { Nearest, Bilinear, Bicubic };
const char* toString(ResizeMode m);
const char* toString(Interpolation i);

// How an image becomes the model's input (docs/design.md section 4): resize, centre crop, rescale, normalise.
struct PreprocessConfig {
    ResizeMode resize = ResizeMode::ShortestEdge;
    int resizeShortest = 256;
    int resizeHeight = 224;
    int resizeWidth = 224;
    Interpolation interpolation = Interpolation::Bicubic;
    bool centerCrop = true;
    int cropHeight = 224;
    int cropWidth = 224;
    // timm/torchvision offset the crop by round-half-even((in-out)/2), Hugging Face by floor (docs/models.md,
    // "Preprocessing").
    bool cropOffsetFloor = false;
    double rescale = 1.0 / 255.0;
    std::vector<double> mean { 0.485, 0.456, 0.406 };
    std::vector<double> std { 0.229, 0.224, 0.225 };
    // timm's crop_pct, when the config gave one (0 otherwise): another input size s resizes to floor(s / crop_pct),
    // as timm's transforms do, instead of to s times resize / crop.
    double cropPct = 0.0;
    std::string source = "default"; // where these values came from, for `info` and the manifest
};

} // namespace attnscope
