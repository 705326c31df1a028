#include "checkpoint/ConfigSources.h"

#include "checkpoint/ConfigFields.h"

#include <algorithm>
#include <cmath>

namespace attnscope {

using namespace fields;

namespace {

// timm's model-registry facts that tensors cannot tell: heads per size name (NAMING.md 4.4, 9).
struct TimmSize {
    const char* word;
    int width;
    int heads;
};
constexpr TimmSize kTimmSizes[] = { { "tiny", 192, 3 },  { "small", 384, 6 },  { "base", 768, 12 },
                                    { "large", 1024, 16 }, { "huge", 1280, 16 }, { "giant", 1408, 16 } };

} // namespace

void readMetadata(const std::map<std::string, std::string>& metadata, const std::string& weightsPath, StatedConfig& stated,
                  ResolvedConfig& out)
{
    auto& heads = stated.heads;
    auto& imageSize = stated.imageSize;
    const auto metaInt = [&](const char* key) -> std::optional<int> {
        auto it = metadata.find(key);
        if (it == metadata.end())
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
    if (!metadata.empty() && (heads || imageSize))
        out.source = "safetensors metadata";
}

void readConfigJson(const ConfigSources& src, const TensorMap& tensors, StatedConfig& stated, ResolvedConfig& out)
{
    ModelConfig& c = out.model;
    auto& heads = stated.heads;
    auto& imageSize = stated.imageSize;
    auto& posHasPrefix = stated.posHasPrefix;
    auto& preprocess = stated.preprocess;
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
                    fail(cp, "patch_size " + cfg["patch_size"].dump() + " contradicts patch_embed.proj.weight " + shapeString(tensors.at("patch_embed.proj.weight")));
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
}

void readVariants(const json& a, const std::string& file, ModelConfig& c)
{
    c.neutrenoLambda = a.value("neutreno_lambda", c.neutrenoLambda);
    c.boostT = a.value("boost_t", c.boostT);
    if (!std::isfinite(c.neutrenoLambda) || !std::isfinite(c.boostT))
        fail(file, "variant parameters must be finite numbers");
}

void readDescription(const json& d, const std::string& dp, StatedConfig& stated, ResolvedConfig& out)
{
    ModelConfig& c = out.model;
    auto& heads = stated.heads;
    auto& imageSize = stated.imageSize;
    auto& posHasPrefix = stated.posHasPrefix;
    auto& preprocess = stated.preprocess;
    out.source = "model description " + dp;
    const json a = d.value("architecture", json::object());
    if (a.contains("num_heads"))
        heads = intField(a["num_heads"], dp, "architecture.num_heads");
    readVariants(a, dp, c);
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

} // namespace attnscope
