#include "ConfigResolver.h"

#include "LoadError.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

namespace attnscope {

namespace {

using nlohmann::json;

bool has(const TensorMap& t, const std::string& key) { return t.count(key) != 0; }

std::string shapeString(const at::Tensor& t)
{
    std::string s = "[";
    for (int64_t i = 0; i < t.dim(); ++i)
        s += (i ? ", " : "") + std::to_string(t.size(i));
    return s + "]";
}

std::optional<int> perfectSquareRoot(int64_t n)
{
    if (n <= 0)
        return std::nullopt;
    const auto r = int64_t(std::llround(std::sqrt(double(n))));
    return r * r == n ? std::optional<int>(int(r)) : std::nullopt;
}

Activation activationFromName(const std::string& name, const std::string& path)
{
    if (name == "gelu" || name == "gelu_python" || name == "gelu_exact")
        return Activation::Gelu;
    if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast" || name == "gelu_tanh")
        return Activation::GeluTanh;
    if (name == "quick_gelu" || name == "quickgelu")
        return Activation::QuickGelu;
    if (name == "relu")
        return Activation::Relu;
    if (name == "silu" || name == "swish")
        return Activation::Silu;
    throw LoadError(path + ": unknown activation \"" + name + "\" (gelu, gelu_tanh, quick_gelu, relu, silu)");
}

// An integer field. nlohmann's get<int>() of a float out of int's range is undefined behaviour, and of a large
// integer silently wraps (found by tests/fuzz/fuzz_config): the range is checked first.
int intField(const json& v, const std::string& path, const std::string& what)
{
    if (v.is_number()) {
        const double d = v.get<double>();
        if (d >= double(std::numeric_limits<int>::min()) && d <= double(std::numeric_limits<int>::max()))
            return v.is_number_float() ? int(d) : int(v.get<int64_t>());
    }
    throw LoadError(path + ": " + what + " " + v.dump() + " is not an integer of a plausible size");
}

// Image, resize and crop sides: a corrupt config must not make the preprocessing allocate without bound.
constexpr int kMaxSide = 16384;

int sideField(const json& v, const std::string& path, const std::string& what)
{
    const int side = intField(v, path, what);
    if (side < 1 || side > kMaxSide)
        throw LoadError(path + ": " + what + " " + v.dump() + " is not a size from 1 to " + std::to_string(kMaxSide));
    return side;
}

// An int or [h, w] image size.
std::pair<int, int> sizePair(const json& v, const std::string& path, const char* what)
{
    if (v.is_number_integer())
        return { sideField(v, path, what), sideField(v, path, what) };
    if (v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer())
        return { sideField(v[0], path, what), sideField(v[1], path, what) };
    throw LoadError(path + ": " + what + " " + v.dump() + " is neither an integer nor [height, width]");
}

Interpolation interpolationFromName(const std::string& name)
{
    if (name == "nearest")
        return Interpolation::Nearest;
    if (name == "bilinear" || name == "linear" || name == "box" || name == "hamming")
        return Interpolation::Bilinear;
    return Interpolation::Bicubic; // bicubic, and lanczos/random, which bicubic approximates best
}

std::vector<double> doubles(const json& v, const std::string& path, const char* what)
{
    if (!v.is_array() || v.empty())
        throw LoadError(path + ": " + what + " must be a list of numbers");
    std::vector<double> out;
    for (const auto& x : v) {
        if (!x.is_number())
            throw LoadError(path + ": " + what + " must be a list of numbers");
        out.push_back(x.get<double>());
    }
    return out;
}

// Mean/std lists fit the model's channel count: one value per channel, a single value broadcast.
void fitChannels(PreprocessConfig& p, int channels, const std::string& path)
{
    for (auto* v : { &p.mean, &p.std }) {
        if (int(v->size()) == channels)
            continue;
        if (v->size() == 1)
            v->assign(size_t(channels), v->front());
        else if (channels == 1) // a grey model with RGB statistics: the luma-weighted mean is the closest
            *v = { 0.299 * (*v)[0] + 0.587 * (*v)[1] + 0.114 * (*v)[2] };
        else
            throw LoadError(path + ": preprocessing mean/std have " + std::to_string(v->size()) + " values for "
                            + std::to_string(channels) + " channels");
    }
    for (double s : p.std)
        if (!(s > 0))
            throw LoadError(path + ": preprocessing std must be positive");
}

PreprocessConfig defaultPreprocess(int height, int width)
{
    // DESIGN.md: absent any config, resize the shortest edge to image_size / 0.875, bicubic, centre crop,
    // ImageNet mean/std (timm's defaults).
    PreprocessConfig p;
    p.resize = ResizeMode::ShortestEdge;
    p.resizeShortest = int(std::floor(std::min(height, width) / 0.875));
    p.cropPct = 0.875;
    p.cropHeight = height;
    p.cropWidth = width;
    p.centerCrop = true;
    p.interpolation = Interpolation::Bicubic;
    p.source = "default (no preprocessing config)";
    return p; // resolveConfig fits mean/std to the channel count for every source
}

// timm's model-registry facts that tensors cannot tell: heads per size name (NAMING.md 4.4, 9).
struct TimmSize {
    const char* word;
    int width;
    int heads;
};
constexpr TimmSize kTimmSizes[] = { { "tiny", 192, 3 },  { "small", 384, 6 },  { "base", 768, 12 },
                                    { "large", 1024, 16 }, { "huge", 1280, 16 }, { "giant", 1408, 16 } };

// Appends the keys of `object` that are not in `read` to `out`, after `prefix` ("pretrained_cfg."): the keys of a
// foreign config that attnscope ignores (ModelInfo::ignoredConfigKeys).
void listUnread(const json& object, const std::vector<std::string>& read, const std::string& prefix,
                std::vector<std::string>& out)
{
    if (!object.is_object())
        return;
    for (const auto& [key, value] : object.items())
        if (std::find(read.begin(), read.end(), key) == read.end())
            out.push_back(prefix + key);
}

} // namespace

PreprocessConfig preprocessFromTimm(const json& cfg, int channels)
{
    const std::string path = "pretrained_cfg";
    PreprocessConfig p;
    int h = 224, w = 224;
    if (cfg.contains("input_size")) {
        const auto& s = cfg["input_size"];
        if (!s.is_array() || s.size() != 3)
            throw LoadError("pretrained_cfg.input_size must be [C, H, W]");
        h = sideField(s[1], path, "input_size");
        w = sideField(s[2], path, "input_size");
    }
    const double cropPct = cfg.value("crop_pct", 0.875);
    // floor(size / crop_pct) must be a size too: crop_pct 0 made it infinite, and its int conversion undefined.
    if (!(cropPct > 0) || std::floor(std::min(h, w) / cropPct) < 1 || std::floor(std::max(h, w) / cropPct) > kMaxSide)
        throw LoadError(path + ": crop_pct " + std::to_string(cropPct) + " gives no plausible resize of " + std::to_string(h)
                        + "x" + std::to_string(w));
    const std::string mode = cfg.value("crop_mode", "center");
    // timm: scale = floor(size / crop_pct); centre mode resizes the shorter side, squash both sides.
    const int scaleH = int(std::floor(h / cropPct));
    const int scaleW = int(std::floor(w / cropPct));
    if (mode == "squash") {
        p.resize = ResizeMode::Exact;
        p.resizeHeight = scaleH;
        p.resizeWidth = scaleW;
    } else {
        p.resize = ResizeMode::ShortestEdge;
        p.resizeShortest = h == w ? scaleH : std::min(scaleH, scaleW);
    }
    p.centerCrop = true;
    p.cropHeight = h;
    p.cropWidth = w;
    p.cropPct = cropPct;
    p.cropOffsetFloor = false;
    p.interpolation = interpolationFromName(cfg.value("interpolation", "bicubic"));
    if (cfg.contains("mean"))
        p.mean = doubles(cfg["mean"], path, "mean");
    if (cfg.contains("std"))
        p.std = doubles(cfg["std"], path, "std");
    p.source = "timm pretrained_cfg";
    fitChannels(p, channels, path);
    return p;
}

PreprocessConfig preprocessFromHuggingFace(const json& pre, const std::string& path)
{
    PreprocessConfig p;
    const std::string type = pre.value("image_processor_type", pre.value("feature_extractor_type", ""));
    const bool clipLike = type.find("CLIP") != std::string::npos || type.find("Bit") != std::string::npos;
    // Class defaults apply to absent fields (NAMING.md 5.8).
    const bool defaultToSquare = !clipLike;
    p.mean = clipLike ? std::vector<double> { 0.48145466, 0.4578275, 0.40821073 } : std::vector<double> { 0.5, 0.5, 0.5 };
    p.std = clipLike ? std::vector<double> { 0.26862954, 0.26130258, 0.27577711 } : std::vector<double> { 0.5, 0.5, 0.5 };
    p.interpolation = Interpolation::Bilinear;
    if (clipLike || type.find("DeiT") != std::string::npos)
        p.interpolation = Interpolation::Bicubic;
    if (pre.contains("resample") && pre["resample"].is_number_integer()) {
        // PIL codes: 0 nearest, 1 lanczos, 2 bilinear, 3 bicubic, 4 box, 5 hamming.
        const int r = pre["resample"].get<int>();
        p.interpolation = r == 0 ? Interpolation::Nearest : (r == 2 || r == 4 || r == 5) ? Interpolation::Bilinear : Interpolation::Bicubic;
    }
    if (!pre.value("do_resize", true)) {
        p.resize = ResizeMode::None;
    } else if (pre.contains("size")) {
        const auto& s = pre["size"];
        if (s.is_number_integer()) {
            if (defaultToSquare) {
                p.resize = ResizeMode::Exact;
                p.resizeHeight = p.resizeWidth = sideField(s, path, "size");
            } else {
                p.resize = ResizeMode::ShortestEdge;
                p.resizeShortest = sideField(s, path, "size");
            }
        } else if (s.is_object() && s.contains("shortest_edge")) {
            p.resize = ResizeMode::ShortestEdge;
            p.resizeShortest = sideField(s["shortest_edge"], path, "size.shortest_edge");
        } else if (s.is_object() && s.contains("height") && s.contains("width")) {
            p.resize = ResizeMode::Exact;
            p.resizeHeight = sideField(s["height"], path, "size.height");
            p.resizeWidth = sideField(s["width"], path, "size.width");
        } else {
            throw LoadError(path + ": size " + s.dump() + " is not understood (height/width or shortest_edge)");
        }
    } else {
        p.resize = clipLike ? ResizeMode::ShortestEdge : ResizeMode::Exact;
        p.resizeShortest = 224;
        p.resizeHeight = p.resizeWidth = 224;
    }
    p.centerCrop = pre.value("do_center_crop", clipLike || type.find("DeiT") != std::string::npos);
    if (p.centerCrop) {
        const auto crop = pre.contains("crop_size") ? sizePair(pre["crop_size"].is_object()
                                                                    ? json::array({ pre["crop_size"].value("height", json(224)), pre["crop_size"].value("width", json(224)) })
                                                                    : pre["crop_size"],
                                                                path, "crop_size")
                                                    : std::pair<int, int> { 224, 224 };
        p.cropHeight = crop.first;
        p.cropWidth = crop.second;
    } else if (p.resize == ResizeMode::Exact) {
        p.cropHeight = p.resizeHeight;
        p.cropWidth = p.resizeWidth;
    }
    p.cropOffsetFloor = true;
    p.rescale = pre.value("do_rescale", true) ? pre.value("rescale_factor", 1.0 / 255.0) : 1.0;
    if (pre.value("do_normalize", true)) {
        if (pre.contains("image_mean"))
            p.mean = doubles(pre["image_mean"], path, "image_mean");
        if (pre.contains("image_std"))
            p.std = doubles(pre["image_std"], path, "image_std");
    } else {
        p.mean = { 0.0 };
        p.std = { 1.0 };
    }
    p.source = "preprocessor_config.json";
    return p;
}

ResolvedConfig resolveConfig(const TensorMap& t, const NamingHints& hints, const ConfigSources& src, const std::string& weightsPath)
{
    ResolvedConfig out;
    ModelConfig& c = out.model;
    const auto fail = [&](const std::string& file, const std::string& problem) { throw LoadError(file + ": " + problem); };

    // --- What the tensors say.
    if (!has(t, "patch_embed.proj.weight"))
        fail(weightsPath, "no patch embedding (patch_embed.proj.weight or its equivalent) among the tensors");
    const auto& patch = t.at("patch_embed.proj.weight");
    // An empty kernel (a zero dimension) would later divide by a zero patch size.
    if (patch.dim() != 4 || patch.size(2) != patch.size(3) || patch.size(0) < 1 || patch.size(1) < 1 || patch.size(2) < 1)
        fail(weightsPath, "patch_embed.proj.weight: shape " + shapeString(patch) + ", expected [D, C, P, P]");
    c.width = int(patch.size(0));
    c.channels = int(patch.size(1));
    c.patchSize = int(patch.size(2));
    const auto hasBlock = [&](int i) {
        auto it = t.lower_bound("blocks." + std::to_string(i) + ".");
        return it != t.end() && it->first.rfind("blocks." + std::to_string(i) + ".", 0) == 0;
    };
    c.depth = 0;
    while (hasBlock(c.depth))
        ++c.depth;
    if (c.depth == 0)
        fail(weightsPath, "no transformer blocks (blocks.0.attn.qkv.weight or its equivalent)");
    // The attention kind and block kind show in the parameters they own (ANALYSES.md section 6).
    c.attention = has(t, "blocks.0.attn.log_hy") ? AttentionKind::Bilateral
        : has(t, "blocks.0.attn.centre")         ? AttentionKind::Quadratic
                                                 : AttentionKind::Standard;
    c.block = has(t, "blocks.0.mlp.fc1.weight") ? BlockKind::Standard : BlockKind::AttentionOnly;
    c.mlpHidden = has(t, "blocks.0.mlp.fc1.weight") ? int(t.at("blocks.0.mlp.fc1.weight").size(0)) : 4 * c.width;
    c.classToken = has(t, "cls_token");
    c.distToken = has(t, "dist_token");
    c.numRegisters = has(t, "reg_token") ? int(t.at("reg_token").size(1)) : 0;
    c.posEmbed = has(t, "pos_embed");
    c.patchBias = has(t, "patch_embed.proj.bias");
    c.qkvBias = has(t, "blocks.0.attn.qkv.bias") || has(t, "blocks.0.attn.v.bias");
    c.projBias = has(t, "blocks.0.attn.proj.bias");
    c.preNorm = has(t, "norm_pre.weight");
    c.layerScale = has(t, "blocks.0.ls1.gamma");
    c.finalNorm = has(t, "norm.weight") ? FinalNorm::AllTokens : has(t, "fc_norm.weight") ? FinalNorm::Pooled : FinalNorm::None;
    c.numClasses = has(t, "head.weight") ? int(t.at("head.weight").size(0)) : 0;
    c.headIsProjection = hints.headIsProjection;
    if (has(t, "head_dist.weight"))
        c.pooling = Pooling::Distilled;
    else if (has(t, "head.weight") && t.at("head.weight").dim() == 2 && t.at("head.weight").size(1) == 2 * c.width)
        c.pooling = Pooling::TokenAndPatchMean;
    else if (!c.classToken)
        c.pooling = Pooling::PatchMean;
    c.layerNormEps = hints.layerNormEps.value_or(1e-6); // timm, torchvision and DINO use 1e-6
    if (hints.quickGelu.value_or(false))
        c.activation = Activation::QuickGelu;
    std::optional<int> heads = hints.numHeads;
    std::optional<std::pair<int, int>> imageSize;
    std::optional<bool> posHasPrefix = hints.posEmbedHasPrefix;
    out.source = "inferred from tensor shapes";

    // --- safetensors metadata (e.g. {"num_heads": "4", "image_size": "32"}).
    const auto metaInt = [&](const char* key) -> std::optional<int> {
        auto it = src.metadata.find(key);
        if (it == src.metadata.end())
            return std::nullopt;
        try {
            return std::stoi(it->second);
        } catch (...) {
            fail(weightsPath, std::string("metadata ") + key + " = \"" + it->second + "\" is not an integer");
        }
        return std::nullopt;
    };
    if (auto v = metaInt("num_heads"))
        heads = v;
    else if (auto v2 = metaInt("num_attention_heads"))
        heads = v2;
    if (auto v = metaInt("image_size"))
        imageSize = std::make_pair(*v, *v);
    if (!src.metadata.empty() && (heads || imageSize))
        out.source = "safetensors metadata";

    // --- config.json
    std::optional<PreprocessConfig> preprocess;
    if (src.config) {
        const json& cfgTop = *src.config;
        const std::string& cp = src.configPath;
        std::vector<std::string> ignored; // the keys nothing below reads (ModelInfo::ignoredConfigKeys)
        if (cfgTop.contains("model_type")) {
            const std::string type = cfgTop["model_type"].get<std::string>();
            const json& cfg = (type == "clip" && cfgTop.contains("vision_config")) ? cfgTop["vision_config"] : cfgTop;
            static const std::map<std::string, double> epsDefault { { "vit", 1e-12 }, { "deit", 1e-12 }, { "dinov2", 1e-6 },
                                                                    { "dinov2_with_registers", 1e-6 }, { "clip_vision_model", 1e-5 }, { "clip", 1e-5 } };
            if (!epsDefault.count(type))
                fail(cp, "model_type \"" + type + "\" is not a vision transformer attnscope reads (vit, deit, dinov2, clip_vision_model)");
            out.source = "config.json (Hugging Face " + type + ")";
            const bool clip = type.rfind("clip", 0) == 0;
            const auto check = [&](const char* key, int tensorsSay) {
                if (cfg.contains(key) && cfg[key].is_number_integer() && cfg[key].get<int>() != tensorsSay)
                    fail(cp, std::string(key) + " " + std::to_string(cfg[key].get<int>()) + " contradicts the checkpoint's "
                             + std::to_string(tensorsSay));
            };
            check("hidden_size", c.width);
            check("num_hidden_layers", c.depth);
            check("num_channels", c.channels);
            check("intermediate_size", c.mlpHidden);
            check("num_register_tokens", c.numRegisters);
            if (cfg.contains("patch_size")) {
                const auto ps = sizePair(cfg["patch_size"], cp, "patch_size");
                if (ps.first != c.patchSize || ps.second != c.patchSize)
                    fail(cp, "patch_size " + cfg["patch_size"].dump() + " contradicts patch_embed.proj.weight " + shapeString(patch));
            }
            heads = cfg.contains("num_attention_heads") ? intField(cfg["num_attention_heads"], cp, "num_attention_heads") : 12;
            c.layerNormEps = cfg.value("layer_norm_eps", epsDefault.at(type));
            if (c.layerNormEps < 0) // a negative eps makes LayerNorm produce NaN
                fail(cp, "layer_norm_eps must not be negative");
            c.activation = activationFromName(cfg.value("hidden_act", clip ? "quick_gelu" : "gelu"), cp);
            imageSize = sizePair(cfg.value("image_size", json(224)), cp, "image_size");
            if (cfgTop.contains("id2label") && cfgTop["id2label"].is_object()) {
                std::map<int, std::string> byId;
                for (const auto& [k, v] : cfgTop["id2label"].items())
                    if (v.is_string())
                        byId[std::atoi(k.c_str())] = v.get<std::string>();
                for (const auto& [id, name] : byId)
                    if (id == int(out.labels.size()))
                        out.labels.push_back(name);
            }
            // Every key read above; the rest (dropouts, initializer_range, architectures, label2id; qkv_bias,
            // which the tensors tell; ...) is listed as ignored.
            const std::vector<std::string> visionKeys { "hidden_size", "num_hidden_layers", "num_channels",
                                                        "intermediate_size", "num_register_tokens", "patch_size",
                                                        "num_attention_heads", "layer_norm_eps", "hidden_act",
                                                        "image_size" };
            std::vector<std::string> topKeys { "model_type", "id2label", "attnscope" };
            if (&cfg != &cfgTop) {
                topKeys.push_back("vision_config");
                listUnread(cfg, visionKeys, "vision_config.", ignored);
            } else {
                topKeys.insert(topKeys.end(), visionKeys.begin(), visionKeys.end());
            }
            listUnread(cfgTop, topKeys, "", ignored);
        } else if (cfgTop.contains("architecture")) {
            const std::string arch = cfgTop["architecture"].get<std::string>();
            out.source = "config.json (timm " + arch + ")";
            const json args = cfgTop.value("model_args", json::object());
            if (args.contains("num_heads")) {
                heads = intField(args["num_heads"], cp, "model_args.num_heads");
            } else {
                for (const auto& s : kTimmSizes)
                    if (arch.find(std::string("_") + s.word + "_") != std::string::npos && s.width == c.width)
                        heads = s.heads;
                if (!heads)
                    fail(cp, "architecture \"" + arch + "\" does not tell the number of heads for width "
                                 + std::to_string(c.width) + "; add model_args.num_heads");
            }
            const bool clip = arch.find("_clip_") != std::string::npos;
            c.layerNormEps = clip ? 1e-5 : 1e-6; // timm's CLIP definitions pass eps=1e-5 (NAMING.md 4.8)
            c.activation = arch.find("quickgelu") != std::string::npos ? Activation::QuickGelu : Activation::Gelu;
            if (args.contains("act_layer") && args["act_layer"].is_string())
                c.activation = activationFromName(args["act_layer"].get<std::string>(), cp);
            if (args.contains("img_size"))
                imageSize = sizePair(args["img_size"], cp, "model_args.img_size");
            if (args.contains("no_embed_class"))
                posHasPrefix = !args["no_embed_class"].get<bool>();
            const std::string pool = args.value("global_pool", cfgTop.value("global_pool", std::string("token")));
            if (pool == "avg")
                c.pooling = Pooling::PatchMean;
            else if (pool != "token" && !pool.empty())
                fail(cp, "global_pool \"" + pool + "\" is not supported (token, avg)");
            if (cfgTop.contains("pretrained_cfg")) {
                const auto& pc = cfgTop["pretrained_cfg"];
                preprocess = preprocessFromTimm(pc, c.channels); // checks input_size: [C, H, W] (was read unchecked)
                if (!imageSize && pc.contains("input_size"))
                    imageSize = std::make_pair(preprocess->cropHeight, preprocess->cropWidth);
            }
            if (cfgTop.contains("label_names") && cfgTop["label_names"].is_array())
                for (const auto& l : cfgTop["label_names"])
                    out.labels.push_back(l.is_string() ? l.get<std::string>() : l.dump());
            // Every key read above; the rest (num_classes and embed_dim, which the tensors tell, the pretrained_cfg's
            // provenance, ...) is listed as ignored.
            listUnread(cfgTop,
                       { "architecture", "model_args", "global_pool", "pretrained_cfg", "label_names", "attnscope" }, "",
                       ignored);
            listUnread(args, { "num_heads", "act_layer", "img_size", "no_embed_class", "global_pool" }, "model_args.",
                       ignored);
            listUnread(cfgTop.value("pretrained_cfg", json::object()),
                       { "input_size", "crop_pct", "crop_mode", "interpolation", "mean", "std" }, "pretrained_cfg.",
                       ignored);
        }
        // attnscope's own config.json (it has an "attnscope" section) carries timm's fields for other tools: not
        // foreign, nothing to list.
        const bool own = cfgTop.contains("attnscope") && cfgTop["attnscope"].is_object();
        if (!ignored.empty() && !own) {
            std::sort(ignored.begin(), ignored.end());
            out.ignoredConfigKeys["config.json"] = ignored;
        }
    } else if (src.unreadConfig) {
        // Any other config.json (a project's own) is not ours to interpret; a description says what it means. Every
        // key of it is ignored: its "num_attention_heads" or "hidden_act" play no part unless a description says so.
        std::vector<std::string> ignored;
        listUnread(*src.unreadConfig, {}, "", ignored);
        if (!ignored.empty())
            out.ignoredConfigKeys["config.json"] = ignored;
    }

    // --- attnscope's own models say in config.json which variants they were trained with.
    const auto readVariants = [&](const json& a, const std::string& file) {
        c.neutrenoLambda = a.value("neutreno_lambda", c.neutrenoLambda);
        c.boostT = a.value("boost_t", c.boostT);
        if (!std::isfinite(c.neutrenoLambda) || !std::isfinite(c.boostT))
            fail(file, "variant parameters must be finite numbers");
    };
    if (src.config && src.config->contains("attnscope") && (*src.config)["attnscope"].is_object())
        readVariants((*src.config)["attnscope"], src.configPath);

    // --- the model description overrides everything.
    if (src.description) {
        const json& d = *src.description;
        const std::string& dp = src.descriptionPath;
        out.source = "model description " + dp;
        const json a = d.value("architecture", json::object());
        if (a.contains("num_heads"))
            heads = intField(a["num_heads"], dp, "architecture.num_heads");
        readVariants(a, dp);
        if (a.contains("block_norm")) {
            const std::string n = a["block_norm"].get<std::string>();
            if (n != "pre" && n != "post")
                fail(dp, "block_norm must be \"pre\" or \"post\"");
            c.blockNorm = n == "pre" ? BlockNorm::Pre : BlockNorm::Post;
        }
        if (a.contains("activation"))
            c.activation = activationFromName(a["activation"].get<std::string>(), dp);
        if (a.contains("layer_norm_eps")) {
            c.layerNormEps = a["layer_norm_eps"].get<double>();
            if (c.layerNormEps < 0) // a negative eps makes LayerNorm produce NaN
                fail(dp, "layer_norm_eps must not be negative");
        }
        if (a.contains("final_norm")) {
            const auto& f = a["final_norm"];
            const FinalNorm want = f.is_boolean() ? (f.get<bool>() ? FinalNorm::AllTokens : FinalNorm::None)
                                                  : (f == "pooled" ? FinalNorm::Pooled : f == "none" ? FinalNorm::None : FinalNorm::AllTokens);
            if (want != FinalNorm::None && c.finalNorm == FinalNorm::None)
                fail(dp, "final_norm is on but the checkpoint has no norm.weight after renaming");
            if (want == FinalNorm::None && c.finalNorm != FinalNorm::None)
                fail(dp, "final_norm is off but the checkpoint has a final norm tensor");
            c.finalNorm = want;
        }
        if (a.contains("pooling")) {
            const std::string p = a["pooling"].get<std::string>();
            if (p == "cls" || p == "token")
                c.pooling = Pooling::Token;
            else if (p == "mean" || p == "avg")
                c.pooling = Pooling::PatchMean;
            else
                fail(dp, "pooling must be \"cls\" or \"mean\"");
        }
        if (a.contains("image_size"))
            imageSize = sizePair(a["image_size"], dp, "image_size");
        if (a.contains("pos_embed_includes_prefix"))
            posHasPrefix = a["pos_embed_includes_prefix"].get<bool>();
        if (d.contains("preprocessing"))
            preprocess = preprocessFromTimm(d["preprocessing"], c.channels);
        if (d.contains("labels") && d["labels"].is_array()) {
            out.labels.clear();
            for (const auto& l : d["labels"])
                out.labels.push_back(l.get<std::string>());
        }
    }

    // --- heads
    if (!heads) {
        if (c.width % 64 != 0)
            fail(weightsPath, "the number of heads is not recorded and width " + std::to_string(c.width)
                                  + " is not a multiple of 64; give num_heads in config.json, metadata or a description");
        heads = c.width / 64; // the common head width when nothing says otherwise (DESIGN.md, Models)
        out.source += "; heads = width/64";
        out.guesses.push_back("num_heads guessed as width/64 = " + std::to_string(*heads)
                              + ": nothing records it (give architecture.num_heads in a model description to be sure)");
    }
    if (*heads <= 0 || c.width % *heads != 0)
        fail(src.configPath.empty() ? weightsPath : src.configPath,
             std::to_string(*heads) + " heads do not divide width " + std::to_string(c.width));
    c.numHeads = *heads;

    if (c.attention == AttentionKind::Quadratic && c.numPrefixTokens() > 0)
        fail(weightsPath, "quadratic positional attention acts on patch tokens only; this model has prefix tokens");

    // --- grid: the position table must fit the image size (when one is stated) and the prefix tokens.
    const int prefix = c.numPrefixTokens();
    if (c.posEmbed) {
        const auto& pos = t.at("pos_embed");
        if (pos.dim() != 3 || pos.size(0) != 1 || pos.size(2) != c.width)
            fail(weightsPath, "pos_embed: shape " + shapeString(pos) + ", expected [1, tokens, " + std::to_string(c.width) + "]");
        const int64_t rows = pos.size(1);
        if (imageSize) {
            if (imageSize->first % c.patchSize || imageSize->second % c.patchSize)
                fail(src.configPath.empty() ? weightsPath : src.configPath,
                     "image size " + std::to_string(imageSize->first) + "x" + std::to_string(imageSize->second)
                         + " is not a multiple of the patch size " + std::to_string(c.patchSize));
            const int64_t grid = int64_t(imageSize->first / c.patchSize) * (imageSize->second / c.patchSize);
            if (!posHasPrefix)
                posHasPrefix = rows == grid + prefix;
            const int64_t expect = grid + (*posHasPrefix ? prefix : 0);
            if (rows != expect)
                fail(weightsPath, "pos_embed: shape " + shapeString(pos) + ", expected [1, " + std::to_string(expect) + ", "
                                      + std::to_string(c.width) + "] for a " + std::to_string(imageSize->first) + "x"
                                      + std::to_string(imageSize->second) + " image with patch " + std::to_string(c.patchSize)
                                      + " and " + std::to_string(prefix) + " prefix tokens");
            c.imageHeight = imageSize->first;
            c.imageWidth = imageSize->second;
        } else {
            std::optional<int> side;
            if (posHasPrefix) {
                side = perfectSquareRoot(rows - (*posHasPrefix ? prefix : 0));
            } else if ((side = perfectSquareRoot(rows - prefix))) {
                posHasPrefix = true;
            } else if ((side = perfectSquareRoot(rows))) {
                posHasPrefix = false;
            }
            if (!side)
                fail(weightsPath, "pos_embed: " + std::to_string(rows) + " rows make no square grid with "
                                      + std::to_string(prefix) + " prefix tokens; state image_size in a config");
            c.imageHeight = c.imageWidth = *side * c.patchSize;
        }
        c.posEmbedHasPrefix = posHasPrefix.value_or(true);
        if (c.attention == AttentionKind::Bilateral && !c.posEmbedHasPrefix && prefix > 0)
            fail(weightsPath, "bilateral attention needs a position row for every token, prefix tokens included");
    } else {
        const auto size = imageSize.value_or(std::make_pair(224, 224));
        c.imageHeight = size.first;
        c.imageWidth = size.second;
    }
    if (c.numClasses > 0 && !out.labels.empty() && int(out.labels.size()) != c.numClasses)
        out.labels.clear(); // labels that do not fit the head are worse than none

    // --- preprocessing
    if (src.preprocessor && !preprocess)
        preprocess = preprocessFromHuggingFace(*src.preprocessor, src.preprocessorPath);
    out.preprocess = preprocess ? *preprocess : defaultPreprocess(c.imageHeight, c.imageWidth);
    fitChannels(out.preprocess, c.channels, src.preprocessorPath.empty() ? weightsPath : src.preprocessorPath);
    return out;
}

} // namespace attnscope
