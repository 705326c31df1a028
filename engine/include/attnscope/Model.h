#pragma once

#include "attnscope/Image.h"
#include "attnscope/ModelConfig.h"
#include "attnscope/Result.h"
#include "attnscope/Tensor.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attnscope {

struct LoadOptions {
    std::string device = "auto"; // auto | cpu | cuda | cuda:<i>
    // A JSON model description (docs/model-description.md) applied to the checkpoint: rename rules and
    // architecture switches for ViTs that follow no library's naming. Empty: look for `attnscope.json` next
    // to the checkpoint.
    std::string descriptionPath;
    // The input size to run the model at, in pixels (0, 0: the size it was trained for): the same as loading and then
    // calling Model::withInputSize(inputHeight, inputWidth).
    int inputHeight = 0;
    int inputWidth = 0;
    // A hierarchical model (Swin, ModelConfig::hierarchical) loads only where the caller takes its traces: per-window
    // maps [nW, H, w*w, w*w] and blocks over each stage's grid (Trace::windows). Elsewhere it is refused in one line
    // saying so (attnscope-cli, the window, Python and the remote host take it).
    bool acceptHierarchical = false;
};

// Everything `attnscope-cli info` shows.
struct ModelInfo {
    std::string path;        // what the user gave (file, folder or builtin:NAME)
    std::string weightsPath; // the file the tensors came from
    std::string format;      // safetensors | pytorch
    std::string naming;      // timm | huggingface | torchvision | openai-clip | described
    std::string family;      // vit | deit | dinov2 | clip | ...
    std::string configSource;
    // What named the family and how: "timm vit_small_patch16_224 (config.json architecture, timm 1.0.31's registry)",
    // "Hugging Face dinov2 Dinov2Model (config.json model_type)", "tensor names (timm naming)", "model description ...".
    std::string recognition;
    // What no file states directly and how it was decided, one "what value: how" each ("heads 6: timm's
    // vit_small_patch16_224", "position: learned, the pos_embed tensor").
    std::vector<std::string> inferred;
    // Architecture values no file recorded, taken from a convention (heads = width/64), each as a sentence: the tools
    // print them as warnings, since a wrong guess gives a model that runs and is wrong.
    std::vector<std::string> guesses;
    // The keys of a foreign config.json (Hugging Face's, timm's, a project's own) that attnscope does not read, by file
    // name ("config.json"), nested ones dotted ("pretrained_cfg.tag"), in key order. Not an error (such files carry
    // training settings): listed so that a value one expects to matter (a dropout, a project's "num_attention_heads")
    // is seen to play no part. Empty for attnscope's own config.json.
    std::map<std::string, std::vector<std::string>> ignoredConfigKeys;
    std::string device;
    ModelConfig config; // config.imageHeight/imageWidth: the input size the model runs at
    // The input size the checkpoint was trained for: the grid of its position table times the patch size. It differs
    // from config.imageHeight/imageWidth when the model was loaded at another input size (Model::withInputSize).
    int trainedHeight = 0;
    int trainedWidth = 0;
    PreprocessConfig preprocess;
    std::vector<std::string> labels; // class names, empty when unknown
    int64_t parameterCount = 0;
    // Quadratic attention (Cordonnier et al., Eq. 9): every head's learned centre Delta_h = (dy, dx), in patches, and
    // sharpness alpha_h, by layer (0-based) and head; empty for other attention kinds. The head-centre analysis of
    // such a model should find each head's attention around its Delta_h.
    struct QuadraticHead {
        double dy = 0, dx = 0, alpha = 0;
    };
    std::vector<std::vector<QuadraticHead>> quadraticHeads;
};

// Which intermediate tensors a run keeps (docs/analyses.md, "Notation"). Only what is asked is recorded.
struct RecordSpec {
    bool attention = false;  // A_l     [H, N, N], rows sum to 1, l = 1..L
    bool attnBranch = false; // U_l     [N, D], what the attention sub-block adds to the residual stream
    bool residual = false;   // R_l     [N, D], X_{l-1} + U_l
    bool blocks = false;     // X_l     [N, D], l = 0..L (0 = the stream entering block 1), before the final norm
    std::vector<int> layers; // restrict to these l (1-based; 0 for X_0); empty = all

    static RecordSpec everything()
    {
        RecordSpec s;
        s.attention = s.attnBranch = s.residual = s.blocks = true;
        return s;
    }
    bool wants(int layer) const;
};

// The arithmetic of the forward (docs/performance.md, Precision). FP32 is IEEE float32 throughout (TF32 off), the numbers
// the references give; TF32 lets CUDA's matrix products round their inputs to 10-bit mantissas (CUDA only); BF16 runs the
// matrix products in bfloat16 (autocast; layer norms and softmax stay float32). The analyses run in float64 either way.
enum class Precision { Fp32, Tf32, Bf16 };
// Head ablation (docs/analyses.md section 8): an ablated head's output O_l[h] ([N, d], before the output projection) is
// replaced by zeros (the projection's bias stays), or by the mean of its rows over the tokens.
enum class AblationMode { Zero, Mean };
const char* toString(AblationMode m); // zero | mean
Result<AblationMode> parseAblationMode(const std::string& name);
// One head: layer 1..L, head 0..H-1; layer 0 names none.
struct HeadRef {
    int layer = 0;
    int head = 0;
};
const char* toString(Precision p); // fp32 | tf32 | bf16
Result<Precision> parsePrecision(const std::string& name);

struct RunOptions {
    RecordSpec record;
    // Head ablation: one entry per input of the run (Model::runBatch), the head that input runs with ablated ({0, 0}:
    // none), as `ablation` says. Empty: nothing ablated. The ablations of a batch are independent forwards side by side.
    std::vector<HeadRef> ablatedHeads;
    AblationMode ablation = AblationMode::Zero;
    Precision precision = Precision::Fp32;
    // Inference-time variants (docs/analyses.md section 6); unset: what the model was trained with (0 for most).
    std::optional<double> neutrenoLambda; // O_l = A_l V_l + lambda (V_1 - V_l), per head, before the projection
    std::optional<double> boostT;         // R_l = U_l + t X_0 + (1 - t) X_{l-1}
    // Polled between blocks; returning true abandons the run (the Result then carries Error "cancelled").
    std::function<bool()> isCancelled;
};

// The result of one forward pass of one image. Vectors are indexed by layer: attention[l] for l = 1..L
// (attention[0] is empty), blocks[l] for l = 0..L. Entries not recorded are empty Tensors.
struct Trace {
    Tensor input;   // [C, H, W] the normalised input
    Tensor logits;  // [K] (or pooled features [D] when the model has no head)
    std::vector<Tensor> attention;
    std::vector<Tensor> attnBranch;
    std::vector<Tensor> residual;
    std::vector<Tensor> blocks;
    // [H, gh * gw]: the attention-pool head's one query over the patch tokens (SigLIP's "map" head,
    // Pooling::AttentionPool), recorded with the attention; the model's last map, shown and exported as layer "pool"
    // (attentionMap's layer depth + 1). Empty without such a head.
    Tensor poolAttention;
    int gridHeight = 0;
    int gridWidth = 0;
    int numPrefixTokens = 0;
    int numHeads = 0;
    int depth = 0;
    double neutrenoLambda = 0; // the variant values this run used
    double boostT = 0;
    // A hierarchical model's (Swin's) blocks, windows[l - 1] block l's (windowBlocks of its config): then attention[l] is
    // [nW, H_l, n, n] per window and the other taps [h * w, C] over the stage's grid; gridHeight/gridWidth are the first
    // stage's grid and numHeads the last stage's heads. Empty for a ViT.
    std::vector<WindowBlock> windows;
    bool hierarchical() const { return !windows.empty(); }
};

// A class and its softmax probability.
struct ClassProbability {
    int index = 0;
    double probability = 0;
};
// The k most probable classes of `logits` [K] (softmax in float64), most probable first, equal ones by index; fewer when
// K < k. For a model without a classification head the logits are pooled features: no classes to rank.
std::vector<ClassProbability> topClasses(const Tensor& logits, int k = 5);

// A loaded model: immutable after load, safe to share across threads as const.
class Model {
public:
    ~Model();

    static Result<std::shared_ptr<const Model>> load(const std::string& path, const LoadOptions& options = {});

    const ModelInfo& info() const;
    const ModelConfig& config() const { return info().config; }

    // The preprocessed image (what the model saw, after resize and crop; for display) and the normalised input
    // tensor [C, H, W] made from it.
    struct Prepared {
        Image shown;
        Tensor input;
    };
    Result<Prepared> prepare(const Image& image) const;
    // Only the channel conversion, rescale and normalisation: for an image already at the input size (a
    // perturbed copy of Prepared::shown).
    Result<Tensor> normalise(const Image& image) const;
    // What prepare() does to an image of width x height with `channels` (1 grey, 3 RGB), as one line for a user:
    // "converted to grey, resized 512×512 → 28×28", "resized 500×375 → 298×224, centre 224×224 cropped"; "" when the
    // image is what the model sees already. Rescale and normalisation, done to every image, are not named.
    std::string describePreparation(int width, int height, int channels) const;

    // The same model at another input size (height x width pixels, both positive multiples of the patch size),
    // as timm runs a model at a size it was not trained for: the patch part of the position table is resampled to
    // the new grid once, here (timm's resample_abs_pos_embed: bicubic, align_corners=False, antialias=True), the
    // prefix rows (CLS, distillation token) kept as they are; preprocessing resizes and crops to the new size as
    // timm's eval transform does for that input_size (ResizeKeepRatio to floor(side / crop_pct), centre crop; an exact
    // resize stays exact). Everything else, the weights included, is shared with this model, which stays as it is.
    // The trained size gives a model equal to this one. An Error for a size that is no multiple of the patch size.
    // Thread-safe, as every const method.
    Result<std::shared_ptr<const Model>> withInputSize(int height, int width) const;

    // Runs the model on a normalised input [C, H, W] or [1, C, H, W]. H and W must be multiples of the patch
    // size. At the model's input size (config().imageHeight x imageWidth) the position table made at load is used;
    // another grid resamples the trained table for this run (bicubic, as timm).
    // A run whose estimated memory (estimateRunMemory: taps + working; the weights are already loaded) exceeds
    // the memory available is refused before anything is allocated, with both numbers in the message.
    Result<Trace> run(const Tensor& input, const RunOptions& options = {}) const;
    // Several inputs of one size in one forward ([B, C, H, W]): one Trace per input, equal to run() on each alone
    // up to float rounding (larger matrix products; docs/performance.md, Batching).
    Result<std::vector<Trace>> runBatch(const std::vector<Tensor>& inputs, const RunOptions& options = {}) const;

    struct Impl;

private:
    friend const Impl& implOf(const Model&);
    explicit Model(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

// What one forward pass needs in memory, estimated from the architecture before it starts (bytes, float32,
// batch 1). `taps` is what the RecordSpec keeps: attention maps depth x heads x N x N floats, each other tap
// N x D per recorded layer. `working` is the peak of the transient tensors of one block: the attention logits
// and their softmax (2 x heads x N x N; the quadratic kind's distance table adds one more), q, k, v, the block
// output and the MLP hidden layer. N = prefix tokens + (height / patch) x (width / patch).
struct RunMemory {
    int64_t weights = 0;
    int64_t taps = 0;
    int64_t working = 0;
    int64_t tokens = 0;
    int64_t total() const { return weights + taps + working; }
};
// For an input of imageHeight x imageWidth pixels (0: the size the model was trained for).
RunMemory estimateRunMemory(const ModelConfig& config, const RecordSpec& record, int64_t imageHeight = 0, int64_t imageWidth = 0);
// MemAvailable from /proc/meminfo in bytes; -1 where it cannot be read (then runs are not refused).
int64_t availableMemoryBytes();
// "1.5 GiB", "320 MiB": for messages.
std::string formatBytes(int64_t bytes);

// The folder holding the embedded models (resources/models), for `builtin:NAME`.
std::string builtinModelDir();
std::vector<std::string> builtinModelNames();
// The families attnscope runs exactly, one line each ("dinov2: ..."), for `attnscope-cli info --list-families`.
std::vector<std::string> supportedModelFamilies();

// Threads for CPU work: LibTorch's intra-op team (OpenMP) and OpenBLAS's alike, and the inter-op threads that run
// the inputs of a batch (Model::runBatch, AnalysisRun) as single-threaded forwards side by side. 0 = the defaults:
// LibTorch's intra-op count (which Model::load then also gives OpenBLAS) and one inter-op thread per CPU
// (OMP_NUM_THREADS, when set, limits those too). More than one intra-op thread wants OMP_WAIT_POLICY=PASSIVE in
// the environment before the process starts (docs/performance.md, Thread policy).
void setNumThreads(int threads);

// The counts in effect: LibTorch's intra-op team, and the inter-op threads a batch is spread over.
struct ThreadSetup {
    int intraOp = 1;
    int interOp = 1;
};
ThreadSetup threadSetup();

const char* version();

} // namespace attnscope
