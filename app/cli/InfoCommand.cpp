#include "cli/Commands.h"

#include <attnscope/Model.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

void InfoCommand::addTo(CLI::App& app)
{
    app.add_option("model", model, "model file, folder, description .json or builtin:NAME");
    app.add_option("--description", description, "model description (rename rules and architecture switches)");
    app.add_option("--device", device, "auto, cpu, cuda or cuda:<i>");
    app.add_option("--input-size", inputSize,
                   "H,W or N: the model at another input size (the position embedding resampled, as timm does)");
    app.add_flag("--json", json, "print JSON");
    app.add_flag("--list", list, "list the embedded models (builtin:NAME)");
    app.add_flag("--list-families", listFamilies, "list the model families attnscope runs exactly");
}

// Quadratic attention's learned centres and sharpness, [layer][head] as {dy, dx, alpha}; empty for other attention.
static nlohmann::json quadraticHeads(const attnscope::ModelInfo& i)
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

static std::string twoDecimals(double v)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", v);
    return text;
}

static nlohmann::json infoJson(const attnscope::ModelInfo& i)
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
    return {
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
            { "resize_to", p.resize == attnscope::ResizeMode::ShortestEdge ? nlohmann::json(p.resizeShortest)
                                                                            : nlohmann::json { p.resizeHeight, p.resizeWidth } },
            { "interpolation", toString(p.interpolation) }, { "center_crop", p.centerCrop },
            { "crop", { p.cropHeight, p.cropWidth } }, { "rescale", p.rescale }, { "mean", p.mean }, { "std", p.std } } },
    };
}

int InfoCommand::run() const
{
    if (list) {
        for (const auto& name : attnscope::builtinModelNames())
            std::cout << "builtin:" << name << '\n';
        return 0;
    }
    if (listFamilies) {
        for (const auto& line : attnscope::supportedModelFamilies())
            std::cout << line << '\n';
        return 0;
    }
    if (model.empty())
        return usage("info: give a MODEL (or --list, --list-families)");
    if (auto checked = checkDeviceUsage(device); !checked)
        return usage(checked.message());
    int height = 0, width = 0;
    if (!inputSize.empty()) {
        auto size = parseInputSize(inputSize);
        if (!size)
            return usage(size.message());
        std::tie(height, width) = *size;
    }
    attnscope::LoadOptions options;
    options.device = device;
    options.descriptionPath = description;
    auto loaded = attnscope::Model::load(model, options);
    if (!loaded)
        return fail(loaded.message());
    std::shared_ptr<const attnscope::Model> shown = *loaded;
    if (const int status = atInputSize(shown, model, inputSize, height, width); status != 0)
        return status;
    for (const auto& guess : shown->info().guesses)
        std::cerr << "attnscope-cli: warning: " << model << ": " << guess << '\n';
    const auto j = infoJson(shown->info());
    if (json) {
        std::cout << j.dump(2) << '\n';
        return 0;
    }
    const auto& i = shown->info();
    const auto& c = i.config;
    std::cout << "model        " << i.path << '\n'
              << "weights      " << i.weightsPath << " (" << i.format << ")\n"
              << "family       " << i.family << ", " << i.naming << " naming\n"
              << "recognised   " << i.recognition << '\n'
              << "config       " << i.configSource << '\n';
    for (size_t k = 0; k < i.inferred.size(); ++k)
        std::cout << (k ? "             " : "decided      ") << i.inferred[k] << '\n';
    // Not a warning (foreign configs carry training settings): listed so that none is thought to have been applied.
    for (const auto& [file, keys] : i.ignoredConfigKeys) {
        std::cout << "ignored config keys (" << file << "):";
        for (size_t k = 0; k < keys.size(); ++k)
            std::cout << (k ? ", " : " ") << keys[k];
        std::cout << '\n';
    }
    std::cout << "layers       " << c.depth << "\nheads        " << c.numHeads << " (head width " << c.headDim()
              << (c.attnWidth() != c.width ? ", attention width " + std::to_string(c.attnWidth()) : std::string()) << ")\n"
              << "width        " << c.width << " (MLP " << c.mlpHidden << ", " << (c.mlpGated ? "gated, " : "") << toString(c.activation) << ")\n"
              << "patch size   " << c.patchSize
              << (c.patchEmbedding != attnscope::PatchEmbedding::Convolution
                      ? std::string(" (") + toString(c.patchEmbedding) + (c.patchNormIn ? ", normed first" : "") + ")"
                      : std::string())
              << (c.patchNormOut ? ", embedded patches normed" : "") << "\ninput size   " << c.imageHeight << "x" << c.imageWidth
              << (c.imageHeight != i.trainedHeight || c.imageWidth != i.trainedWidth
                      ? " (trained at " + std::to_string(i.trainedHeight) + "x" + std::to_string(i.trainedWidth)
                          + (c.posEmbed ? "; position embedding resampled bicubically)" : "; no absolute position embedding)")
                      : std::string())
              << "\ngrid         " << c.gridHeight() << "x" << c.gridWidth() << " = " << c.numPatches() << " patches\n"
              << "prefix       " << j["prefix_tokens"].dump() << " (" << c.numTokens() << " tokens)\n"
              << "channels     " << c.channels << '\n'
              << "classes      " << c.numClasses << (c.headIsProjection ? " (embedding projection)" : "") << '\n'
              << "parameters   " << i.parameterCount << '\n'
              << "norms        " << toString(c.blockNorm) << "-norm blocks, eps " << c.layerNormEps << ", final norm "
              << toString(c.finalNorm) << (c.preNorm ? ", pre-LN" : "") << (c.layerScale ? ", layer scale" : "") << '\n'
              << "pooling      " << toString(c.pooling) << '\n'
              << "attention    " << toString(c.attention) << (c.block == attnscope::BlockKind::AttentionOnly ? ", attention-only blocks" : "")
              << (c.neutrenoLambda != 0 ? ", NeuTRENO lambda " + std::to_string(c.neutrenoLambda) : std::string())
              << (c.boostT != 0 ? ", Boost t " + std::to_string(c.boostT) : std::string()) << '\n'
              << "preprocess   " << j["preprocessing"].dump() << '\n';
    for (size_t l = 0; l < i.quadraticHeads.size(); ++l) {
        std::cout << (l ? "             " : "quadratic    ") << "layer " << l + 1 << " (dy, dx) alpha:";
        for (const auto& h : i.quadraticHeads[l])
            std::cout << ' ' << twoDecimals(h.dy) << ',' << twoDecimals(h.dx) << ' ' << twoDecimals(h.alpha) << ';';
        std::cout << '\n';
    }
    std::cout << "device       " << i.device << '\n';
    return 0;
}
