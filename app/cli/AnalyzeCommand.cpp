#include "cli/Commands.h"
#include "FigureDrawing.h"
#include "Figures.h"
#include "AnalyzeArguments.h"
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
    app.add_option("--analyses", arguments.analyses, "similarity,attention,centres,snr,decomposition,relevance,norms,ablation,qkmap")->capture_default_str();
    app.add_option("--noise", arguments.noise,
                   "perturbation for the SNR (several allowed): gaussian:sigma=S, saltpepper:fraction=F, blur:sigma=S, "
                   "jpeg:quality=Q, fgsm:eps=E, pgd:eps=E[,steps=T] (S and E in 0..255 pixel units)");
    app.add_option("--draws", arguments.draws, "perturbation draws per image")->capture_default_str();
    app.add_option("--seed", arguments.seed, "seed of the perturbations")->capture_default_str();
    app.add_option("--neutreno", neutreno, "also run with NeuTRENO lambda (side by side with the model as trained)");
    app.add_option("--boost", boost, "also run with Boost t (side by side with the model as trained)");
    formats = defaultFigureFormats();
    app.add_option("--formats", formats, "figure formats: png,svg,pdf (none: the data only)")->capture_default_str();
    app.add_option("--shard", shard, "K/N: analyse every N-th image from the K-th (1-based), for job arrays");
    app.add_option("--device", device, "auto, cpu, cuda or cuda:<i> (auto: a GPU when there is one)")->capture_default_str();
    app.add_option("--batch", arguments.batch, "images per forward (0: 64 on a GPU, enough for the CPU's threads on a CPU)")->capture_default_str();
    app.add_option("--precision", arguments.precision, "fp32 (TF32 off: the reference numbers), tf32 (CUDA) or bf16")->capture_default_str();
    app.add_option("--analyses-on", arguments.analysesOn,
                   "where the analyses run: device (batched tensor operations where the forward ran), host (float64 loops"
                   " per image) or auto (the device on a GPU, the host on a CPU)")
        ->capture_default_str();
    app.add_flag("--cuda-graph", arguments.cudaGraph,
                 "on a GPU: capture each batch shape's forward and analyses once as a CUDA graph and replay it (the same"
                 " numbers, far fewer launches)");
    app.add_option("--grid-images", arguments.gridImages, "attention grids (layers x heads) of the first N images (0: none)")->capture_default_str();
    app.add_option("--query", arguments.query, "the grids' query: cls (the CLS token, or the centre patch without one) or ROW,COL (a patch, from 0)")
        ->capture_default_str();
    app.add_option("--rollout", arguments.rollout, "head fusion of the grids' rollout: mean (Abnar & Zuidema), max or min")->capture_default_str();
    app.add_option("--discard", arguments.discard, "share of each layer's fused attention the rollout discards first, lowest first (0 to <1)")
        ->capture_default_str();
    app.add_option("--class", arguments.targetClass, "relevance: the class explained (-1: each image's predicted class)")->capture_default_str();
    app.add_option("--gradcam-layer", arguments.gradCamLayer, "relevance: the block output X_l Grad-CAM reads (-1: X_{L-1})")->capture_default_str();
    app.add_option("--ablation", arguments.ablation,
                   "ablation: what an ablated head's output becomes, zero or mean (of its rows over the tokens)")
        ->capture_default_str();
    app.add_option("--qk-layer", arguments.qkLayer, "qkmap: the layer whose heads are mapped (0: every layer)")->capture_default_str();
    app.add_option("--qk-head", arguments.qkHead, "qkmap: the head mapped (-1: every head)")->capture_default_str();
    app.add_option("--qk-images", arguments.qkImages, "qkmap: the first N images, every token of each")->capture_default_str();
    app.add_option("--qk-method", arguments.qkMethod, "qkmap: pca (exact, signs fixed) or tsne (exact, perplexity 30, seeded with --seed)")
        ->capture_default_str();
    app.add_option("--outlier-ratio", arguments.outlierRatio,
                   "norms: a patch token whose norm exceeds this times the median patch norm of its layer is a high-norm outlier")
        ->capture_default_str();
    app.add_flag("--strict", strict, "stop at the first image that cannot be read (default: skip it, list it, exit with 3)");
    app.add_flag("--fresh", fresh, "start again, discarding what an unfinished run left in --out (default: resume it)");
    app.add_option("--checkpoint-seconds", arguments.checkpointSeconds, "seconds between the checkpoints a rerun resumes from")->capture_default_str();
    app.add_flag("--dump-tensors", arguments.dumpTensors, "write logits, attention maps and block outputs as .npy");
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
    if (auto checked = applyAnalyzeArguments(arguments, dashed, request); !checked)
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
    request.neutreno = neutreno;
    request.boost = boost;
    request.formats = formatsToDraw(*figureFormats);
    request.shardIndex = shardIndex;
    request.shardCount = shardCount;
    request.formatsText = formats;
    request.description = description;
    request.inputHeight = inputHeight;
    request.inputWidth = inputWidth;
    request.compareSpec = compare;
    request.threads = threads;
    if (auto checked = applyAnalyzeArguments(arguments, dashed, request); !checked)
        return usage(checked.message());

    // --- analysis and output folder
    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);
    int mine = 0;
    for (size_t i = 0; i < paths->size(); ++i)
        mine += int(i % size_t(shardCount)) == shardIndex - 1;
    Progress bar("analyze", mine);
    request.strict = strict;
    request.resume = !fresh;
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
