#include "Report.h"

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
    for (size_t i : mine) {
        if (cancelled())
            break;
        const std::string& path = paths[i];
        auto image = attnscope::decodeImage(path);
        if (!image)
            return image.error();
        // A variant run shares its model (and so its preprocessing) with the first run: prepare once per model.
        std::map<const attnscope::Model*, attnscope::Model::Prepared> preparedBy;
        for (size_t r = 0; r < runs.size(); ++r) {
            auto& run = runs[r];
            auto cached = preparedBy.find(run.model.get());
            if (cached == preparedBy.end()) {
                auto p = run.model->prepare(*image);
                if (!p)
                    return Error { path + ": " + p.message() };
                cached = preparedBy.emplace(run.model.get(), std::move(*p)).first;
            }
            const attnscope::Model::Prepared* prepared = &cached->second;
            attnscope::Trace trace;
            auto added = run.analysis->addImage(*prepared, int64_t(i), cancelled, r == 0 ? &trace : nullptr);
            if (!added) {
                if (cancelled())
                    break;
                return Error { path + ": " + added.message() };
            }
            if (r != 0)
                continue;
            if (classify)
                appendPredictions(predictions, path, trace.logits, primary.info().labels);
            if (dumping)
                if (auto d = dumpTensors((fs::path(out) / "tensors" / stems[i]).string(), trace); !d)
                    return d.error();
            if (!grid && !trace.attention.empty() && !trace.attention.back().empty())
                grid = attentionGridOf(trace, prepared->shown, name, stems[i]);
            if (!decomposition && base.decomposition) {
                auto d = attnscope::decomposeLogits(primary, prepared->input);
                if (!d)
                    return d.error();
                decomposition = *d;
            }
        }
        if (cancelled())
            break;
        auto sha = attnscope::sha256File(path);
        imageList.push_back({ { "index", i }, { "path", path }, { "sha256", sha ? *sha : "" }, { "stem", stems[i] } });
        ++outcome.done;
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
                       { "seed", base.seed }, { "device", info.device }, { "dump_tensors", dumping }, { "threads", request.threads },
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
