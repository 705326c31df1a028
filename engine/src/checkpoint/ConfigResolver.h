#pragma once

#include "checkpoint/CheckpointNaming.h"
#include "attnscope/ModelConfig.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attnscope {

// The files that may sit beside a checkpoint, already parsed (each optional).
struct ConfigSources {
    std::optional<nlohmann::json> config;       // config.json: Hugging Face (model_type) or timm (architecture)
    std::string configPath;
    std::optional<nlohmann::json> unreadConfig; // a config.json of neither kind (a project's own): none of it is read
    std::optional<nlohmann::json> preprocessor; // preprocessor_config.json (Hugging Face)
    std::string preprocessorPath;
    std::optional<nlohmann::json> description;  // attnscope model description (docs/model-description.md)
    std::string descriptionPath;
    std::map<std::string, std::string> metadata; // safetensors __metadata__
};

struct ResolvedConfig {
    ModelConfig model;
    PreprocessConfig preprocess;
    std::vector<std::string> labels;
    std::string source; // e.g. "config.json (huggingface vit)", "inferred from tensor shapes"
    std::string family; // vit | deit | dinov2 | clip | ... as a config names it; empty: from the tensor names
    std::string recognition; // what named the family and how (ModelInfo::recognition); empty: the tensor names
    std::vector<std::string> inferred; // "what value: how" for what no file states directly (ModelInfo::inferred)
    std::vector<std::string> guesses; // values nothing recorded, taken from a convention (ModelInfo::guesses)
    std::map<std::string, std::vector<std::string>> ignoredConfigKeys; // ModelInfo::ignoredConfigKeys
};

// Decides the architecture from the tensors (canonical names), the naming hints and whatever config files exist.
// Values a config states are checked against the tensors: a contradiction is a LoadError naming both.
// Precedence: description > config.json > safetensors metadata > tensor shapes > defaults. The family a config names is
// checked before, by checkNamedFamily (ConfigSources.h), as Model::load does before it reads a tensor.
ResolvedConfig resolveConfig(const TensorMap& tensors, const NamingHints& hints, const ConfigSources& sources,
                             const std::string& weightsPath);

// The preprocessing of a timm pretrained_cfg and of a Hugging Face preprocessor_config.json (docs/models.md,
// "Preprocessing"); exposed for tests.
// timm's defaults for a model of this input size when no file gives its preprocessing.
PreprocessConfig defaultPreprocess(int height, int width);
// Fits the mean and std to the model's channels (one value for a grey model), or throws LoadError naming `path`.
void fitChannels(PreprocessConfig& p, int channels, const std::string& path);
PreprocessConfig preprocessFromTimm(const nlohmann::json& pretrainedCfg, int channels);
PreprocessConfig preprocessFromHuggingFace(const nlohmann::json& pre, const std::string& path);

// Applies the description's rename/drop rules (regular expressions onto the engine's names). `names`, when given,
// receives each tensor's name in the file, for errors that name what no rule renamed (unusedNamesError).
TensorMap applyDescriptionRenames(TensorMap tensors, const nlohmann::json& description, const std::string& path,
                                  DescribedNames* names = nullptr);
// Throws LoadError for a key a model description does not have (docs/model-description.md), naming it and the closest
// valid key: a misspelt "num_head" must not leave the head count to a guess.
void checkDescriptionKeys(const nlohmann::json& description, const std::string& path);

} // namespace attnscope
