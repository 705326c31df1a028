#pragma once

// The computations of docs/analyses.md, as free functions over a Trace (plain results, no torch), under its section
// numbers (section 6 there, the variants, is a run option in Model.h; section 9, the query-key map, is QueryKey.h).
// Layers are numbered as there: 0 = the embeddings, 1..L the blocks; heads and tokens from 0, prefix tokens first.

#include "attnscope/Model.h"
#include "attnscope/Tensor.h"

#include <string>
#include <vector>

namespace attnscope {

// The recorded taps: block outputs X_l, attention branches U_l, residual sums R_l.
enum class Tap { Block, Attn, Residual };
enum class TokenSet { All, Patches };
const char* toString(Tap t);      // block | attn | residual (the CSV spelling)
const char* toString(TokenSet s); // all | patches

// ---- 1. Token cosine similarity (over-smoothing)

// cs(Z) = (|sum_i z^_i|^2 - M) / (M (M - 1)) over the rows of `tokens` [M, D], z^ = z / max(|z|, 1e-12).
double tokenCosineSimilarity(const Tensor& tokens);
// The full M x M cosine matrix of the rows.
Tensor tokenCosineMatrix(const Tensor& tokens);

struct TokenSimilarityPoint {
    int layer;
    Tap tap;
    TokenSet tokens;
    double value;
};
// Every recorded tap and layer of `trace`, for both token sets.
std::vector<TokenSimilarityPoint> tokenSimilarity(const Trace& trace);

// ---- 2. Attention maps

struct AttentionMap {
    Tensor patches;        // [gh, gw]: the patch part of the row
    double prefixMass = 0; // the share of the row on prefix tokens
    // A hierarchical model's (Swin's) map is at its block's stage grid (patches [h, w], each token 2^stage patches on a
    // side), NaN outside the query's window (no attention there, which is not zero attention); paddingMass is the share
    // of the row on the zero tokens that pad the grid to whole windows.
    double paddingMass = 0;
};
// Row `query` of A_layer for `head` (-1: the mean over heads); `renormalise` scales the patch part to sum 1. Layer
// depth + 1 of a model with an attention-pool head (Trace::poolAttention) is the pool's map, whatever the query.
// A hierarchical trace's query is a patch of the first grid (y * gridWidth + x): its token at the block's stage
// (y >> stage, x >> stage), its row of the window it falls in, the keys placed back where the shift took them.
AttentionMap attentionMap(const Trace& trace, int layer, int head, int query, bool renormalise = false);
// "stage 2, block 1 (shifted)" of a hierarchical trace's block `layer`; the layer's number otherwise.
std::string blockName(const Trace& trace, int layer);
std::string blockName(const WindowBlock& block);
// The last layer attentionMap takes: depth + 1 with an attention-pool head's map, depth otherwise; and a layer's name
// for people and files ("pool" for that one, its number otherwise).
int lastMapLayer(const Trace& trace);
std::string mapLayerName(const Trace& trace, int layer);
// Row `query` of every head's map at every layer, and an attention-pool head's map: all the window draws for one
// query (the view's map, the tiles, a head mean) and all of it that crosses a remote link (docs/remote.md): for ViT-B/16
// at 224, 12 x 12 x 197 floats instead of the trace's 22 MB of maps.
struct QueryRows {
    int query = 0;
    int gridHeight = 0, gridWidth = 0, numPrefixTokens = 0, numHeads = 0, depth = 0;
    Tensor rows; // [depth, H, N]: rows[l - 1][h] is row `query` of A_l's head h
    Tensor pool; // [H, gh * gw]: Trace::poolAttention; empty without an attention-pool head
    // A hierarchical trace's (Swin's) instead of `rows`: its blocks, and per block the query's maps (attentionMap: at
    // the block's stage grid, NaN outside the window), its heads' then their mean. numHeads is then the most heads of
    // any block.
    std::vector<WindowBlock> windows;
    std::vector<std::vector<AttentionMap>> windowMaps;
    bool hierarchical() const { return !windows.empty(); }
};
// A trace's rows of `query`; std::out_of_range for a token it has not, std::invalid_argument for a trace whose maps were
// not recorded.
QueryRows queryRows(const Trace& trace, int query);
// attentionMap(trace, layer, head, rows.query, renormalise) of the trace the rows came from, bit for bit.
AttentionMap attentionMap(const QueryRows& rows, int layer, int head, bool renormalise = false);
int lastMapLayer(const QueryRows& rows);
std::string mapLayerName(const QueryRows& rows, int layer);
// How the heads of a layer are fused for the rollout, and how much of the fused map is discarded first: the options
// vit-explain (Gildenblat) offers. Discarding sets the smallest `discard` share of the fused map's N x N entries to 0
// (ties in index order), never the first token's attention to itself, which vit-explain keeps too.
enum class HeadFusion { Mean, Max, Min };
const char* toString(HeadFusion f); // mean | max | min
Result<HeadFusion> parseHeadFusion(const std::string& name);
struct RolloutOptions {
    HeadFusion fusion = HeadFusion::Mean;
    double discard = 0.0; // in [0, 1)
};
// Abnar & Zuidema's rollout: R = Â_L ... Â_1 with Â_l = 0.5 F_l + 0.5 I, rows renormalised, F_l the fused heads of A_l
// (the mean by default, as the paper) after discarding. [N, N]. Not of a hierarchical trace (std::invalid_argument with
// kNoHierarchicalRollout): its tokens change at every merge.
extern const char* const kNoHierarchicalRollout;
Tensor attentionRollout(const Trace& trace, const RolloutOptions& options = {});
AttentionMap rolloutMap(const Trace& trace, const Tensor& rollout, int query);

// The attention of one image and query for the layers x heads figure (and the window's tiles): every head's map and
// the head mean of every layer, and the rollout.
struct AttentionGrid {
    std::string model; // what the figure names (left empty by attentionGrid)
    std::string image;
    Image shown;      // the preprocessed image the model saw (left empty by attentionGrid)
    int query = 0;    // token index (0 = CLS when there is one)
    int gridHeight = 0, gridWidth = 0, numPrefixTokens = 0;
    std::vector<std::vector<AttentionMap>> maps; // [layer - 1][head], heads.size() == H, plus the head mean last
    AttentionMap rollout;
    RolloutOptions rolloutOptions; // how the rollout was made
    // A hierarchical model's blocks (Trace::windows): its rows are per block, each with its stage's heads, its maps at
    // its stage's grid; no rollout, for the reason rolloutRefused gives.
    std::vector<WindowBlock> windows;
    std::string rolloutRefused;
};
// The grid of row `query` (-1: the CLS token, or the centre patch of a model without prefix tokens), its rollout made
// as `rollout` says.
AttentionGrid attentionGrid(const Trace& trace, int query = -1, const RolloutOptions& rollout = {});

struct AttentionSimilarityPoint {
    int layer;
    double successiveCos;  // cosine of flattened head-mean maps A_l and A_{l+1}; NaN for the last layer
    double headRedundancy; // mean pairwise cosine between the flattened A_l[h]; NaN with one head
};
std::vector<AttentionSimilarityPoint> attentionSimilarity(const Trace& trace);

// ---- 3. Head centres

struct HeadCentre {
    int layer = 0, head = 0;
    double centreDy = 0, centreDx = 0; // mean over patch queries of the attention-weighted offset, in patches
    double peakDy = 0, peakDx = 0;     // argmax of the offset map
    double meanDistancePx = 0;         // patch size x mean attention-weighted distance
    double bandwidth = 0;              // spread of the offset map around the centre, in patches
    double prefixMass = 0;             // mean over patch queries of the mass on prefix tokens
    double windowMass = 0;             // sum of the offset map
    double contour50 = 0, contour90 = 0; // offset-map levels holding 50% / 90% of the window mass
    Tensor offsetMap;                  // [2R+1, 2R+1], rows dy = -R..R, columns dx = -R..R
};
// Every head of every recorded layer; `radius` is R of the offset window. Of a hierarchical trace: offsets in the
// block's stage's tokens, meanDistancePx in pixels (docs/analyses.md, "Hierarchical models").
std::vector<HeadCentre> headCentres(const Trace& trace, int patchSize, int radius = 3);

// ---- 4. Signal-to-noise ratio through depth

struct SnrPoint {
    int layer;
    Tap tap;
    double snrDb;
};
struct SnrDiagnostics {
    int layer; // 1..L: the attention sub-block of block l (none for a Swin stage's first block: its input is unrecorded)
    double alpha, beta, gamma, gain, bound;
    bool conditionHolds;  // min(alpha, beta) > gamma
    double sensitivity;   // K_l = |X_l(x~) - X_l(x)| / |X_0(x~) - X_0(x)|
};
struct SnrResult {
    std::vector<SnrPoint> snr;
    std::vector<SnrDiagnostics> diagnostics;
};
// From a clean and a perturbed trace of the same image (both recording blocks and attention branches).
SnrResult signalToNoise(const Trace& clean, const Trace& noisy, bool centre = true);

// ---- 5. Logit decomposition of layer 1 (additive absolute position embeddings)

struct LogitDecomposition {
    Tensor tt, tp, pt, pp; // [H, N, N] each; their sum is S_1
    Tensor logits;         // S_1 = Q K^T / sqrt(d) [H, N, N]
};
Result<LogitDecomposition> decomposeLogits(const Model& model, const Tensor& input);

// ---- 10. Class relevance (gradients of a class's logit; one forward and one backward with autograd on)

struct RelevanceOptions {
    int targetClass = -1;  // -1: the predicted class
    int gradCamLayer = -1; // the block output X_l Grad-CAM reads; -1: X_{L-1}, the input of the last block (X_L's
                           // patch tokens reach a CLS-pooled head through no later attention, so their gradient is 0)
};
struct Relevance {
    int targetClass = 0;
    double logit = 0, probability = 0; // of the target class
    int gradCamLayer = 0;
    int gridHeight = 0, gridWidth = 0, numPrefixTokens = 0;
    // Chefer et al. 2021 (generic attention explainability, GAE): R = I, then for l = 1..L
    // R <- R + mean_h((dy_c/dA_l ⊙ A_l)^+) R, and the relevance of each patch to what the head reads: R's row of the
    // CLS token (the mean of the rows the head pools where it pools patches or two tokens), patch part. [gh, gw]
    Tensor gae;
    Tensor gaeTokens; // that row over every token, prefix first [N]
    // Grad-CAM on the token grid: ReLU(sum_d w_d X_l[i, d]) over the patch tokens i, w_d = the mean over the patch
    // tokens of dy_c/dX_l[:, d]. [gh, gw]
    Tensor gradCam;
};
// For the model's own input (Model::Prepared::input) [C, H, W]. The forward runs in float32 with the model's own
// variant settings; the relevance is accumulated in float64. Errors: a model without a classifier head, a class out
// of range, a Grad-CAM layer outside 1..L.
Result<Relevance> classRelevance(const Model& model, const Tensor& input, const RelevanceOptions& options = {});

// ---- 7. Token norms, high-norm outliers and attention sinks (Darcet et al. 2024, "Vision Transformers Need
// Registers": large models grow a few patch tokens of very large norm that the later layers' attention collects on)

// A patch token of X_l is a high-norm outlier when its norm exceeds `kDefaultOutlierRatio` times the median norm of
// the patch tokens of X_l: a scale-free form of the paper's fixed cut (norm > 150 in DINOv2 ViT-g, where the normal
// tokens sit around a few tens). Prefix tokens (CLS, distillation, registers) are measured, never flagged.
constexpr double kDefaultOutlierRatio = 4.0;

struct TokenNormLayer {
    int layer = 0;              // X_l, l = 0 (the embeddings) .. L
    std::vector<double> norms;  // [N] Euclidean norm of every token of X_l, prefix first
    double patchMedian = 0;     // median of the patch tokens' norms (the mean of the middle two for an even count)
    double maxRatio = 0;        // the largest patch norm / patchMedian
    double clsRatio = 0;        // the CLS token's norm / patchMedian; NaN without a CLS token
    double registerRatio = 0;   // the registers' mean norm / patchMedian; NaN without registers
    std::vector<int> outliers;  // token indices of the high-norm patch tokens, ascending
    // What the next attention, A_{l+1}, which reads X_l, does with these tokens (NaN and empty for l = L, or where the
    // trace holds no A_{l+1}):
    std::vector<double> attentionReceived; // [N] mean over heads and every query row of A_{l+1}[h, q, i]
    double outlierAttention = 0;           // its sum over the outliers: the share of attention they absorb
    double prefixAttention = 0;            // its sum over the prefix tokens
};
struct TokenNorms {
    double outlierRatio = kDefaultOutlierRatio;
    int gridHeight = 0, gridWidth = 0, numPrefixTokens = 0;
    std::vector<TokenNormLayer> layers; // every recorded block output, by layer
};
// From a trace recording the block outputs (and the attention, for the sink shares), in float64. `config` tells
// which prefix token is the CLS token and which are registers. Not of a hierarchical trace yet (std::invalid_argument).
TokenNorms tokenNorms(const Trace& trace, const ModelConfig& config, double outlierRatio = kDefaultOutlierRatio);

// ---- 8. Head ablation (Michel et al. 2019, "Are Sixteen Heads Really Better than One?")

// What ablating one head does to one image's prediction: with z the clean logits, c = argmax z and z' the ablated
// forward's, dlogit = z'_c - z_c, dprob = softmax(z')_c - softmax(z)_c, kl = KL(softmax(z) || softmax(z')), and
// whether argmax z' differs from c. In float64.
struct HeadAblationEffect {
    int layer = 0, head = 0;
    double dlogit = 0, dprob = 0, kl = 0;
    bool flip = false;
    int predicted = 0;       // argmax z', the class predicted with the head ablated
    double probability = 0;  // softmax(z')_predicted
};
HeadAblationEffect ablationEffect(const Tensor& cleanLogits, const Tensor& ablatedLogits);

struct HeadAblation {
    AblationMode mode = AblationMode::Zero;
    int predicted = 0;          // c
    double probability = 0;     // softmax(z)_c
    std::vector<HeadAblationEffect> heads; // every layer's every head, layer by layer
};
// One image's input [C, H, W] with each head of each layer ablated in turn: L x H forwards (plus the clean one), `batch`
// of them per runBatch (0: all at once), with `run`'s variants and precision; `heads` given: only those heads, in that
// order (the window's one head on the current image). Errors: a model without a classification head (nothing to
// predict), a head outside the model, a failed forward.
Result<HeadAblation> headAblation(const Model& model, const Tensor& input, AblationMode mode = AblationMode::Zero,
                                  const RunOptions& run = {}, int batch = 0, const std::vector<HeadRef>& heads = {});

} // namespace attnscope
