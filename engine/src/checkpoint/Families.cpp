#include "checkpoint/Families.h"

#include "io/LoadError.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <regex>

namespace attnscope {

namespace {

constexpr TimmArchitecture kTimm[] = {
#include "checkpoint/TimmRegistry.inc"
};

// What the families attnscope knows and does not run lack, by the names Hugging Face's model_type and a description's
// family give them.
const std::map<std::string, std::string>& unsupportedFamilies()
{
    static const std::map<std::string, std::string> table {
        { "eva", "EVA blocks (query and value biases without a key bias)" },
        { "eva02", "rotary position embedding (RoPE) and the SwiGLU MLP" },
        { "siglip2", "the attention-pool head (\"map\") and variable-resolution patches" },
        { "siglip2_vision_model", "the attention-pool head (\"map\") and variable-resolution patches" },
        { "vit_hybrid", "a convolutional (ResNet) stem before the transformer" },
        { "vit_mae", "random patch masking inside its forward (MAE pre-training)" },
        { "vitdet", "windowed attention with relative positions (ViTDet)" },
        { "dinat", "neighbourhood attention" },
        { "nat", "neighbourhood attention" },
    };
    return table;
}

// Hugging Face's model types attnscope runs and the classes of each whose weights are the plain encoder (a head at most).
const std::map<std::string, std::string>& huggingFaceClasses()
{
    static const std::map<std::string, std::string> table {
        { "vit", "ViT" }, { "deit", "DeiT" }, { "dinov2", "Dinov2" }, { "dinov2_with_registers", "Dinov2WithRegisters" },
        { "clip", "CLIP" }, { "clip_vision_model", "CLIP" }, { "beit", "Beit" }, { "data2vec-vision", "Data2VecVision" },
        { "siglip", "Siglip" }, { "siglip_vision_model", "Siglip" }, { "dinov3_vit", "DINOv3ViT" },
        { "swin", "Swin" }, { "swinv2", "Swinv2" },
    };
    return table;
}

} // namespace

const char* timmRegistryVersion() { return "1.0.31"; }

const TimmArchitecture* findTimmArchitecture(std::string_view name)
{
    name = name.substr(0, name.find('.')); // "vit_small_patch16_224.augreg_in21k": the tag names weights, not a model
    const auto* end = std::end(kTimm);
    const auto* it = std::lower_bound(std::begin(kTimm), end, name,
                                      [](const TimmArchitecture& a, std::string_view n) { return std::string_view(a.name) < n; });
    return it != end && it->name == name ? it : nullptr;
}

const char* unsupportedByName(std::string_view name)
{
    static const std::pair<const char*, const char*> words[] = {
        { "dinov3", "rotary position embedding (RoPE)" },
        { "rope", "rotary position embedding (RoPE)" },
        { "eva", "EVA blocks (rotary position embedding, SwiGLU MLP, q/v biases)" },
        { "relpos", "relative position embedding" },
        { "swin", "hierarchical windowed attention (Swin) outside timm's registry" },
        { "samvit", "windowed attention with relative positions (SAM's encoder)" },
        { "naflex", "NaFlex variable-resolution patches" },
    };
    for (const auto& [word, reason] : words)
        if (name.find(word) != std::string_view::npos)
            return reason;
    return nullptr;
}

void checkHuggingFaceArchitecture(const std::string& modelType, const std::vector<std::string>& classes, const std::string& file)
{
    if (auto it = unsupportedFamilies().find(modelType); it != unsupportedFamilies().end())
        throw LoadError(file + ": model_type \"" + modelType + "\": attnscope does not run " + it->second);
    const auto& runs = huggingFaceClasses();
    const auto type = runs.find(modelType);
    if (type == runs.end()) {
        std::string names;
        for (const auto& [t, prefix] : runs)
            names += (names.empty() ? "" : ", ") + t;
        throw LoadError(file + ": model_type \"" + modelType + "\" is not a vision transformer attnscope runs (" + names + ")");
    }
    // The type's encoder, its classifiers and CLIP's vision tower; a class of another family saved under this type
    // (a hybrid, a masked pre-training model) is not run as this one.
    const std::regex plain("^" + type->second + "(Model|VisionModel|VisionModelWithProjection|ForImageClassification"
                           "|ForImageClassificationWithTeacher|ForMaskedImageModeling|Backbone)$");
    for (const auto& c : classes) {
        // transformers' SiglipForImageClassification classifies the mean of the patch tokens but the first, not the
        // head's pooled output: a classifier of its own that attnscope does not run.
        if (c == "SiglipForImageClassification")
            throw LoadError(file + ": architectures names SiglipForImageClassification, whose classifier reads the mean "
                                   "of the patch tokens after the first; attnscope runs SigLIP's vision tower "
                                   "(SiglipVisionModel, SiglipModel)");
        if (!std::regex_match(c, plain))
            throw LoadError(file + ": architectures names " + c + ", which is not a " + modelType
                            + " encoder or classifier attnscope runs");
    }
}

void checkDescribedFamily(const std::string& family, const std::string& file)
{
    static const std::vector<std::string> runs { "vit", "deit", "deit3", "dino", "dinov2", "mae", "clip", "beit", "beitv2" };
    if (family == "dinov3")
        throw LoadError(file + ": family \"dinov3\": its rotary position embedding has no tensor; open timm's DINOv3 hub "
                               "folder (its config.json names the architecture) rather than a description");
    if (family == "swin" || family == "swinv2")
        throw LoadError(file + ": family \"" + family + "\": a Swin is read from timm's or Hugging Face's folder (its "
                               "config.json), not through a model description");
    if (std::find(runs.begin(), runs.end(), family) != runs.end())
        return;
    if (auto it = unsupportedFamilies().find(family); it != unsupportedFamilies().end())
        throw LoadError(file + ": family \"" + family + "\": attnscope does not run " + it->second);
    std::string names;
    for (const auto& r : runs)
        names += (names.empty() ? "" : ", ") + r;
    throw LoadError(file + ": family \"" + family + "\" is not one attnscope knows (" + names + ")");
}

std::vector<std::string> supportedFamilies()
{
    int timmRuns = 0;
    for (const auto& a : kTimm)
        timmRuns += *a.unsupported == '\0';
    return {
        "timm: " + std::to_string(timmRuns) + " of timm " + timmRegistryVersion() + "'s "
            + std::to_string(std::size(kTimm)) + " vision-transformer architectures (the families below)",
        "vit: timm vit_* (the plain VisionTransformer), Hugging Face ViT, torchvision vit_*, attnscope's own",
        "deit, deit3: timm deit_*/deit3_* (distilled heads, layer scale), Hugging Face DeiT",
        "dino, dinov2: timm vit_*_dinov2 and registers (layer scale), Hugging Face Dinov2 (with registers), "
        "the original DINOv2 repository",
        "dinov3: timm vit_*_patch16_dinov3 and _qkvb, vit_*_lingbot, Hugging Face DINOv3ViT (DINOv3's rotary embedding, "
        "registers, layer scale, SwiGLU in the plus and 7b sizes)",
        "eva02: timm eva02_* but enormous (an axial rotary embedding beside the learned table, SwiGLU MLPs, q/k/v apart)",
        "rope-vit: timm vit_*_patch16_rope_* (RoPE-Axial, RoPE-Mixed, with or without a learned table) and "
        "vit_*_rope_reg*_gap_256",
        "mae: timm vit_* MAE checkpoints (plain ViT encoders)",
        "clip: timm vit_*_clip_*, Hugging Face CLIP vision towers, OpenAI CLIP (visual.*)",
        "siglip: timm vit_*_siglip_* (the attention-pool head, its map shown as the last layer \"pool\"), "
        "vit_*_siglip_gap_* (mean-pooled), Hugging Face SiglipVisionModel and SiglipModel's vision tower",
        "beit, beitv2: timm beit_*/beitv2_*, Hugging Face Beit and Data2VecVision (a relative position bias in every "
        "layer, q and v biases, layer scale, mean pooling with fc_norm)",
        "swin, swinv2: timm swin_* and swinv2_* (not swinv2_cr_*), Hugging Face Swin and Swinv2 (hierarchical windowed "
        "attention: stages, shifted windows, patch merging; at the trained input size): loaded and run exactly, shown by "
        "info; the analyses, the window and Python do not take them yet",
        "vit-pytorch: lucidrains' ViT and SimpleViT, by their tensor names (a description gives heads and image size)",
        "described: any ViT of these blocks in another layout, through a model description (docs/model-description.md)",
    };
}

} // namespace attnscope
