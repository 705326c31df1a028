#include "cli/Commands.h"
#include "FigureDrawing.h"
#include "Figures.h"
#include "OutputFolder.h"

#include <attnscope/AnalysisRun.h>
#include <attnscope/Files.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p)
{
    std::ifstream in(p);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The options that shape a shard's numbers: all but the figure formats, whose default differs between the Qt build
// and the headless one (shards of both builds merge).
nlohmann::json analysisOptions(const nlohmann::json& manifest)
{
    nlohmann::json options = manifest.value("options", nlohmann::json::object());
    options.erase("formats");
    return options;
}

} // namespace

void MergeCommand::addTo(CLI::App& app)
{
    app.add_option("dirs", dirs, "output folders of `analyze --shard K/N` runs")->required();
    app.add_option("--out", out, "merged output folder")->required();
    formats = defaultFigureFormats();
    app.add_option("--formats", formats, "figure formats of the redrawn figures: png,svg,pdf (none: their CSVs only)")
        ->capture_default_str();
}

int MergeCommand::run() const
{
    auto asked = parseFigureFormats(formats);
    if (!asked)
        return usage(asked.message());
    std::map<std::string, RunOutput> runs; // by folder
    std::vector<std::string> order;
    nlohmann::json images = nlohmann::json::array();
    nlohmann::json firstManifest;
    std::string predictions;
    bool complete = true;
    for (const auto& d : dirs) {
        const fs::path manifestPath = fs::path(d) / "manifest.json";
        if (!fs::is_regular_file(manifestPath))
            return fail(d + ": no manifest.json (not an attnscope-cli analyze output folder)");
        nlohmann::json manifest;
        try {
            manifest = nlohmann::json::parse(slurp(manifestPath));
        } catch (const nlohmann::json::exception& e) {
            return fail(manifestPath.string() + ": invalid JSON (" + e.what() + ")");
        }
        if (firstManifest.is_null())
            firstManifest = manifest;
        else if (manifest["model"]["sha256"] != firstManifest["model"]["sha256"]
                 || analysisOptions(manifest) != analysisOptions(firstManifest))
            return fail(d + ": made with another model or other options than " + dirs.front() + "; shards must match");
        complete = complete && manifest.value("complete", false);
        for (const auto& i : manifest["images"])
            images.push_back(i);
        for (const auto& r : manifest["runs"]) {
            const std::string folder = r["folder"];
            const fs::path runDir = fs::path(d) / folder;
            auto stats = attnscope::statisticsFromJson(slurp(runDir / "stats.json"));
            if (!stats)
                return fail((runDir / "stats.json").string() + ": " + stats.message());
            const auto meta = nlohmann::json::parse(slurp(runDir / "run.json"));
            auto [it, inserted] = runs.try_emplace(folder);
            RunOutput& run = it->second;
            if (inserted) {
                order.push_back(folder);
                run.label = r["label"];
                run.folder = folder;
                run.model = r["model"];
                run.options = r["options"];
                run.radius = meta.value("radius", 3);
                run.patchSize = meta.value("patch_size", 0);
            }
            attnscope::mergeInto(run.stats, *stats);
            run.images += meta.value("images", int64_t(0));
        }
        const std::string p = slurp(fs::path(d) / "predictions.csv");
        if (!p.empty())
            predictions += predictions.empty() ? p : p.substr(p.find('\n') + 1);
    }
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec)
        return fail(out + ": cannot create (" + ec.message() + ")");
    std::vector<RunOutput> outputs;
    for (const auto& folder : order) {
        if (auto w = writeRunOutput(out, runs[folder]); !w)
            return fail(w.message());
        outputs.push_back(runs[folder]);
    }
    if (!predictions.empty())
        if (auto w = attnscope::writeTextFile((fs::path(out) / "predictions.csv").string(), predictions); !w)
            return fail(w.message());
    const std::vector<std::string> figureFormats = formatsToDraw(*asked);
    if (auto drawn = writeFigures(out, outputs, ImageFigures {}, nullptr, figureFormats); !drawn)
        return fail(drawn.message());
    std::sort(images.begin(), images.end(), [](const auto& a, const auto& b) { return a.value("index", 0) < b.value("index", 0); });
    nlohmann::json manifest = firstManifest;
    manifest["images"] = images;
    manifest["complete"] = complete;
    manifest["merged_from"] = dirs;
    manifest["figures"] = figuresRecord(figureFormats);
    manifest["shard"] = { { "index", 1 }, { "count", 1 }, { "images_total", firstManifest["shard"].value("images_total", 0) } };
    if (auto w = attnscope::writeTextFile((fs::path(out) / "manifest.json").string(), manifest.dump(2) + "\n"); !w)
        return fail(w.message());
    noteUndrawnFigures(*asked);
    std::fprintf(stderr, "attnscope-cli: merged %zu folders (%zu images); results in %s\n", dirs.size(), images.size(), out.c_str());
    return 0;
}
