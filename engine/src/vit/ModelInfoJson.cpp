#include <attnscope/ModelInfoJson.h>

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <tuple>
#include <utility>
#include <limits>

namespace attnscope {

namespace {

using json = nlohmann::json;

// ModelConfig::Rope has no toString of its own: the names config sources and timm's registry give it.
const char* ropeName(ModelConfig::Rope r)
{
    switch (r) {
    case ModelConfig::Rope::None: return "none";
    case ModelConfig::Rope::DinoV3: return "dinov3";
    case ModelConfig::Rope::Axial: return "axial";
    case ModelConfig::Rope::Mixed: return "mixed";
    }
    return "?";
}

// Quadratic attention's learned centres and sharpness, [layer][head] as {dy, dx, alpha}; empty for other attention.
json quadraticHeads(const ModelInfo& i)
{
    json layers = json::array();
    for (const auto& heads : i.quadraticHeads) {
        json row = json::array();
        for (const auto& h : heads)
            row.push_back({ { "dy", h.dy }, { "dx", h.dx }, { "alpha", h.alpha } });
        layers.push_back(row);
    }
    return layers;
}

json preprocessing(const PreprocessConfig& p)
{
    return { { "source", p.source }, { "resize", toString(p.resize) },
             { "resize_to", p.resize == ResizeMode::ShortestEdge ? json(p.resizeShortest) : json { p.resizeHeight, p.resizeWidth } },
             // resize_to shows the size the mode uses; both are kept, since another input size may switch modes.
             { "resize_shortest", p.resizeShortest }, { "resize_size", { p.resizeHeight, p.resizeWidth } },
             { "interpolation", toString(p.interpolation) }, { "center_crop", p.centerCrop },
             { "crop", { p.cropHeight, p.cropWidth } }, { "crop_offset_floor", p.cropOffsetFloor }, { "crop_pct", p.cropPct },
             { "rescale", p.rescale }, { "mean", p.mean }, { "std", p.std } };
}

// What modelInfoFromJson throws, caught at its end: one line naming the key.
struct BadKey {
    std::string message;
};

// Reads the keys of one object of the description ("preprocessing." before the nested ones' names).
class Reader {
public:
    Reader(const json& object, std::string prefix)
        : m_object(object)
        , m_prefix(std::move(prefix))
    {
    }

    const json& at(const char* key) const
    {
        if (!m_object.contains(key))
            throw BadKey { "\"" + m_prefix + key + "\" is missing" };
        return m_object[key];
    }
    [[noreturn]] void bad(const char* key, const json& v, const std::string& wanted) const
    {
        std::string shown = v.dump();
        if (shown.size() > 40)
            shown = shown.substr(0, 40) + "...";
        throw BadKey { "\"" + m_prefix + key + "\" is " + shown + ", not " + wanted };
    }

    std::string text(const char* key) const
    {
        const json& v = at(key);
        if (!v.is_string())
            bad(key, v, "a string");
        return v.get<std::string>();
    }
    bool flag(const char* key) const
    {
        const json& v = at(key);
        if (!v.is_boolean())
            bad(key, v, "true or false");
        return v.get<bool>();
    }
    int64_t big(const json& v, const char* key) const
    {
        if (!v.is_number_integer())
            bad(key, v, "a whole number");
        return v.get<int64_t>();
    }
    int whole(const json& v, const char* key) const
    {
        const int64_t n = big(v, key);
        if (n < std::numeric_limits<int>::min() || n > std::numeric_limits<int>::max())
            bad(key, v, "a whole number of int's range");
        return int(n);
    }
    int whole(const char* key) const { return whole(at(key), key); }
    double real(const json& v, const char* key) const
    {
        if (!v.is_number())
            bad(key, v, "a number");
        return v.get<double>();
    }
    double real(const char* key) const { return real(at(key), key); }
    // [a, b] of whole numbers (an input size, a grid).
    std::pair<int, int> pair(const char* key) const
    {
        const json& v = at(key);
        if (!v.is_array() || v.size() != 2)
            bad(key, v, "[height, width]");
        return { whole(v[0], key), whole(v[1], key) };
    }
    std::vector<std::string> texts(const json& v, const char* key) const
    {
        if (!v.is_array())
            bad(key, v, "a list of strings");
        std::vector<std::string> out;
        for (const json& e : v) {
            if (!e.is_string())
                bad(key, v, "a list of strings");
            out.push_back(e.get<std::string>());
        }
        return out;
    }
    std::vector<std::string> texts(const char* key) const { return texts(at(key), key); }
    std::vector<double> reals(const char* key) const
    {
        const json& v = at(key);
        if (!v.is_array())
            bad(key, v, "a list of numbers");
        std::vector<double> out;
        for (const json& e : v)
            out.push_back(real(e, key));
        return out;
    }
    // One of an enumeration's values, by the name `name` gives it.
    template <typename E, typename Name>
    E choice(const char* key, std::initializer_list<E> values, Name name) const
    {
        const std::string given = text(key);
        std::string names;
        for (E e : values) {
            if (given == name(e))
                return e;
            names += std::string(names.empty() ? "" : ", ") + name(e);
        }
        bad(key, at(key), "one of " + names);
    }

private:
    const json& m_object;
    std::string m_prefix;
};

template <typename E>
const char* named(E e)
{
    return toString(e);
}

ModelConfig readConfig(const Reader& r)
{
    ModelConfig c;
    c.depth = r.whole("layers");
    c.numHeads = r.whole("heads");
    c.width = r.whole("width");
    c.mlpHidden = r.whole("mlp_hidden");
    c.mlpGated = r.flag("mlp_gated");
    c.mlpNorm = r.flag("mlp_norm");
    c.attnNorm = r.flag("attn_norm");
    c.poolMlpHidden = r.whole("pool_mlp_hidden");
    c.patchSize = r.whole("patch_size");
    std::tie(c.imageHeight, c.imageWidth) = r.pair("input_size");
    c.classToken = r.flag("class_token");
    c.distToken = r.flag("dist_token");
    c.numRegisters = r.whole("registers");
    c.channels = r.whole("channels");
    c.numClasses = r.whole("classes");
    c.headIsProjection = r.flag("head_is_projection");
    c.activation = r.choice("activation", { Activation::Gelu, Activation::GeluTanh, Activation::QuickGelu, Activation::Relu, Activation::Silu },
                            named<Activation>);
    c.layerNormEps = r.real("layer_norm_eps");
    c.blockNorm = r.choice("block_norm", { BlockNorm::Pre, BlockNorm::Post }, named<BlockNorm>);
    c.finalNorm = r.choice("final_norm", { FinalNorm::AllTokens, FinalNorm::Pooled, FinalNorm::None }, named<FinalNorm>);
    c.pooling = r.choice("pooling", { Pooling::Token, Pooling::PatchMean, Pooling::TokenAndPatchMean, Pooling::Distilled, Pooling::AllTokensMean,
                                      Pooling::AttentionPool },
                         named<Pooling>);
    c.layerScale = r.flag("layer_scale");
    c.preNorm = r.flag("pre_norm");
    c.patchEmbedding = r.choice("patch_embedding", { PatchEmbedding::Convolution, PatchEmbedding::LinearChannelsLast, PatchEmbedding::LinearChannelsFirst },
                                named<PatchEmbedding>);
    c.patchNormIn = r.flag("patch_norm_in");
    c.patchNormOut = r.flag("patch_norm_out");
    c.patchBias = r.flag("patch_bias");
    c.qkvBias = r.flag("qkv_bias");
    c.projBias = r.flag("proj_bias");
    c.attentionWidth = r.whole("attention_width_stated");
    c.posEmbed = r.flag("pos_embed");
    c.posEmbedHasPrefix = r.flag("pos_embed_includes_prefix");
    c.posFixedSinCos = r.flag("pos_fixed_sincos");
    c.relativePositionBias = r.flag("relative_position_bias");
    c.rope = r.choice("rope", { ModelConfig::Rope::None, ModelConfig::Rope::DinoV3, ModelConfig::Rope::Axial, ModelConfig::Rope::Mixed }, ropeName);
    c.ropeTemperature = r.real("rope_temperature");
    c.ropeXY = r.flag("rope_xy");
    c.ropeHalf = r.flag("rope_half");
    std::tie(c.ropeReferenceGridH, c.ropeReferenceGridW) = r.pair("rope_reference_grid");
    c.attention = r.choice("attention", { AttentionKind::Standard, AttentionKind::Bilateral, AttentionKind::Quadratic }, named<AttentionKind>);
    c.block = r.choice("block", { BlockKind::Standard, BlockKind::AttentionOnly }, named<BlockKind>);
    c.neutrenoLambda = r.real("neutreno_lambda");
    c.boostT = r.real("boost_t");
    c.hierarchy = r.choice("hierarchy", { Hierarchy::None, Hierarchy::Swin, Hierarchy::SwinV2 }, named<Hierarchy>);
    const json& stages = r.at("stages");
    if (!stages.is_array())
        r.bad("stages", stages, "a list of stages");
    for (const json& s : stages) {
        if (!s.is_object())
            r.bad("stages", s, "{depth, heads, width, mlp_hidden, window, pretrained_window}");
        const Reader st(s, "stages.");
        c.stages.push_back({ st.whole("depth"), st.whole("heads"), st.whole("width"), st.whole("mlp_hidden"), st.whole("window"),
                             st.whole("pretrained_window") });
    }
    return c;
}

json stagesJson(const ModelConfig& c)
{
    json out = json::array();
    for (const SwinStage& s : c.stages)
        out.push_back({ { "depth", s.depth }, { "heads", s.heads }, { "width", s.width }, { "mlp_hidden", s.mlpHidden },
                        { "window", s.window }, { "pretrained_window", s.pretrainedWindow } });
    return out;
}

PreprocessConfig readPreprocessing(const Reader& top)
{
    const json& object = top.at("preprocessing");
    if (!object.is_object())
        top.bad("preprocessing", object, "an object");
    const Reader r(object, "preprocessing.");
    PreprocessConfig p;
    p.source = r.text("source");
    p.resize = r.choice("resize", { ResizeMode::ShortestEdge, ResizeMode::Exact, ResizeMode::None, ResizeMode::Cover }, named<ResizeMode>);
    p.resizeShortest = r.whole("resize_shortest");
    std::tie(p.resizeHeight, p.resizeWidth) = r.pair("resize_size");
    p.interpolation = r.choice("interpolation", { Interpolation::Nearest, Interpolation::Bilinear, Interpolation::Bicubic }, named<Interpolation>);
    p.centerCrop = r.flag("center_crop");
    std::tie(p.cropHeight, p.cropWidth) = r.pair("crop");
    p.cropOffsetFloor = r.flag("crop_offset_floor");
    p.cropPct = r.real("crop_pct");
    p.rescale = r.real("rescale");
    p.mean = r.reals("mean");
    p.std = r.reals("std");
    return p;
}

std::vector<std::vector<ModelInfo::QuadraticHead>> readQuadraticHeads(const Reader& r)
{
    const json& layers = r.at("quadratic_heads");
    std::vector<std::vector<ModelInfo::QuadraticHead>> out;
    if (!layers.is_array())
        r.bad("quadratic_heads", layers, "a list of layers");
    for (const json& heads : layers) {
        if (!heads.is_array())
            r.bad("quadratic_heads", heads, "a list of heads");
        out.emplace_back();
        for (const json& h : heads) {
            if (!h.is_object())
                r.bad("quadratic_heads", h, "{dy, dx, alpha}");
            const Reader head(h, "quadratic_heads.");
            out.back().push_back({ head.real("dy"), head.real("dx"), head.real("alpha") });
        }
    }
    return out;
}

} // namespace

std::string modelInfoJson(const ModelInfo& i)
{
    const auto& c = i.config;
    json prefix = json::array();
    if (c.classToken)
        prefix.push_back("cls");
    if (c.distToken)
        prefix.push_back("dist");
    for (int r = 0; r < c.numRegisters; ++r)
        prefix.push_back("reg" + std::to_string(r));
    // Values made from others (head_dim, grid, prefix_tokens, tokens, attention_width, position) are for people and
    // scripts; the plain fields beside them (class_token, registers, attention_width_stated, rope, ...) are what
    // modelInfoFromJson reads.
    const json j = {
        { "path", i.path }, { "weights", i.weightsPath }, { "format", i.format }, { "naming", i.naming },
        { "family", i.family }, { "recognition", i.recognition }, { "inferred", i.inferred },
        { "config_source", i.configSource }, { "guesses", i.guesses },
        { "ignored_config_keys", i.ignoredConfigKeys }, { "device", i.device },
        { "layers", c.depth }, { "heads", c.numHeads }, { "width", c.width }, { "head_dim", c.headDim() },
        { "mlp_hidden", c.mlpHidden }, { "mlp_gated", c.mlpGated }, { "mlp_norm", c.mlpNorm }, { "attn_norm", c.attnNorm },
        { "pool_mlp_hidden", c.poolMlpHidden }, { "patch_size", c.patchSize },
        { "input_size", { c.imageHeight, c.imageWidth } }, { "trained_input_size", { i.trainedHeight, i.trainedWidth } },
        { "grid", { c.gridHeight(), c.gridWidth() } },
        { "prefix_tokens", prefix }, { "class_token", c.classToken }, { "dist_token", c.distToken }, { "registers", c.numRegisters },
        { "tokens", c.numTokens() }, { "channels", c.channels },
        { "classes", c.numClasses }, { "head_is_projection", c.headIsProjection },
        { "parameters", i.parameterCount }, { "activation", toString(c.activation) },
        { "layer_norm_eps", c.layerNormEps }, { "block_norm", toString(c.blockNorm) },
        { "final_norm", toString(c.finalNorm) }, { "pooling", toString(c.pooling) },
        { "layer_scale", c.layerScale }, { "pre_norm", c.preNorm },
        { "patch_embedding", toString(c.patchEmbedding) }, { "patch_norm_in", c.patchNormIn },
        { "patch_norm_out", c.patchNormOut }, { "patch_bias", c.patchBias }, { "qkv_bias", c.qkvBias }, { "proj_bias", c.projBias },
        { "attention_width", c.attnWidth() }, { "attention_width_stated", c.attentionWidth },
        { "position", c.positionScheme() }, { "pos_embed", c.posEmbed },
        { "pos_embed_includes_prefix", c.posEmbedHasPrefix }, { "pos_fixed_sincos", c.posFixedSinCos },
        { "relative_position_bias", c.relativePositionBias }, { "rope", ropeName(c.rope) },
        { "rope_temperature", c.ropeTemperature }, { "rope_xy", c.ropeXY }, { "rope_half", c.ropeHalf },
        { "rope_reference_grid", { c.ropeReferenceGridH, c.ropeReferenceGridW } },
        { "attention", toString(c.attention) }, { "block", toString(c.block) },
        { "neutreno_lambda", c.neutrenoLambda }, { "boost_t", c.boostT },
        { "hierarchy", toString(c.hierarchy) }, { "stages", stagesJson(c) },
        { "labels", i.labels }, { "quadratic_heads", quadraticHeads(i) },
        { "preprocessing", preprocessing(i.preprocess) },
    };
    return j.dump();
}

Result<ModelInfo> modelInfoFromJson(const std::string& text)
{
    const json j = json::parse(text, nullptr, false);
    if (j.is_discarded())
        return Error { "model info: not JSON" };
    if (!j.is_object())
        return Error { "model info: not a JSON object" };
    try {
        const Reader r(j, "");
        ModelInfo i;
        i.path = r.text("path");
        i.weightsPath = r.text("weights");
        i.format = r.text("format");
        i.naming = r.text("naming");
        i.family = r.text("family");
        i.recognition = r.text("recognition");
        i.inferred = r.texts("inferred");
        i.configSource = r.text("config_source");
        i.guesses = r.texts("guesses");
        const json& ignored = r.at("ignored_config_keys");
        if (!ignored.is_object())
            r.bad("ignored_config_keys", ignored, "an object of lists");
        for (const auto& [file, keys] : ignored.items())
            i.ignoredConfigKeys[file] = r.texts(keys, "ignored_config_keys");
        i.device = r.text("device");
        i.config = readConfig(r);
        std::tie(i.trainedHeight, i.trainedWidth) = r.pair("trained_input_size");
        i.preprocess = readPreprocessing(r);
        i.labels = r.texts("labels");
        i.parameterCount = r.big(r.at("parameters"), "parameters");
        i.quadraticHeads = readQuadraticHeads(r);
        return i;
    } catch (const BadKey& e) {
        return Error { "model info: " + e.message };
    }
}

} // namespace attnscope
