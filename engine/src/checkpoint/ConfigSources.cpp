#include "checkpoint/ConfigSources.h"

#include "checkpoint/ConfigFields.h"
#include "checkpoint/Families.h"

#include <algorithm>
#include <cmath>

namespace attnscope {

using namespace fields;

namespace {

// model_args keys of a timm config.json (save_for_hf writes the keyword arguments the model was created with) that
// attnscope reads, that the tensors show (checked against them), or that play no part at inference. Any other one
// changes the model in a way attnscope cannot see, and is refused rather than ignored.
const std::vector<std::string> kTimmArgsRead { "num_heads", "act_layer", "img_size", "no_embed_class", "global_pool" };
const std::vector<std::string> kTimmArgsHarmless {
    "embed_dim", "depth", "patch_size", "in_chans", "num_classes", "mlp_ratio", "class_token", "reg_tokens",
    "init_values", "qkv_bias", "proj_bias", "fc_norm", "final_norm", "pre_norm", "drop_rate", "pos_drop_rate",
    "patch_drop_rate", "proj_drop_rate", "attn_drop_rate", "drop_path_rate", "weight_init", "fix_init",
    "dynamic_img_size", "dynamic_img_pad", "pretrained_cfg_overlay", "checkpoint_path"
};

// A Hugging Face config's "architectures": the classes it was saved from.
std::vector<std::string> classNames(const json& config)
{
    std::vector<std::string> classes;
    if (config.contains("architectures") && config["architectures"].is_array())
        for (const auto& a : config["architectures"])
            if (a.is_string())
                classes.push_back(a.get<std::string>());
    return classes;
}

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

// timm's config.json (timm.models.save_for_hf, the hub's layout): the architecture looked up in timm's registry, which
// states what the tensors cannot (heads, activation, LayerNorm eps, position rows of the prefix tokens, pooling), or
// refused with what it lacks. False when the name is not in the registry and a description says what the model is.
static bool readTimmConfig(const ConfigSources& src, ModelConfig& c, StatedConfig& stated, ResolvedConfig& out,
                    std::vector<std::string>& ignored)
{
    const json& cfgTop = *src.config;
    const std::string& cp = src.configPath;
    const std::string arch = cfgTop["architecture"].get<std::string>();
    const json args = cfgTop.value("model_args", json::object());
    if (!args.is_object())
        fail(cp, "model_args must be an object");
    const bool own = arch == "attnscope_vit";
    // checkNamedFamily has refused the names attnscope does not run, by the registry or by the name.
    const TimmArchitecture* entry = own ? nullptr : findTimmArchitecture(arch);
    if (!own && !entry) {
        if (src.description) {
            listUnread(cfgTop, {}, "", ignored);
            out.inferred.push_back("architecture \"" + arch + "\" of config.json: not in timm " + timmRegistryVersion()
                                   + "'s registry; the model description says what the model is");
            return false;
        }
        // A name of one's own with every shape in model_args: what timm builds for it is VisionTransformer(**model_args)
        // only if the name's entry point adds nothing; said, as a guess, not silently assumed.
        if (!args.contains("num_heads"))
            fail(cp, "architecture \"" + arch + "\" is not one of timm " + timmRegistryVersion()
                         + "'s vision transformers that attnscope runs (attnscope-cli info --list-families), and its "
                           "model_args do not state num_heads; describe the model in a model description "
                           "(docs/model-description.md)");
        out.guesses.push_back("architecture \"" + arch + "\" is not in timm " + timmRegistryVersion()
                              + "'s registry: read as timm's plain VisionTransformer with config.json's model_args and "
                                "timm's defaults for the rest (GELU, LayerNorm eps 1e-6)");
    }
    for (const auto& [key, value] : args.items())
        if (std::find(kTimmArgsRead.begin(), kTimmArgsRead.end(), key) == kTimmArgsRead.end()
            && std::find(kTimmArgsHarmless.begin(), kTimmArgsHarmless.end(), key) == kTimmArgsHarmless.end())
            fail(cp, "model_args." + key + " = " + value.dump() + " changes the model in a way attnscope does not run");
    out.source = "config.json (timm " + arch + ")";
    if (entry && *entry->rope) { // a rotary embedding: no tensor shows it (but RoPE-Mixed's frequencies), the registry states it
        const std::string_view kind = entry->rope;
        c.rope = kind == "dinov3" ? ModelConfig::Rope::DinoV3 : kind == "mixed" ? ModelConfig::Rope::Mixed : ModelConfig::Rope::Axial;
        c.ropeTemperature = entry->ropeTemperature;
        c.ropeXY = entry->ropeXY;
        c.ropeHalf = entry->ropeHalf;
        c.ropeReferenceGridH = entry->ropeReferenceH;
        c.ropeReferenceGridW = entry->ropeReferenceW;
        stated.position = entry->ropeWithTable ? "learned+rotary" : "rotary";
        stated.positionSource = "timm's " + arch;
    }
    stated.gatedMlp = entry && std::string_view(entry->activation) == "silu" && entry->rope && *entry->rope;
    if (entry && (std::string_view(entry->family) == "swin" || std::string_view(entry->family) == "swinv2"))
        fail(cp, arch + " is a Swin, but the tensors are not a Swin's"); // a Swin's are read by resolveSwinConfig
    if (entry) {
        out.family = entry->family;
        out.recognition = std::string("timm ") + entry->name + " (config.json architecture, timm " + timmRegistryVersion()
                          + "'s registry)";
    } else {
        out.family = "vit";
        out.recognition = own ? "attnscope's own ViT (config.json architecture attnscope_vit)"
                              : "timm VisionTransformer (config.json architecture " + arch + ", not in timm's registry)";
    }
    auto& heads = stated.heads;
    if (args.contains("num_heads")) {
        heads = intField(args["num_heads"], cp, "model_args.num_heads");
        out.inferred.push_back("heads " + std::to_string(*heads) + ": config.json model_args.num_heads");
    } else if (entry) {
        heads = entry->heads;
        out.inferred.push_back("heads " + std::to_string(*heads) + ": timm's " + arch);
    } else {
        fail(cp, "attnscope_vit: model_args.num_heads is missing");
    }
    c.layerNormEps = entry ? entry->layerNormEps : 1e-6;
    c.activation = activationFromName(entry ? entry->activation : "gelu", cp);
    if (args.contains("act_layer") && args["act_layer"].is_string())
        c.activation = activationFromName(args["act_layer"].get<std::string>(), cp);
    out.inferred.push_back(std::string("activation ") + toString(c.activation) + ", LayerNorm eps "
                           + shortNumber(c.layerNormEps) + ": " + (entry ? "timm's " + arch : std::string("timm's defaults")));
    if (args.contains("img_size"))
        stated.imageSize = sizePair(args["img_size"], cp, "model_args.img_size");
    if (args.contains("no_embed_class"))
        stated.posHasPrefix = !args["no_embed_class"].get<bool>();
    else if (entry)
        stated.posHasPrefix = !entry->noEmbedClass;
    const std::string pool = args.value("global_pool", cfgTop.value("global_pool", std::string(entry ? entry->globalPool : "token")));
    if (pool == "avg")
        c.pooling = Pooling::PatchMean;
    else if (pool == "map" && c.pooling != Pooling::AttentionPool)
        fail(cp, "global_pool \"map\" (an attention-pool head), but the checkpoint has no attn_pool.latent");
    else if (pool != "token" && pool != "map" && !pool.empty())
        fail(cp, "global_pool \"" + pool + "\" is not supported (token, avg, map)");
    if (cfgTop.contains("pretrained_cfg")) {
        const auto& pc = cfgTop["pretrained_cfg"];
        stated.preprocess = preprocessFromTimm(pc, c.channels); // checks input_size: [C, H, W] (was read unchecked)
        if (!stated.imageSize && pc.contains("input_size"))
            stated.imageSize = std::make_pair(stated.preprocess->cropHeight, stated.preprocess->cropWidth);
    }
    if (cfgTop.contains("label_names") && cfgTop["label_names"].is_array())
        for (const auto& l : cfgTop["label_names"])
            out.labels.push_back(l.is_string() ? l.get<std::string>() : l.dump());
    // Every key read above; the rest (num_classes and num_features, which the tensors tell, the pretrained_cfg's
    // provenance, ...) is listed as ignored.
    listUnread(cfgTop, { "architecture", "model_args", "global_pool", "pretrained_cfg", "label_names", "attnscope" }, "",
               ignored);
    listUnread(args, kTimmArgsRead, "model_args.", ignored);
    listUnread(cfgTop.value("pretrained_cfg", json::object()),
               { "input_size", "crop_pct", "crop_mode", "interpolation", "mean", "std" }, "pretrained_cfg.", ignored);
    return true;
}

void checkNamedFamily(const ConfigSources& src)
{
    if (src.description && src.description->contains("family") && (*src.description)["family"].is_string())
        checkDescribedFamily((*src.description)["family"].get<std::string>(), src.descriptionPath);
    if (!src.config)
        return;
    const json& cfg = *src.config;
    if (cfg.contains("model_type") && cfg["model_type"].is_string()) {
        checkHuggingFaceArchitecture(cfg["model_type"].get<std::string>(), classNames(cfg), src.configPath);
        const auto vision = cfg.find("vision_config"); // CLIP's vision tower names its own type
        if (vision != cfg.end() && vision->is_object() && vision->contains("model_type") && (*vision)["model_type"].is_string())
            checkHuggingFaceArchitecture((*vision)["model_type"].get<std::string>(), {}, src.configPath);
    } else if (cfg.contains("architecture") && cfg["architecture"].is_string()) {
        const std::string arch = cfg["architecture"].get<std::string>();
        const TimmArchitecture* entry = findTimmArchitecture(arch);
        if (entry && *entry->unsupported)
            fail(src.configPath, arch + ": attnscope does not run " + entry->unsupported);
        if (const char* reason = !entry && !src.description ? unsupportedByName(arch) : nullptr)
            fail(src.configPath, arch + ": attnscope does not run " + reason + " (the name says so; describe the model in "
                                        "a model description if it is a plain ViT: docs/model-description.md)");
    }
}

void readConfigJson(const ConfigSources& src, const TensorMap& tensors, StatedConfig& stated, ResolvedConfig& out)
{
    ModelConfig& c = out.model;
    auto& heads = stated.heads;
    auto& imageSize = stated.imageSize;
    if (src.config) {
        const json& cfgTop = *src.config;
        const std::string& cp = src.configPath;
        std::vector<std::string> ignored; // the keys nothing below reads (ModelInfo::ignoredConfigKeys)
        if (cfgTop.contains("model_type")) {
            const std::string type = cfgTop["model_type"].get<std::string>();
            if (type == "swin" || type == "swinv2") // a Swin's tensors are read by resolveSwinConfig
                fail(cp, "model_type \"" + type + "\" names a Swin, but the tensors are not a Swin's");
            const json& cfg = ((type == "clip" || type == "siglip") && cfgTop.contains("vision_config")) ? cfgTop["vision_config"] : cfgTop;
            static const std::map<std::string, double> epsDefault { { "vit", 1e-12 }, { "deit", 1e-12 }, { "dinov2", 1e-6 },
                                                                    { "beit", 1e-12 }, { "data2vec-vision", 1e-12 },
                                                                    { "dinov2_with_registers", 1e-6 }, { "clip_vision_model", 1e-5 }, { "clip", 1e-5 },
                                                                    { "siglip", 1e-6 }, { "siglip_vision_model", 1e-6 },
                                                                    { "dinov3_vit", 1e-5 } };
            const std::vector<std::string> classes = classNames(cfgTop); // checked by checkNamedFamily
            out.family = type.rfind("clip", 0) == 0 ? "clip" : type.rfind("siglip", 0) == 0 ? "siglip"
                         : type == "dinov2_with_registers" ? "dinov2"
                         : type == "data2vec-vision"                                        ? "beit"
                         : type == "dinov3_vit"                                             ? "dinov3"
                                                                                            : type;
            const bool beit = out.family == "beit";
            if (beit) {
                // BEiT's switches the tensors do not show: one bias table shared by all layers is not run; its pooling.
                if (cfg.value("use_shared_relative_position_bias", false))
                    fail(cp, "use_shared_relative_position_bias: attnscope does not run a relative position bias shared by all layers");
                c.pooling = cfg.value("use_mean_pooling", true) ? Pooling::PatchMean : Pooling::Token;
            }
            const bool dinov3 = out.family == "dinov3";
            if (dinov3) {
                // DINOv3's rotary embedding and its gated MLP have no tensor of their own: the config states them.
                c.rope = ModelConfig::Rope::DinoV3;
                c.ropeTemperature = cfg.value("rope_theta", 100.0);
                if (!std::isfinite(c.ropeTemperature) || c.ropeTemperature <= 0)
                    fail(cp, "rope_theta must be a positive number");
                stated.position = "rotary";
                stated.positionSource = "config.json (Hugging Face dinov3_vit, rope_theta)";
                stated.gatedMlp = cfg.value("use_gated_mlp", false);
            }
            out.recognition = "Hugging Face " + type + (classes.empty() ? std::string() : " " + classes.front())
                              + " (config.json model_type)";
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
            const bool siglip = out.family == "siglip";
            c.activation = activationFromName(cfg.value("hidden_act", clip ? "quick_gelu" : siglip ? "gelu_pytorch_tanh" : "gelu"), cp);
            imageSize = sizePair(cfg.value("image_size", json(224)), cp, "image_size");
            if (const auto labels = labelsFromId2Label(cfgTop); !labels.empty())
                out.labels = labels;
            // Every key read above; the rest (dropouts, initializer_range, label2id; qkv_bias,
            // which the tensors tell; ...) is listed as ignored.
            std::vector<std::string> visionKeys { "hidden_size", "num_hidden_layers", "num_channels",
                                                        "intermediate_size", "num_register_tokens", "patch_size",
                                                        "num_attention_heads", "layer_norm_eps", "hidden_act",
                                                        "image_size" };
            if (beit)
                visionKeys.insert(visionKeys.end(), { "use_shared_relative_position_bias", "use_mean_pooling" });
            if (dinov3) // the biases and layer scales are tensors; the position augmentations act in training only
                visionKeys.insert(visionKeys.end(), { "rope_theta", "use_gated_mlp", "query_bias", "key_bias", "value_bias",
                                                      "proj_bias", "mlp_bias", "layerscale_value", "pos_embed_shift",
                                                      "pos_embed_jitter", "pos_embed_rescale" });
            std::vector<std::string> topKeys { "model_type", "architectures", "id2label", "attnscope" };
            if (&cfg != &cfgTop) {
                topKeys.push_back("vision_config");
                listUnread(cfg, visionKeys, "vision_config.", ignored);
            } else {
                topKeys.insert(topKeys.end(), visionKeys.begin(), visionKeys.end());
            }
            listUnread(cfgTop, topKeys, "", ignored);
        } else if (cfgTop.contains("architecture")) {
            if (!readTimmConfig(src, c, stated, out, ignored))
                return; // an architecture timm does not register, with a description that says what the model is
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
    if (d.contains("family")) {
        if (!d["family"].is_string())
            fail(dp, "family must be a string");
        out.family = d["family"].get<std::string>();
        checkDescribedFamily(out.family, dp);
        out.recognition = out.family + " (the model description's family)";
    } else {
        out.recognition = "model description " + dp + " (family not named)";
    }
    const json a = d.value("architecture", json::object());
    if (a.contains("position")) {
        const std::string p = a["position"].is_string() ? a["position"].get<std::string>() : a["position"].dump();
        if (p != "learned" && p != "none" && p != "sincos2d")
            fail(dp, "architecture.position must be \"learned\" (a pos_embed tensor), \"sincos2d\" (a fixed 2-D sin-cos "
                     "table, vit-pytorch's SimpleViT) or \"none\", not \"" + p + "\"");
        stated.position = p;
        stated.positionSource = "the model description";
    }
    if (a.contains("patch_size"))
        stated.patchSize = sideField(a["patch_size"], dp, "architecture.patch_size");
    if (a.contains("channels"))
        stated.channels = intField(a["channels"], dp, "architecture.channels");
    if (stated.channels && (*stated.channels < 1 || *stated.channels > 4))
        fail(dp, "architecture.channels must be 1 to 4");
    if (a.contains("patch_order")) {
        const std::string order = a["patch_order"].is_string() ? a["patch_order"].get<std::string>() : a["patch_order"].dump();
        if (c.patchEmbedding == PatchEmbedding::Convolution)
            fail(dp, "architecture.patch_order is for a linear patch embedding (patch_embed.linear.weight)");
        if (order == "p1 p2 c")
            c.patchEmbedding = PatchEmbedding::LinearChannelsLast;
        else if (order == "c p1 p2")
            c.patchEmbedding = PatchEmbedding::LinearChannelsFirst;
        else
            fail(dp, "architecture.patch_order must be \"p1 p2 c\" (channels fastest) or \"c p1 p2\", not \"" + order + "\"");
    }
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
            c.pooling = stated.meanOverAllTokens && c.numPrefixTokens() > 0 ? Pooling::AllTokensMean : Pooling::PatchMean;
        else if (p == "mean_all")
            c.pooling = Pooling::AllTokensMean;
        else
            fail(dp, "pooling must be \"cls\", \"mean\" (of the patch tokens) or \"mean_all\" (of every token)");
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
