#include "OutputFolder.h"

#include <attnscope/AnalysisRun.h>
#include <attnscope/Files.h>

#include <filesystem>

namespace fs = std::filesystem;

std::string slugOf(const std::string& label)
{
    std::string slug;
    for (char c : label) {
        if (std::isalnum(static_cast<unsigned char>(c)) || c == '.')
            slug += c;
        else if (!slug.empty() && slug.back() != '-')
            slug += '-';
    }
    while (!slug.empty() && slug.back() == '-')
        slug.pop_back();
    return slug.empty() ? "run" : slug;
}

nlohmann::json runModelRecord(const attnscope::ModelInfo& i, const std::string& label)
{
    nlohmann::json model = { { "name", label }, { "path", i.path }, { "weights", i.weightsPath }, { "naming", i.naming },
                             { "family", i.family }, { "layers", i.config.depth }, { "heads", i.config.numHeads },
                             { "width", i.config.width }, { "patch_size", i.config.patchSize }, { "classes", i.config.numClasses },
                             { "attention", attnscope::toString(i.config.attention) },
                             { "input_size", { i.config.imageHeight, i.config.imageWidth } },
                             { "trained_input_size", { i.trainedHeight, i.trainedWidth } } };
    if (i.config.hierarchical())
        model["block_stages"] = attnscope::blockStagesOf(i.config);
    return model;
}

attnscope::AnalysisSummary summaryOf(const RunOutput& run)
{
    auto s = attnscope::summarise(run.stats, run.images, run.radius);
    s.model = run.model.value("name", run.label);
    s.label = run.label;
    s.patchSize = run.patchSize;
    if (run.model.contains("block_stages") && run.model["block_stages"].is_array())
        for (const auto& stage : run.model["block_stages"])
            s.blockStages.push_back(stage.is_number_integer() ? stage.get<int>() : 0);
    // Only what differs from a plain run, so that figure subtitles stay short.
    std::string opts;
    const auto add = [&](const std::string& text) { opts += (opts.empty() ? "" : ", ") + text; };
    const auto number = [](double v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", v);
        return std::string(buf);
    };
    if (run.options.value("neutreno_lambda", 0.0) != 0.0)
        add("NeuTRENO λ " + number(run.options.value("neutreno_lambda", 0.0)));
    if (run.options.value("boost_t", 0.0) != 0.0)
        add("Boost t " + number(run.options.value("boost_t", 0.0)));
    if (!run.options.value("noise", std::string()).empty())
        add(run.options.value("noise", std::string()) + ", seed " + std::to_string(run.options.value("seed", 0)));
    s.options = opts;
    s.ablationMode = run.options.value("ablation", std::string());
    return s;
}

attnscope::Status writeRunOutput(const std::string& outDir, const RunOutput& run)
{
    const fs::path dir = fs::path(outDir) / run.folder;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
        return attnscope::Error { dir.string() + ": cannot create (" + ec.message() + ")" };
    nlohmann::json meta = { { "label", run.label }, { "model", run.model }, { "options", run.options },
                            { "images", run.images }, { "radius", run.radius }, { "patch_size", run.patchSize } };
    if (auto w = attnscope::writeTextFile((dir / "run.json").string(), meta.dump(2) + "\n"); !w)
        return w;
    if (auto w = attnscope::writeTextFile((dir / "stats.json").string(), attnscope::statisticsToJson(run.stats)); !w)
        return w;
    if (auto csvs = attnscope::writeSummaryCsvs(dir.string(), summaryOf(run)); !csvs)
        return csvs.error();
    return attnscope::Done {};
}
