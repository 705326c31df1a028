#include "cli/Commands.h"
#include "FigureDrawing.h"
#include "Figures.h"
#include "RunSpec.h"
#include "cli/Progress.h"
#include "Report.h"

#include <attnscope/AnalysisRun.h>
#include <attnscope/Files.h>
#include <attnscope/Model.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <type_traits>
#include <variant>


namespace {

std::atomic<bool> g_interrupted { false };

extern "C" void onInterrupt(int) { g_interrupted = true; }

} // namespace

void AnalyzeCommand::addTo(CLI::App& app)
{
    app.add_option("--model", model, "model file, folder, description .json or builtin:NAME")->required();
    app.add_option("--compare", compare, "a second model, analysed side by side");
    app.add_option("--description", description, "model description (rename rules and architecture switches)");
    app.add_option("--images", images, "image files, folders (recursive) or list files")->required();
    app.add_option("--input-size", inputSize,
                   "H,W or N: run the models at this input size instead of the trained one (multiples of the patch "
                   "size; the position embedding is resampled as timm does, the images resized and cropped to it)");
    app.add_option("--out", out, "output folder")->capture_default_str();
    formats = defaultFigureFormats();
    app.add_option("--formats", formats, "figure formats: png,svg,pdf (none: the data only)")->capture_default_str();
    app.add_option("--shard", shard, "K/N: analyse every N-th image from the K-th (1-based), for job arrays");
    app.add_option("--device", device, "auto, cpu, cuda or cuda:<i> (auto: a GPU when there is one)")->capture_default_str();
    // The run's options, from the one table of them (report/RunSpec.h), in its order.
    for (const RunOption& o : runOptions()) {
        const std::string flag = std::string("--") + o.cli;
        std::visit(
            [&](auto member) {
                auto& value = spec.*member;
                using T = std::decay_t<decltype(value)>;
                if constexpr (std::is_same_v<T, bool>)
                    app.add_flag(flag, value, o.help);
                else if constexpr (std::is_same_v<T, std::optional<double>> || std::is_same_v<T, std::vector<std::string>>)
                    app.add_option(flag, value, o.help);
                else
                    app.add_option(flag, value, o.help)->capture_default_str();
            },
            o.field);
    }
    app.add_option("--threads", threads, "CPU threads for the forward (0: the engine's default)");
}

int AnalyzeCommand::run() const
{
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    attnscope::setNumThreads(threads);

    // --- options
    const auto dashed = [](const std::string& name) { return "--" + name; };
    ReportRequest request;
    if (auto checked = applyRunSpec(spec, dashed, request); !checked)
        return usage(checked.message());
    int shardIndex = 1, shardCount = 1;
    if (!shard.empty() && (std::sscanf(shard.c_str(), "%d/%d", &shardIndex, &shardCount) != 2 || shardCount < 1
                           || shardIndex < 1 || shardIndex > shardCount))
        return usage("--shard " + shard + ": expected K/N with 1 <= K <= N");
    auto figureFormats = parseFigureFormats(formats);
    if (!figureFormats)
        return usage(figureFormats.message());

    if (auto checked = checkDeviceUsage(device); !checked)
        return usage(checked.message());
    int inputHeight = 0, inputWidth = 0;
    if (!inputSize.empty()) {
        auto size = parseInputSize(inputSize);
        if (!size)
            return usage(size.message());
        std::tie(inputHeight, inputWidth) = *size;
    }

    // --- models
    attnscope::LoadOptions loadOptions;
    loadOptions.device = device;
    loadOptions.descriptionPath = description;
    loadOptions.acceptHierarchical = true; // the run refuses, in one line, the analyses a Swin does not take yet
    auto loaded = attnscope::Model::load(model, loadOptions);
    if (!loaded)
        return fail(loaded.message());
    if (const int status = atInputSize(*loaded, model, inputSize, inputHeight, inputWidth); status != 0)
        return status;
    for (const auto& guess : (*loaded)->info().guesses)
        std::fprintf(stderr, "attnscope-cli: warning: %s: %s\n", model.c_str(), guess.c_str());
    request.loadSeconds = std::chrono::duration<double>(clock::now() - start).count();
    request.model = *loaded;
    request.modelName = modelNameOf(model);
    if (!compare.empty()) {
        attnscope::LoadOptions compareOptions;
        compareOptions.device = device;
        compareOptions.acceptHierarchical = true;
        auto second = attnscope::Model::load(compare, compareOptions);
        if (!second)
            return fail(second.message());
        if (const int status = atInputSize(*second, compare, inputSize, inputHeight, inputWidth); status != 0)
            return status;
        for (const auto& guess : (*second)->info().guesses)
            std::fprintf(stderr, "attnscope-cli: warning: %s: %s\n", compare.c_str(), guess.c_str());
        request.compare = *second;
        request.compareName = modelNameOf(compare);
    }
    auto paths = attnscope::expandImagePaths(images);
    if (!paths)
        return fail(paths.message());
    request.images = *paths;
    request.out = out;
    request.formats = formatsToDraw(*figureFormats);
    request.shardIndex = shardIndex;
    request.shardCount = shardCount;
    request.formatsText = formats;
    request.description = description;
    request.inputHeight = inputHeight;
    request.inputWidth = inputWidth;
    request.compareSpec = compare;
    request.threads = threads;
    if (auto checked = applyRunSpec(spec, dashed, request); !checked)
        return usage(checked.message());

    // --- analysis and output folder
    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);
    int mine = 0;
    for (size_t i = 0; i < paths->size(); ++i)
        mine += int(i % size_t(shardCount)) == shardIndex - 1;
    Progress bar("analyze", mine);
    request.skipped = [&](const std::string& message) { bar.note("attnscope-cli: skipped " + message); };
    request.resumed = [&](int at, int total) {
        bar.note("attnscope-cli: resuming the unfinished run in " + out + " after " + std::to_string(at) + " of " + std::to_string(total) + " images");
        bar.resumeAt(at);
    };
    auto outcome = writeReport(request, [] { return g_interrupted.load(); }, [&](int done, int) { bar.update(done); });
    bar.finish();
    if (!outcome)
        return fail(outcome.message());
    if (!outcome->note.empty())
        std::fprintf(stderr, "attnscope-cli: --cuda-graph: %s\n", outcome->note.c_str());
    if (!outcome->complete) {
        std::fprintf(stderr, "attnscope-cli: interrupted after %d of %d images; results so far in %s (the same command resumes the run)\n",
                     outcome->done, outcome->total, out.c_str());
        return 130;
    }
    noteUndrawnFigures(*figureFormats);
    if (outcome->skipped > 0) {
        std::fprintf(stderr, "attnscope-cli: %d images analysed, %d skipped (listed in %s/manifest.json); results in %s\n", outcome->done,
                     outcome->skipped, out.c_str(), out.c_str());
        return kExitSkipped;
    }
    std::fprintf(stderr, "attnscope-cli: %d images analysed; results in %s\n", outcome->done, out.c_str());
    return 0;
}
