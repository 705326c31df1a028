#include "checkpoint/SwinCheckpoint.h"

#include "checkpoint/ConfigFields.h"
#include "checkpoint/Families.h"
#include "checkpoint/NamingRules.h"
#include "io/LoadError.h"

#include <ATen/ATen.h>
#include <cmath>

namespace attnscope {

using namespace fields;
using namespace naming;

namespace {

std::string block(int s, int b) { return "layers." + std::to_string(s) + ".blocks." + std::to_string(b) + "."; }

std::string joined(const std::vector<int>& v)
{
    std::string s;
    for (int x : v)
        s += (s.empty() ? "" : ", ") + std::to_string(x);
    return s;
}

// A per-stage list ([7, 7, 14, 7]) or one value for every stage.
std::vector<int> perStage(const json& v, size_t stages, const std::string& path, const std::string& what)
{
    std::vector<int> out;
    if (v.is_array()) {
        for (const auto& x : v)
            out.push_back(intField(x, path, what));
        if (out.size() != stages)
            fail(path,
                what + " has " + std::to_string(out.size()) + " values for " + std::to_string(stages) + " stages");
    } else {
        out.assign(stages, intField(v, path, what));
    }
    return out;
}

// What the tensors say: the stages, their widths, heads and MLPs; v1's windows from its tables (square windows).
void readSwinTensors(
    const TensorMap& t, const std::string& weightsPath, ModelConfig& c, std::vector<int>& tableWindows)
{
    const at::Tensor& pe = t.at("patch_embed.proj.weight");
    if (pe.dim() != 4 || pe.size(2) != pe.size(3))
        fail(weightsPath, "patch_embed.proj.weight: shape " + shapeString(pe) + ", expected [C, channels, P, P]");
    c.patchSize = int(pe.size(2));
    c.channels = int(pe.size(1));
    const bool v2 = c.hierarchy == Hierarchy::SwinV2;
    for (int s = 0; has(t, block(s, 0) + "norm1.weight"); ++s) {
        SwinStage st;
        while (has(t, block(s, st.depth) + "norm1.weight"))
            ++st.depth;
        const std::string p = block(s, 0);
        st.width = int(t.at(p + "norm1.weight").size(0));
        st.mlpHidden = int(t.at(p + "mlp.fc1.weight").size(0));
        const std::string headsFrom = p + (v2 ? "attn.logit_scale" : "attn.relative_position_bias_table");
        if (!has(t, headsFrom))
            fail(weightsPath, "a Swin" + std::string(v2 ? " v2" : "") + " block without " + headsFrom);
        const at::Tensor& h = t.at(headsFrom);
        st.heads = int(v2 ? h.size(0) : h.size(1));
        if (st.heads <= 0 || st.width % st.heads != 0)
            fail(weightsPath,
                headsFrom + ": " + std::to_string(st.heads) + " heads do not divide the width "
                    + std::to_string(st.width));
        const at::Tensor& qkv = t.at(p + "attn.qkv.weight");
        if (qkv.dim() != 2 || qkv.size(0) != 3 * st.width)
            fail(weightsPath,
                p + "attn.qkv.weight: shape " + shapeString(qkv) + ", expected [" + std::to_string(3 * st.width)
                    + ", " + std::to_string(st.width) + "] (an attention width of its own is not supported)");
        if (!v2) {
            const int64_t rows = h.size(0);
            const int side = int(std::lround(std::sqrt(double(rows))));
            tableWindows.push_back(int64_t(side) * side == rows && side % 2 == 1 ? (side + 1) / 2 : 0);
        }
        if (s > 0) {
            const std::string r = "layers." + std::to_string(s) + ".downsample.reduction.weight";
            const int in = c.stages.back().width;
            if (!has(t, r) || t.at(r).dim() != 2 || t.at(r).size(0) != st.width || t.at(r).size(1) != 4 * in)
                fail(weightsPath,
                    r + ": expected [" + std::to_string(st.width) + ", " + std::to_string(4 * in)
                        + "] between stages of widths " + std::to_string(in) + " and " + std::to_string(st.width));
        }
        c.stages.push_back(st);
    }
    if (c.stages.empty())
        fail(weightsPath, "a Swin without layers.0.blocks.0");
    if (has(t, "absolute_pos_embed"))
        fail(weightsPath, "absolute_pos_embed: a Swin with an absolute position embedding (ape) is not supported");
    c.qkvBias = has(t, "layers.0.blocks.0.attn.qkv.bias");
    c.numClasses = has(t, "head.weight") ? int(t.at("head.weight").size(0)) : 0;
    c.width = c.stages.back().width;
    c.numHeads = c.stages.back().heads;
    c.mlpHidden = c.stages.back().mlpHidden;
    c.depth = 0;
    for (const auto& st : c.stages)
        c.depth += st.depth;
    c.classToken = false;
    c.posEmbed = false;
    c.pooling = Pooling::PatchMean;
    c.finalNorm = FinalNorm::AllTokens;
    c.layerNormEps = 1e-5;
    c.activation = Activation::Gelu;
    c.blockNorm
        = c.hierarchy == Hierarchy::SwinV2 ? BlockNorm::Post : BlockNorm::Pre; // v2 normalises after each branch
}

// What a config states of the stages (depths, heads, embed_dim, patch size) must be what the tensors say.
void checkStages(const json& cfg, const ModelConfig& c, const std::string& path, const char* depthsKey,
    const char* headsKey, const char* widthKey, const char* patchKey)
{
    std::vector<int> depths, heads;
    for (const auto& st : c.stages) {
        depths.push_back(st.depth);
        heads.push_back(st.heads);
    }
    if (cfg.contains(depthsKey) && perStage(cfg[depthsKey], c.stages.size(), path, depthsKey) != depths)
        fail(path,
            std::string(depthsKey) + " " + cfg[depthsKey].dump()
                + " contradicts the checkpoint's blocks per stage (" + joined(depths) + ")");
    if (cfg.contains(headsKey) && perStage(cfg[headsKey], c.stages.size(), path, headsKey) != heads)
        fail(path,
            std::string(headsKey) + " " + cfg[headsKey].dump() + " contradicts the checkpoint's heads per stage ("
                + joined(heads) + ")");
    if (cfg.contains(widthKey) && intField(cfg[widthKey], path, widthKey) != c.stages.front().width)
        fail(path,
            std::string(widthKey) + " " + cfg[widthKey].dump() + " contradicts the checkpoint's first width "
                + std::to_string(c.stages.front().width));
    if (cfg.contains(patchKey) && sideField(cfg[patchKey], path, patchKey) != c.patchSize)
        fail(path,
            std::string(patchKey) + " " + cfg[patchKey].dump() + " contradicts patch_embed.proj.weight's "
                + std::to_string(c.patchSize));
}

struct SwinStated {
    std::vector<int> windows, pretrained;
    std::optional<std::pair<int, int>> imageSize;
    std::string windowSource;
};

void readTimmSwinConfig(const ConfigSources& src, ResolvedConfig& out, SwinStated& stated)
{
    const json& cfg = *src.config;
    const std::string& cp = src.configPath;
    const std::string arch = cfg["architecture"].get<std::string>();
    const TimmArchitecture* entry = findTimmArchitecture(arch);
    const std::string family = out.model.hierarchy == Hierarchy::SwinV2 ? "swinv2" : "swin";
    if (!entry || entry->family != family)
        fail(cp,
            "architecture \"" + arch + "\" is not one of timm " + timmRegistryVersion() + "'s " + family
                + " models, but the tensors are a " + (family == "swin" ? "Swin" : "Swin v2") + "'s");
    const json args = cfg.value("model_args", json::object());
    static const std::vector<std::string> known { "img_size", "patch_size", "window_size", "embed_dim", "depths",
        "num_heads", "num_classes", "in_chans", "global_pool", "pretrained_window_sizes", "mlp_ratio", "qkv_bias",
        "drop_rate", "proj_drop_rate", "attn_drop_rate", "drop_path_rate" };
    for (const auto& [key, value] : args.items())
        if (std::find(known.begin(), known.end(), key) == known.end())
            fail(cp,
                "model_args." + key + " = " + value.dump() + " changes the model in a way attnscope does not run");
    const size_t n = out.model.stages.size();
    checkStages(args, out.model, cp, "depths", "num_heads", "embed_dim", "patch_size");
    const std::string pool = args.value("global_pool", cfg.value("global_pool", std::string("avg")));
    if (pool != "avg")
        fail(cp, "global_pool \"" + pool + "\": attnscope runs Swin's average pooling only");
    if (args.contains("window_size")) {
        stated.windows = perStage(args["window_size"], n, cp, "model_args.window_size");
        stated.windowSource = "config.json model_args.window_size";
    } else {
        stated.windows.assign(entry->windows, entry->windows + std::min<size_t>(n, 4));
        stated.windowSource = "timm's " + arch;
    }
    if (args.contains("pretrained_window_sizes"))
        stated.pretrained = perStage(args["pretrained_window_sizes"], n, cp, "model_args.pretrained_window_sizes");
    else
        stated.pretrained.assign(entry->pretrainedWindows, entry->pretrainedWindows + std::min<size_t>(n, 4));
    if (args.contains("img_size"))
        stated.imageSize = sizePair(args["img_size"], cp, "model_args.img_size");
    const json pc = cfg.value("pretrained_cfg", json::object());
    if (pc.is_object() && !pc.empty()) {
        out.preprocess = preprocessFromTimm(pc, out.model.channels);
        if (!stated.imageSize && pc.contains("input_size") && pc["input_size"].is_array()
            && pc["input_size"].size() == 3)
            stated.imageSize = std::make_pair(intField(pc["input_size"][1], cp, "pretrained_cfg.input_size"),
                intField(pc["input_size"][2], cp, "pretrained_cfg.input_size"));
    }
    out.family = family;
    out.recognition = "timm " + std::string(entry->name) + " (config.json architecture, timm "
        + timmRegistryVersion() + "'s registry)";
    out.source = "config.json (timm " + arch + ")";
}

void readHuggingFaceSwinConfig(const ConfigSources& src, ResolvedConfig& out, SwinStated& stated)
{
    const json& cfg = *src.config;
    const std::string& cp = src.configPath;
    const std::string type = cfg["model_type"].get<std::string>();
    const std::string family = out.model.hierarchy == Hierarchy::SwinV2 ? "swinv2" : "swin";
    if (type != family)
        fail(cp,
            "model_type \"" + type + "\", but the tensors are a " + (family == "swin" ? "Swin" : "Swin v2") + "'s");
    const size_t n = out.model.stages.size();
    checkStages(cfg, out.model, cp, "depths", "num_heads", "embed_dim", "patch_size");
    if (cfg.value("use_absolute_embeddings", false))
        fail(cp, "use_absolute_embeddings: a Swin with an absolute position embedding is not supported");
    out.model.activation = activationFromName(cfg.value("hidden_act", std::string("gelu")), cp);
    if (out.model.activation != Activation::Gelu)
        fail(cp, "hidden_act \"" + cfg.value("hidden_act", std::string()) + "\": attnscope runs Swin with GELU");
    out.model.layerNormEps = cfg.value("layer_norm_eps", 1e-5);
    stated.windows = perStage(cfg.value("window_size", json(7)), n, cp, "window_size");
    stated.windowSource = "config.json window_size";
    if (family == "swinv2")
        stated.pretrained
            = perStage(cfg.value("pretrained_window_sizes", json(0)), n, cp, "pretrained_window_sizes");
    stated.imageSize = sizePair(cfg.value("image_size", json(224)), cp, "image_size");
    out.labels = labelsFromId2Label(cfg);
    if (src.preprocessor)
        out.preprocess = preprocessFromHuggingFace(*src.preprocessor, src.preprocessorPath);
    out.family = family;
    const auto classes = cfg.value("architectures", json::array());
    out.recognition = "Hugging Face " + type
        + (classes.is_array() && !classes.empty() && classes[0].is_string() ? " " + classes[0].get<std::string>()
                                                                            : std::string())
        + " (config.json model_type)";
    out.source = "config.json (Hugging Face " + type + ")";
}

// Takes the tensors of stage i's patch merging (`down` matches their names: the stage, then the rest of the name) out
// of `t` as layers.(i+1).downsample.*: where timm merges, at the start of the next stage.
TensorMap takeDownsamples(TensorMap& t, const std::regex& down)
{
    TensorMap moved;
    for (auto it = t.begin(); it != t.end();) {
        std::smatch m;
        if (std::regex_match(it->first, m, down)) {
            moved["layers." + std::to_string(std::stoi(m[1]) + 1) + ".downsample." + m[2].str()] = it->second;
            it = t.erase(it);
        } else {
            ++it;
        }
    }
    return moved;
}

} // namespace

bool isSwinLayout(const TensorMap& t)
{
    if (has(t, "patch_embed.proj.weight")
        && (has(t, "layers.0.blocks.0.attn.relative_position_bias_table")
            || has(t, "layers.0.blocks.0.attn.cpb_mlp.0.weight")))
        return true;
    return prefixOf(t, "encoder.layers.0.blocks.0.attention.self.query.weight", { "swin.", "swinv2.", "" }).has_value()
        && prefixOf(t, "embeddings.patch_embeddings.projection.weight", { "swin.", "swinv2.", "" }).has_value();
}

TensorMap fromSwin(TensorMap t, NamingHints& hints, const std::string& path)
{
    const auto hf = prefixOf(t, "encoder.layers.0.blocks.0.attention.self.query.weight", { "swin.", "swinv2.", "" });
    if (hf) {
        const std::string p = *hf == "" ? "" : (*hf).substr(0, hf->size() - 1) + "\\.";
        // transformers merges patches at the end of a stage, timm at the start of the next: layers.i -> layers.i+1
        const TensorMap moved = takeDownsamples(t, std::regex("^" + p + "encoder\\.layers\\.(\\d+)\\.downsample\\.(.*)$"));
        t = applyRules(std::move(t),
            {
                drop("^" + p + "embeddings\\.mask_token$"),
                rename("^" + p + "embeddings\\.position_embeddings$", "absolute_pos_embed"),
                rename("^" + p + "embeddings\\.patch_embeddings\\.projection\\.", "patch_embed.proj."),
                rename("^" + p + "embeddings\\.norm\\.", "patch_embed.norm."),
                rename("^" + p + "encoder\\.layers\\.(\\d+)\\.blocks\\.(\\d+)\\.", "layers.$1.blocks.$2."),
                rename("^(layers\\.\\d+\\.blocks\\.\\d+\\.)layernorm_before\\.", "$1norm1."),
                rename("^(layers\\.\\d+\\.blocks\\.\\d+\\.)layernorm_after\\.", "$1norm2."),
                drop("\\.attention\\.self\\.(relative_position_index|relative_coords_table)$"),
                rename("^(layers\\.\\d+\\.blocks\\.\\d+\\.)attention\\.self\\.continuous_position_bias_mlp\\.",
                    "$1attn.cpb_mlp."),
                rename("^(layers\\.\\d+\\.blocks\\.\\d+\\.)attention\\.self\\.query\\.", "$1attn.q."),
                rename("^(layers\\.\\d+\\.blocks\\.\\d+\\.)attention\\.self\\.key\\.", "$1attn.k."),
                rename("^(layers\\.\\d+\\.blocks\\.\\d+\\.)attention\\.self\\.value\\.", "$1attn.v."),
                rename("^(layers\\.\\d+\\.blocks\\.\\d+\\.)attention\\.self\\.", "$1attn."),
                rename("^(layers\\.\\d+\\.blocks\\.\\d+\\.)attention\\.output\\.dense\\.", "$1attn.proj."),
                rename("^(layers\\.\\d+\\.blocks\\.\\d+\\.)intermediate\\.dense\\.", "$1mlp.fc1."),
                rename("^(layers\\.\\d+\\.blocks\\.\\d+\\.)output\\.dense\\.", "$1mlp.fc2."),
                rename("^" + p + "layernorm\\.", "norm."),
                rename("^classifier\\.", "head."),
            });
        t.insert(moved.begin(), moved.end());
        fuseQkv(t, "attn.q.", "attn.k.", "attn.v.", "attn.qkv.", path);
        hints.naming = "huggingface";
    } else {
        // The original release (microsoft/Swin-Transformer; timm before 0.9) merges at the end of a stage too: a stage-0
        // downsample says so.
        if (has(t, "layers.0.downsample.reduction.weight")) {
            const TensorMap moved = takeDownsamples(t, std::regex("^layers\\.(\\d+)\\.downsample\\.(.*)$"));
            t.insert(moved.begin(), moved.end());
        }
        t = applyRules(std::move(t),
            {
                drop("\\.attn\\.(relative_position_index|relative_coords_table|k_bias)$"),
                drop("\\.attn_mask$"),
                rename("^head\\.fc\\.", "head."),
            });
        // Swin v2's q and v biases beside a bias-free qkv: one bias with zeros for the key, as its forward makes it.
        for (auto it = t.begin(); it != t.end(); ++it) {
            const std::string& name = it->first;
            if (name.size() < 7 || name.compare(name.size() - 7, 7, ".q_bias") != 0)
                continue;
            const std::string stem = name.substr(0, name.size() - 6);
            if (!has(t, stem + "v_bias") || has(t, stem + "qkv.bias"))
                throw LoadError(path + ": " + name + " needs " + stem + "v_bias beside it and no " + stem + "qkv.bias");
            const at::Tensor q = it->second, v = t.at(stem + "v_bias");
            if (q.dim() != 1 || !q.sizes().equals(v.sizes()))
                throw LoadError(path + ": " + stem + "q_bias and v_bias must be vectors of one size");
            t[stem + "qkv.bias"] = at::cat({ q, at::zeros_like(q), v });
        }
        for (auto it = t.begin(); it != t.end();) {
            const std::string& name = it->first;
            const bool bias = name.size() > 7
                && (name.compare(name.size() - 7, 7, ".q_bias") == 0
                    || name.compare(name.size() - 7, 7, ".v_bias") == 0);
            it = bias ? t.erase(it) : std::next(it);
        }
        hints.naming = "timm";
    }
    hints.family = has(t, "layers.0.blocks.0.attn.cpb_mlp.0.weight") ? "swinv2" : "swin";
    return t;
}

ResolvedConfig resolveSwinConfig(
    const TensorMap& t, const NamingHints& hints, const ConfigSources& src, const std::string& weightsPath)
{
    ResolvedConfig out;
    ModelConfig& c = out.model;
    c.hierarchy = hints.family == "swinv2" ? Hierarchy::SwinV2 : Hierarchy::Swin;
    std::vector<int> tableWindows;
    readSwinTensors(t, weightsPath, c, tableWindows);
    if (src.description)
        fail(src.descriptionPath,
            "a Swin is read from timm's or Hugging Face's folder (its config.json), not through a model description");
    SwinStated stated;
    bool preprocessStated = false;
    if (src.config && src.config->contains("model_type") && (*src.config)["model_type"].is_string()) {
        readHuggingFaceSwinConfig(src, out, stated);
        preprocessStated = src.preprocessor.has_value();
    } else if (src.config && src.config->contains("architecture") && (*src.config)["architecture"].is_string()) {
        readTimmSwinConfig(src, out, stated);
        preprocessStated = src.config->contains("pretrained_cfg");
    } else {
        out.family = hints.family;
        out.recognition = "tensor names (" + hints.naming + " naming)";
        out.source = "inferred from tensor shapes";
        if (c.hierarchy == Hierarchy::SwinV2)
            fail(weightsPath,
                "a Swin v2 checkpoint alone does not say its windows (no tensor shows them): open the folder "
                "with its config.json (timm's or Hugging Face's)");
        for (int w : tableWindows)
            if (w == 0)
                fail(weightsPath,
                    "a relative_position_bias_table of a non-square window: open the folder with its config.json");
        stated.windows = tableWindows;
        stated.windowSource = "the relative position bias tables' sizes";
        out.guesses.push_back("input size 224x224: no config.json states it (the windows and masks depend on it)");
    }
    for (size_t s = 0; s < c.stages.size(); ++s) {
        c.stages[s].window = stated.windows.at(s);
        c.stages[s].pretrainedWindow = stated.pretrained.empty() ? 0 : stated.pretrained[s];
        if (c.stages[s].window <= 0)
            fail(src.configPath.empty() ? weightsPath : src.configPath,
                "stage " + std::to_string(s) + "'s window must be positive");
    }
    const auto size = stated.imageSize.value_or(std::make_pair(224, 224));
    if (size.first <= 0 || size.second <= 0 || size.first % c.patchSize || size.second % c.patchSize
        || size.first > kMaxSide || size.second > kMaxSide)
        fail(src.configPath.empty() ? weightsPath : src.configPath,
            "image size " + std::to_string(size.first) + "x" + std::to_string(size.second)
                + " is not a positive multiple of the patch size " + std::to_string(c.patchSize));
    c.imageHeight = size.first;
    c.imageWidth = size.second;
    // Each v1 table must be its block's window's, as the grid clips it.
    if (c.hierarchy == Hierarchy::Swin) {
        for (const WindowBlock& g : windowBlocks(c)) {
            const std::string name = block(g.stage, g.index) + "attn.relative_position_bias_table";
            const int64_t rows = int64_t(2 * g.windowH - 1) * (2 * g.windowW - 1);
            if (t.at(name).size(0) != rows || t.at(name).size(1) != g.heads)
                fail(weightsPath,
                    name + ": shape " + shapeString(t.at(name)) + ", expected [" + std::to_string(rows) + ", "
                        + std::to_string(g.heads) + "] for a " + std::to_string(g.windowH) + "x"
                        + std::to_string(g.windowW) + " window (" + stated.windowSource + ", a "
                        + std::to_string(g.gridH) + "x" + std::to_string(g.gridW) + " grid)");
        }
    }
    std::vector<int> depths, heads, windows;
    for (const auto& st : c.stages) {
        depths.push_back(st.depth);
        heads.push_back(st.heads);
        windows.push_back(st.window);
    }
    out.inferred.push_back("stages: blocks " + joined(depths) + ", heads " + joined(heads) + ": the tensors");
    out.inferred.push_back("windows " + joined(windows) + ": " + stated.windowSource);
    if (c.hierarchy == Hierarchy::SwinV2) {
        std::vector<int> pw;
        for (const auto& st : c.stages)
            pw.push_back(st.pretrainedWindow);
        out.inferred.push_back("pretraining windows " + joined(pw) + " (0: the window itself): "
            + (src.config && src.config->contains("model_type") ? std::string("config.json pretrained_window_sizes")
                                                                : "timm's entry or model_args"));
    }
    if (!preprocessStated)
        out.preprocess = defaultPreprocess(c.imageHeight, c.imageWidth);
    fitChannels(out.preprocess, c.channels, src.preprocessorPath.empty() ? weightsPath : src.preprocessorPath);
    if (c.numClasses > 0 && !out.labels.empty() && int(out.labels.size()) != c.numClasses)
        out.labels.clear();
    return out;
}

} // namespace attnscope
