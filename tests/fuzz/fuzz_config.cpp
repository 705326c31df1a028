// libFuzzer harness of the config parsers (engine/src/checkpoint/ConfigResolver.cpp): Hugging Face and timm config.json,
// preprocessor_config.json, attnscope model descriptions (docs/model-description.md) and safetensors
// __metadata__, resolved against a fixed tensor set, as Model::load does before it builds the network.
//
// Input: one selector byte (which tensor set), then up to four JSON texts separated by "\n%%\n":
//   config.json, preprocessor_config.json, model description, metadata (an object; values become strings).
// An empty part is an absent file. A part that is not valid JSON ends the input: the loader refuses such a
// file before resolving (readJson). The tensor sets are the golden fixtures' and the zoo's checkpoints, read
// once at start-up, so no torch op runs per input beyond the renaming of HF/torchvision names.
//
// Accepted outcomes: a ResolvedConfig that passes the checks below, LoadError, a nlohmann::json exception (a
// field of the wrong JSON type) or c10::Error (q/k/v renamed onto tensors that do not fuse): Model::load reports
// both as "<path>: <what>".
// Anything else escapes and is a crash, as is a memory error or UB under the sanitizers.
#include "FuzzSupport.h"
#include "checkpoint/CheckpointNaming.h"
#include "checkpoint/ConfigResolver.h"
#include "checkpoint/ConfigSources.h"
#include "checkpoint/SafeTensors.h"
#include "io/LoadError.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace {

using attnscope::fuzz::fail;
using nlohmann::json;

const std::vector<attnscope::TensorMap>& tensorSets()
{
    static const std::vector<attnscope::TensorMap> sets = [] {
        const std::string root = ATTNSCOPE_SOURCE_DIR;
        std::vector<attnscope::TensorMap> out;
        for (const char* file : {
                 "resources/models/fmnist-vit-d4/model.safetensors",
                 "resources/models/fmnist-bilateral-d4/model.safetensors",
                 "resources/models/fmnist-quadratic/model.safetensors",
                 "resources/models/conv3x3-as-attention/model.safetensors",
                 "tests/golden/fixtures/hf_vit_eps5/model.safetensors",
                 "tests/golden/fixtures/hf_clip_vision/model.safetensors",
                 "tests/golden/fixtures/hf_dinov2/model.safetensors",
                 "tests/golden/fixtures/timm_deit_distilled/model.safetensors",
                 "tests/golden/fixtures/timm_dinov2_reg/model.safetensors",
                 "tests/golden/fixtures/timm_gray/model.safetensors",
                 "tests/golden/fixtures/tv_torchvision/model.safetensors",
                 "tests/golden/fixtures/timm_clip_quickgelu/model.safetensors",
             })
            out.push_back(attnscope::readSafetensors(root + "/" + file).tensors);
        return out;
    }();
    return sets;
}

const std::vector<std::pair<attnscope::TensorMap, attnscope::NamingHints>>& canonicalSets()
{
    static const auto sets = [] {
        std::vector<std::pair<attnscope::TensorMap, attnscope::NamingHints>> out;
        for (const auto& set : tensorSets()) {
            attnscope::NamingHints hints;
            auto tensors = attnscope::toCanonicalNames(set, hints, "model.safetensors");
            out.emplace_back(std::move(tensors), hints);
        }
        return out;
    }();
    return sets;
}

// The parts of the input; false when one is not JSON (the loader stops there).
bool split(const uint8_t* data, size_t size, std::vector<std::optional<json>>& parts)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    const std::string sep = "\n%%\n";
    size_t start = 0;
    while (parts.size() < 4) {
        const size_t end = std::min(text.find(sep, start), text.size());
        const std::string part = text.substr(start, end - start);
        if (part.empty()) {
            parts.emplace_back();
        } else {
            json j = json::parse(part, nullptr, false);
            if (j.is_discarded())
                return false;
            parts.emplace_back(std::move(j));
        }
        if (end == text.size())
            break;
        start = end + sep.size();
    }
    parts.resize(4);
    return true;
}

void check(const attnscope::ResolvedConfig& r)
{
    const auto& c = r.model;
    if (c.numHeads <= 0 || c.attnWidth() % c.numHeads != 0)
        fail("heads " + std::to_string(c.numHeads) + " do not divide width " + std::to_string(c.attnWidth()));
    if (c.patchSize <= 0 || c.channels <= 0)
        fail("patch " + std::to_string(c.patchSize) + " of " + std::to_string(c.channels) + " channels accepted");
    if (c.imageHeight <= 0 || c.imageWidth <= 0)
        fail("image size " + std::to_string(c.imageHeight) + "x" + std::to_string(c.imageWidth) + " accepted");
    if (c.posEmbed && (c.imageHeight % c.patchSize || c.imageWidth % c.patchSize))
        fail("image size not a multiple of the patch size with a position table");
    if (!(c.layerNormEps >= 0))
        fail("negative layer_norm_eps accepted");
    if (!std::isfinite(c.layerNormEps) || !std::isfinite(c.neutrenoLambda) || !std::isfinite(c.boostT))
        fail("non-finite model parameter accepted");
    const auto& p = r.preprocess;
    if (int(p.mean.size()) != c.channels || int(p.std.size()) != c.channels)
        fail("mean/std do not fit the channels");
    for (double s : p.std)
        if (!(s > 0) || !std::isfinite(s))
            fail("std " + std::to_string(s) + " accepted");
    for (double m : p.mean)
        if (!std::isfinite(m))
            fail("non-finite mean accepted");
    if (!std::isfinite(p.rescale))
        fail("non-finite rescale accepted");
    if (p.resize == attnscope::ResizeMode::ShortestEdge && p.resizeShortest <= 0)
        fail("shortest edge " + std::to_string(p.resizeShortest) + " accepted");
    if (p.resize == attnscope::ResizeMode::Exact && (p.resizeHeight <= 0 || p.resizeWidth <= 0))
        fail("resize " + std::to_string(p.resizeHeight) + "x" + std::to_string(p.resizeWidth) + " accepted");
    if (p.centerCrop && (p.cropHeight <= 0 || p.cropWidth <= 0))
        fail("crop " + std::to_string(p.cropHeight) + "x" + std::to_string(p.cropWidth) + " accepted");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const auto& sets = tensorSets();
    canonicalSets();
    if (size < 1)
        return 0;
    std::vector<std::optional<json>> parts;
    if (!split(data + 1, size - 1, parts))
        return 0;
    attnscope::ConfigSources src;
    // As locateModelFiles: config.json counts only as a HF or timm config, a description must be an object.
    if (parts[0] && parts[0]->is_object() && (parts[0]->contains("model_type") || parts[0]->contains("architecture"))) {
        src.config = parts[0];
        src.configPath = "config.json";
    }
    if (parts[1]) {
        src.preprocessor = parts[1];
        src.preprocessorPath = "preprocessor_config.json";
    }
    if (parts[2]) {
        if (!parts[2]->is_object())
            return 0;
        src.description = parts[2];
        src.descriptionPath = "attnscope.json";
    }
    if (parts[3] && parts[3]->is_object())
        for (const auto& [k, v] : parts[3]->items())
            src.metadata[k] = v.is_string() ? v.get<std::string>() : v.dump();
    try {
        attnscope::checkNamedFamily(src); // as Model::load, before any tensor is read
        const size_t set = data[0] % sets.size();
        if (src.description) {
            attnscope::TensorMap tensors = attnscope::applyDescriptionRenames(sets[set], *src.description, src.descriptionPath);
            attnscope::NamingHints hints;
            tensors = attnscope::toCanonicalNames(std::move(tensors), hints, "model.safetensors");
            check(attnscope::resolveConfig(tensors, hints, src, "model.safetensors"));
        } else {
            // Without renames the canonical names depend on the set alone: computed once (its regexes are slow).
            const auto& [tensors, hints] = canonicalSets()[set];
            check(attnscope::resolveConfig(tensors, hints, src, "model.safetensors"));
        }
    } catch (const attnscope::LoadError&) {
    } catch (const nlohmann::json::exception&) {
    } catch (const c10::Error&) { // at::cat of q/k/v renamed onto mismatched shapes; Model::load reports it
    }
    return 0;
}
