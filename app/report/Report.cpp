#include "Report.h"

#include "BatchPrefetch.h"
#include "Figures.h"
#include "OutputFolder.h"

#include <attnscope/Files.h>
#include <attnscope/Npy.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <map>
#include <numeric>
#include <thread>

namespace fs = std::filesystem;
using attnscope::Error;

namespace {

std::string csvField(const std::string& s)
{
    if (s.find_first_of(",\"\n") == std::string::npos)
        return s;
    std::string q = "\"";
    for (char c : s)
        q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

// Top-5 classes by softmax probability.
void appendPredictions(std::string& csv, const std::string& image, const attnscope::Tensor& logits,
                       const std::vector<std::string>& labels)
{
    const int64_t k = logits.numel();
    const float* z = logits.data();
    const float zmax = *std::max_element(z, z + k);
    std::vector<double> p(static_cast<size_t>(k));
    double sum = 0;
    for (int64_t i = 0; i < k; ++i)
        sum += p[size_t(i)] = std::exp(double(z[i]) - zmax);
    std::vector<int> order(static_cast<size_t>(k));
    std::iota(order.begin(), order.end(), 0);
    const int top = int(std::min<int64_t>(5, k));
    std::partial_sort(order.begin(), order.begin() + top, order.end(), [&](int a, int b) { return p[size_t(a)] > p[size_t(b)]; });
    for (int r = 0; r < top; ++r) {
        const int c = order[size_t(r)];
        char prob[32];
        std::snprintf(prob, sizeof prob, "%.6g", p[size_t(c)] / sum);
        csv += csvField(image) + "," + std::to_string(r + 1) + "," + std::to_string(c) + ","
            + csvField(size_t(c) < labels.size() ? labels[size_t(c)] : std::to_string(c)) + "," + prob + "\n";
    }
}

attnscope::Result<bool> dumpTensors(const std::string& dir, const attnscope::Trace& t)
{
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
        return Error { dir + ": cannot create (" + ec.message() + ")" };
    const auto write = [&](const std::string& name, const attnscope::Tensor& tensor) {
        return attnscope::writeNpy((fs::path(dir) / name).string(), tensor);
    };
    if (auto w = write("logits.npy", t.logits); !w)
        return w.error();
    for (int l = 1; l <= t.depth; ++l)
        if (auto w = write("attn_L" + std::to_string(l) + ".npy", t.attention[size_t(l)]); !w)
            return w.error();
    for (int l = 0; l <= t.depth; ++l)
        if (auto w = write("block_L" + std::to_string(l) + ".npy", t.blocks[size_t(l)]); !w)
            return w.error();
    return true;
}

std::string formatNumber(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

struct PreparedRun {
    std::shared_ptr<const attnscope::Model> model;
    std::unique_ptr<attnscope::AnalysisRun> analysis;
    RunOutput output;
};

} // namespace

struct ReportResults {
    ReportOutcome outcome;
    std::vector<RunOutput> outputs;
    std::optional<attnscope::AttentionGrid> grid;
    std::optional<attnscope::LogitDecomposition> decomposition;
    nlohmann::json manifest;
    double analysisSeconds = 0;
};

std::string modelNameOf(const std::string& path)
{
    if (path.rfind("builtin:", 0) == 0)
        return path.substr(8);
    fs::path p(path);
    if (p.filename().empty())
        p = p.parent_path();
    return fs::is_directory(p) ? p.filename().string() : p.stem().string();
}

attnscope::Result<std::shared_ptr<ReportResults>> analyseReport(const ReportRequest& request, const std::function<bool()>& isCancelled,
                                                                const std::function<void(int done, int total)>& progress)
{
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const attnscope::AnalysisOptions& base = request.options;
    const std::string& out = request.out;
    const bool dumping = base.alsoRecord.attention || base.alsoRecord.blocks;

    // --- runs: the model, its variant, the compared model
    std::vector<PreparedRun> runs;
    const auto addRun = [&](std::shared_ptr<const attnscope::Model> m, const std::string& label, attnscope::AnalysisOptions o) {
        PreparedRun r;
        r.model = m;
        r.output.label = label;
        r.output.folder = runs.empty() ? "" : "runs/" + slugOf(label);
        const auto& i = m->info();
        r.output.model = { { "name", label }, { "path", i.path }, { "weights", i.weightsPath }, { "naming", i.naming },
                           { "family", i.family }, { "layers", i.config.depth }, { "heads", i.config.numHeads },
                           { "width", i.config.width }, { "patch_size", i.config.patchSize }, { "classes", i.config.numClasses },
                           { "attention", toString(i.config.attention) } };
        r.output.options = { { "neutreno_lambda", o.neutrenoLambda.value_or(i.config.neutrenoLambda) },
                             { "boost_t", o.boostT.value_or(i.config.boostT) }, { "seed", o.seed }, { "draws", o.draws } };
        std::string noises;
        for (const auto& p : o.perturbations)
            noises += (noises.empty() ? "" : " ") + p.spec();
        r.output.options["noise"] = o.snr ? noises : "";
        r.output.radius = o.radius;
        r.output.patchSize = i.config.patchSize;
        r.analysis = std::make_unique<attnscope::AnalysisRun>(m, o);
        runs.push_back(std::move(r));
    };
    const std::string& name = request.modelName;
    addRun(request.model, name, base);
    if (request.neutreno || request.boost) {
        attnscope::AnalysisOptions variant = base;
        variant.alsoRecord = {};
        variant.neutrenoLambda = request.neutreno;
        variant.boostT = request.boost;
        std::string label = name + " (";
        if (request.neutreno)
            label += "NeuTRENO " + formatNumber(*request.neutreno);
        if (request.boost)
            label += std::string(request.neutreno ? ", " : "") + "Boost " + formatNumber(*request.boost);
        addRun(request.model, label + ")", variant);
    }
    if (request.compare) {
        attnscope::AnalysisOptions other = base;
        other.alsoRecord = {};
        addRun(request.compare, request.compareName == name ? name + " (2)" : request.compareName, other);
    }

    // --- images
    const auto& paths = request.images;
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec)
        return Error { out + ": cannot create output folder (" + ec.message() + ")" };
    // A rerun into the folder of a killed run: its half-written temporaries go (the files it finished stay, and are
    // replaced as this run writes them).
    attnscope::removeStaleTemporaries(out);
    const auto stems = attnscope::uniqueImageStems(paths);
    std::vector<size_t> mine;
    for (size_t i = 0; i < paths.size(); ++i)
        if (int(i % size_t(request.shardCount)) == request.shardIndex - 1)
            mine.push_back(i);

    const auto cancelled = [&] { return isCancelled && isCancelled(); };
    const attnscope::Model& primary = *runs.front().model;
    const bool classify = primary.config().numClasses > 0 && !primary.config().headIsProjection;
    std::string predictions = "image,rank,class,label,prob\n";
    nlohmann::json imageList = nlohmann::json::array();
    std::optional<attnscope::AttentionGrid> grid;
    std::optional<attnscope::LogitDecomposition> decomposition;
    ReportOutcome outcome;
    outcome.total = int(mine.size());
    // Distinct models (a variant shares its model, and so its preprocessing, with the first run): each image is
    // prepared once per model, on the prefetch threads, a batch ahead of the forwards.
    std::vector<const attnscope::Model*> models;
    std::vector<size_t> modelOfRun;
    for (const auto& run : runs) {
        auto it = std::find(models.begin(), models.end(), run.model.get());
        modelOfRun.push_back(size_t(it - models.begin()));
        if (it == models.end())
            models.push_back(run.model.get());
    }
    const bool onGpu = primary.info().device != "cpu";
    const size_t batch = size_t(request.batch > 0 ? request.batch : attnscope::defaultBatchSize(primary, base));
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    std::vector<const attnscope::AnalysisRun*> analyses;
    for (const auto& run : runs)
        analyses.push_back(run.analysis.get());
    BatchPrefetch prefetch(models, analyses, modelOfRun, paths, mine, batch, onGpu ? int(std::max(2u, cores - 2)) : 1);
    for (auto next = prefetch.next(); !next.images.empty() && !cancelled(); next = prefetch.next()) {
        if (!next.error.empty())
            return Error { next.error };
        const std::vector<PrefetchedImage>& items = next.images;
        bool stopped = false;
        for (size_t r = 0; r < runs.size() && !stopped; ++r) {
            std::vector<attnscope::Trace> traces;
            auto added = runs[r].analysis->addStaged(next.staged[r], cancelled, r == 0 ? &traces : nullptr);
            if (!added) {
                if (cancelled()) {
                    stopped = true;
                    break;
                }
                return Error { (items.size() == 1 ? items.front().path + ": " : "images " + items.front().path + " to " + items.back().path + ": ")
                               + added.message() };
            }
            for (size_t k = 0; k < traces.size(); ++k) {
                const PrefetchedImage& item = items[k];
                const attnscope::Trace& trace = traces[k];
                if (classify)
                    appendPredictions(predictions, item.path, trace.logits, primary.info().labels);
                if (dumping)
                    if (auto d = dumpTensors((fs::path(out) / "tensors" / stems[item.index]).string(), trace); !d)
                        return d.error();
                if (!grid) {
                    // The device path brings back only the logits: the grid's one image runs again for its maps.
                    attnscope::Trace withMaps = trace;
                    if (withMaps.attention.empty() || withMaps.attention.back().empty()) {
                        attnscope::RunOptions maps;
                        maps.record.attention = true;
                        maps.precision = base.precision;
                        auto again = primary.run(item.prepared[0].input, maps);
                        if (!again)
                            return Error { item.path + ": " + again.message() };
                        withMaps = std::move(*again);
                    }
                    if (!withMaps.attention.empty() && !withMaps.attention.back().empty())
                        grid = attentionGridOf(withMaps, item.prepared[0].shown, name, stems[item.index]);
                }
                if (!decomposition && base.decomposition) {
                    auto d = attnscope::decomposeLogits(primary, item.prepared[0].input);
                    if (!d)
                        return d.error();
                    decomposition = *d;
                }
            }
        }
        if (stopped)
            break;
        for (const auto& item : items)
            imageList.push_back({ { "index", item.index }, { "path", item.path }, { "sha256", item.sha256 }, { "stem", stems[item.index] } });
        outcome.done += int(items.size());
        if (progress)
            progress(outcome.done, outcome.total);
    }
    outcome.complete = !cancelled();

    // --- outputs
    if (classify)
        if (auto w = attnscope::writeTextFile((fs::path(out) / "predictions.csv").string(), predictions); !w)
            return w.error();
    auto results = std::make_shared<ReportResults>();
    nlohmann::json runList = nlohmann::json::array();
    for (auto& run : runs) {
        run.output.stats = run.analysis->statistics();
        run.output.images = run.analysis->images();
        if (const std::string error = writeRunOutput(out, run.output); !error.empty())
            return Error { error };
        runList.push_back({ { "label", run.output.label }, { "folder", run.output.folder }, { "model", run.output.model },
                            { "options", run.output.options } });
        results->outputs.push_back(run.output);
    }
    results->outcome = outcome;
    results->grid = std::move(grid);
    results->decomposition = std::move(decomposition);
    const auto& info = primary.info();
    auto weightsSha = attnscope::sha256File(info.weightsPath);
    const attnscope::ThreadSetup threads = attnscope::threadSetup();
    results->manifest = {
        { "tool", "attnscope" }, { "version", attnscope::version() },
        { "model", { { "path", info.path }, { "weights", info.weightsPath }, { "sha256", weightsSha ? *weightsSha : "" },
                     { "naming", info.naming }, { "family", info.family }, { "config_source", info.configSource },
                     { "layers", info.config.depth }, { "heads", info.config.numHeads }, { "width", info.config.width },
                     { "patch_size", info.config.patchSize }, { "classes", info.config.numClasses },
                     { "attention", toString(info.config.attention) },
                     { "trained_neutreno_lambda", info.config.neutrenoLambda }, { "trained_boost_t", info.config.boostT } } },
        { "runs", runList },
        { "images", imageList },
        { "options", { { "analyses", request.analysesText }, { "noise", runs.front().output.options["noise"] }, { "draws", base.draws },
                       { "seed", base.seed }, { "device", info.device }, { "batch", batch }, { "precision", toString(base.precision) },
                       { "analyses_on", runs.front().analysis->analysesOnDevice() ? "device" : "host" }, { "dump_tensors", dumping }, { "threads", request.threads },
                       { "intra_op_threads", threads.intraOp }, { "inter_op_threads", threads.interOp },
                       { "omp_wait_policy", std::getenv("OMP_WAIT_POLICY") ? std::getenv("OMP_WAIT_POLICY") : "" },
                       { "description", request.description }, { "compare", request.compareSpec }, { "formats", request.formatsText },
                       { "neutreno_lambda", request.neutreno ? nlohmann::json(*request.neutreno) : nlohmann::json() },
                       { "boost_t", request.boost ? nlohmann::json(*request.boost) : nlohmann::json() } } },
        { "shard", { { "index", request.shardIndex }, { "count", request.shardCount }, { "images_total", paths.size() } } },
        { "complete", outcome.complete },
    };
    results->analysisSeconds = std::chrono::duration<double>(clock::now() - start).count();
    return results;
}

attnscope::Result<ReportOutcome> finishReport(const ReportRequest& request, const ReportResults& results)
{
    const auto start = std::chrono::steady_clock::now();
    const std::string figureError = writeFigures(request.out, results.outputs, results.grid ? &*results.grid : nullptr,
                                                 results.decomposition ? &*results.decomposition : nullptr, request.formats);
    if (!figureError.empty())
        return Error { figureError };
    nlohmann::json manifest = results.manifest;
    manifest["figures"] = figuresRecord(request.formats);
    const double figures = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    manifest["timings"] = { { "load_seconds", request.loadSeconds },
                            { "total_seconds", request.loadSeconds + results.analysisSeconds + figures } };
    if (auto w = attnscope::writeTextFile((fs::path(request.out) / "manifest.json").string(), manifest.dump(2) + "\n"); !w)
        return w.error();
    return results.outcome;
}

attnscope::Result<ReportOutcome> writeReport(const ReportRequest& request, const std::function<bool()>& isCancelled,
                                             const std::function<void(int done, int total)>& progress)
{
    auto results = analyseReport(request, isCancelled, progress);
    if (!results)
        return results.error();
    return finishReport(request, **results);
}
