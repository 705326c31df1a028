#include "cli/Commands.h"

#include <attnscope/Model.h>
#include <attnscope/ModelInfoJson.h>

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

static std::string twoDecimals(double v)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", v);
    return text;
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
    options.acceptHierarchical = true; // info reads no trace
    auto loaded = attnscope::Model::load(model, options);
    if (!loaded)
        return fail(loaded.message());
    std::shared_ptr<const attnscope::Model> shown = *loaded;
    if (const int status = atInputSize(shown, model, inputSize, height, width); status != 0)
        return status;
    for (const auto& guess : shown->info().guesses)
        std::cerr << "attnscope-cli: warning: " << model << ": " << guess << '\n';
    const auto j = nlohmann::json::parse(attnscope::modelInfoJson(shown->info()));
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
    if (c.hierarchical()) {
        // Per stage: its blocks, heads, width and window, and the grid its blocks see at this input size.
        const auto blocks = attnscope::windowBlocks(c);
        std::cout << "stages       " << c.stages.size() << " (" << toString(c.hierarchy) << ", blocks " << c.depth << ")\n";
        size_t first = 0;
        for (size_t s = 0; s < c.stages.size(); ++s) {
            const auto& st = c.stages[s];
            const auto& g = blocks[first];
            std::cout << "  stage " << s + 1 << "    " << st.depth << " blocks, " << st.heads << " heads, width " << st.width
                      << " (MLP " << st.mlpHidden << "), grid " << g.gridH << "x" << g.gridW << ", window " << g.windowH << "x"
                      << g.windowW << " (" << g.numWindows() << " windows"
                      << (st.window != g.windowH || st.window != g.windowW ? ", the grid clips the window " + std::to_string(st.window) : std::string())
                      << (blocks.size() > first + 1 && (blocks[first + 1].shiftH || blocks[first + 1].shiftW)
                              ? ", odd blocks shifted by " + std::to_string(blocks[first + 1].shiftH)
                              : std::string(", not shifted"))
                      << (st.pretrainedWindow ? ", pretraining window " + std::to_string(st.pretrainedWindow) : std::string()) << ")\n";
            first += size_t(st.depth);
        }
    }
    const std::string lastStage = c.hierarchical() ? "the last stage's; " : "";
    std::cout << "layers       " << c.depth << "\nheads        " << c.numHeads << " (" << lastStage << "head width " << c.headDim()
              << (c.attnWidth() != c.width ? ", attention width " + std::to_string(c.attnWidth()) : std::string()) << ")\n"
              << "width        " << c.width << " (" << lastStage << "MLP " << c.mlpHidden << ", " << (c.mlpGated ? "gated, " : "") << toString(c.activation) << ")\n"
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
              << "attention    " << toString(c.attention)
              << (c.hierarchy == attnscope::Hierarchy::Swin     ? ", in windows, with a relative position bias table"
                  : c.hierarchy == attnscope::Hierarchy::SwinV2 ? ", in windows, cosine logits with a continuous position bias"
                                                                : "") << (c.block == attnscope::BlockKind::AttentionOnly ? ", attention-only blocks" : "")
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
