#pragma once

// The sources resolveConfig reads after the tensors (ConfigResolver.h), one reader each, in its order of precedence:
// safetensors metadata, config.json (Hugging Face or timm), the variants of attnscope's own models, a model
// description. Each checks what its file says against what the tensors said (ResolvedConfig::model) and states what
// the tensors cannot tell; a later source overrides an earlier one.

#include "checkpoint/ConfigResolver.h"

#include <optional>
#include <utility>

namespace attnscope {

struct StatedConfig {
    std::optional<int> heads;
    std::optional<std::pair<int, int>> imageSize;
    std::optional<bool> posHasPrefix; // the position table has rows for the prefix tokens
    std::optional<PreprocessConfig> preprocess;
    // The position scheme a description states ("learned" or "none"); a scheme with no tensor is never inferred from a
    // tensor's absence (ConfigResolver.cpp, settlePosition).
    std::optional<std::string> position;
    std::string positionSource; // what stated it: "the model description", "vit-pytorch's SimpleViT layout"
    // A linear patch embedding's patch side and channels (its weight is [D, P*P*C]: the tensors cannot tell them apart).
    std::optional<int> patchSize;
    std::optional<int> channels;
    bool meanOverAllTokens = false; // "mean" pooling averages every token, CLS included (vit-pytorch)
    // A gated MLP (SwiGLU) is stated (timm's EVA-02 and DINOv3 entries): the tensors show the gate, not its activation.
    bool gatedMlp = false;
};

// The family a config.json or a description names, checked before any tensor is read (docs/models.md, "Families"): a
// family attnscope does not run is refused naming what it lacks (Families.h), whatever the tensors look like.
void checkNamedFamily(const ConfigSources& src);
// safetensors __metadata__ (e.g. {"num_heads": "4", "image_size": "32"}).
void readMetadata(const std::map<std::string, std::string>& metadata, const std::string& weightsPath, StatedConfig& stated,
                  ResolvedConfig& out);
// config.json: Hugging Face (model_type) or timm (architecture); the keys nothing reads are listed as ignored, and a
// config.json of neither kind is ignored whole.
void readConfigJson(const ConfigSources& src, const TensorMap& tensors, StatedConfig& stated, ResolvedConfig& out);
// NeuTRENO's lambda and Boost's t: config.json's "attnscope" section, or a description's architecture.
void readVariants(const nlohmann::json& section, const std::string& file, ModelConfig& c);
// attnscope's model description (docs/model-description.md): overrides everything.
void readDescription(const nlohmann::json& description, const std::string& path, StatedConfig& stated, ResolvedConfig& out);

} // namespace attnscope
