#pragma once

// Reading the fields of a config file (config.json, preprocessor_config.json, a model description), each checked:
// a bad value is a LoadError naming the file, the key and the value. Shared by ConfigResolver.cpp and
// ConfigSources.cpp.

#include "attnscope/ModelConfig.h"

#include <ATen/Tensor.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attnscope::fields {

using nlohmann::json;

// Image, resize and crop sides: a corrupt config must not make the preprocessing allocate without bound.
constexpr int kMaxSide = 16384;

[[noreturn]] void fail(const std::string& file, const std::string& problem); // throws LoadError("file: problem")
std::string shapeString(const at::Tensor& t);                                // "[384, 3, 16, 16]"
std::string shortNumber(double v);                                           // "1e-05", "100"
// An integer of int's range (nlohmann's get<int>() of a float out of range is undefined, of a large integer wraps).
int intField(const json& v, const std::string& path, const std::string& what);
// An image, resize or crop side: 1 to kMaxSide.
int sideField(const json& v, const std::string& path, const std::string& what);
std::pair<int, int> sizePair(const json& v, const std::string& path, const char* what); // an int or [h, w]
std::vector<double> doubles(const json& v, const std::string& path, const char* what); // a non-empty list of numbers
Activation activationFromName(const std::string& name, const std::string& path);
Interpolation interpolationFromName(const std::string& name); // PIL's and timm's names
// Appends the keys of `object` that are not in `read` to `out`, after `prefix` ("pretrained_cfg."): the keys of a
// foreign config that attnscope ignores (ModelInfo::ignoredConfigKeys).
// Hugging Face's id2label ({"0": "cat", ...}) as class names in index order, up to the first index missing; empty when
// there is none.
std::vector<std::string> labelsFromId2Label(const json& config);
void listUnread(const json& object, const std::vector<std::string>& read, const std::string& prefix, std::vector<std::string>& out);

} // namespace attnscope::fields
