#pragma once

#include "vit/VisionTransformer.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace attnscope {

// Writes a model folder attnscope (and timm) can load: model.safetensors with the module's parameter names
// (timm naming), a timm-style config.json (architecture, model_args, pretrained_cfg, label_names) with an
// "attnscope" section for the variants, and a Hugging Face preprocessor_config.json saying the same
// preprocessing. Every file goes through a temporary name. Throws LoadError on I/O errors.
void writeModelFolder(const std::string& dir, VisionTransformerImpl& net, const PreprocessConfig& preprocess,
                      const std::vector<std::string>& labels, const nlohmann::json& attnscopeSection);

} // namespace attnscope
