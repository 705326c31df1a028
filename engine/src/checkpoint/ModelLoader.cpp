#include "checkpoint/ModelLoader.h"

#include "checkpoint/TorchCheckpoint.h"
#include "io/LoadError.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>

namespace attnscope {

namespace fs = std::filesystem;

namespace {

nlohmann::json readJson(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
        throw LoadError(path + ": cannot open");
    try {
        return nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw LoadError(path + ": invalid JSON (" + std::string(e.what()) + ")");
    }
}

std::string findWeightsIn(const fs::path& dir)
{
    for (const char* name : { "model.safetensors", "pytorch_model.bin", "model.pt", "model.pth" })
        if (fs::is_regular_file(dir / name))
            return (dir / name).string();
    std::vector<std::string> candidates;
    for (const auto& e : fs::directory_iterator(dir)) {
        const auto ext = e.path().extension().string();
        if (e.is_regular_file() && (ext == ".safetensors" || ext == ".pt" || ext == ".pth"))
            candidates.push_back(e.path().string());
    }
    std::sort(candidates.begin(), candidates.end());
    if (candidates.empty())
        throw LoadError(dir.string() + ": no model in this folder (model.safetensors, *.safetensors, *.pt or *.pth)");
    // Prefer safetensors: it cannot hold code.
    for (const auto& c : candidates)
        if (fs::path(c).extension() == ".safetensors")
            return c;
    return candidates.front();
}

// By structure, not by a first byte: a safetensors file is an 8-byte little-endian header length followed by '{', the
// header within the file. (Its first byte is the length's low byte: 0x80, a pickle's PROTO opcode, for one valid file in
// 256.) A zip (torch.save's format) starts with "PK", a legacy torch.save with a pickle's 0x80. A file of neither shape
// goes to the reader its extension names, which says what in it is wrong.
std::string sniffFormat(const std::string& path)
{
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in)
        throw LoadError(path + ": cannot open");
    const auto size = uint64_t(std::max<std::streamoff>(in.tellg(), 0));
    in.seekg(0);
    unsigned char head[9] = {};
    in.read(reinterpret_cast<char*>(head), 9);
    const auto n = in.gcount();
    uint64_t headerLength = 0;
    for (int i = 7; i >= 0; --i)
        headerLength = (headerLength << 8) | head[i];
    if (n == 9 && head[8] == '{' && headerLength >= 2 && headerLength <= size - 8)
        return "safetensors";
    if (n >= 4 && head[0] == 'P' && head[1] == 'K')
        return "pytorch";
    if (n >= 2 && head[0] == 0x80 && fs::path(path).extension() != ".safetensors")
        return "pytorch"; // a bare pickle: the legacy torch.save format, which the reader names in its error
    const auto ext = fs::path(path).extension().string();
    return ext == ".pt" || ext == ".pth" || ext == ".bin" || ext == ".ckpt" ? "pytorch" : "safetensors";
}

} // namespace

ModelFiles locateModelFiles(const std::string& path, const std::string& givenDescriptionPath)
{
    if (!fs::exists(path))
        throw LoadError(path + ": no such file or folder");

    ModelFiles files;
    fs::path dir;
    std::string descriptionPath = givenDescriptionPath;
    if (fs::is_directory(path)) {
        dir = path;
        files.weights = findWeightsIn(dir);
    } else if (fs::path(path).extension() == ".json") {
        descriptionPath = path; // the description names its checkpoint
        dir = fs::path(path).parent_path();
    } else {
        files.weights = path;
        dir = fs::path(path).parent_path();
    }
    if (dir.empty())
        dir = ".";
    if (descriptionPath.empty() && fs::is_regular_file(dir / "attnscope.json"))
        descriptionPath = (dir / "attnscope.json").string();
    if (!descriptionPath.empty()) {
        files.sources.description = readJson(descriptionPath);
        files.sources.descriptionPath = descriptionPath;
        const auto& d = *files.sources.description;
        if (!d.is_object())
            throw LoadError(descriptionPath + ": a model description must be a JSON object");
        checkDescriptionKeys(d, descriptionPath);
        if (files.weights.empty()) {
            if (!d.contains("weights") || !d["weights"].is_string())
                throw LoadError(descriptionPath + ": the description names no \"weights\" file", Error::Missing::Weights);
            fs::path w = d["weights"].get<std::string>();
            files.weights = (w.is_absolute() ? w : fs::path(descriptionPath).parent_path() / w).lexically_normal().string();
            if (!fs::is_regular_file(files.weights))
                throw LoadError(descriptionPath + ": weights file " + files.weights + " does not exist");
        }
    }
    const fs::path weightsDir = fs::path(files.weights).parent_path().empty() ? fs::path(".") : fs::path(files.weights).parent_path();
    // config.json is read only when it is a Hugging Face or timm config; a description makes any other one moot.
    // Any other one is kept to list its keys as ignored (ModelInfo::ignoredConfigKeys).
    if (fs::is_regular_file(weightsDir / "config.json")) {
        auto cfg = readJson((weightsDir / "config.json").string());
        if (cfg.is_object() && (cfg.contains("model_type") || cfg.contains("architecture"))) {
            files.sources.config = std::move(cfg);
            files.sources.configPath = (weightsDir / "config.json").string();
        } else if (cfg.is_object()) {
            files.sources.unreadConfig = std::move(cfg);
        }
    }
    if (fs::is_regular_file(weightsDir / "preprocessor_config.json")) {
        files.sources.preprocessorPath = (weightsDir / "preprocessor_config.json").string();
        files.sources.preprocessor = readJson(files.sources.preprocessorPath);
    }
    files.format = sniffFormat(files.weights);
    return files;
}

TensorMap readCheckpoint(ModelFiles& files)
{
    if (files.format == "pytorch") {
        std::string key;
        if (files.sources.description && files.sources.description->contains("weights_key")) {
            const auto& k = (*files.sources.description)["weights_key"];
            if (!k.is_string())
                throw LoadError(files.sources.descriptionPath + ": weights_key must be a string");
            key = k.get<std::string>();
        }
        return readTorchCheckpoint(files.weights, key, &files.taken);
    }
    // A safetensors file is one flat map of tensors: there is no dict entry to choose.
    if (files.sources.description && files.sources.description->contains("weights_key"))
        throw LoadError(files.sources.descriptionPath + ": weights_key chooses an entry of a torch.save dict; "
                        + fs::path(files.weights).filename().string() + " is a safetensors file, one flat map of tensors");
    auto st = readSafetensors(files.weights);
    files.sources.metadata = std::move(st.metadata);
    return std::move(st.tensors);
}

void checkTensorsAgainst(const std::map<std::string, std::vector<int64_t>>& expected, const TensorMap& tensors,
                         const std::string& path)
{
    const auto shapeString = [](const std::vector<int64_t>& s) {
        std::string r = "[";
        for (size_t i = 0; i < s.size(); ++i)
            r += (i ? ", " : "") + std::to_string(s[i]);
        return r + "]";
    };
    std::vector<std::string> problems, missing, unexpected;
    for (const auto& [name, shape] : expected) {
        auto it = tensors.find(name);
        if (it == tensors.end())
            missing.push_back(name);
        else if (it->second.sizes().vec() != shape)
            problems.push_back(name + ": shape " + shapeString(it->second.sizes().vec()) + ", expected " + shapeString(shape));
    }
    for (const auto& [name, t] : tensors)
        if (!expected.count(name))
            unexpected.push_back(name);
    const auto join = [](const std::vector<std::string>& v) {
        std::string s;
        for (const auto& x : v)
            s += (s.empty() ? "" : ", ") + x;
        return s;
    };
    std::string message;
    if (!problems.empty())
        message += join(problems);
    if (!missing.empty())
        message += (message.empty() ? "" : "; ") + std::string("missing tensors: ") + join(missing);
    if (!unexpected.empty())
        message += (message.empty() ? "" : "; ") + std::string("unexpected tensors: ") + join(unexpected);
    if (!message.empty())
        throw LoadError(path + ": " + message);
}

bool allFinite(const at::Tensor& t)
{
    if (t.scalar_type() != at::kFloat || !t.device().is_cpu() || !t.is_contiguous())
        return at::isfinite(t).all().item<bool>();
    // An IEEE float is NaN or Inf exactly when its exponent bits are all ones.
    const auto* bits = static_cast<const uint32_t*>(t.data_ptr());
    std::atomic<bool> finite { true };
    at::parallel_for(0, t.numel(), int64_t(1) << 18, [&](int64_t begin, int64_t end) {
        uint32_t bad = 0;
        for (int64_t i = begin; i < end; ++i)
            bad |= uint32_t((bits[i] & 0x7f800000u) == 0x7f800000u);
        if (bad)
            finite = false;
    });
    return finite;
}

} // namespace attnscope
