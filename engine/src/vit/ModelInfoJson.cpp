#include <attnscope/ModelInfoJson.h>

#include <nlohmann/json.hpp>

namespace attnscope {

namespace {

// Quadratic attention's learned centres and sharpness, [layer][head] as {dy, dx, alpha}; empty for other attention.
nlohmann::json quadraticHeads(const ModelInfo& i)
{
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& heads : i.quadraticHeads) {
        nlohmann::json row = nlohmann::json::array();
        for (const auto& h : heads)
            row.push_back({ { "dy", h.dy }, { "dx", h.dx }, { "alpha", h.alpha } });
        layers.push_back(row);
    }
    return layers;
}

} // namespace

std::string modelInfoJson(const ModelInfo& i)
{
    const auto& c = i.config;
    const auto& p = i.preprocess;
    nlohmann::json prefix = nlohmann::json::array();
    if (c.classToken)
        prefix.push_back("cls");
    if (c.distToken)
        prefix.push_back("dist");
    for (int r = 0; r < c.numRegisters; ++r)
        prefix.push_back("reg" + std::to_string(r));
    const nlohmann::json j = {
        { "path", i.path }, { "weights", i.weightsPath }, { "format", i.format }, { "naming", i.naming },
        { "family", i.family }, { "recognition", i.recognition }, { "inferred", i.inferred },
        { "config_source", i.configSource }, { "guesses", i.guesses },
        { "ignored_config_keys", i.ignoredConfigKeys }, { "device", i.device },
        { "layers", c.depth }, { "heads", c.numHeads }, { "width", c.width }, { "head_dim", c.headDim() },
        { "mlp_hidden", c.mlpHidden }, { "mlp_gated", c.mlpGated }, { "patch_size", c.patchSize },
        { "input_size", { c.imageHeight, c.imageWidth } }, { "trained_input_size", { i.trainedHeight, i.trainedWidth } },
        { "grid", { c.gridHeight(), c.gridWidth() } },
        { "prefix_tokens", prefix }, { "tokens", c.numTokens() }, { "channels", c.channels },
        { "classes", c.numClasses }, { "head_is_projection", c.headIsProjection },
        { "parameters", i.parameterCount }, { "activation", toString(c.activation) },
        { "layer_norm_eps", c.layerNormEps }, { "block_norm", toString(c.blockNorm) },
        { "final_norm", toString(c.finalNorm) }, { "pooling", toString(c.pooling) },
        { "layer_scale", c.layerScale }, { "pre_norm", c.preNorm },
        { "patch_embedding", toString(c.patchEmbedding) }, { "patch_norm_in", c.patchNormIn },
        { "patch_norm_out", c.patchNormOut }, { "attention_width", c.attnWidth() },
        { "position", c.positionScheme() },
        { "pos_embed_includes_prefix", c.posEmbedHasPrefix },
        { "attention", toString(c.attention) }, { "block", toString(c.block) },
        { "neutreno_lambda", c.neutrenoLambda }, { "boost_t", c.boostT },
        { "labels", i.labels }, { "quadratic_heads", quadraticHeads(i) },
        { "preprocessing",
          { { "source", p.source }, { "resize", toString(p.resize) },
            { "resize_to", p.resize == ResizeMode::ShortestEdge ? nlohmann::json(p.resizeShortest)
                                                                            : nlohmann::json { p.resizeHeight, p.resizeWidth } },
            { "interpolation", toString(p.interpolation) }, { "center_crop", p.centerCrop },
            { "crop", { p.cropHeight, p.cropWidth } }, { "rescale", p.rescale }, { "mean", p.mean }, { "std", p.std } } },
    };
    return j.dump();
}

} // namespace attnscope
