#include "Report.h"

#include "BatchPrefetch.h"
#include "Figures.h"
#include "OutputFolder.h"
#include "QueryKeyReport.h"
#include "RunJournal.h"
#include "RunSpec.h"

#include <attnscope/CpuKernels.h>
#include <attnscope/Datasets.h>
#include <attnscope/Files.h>
#include <attnscope/Image.h>
#include <attnscope/Npy.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <map>
#include <numeric>
#include <optional>
#include <thread>

namespace fs = std::filesystem;
using attnscope::Error;

namespace {

// Top-5 classes by softmax probability.
void appendPredictions(std::string& csv, const std::string& image, const attnscope::Tensor& logits,
                       const std::vector<std::string>& labels)
{
    int rank = 0;
    for (const auto& c : attnscope::topClasses(logits, 5)) {
        char prob[32];
        std::snprintf(prob, sizeof prob, "%.6g", c.probability);
        csv += attnscope::csvField(image) + "," + std::to_string(++rank) + "," + std::to_string(c.index) + ","
            + attnscope::csvField(size_t(c.index) < labels.size() ? labels[size_t(c.index)] : std::to_string(c.index)) + "," + prob
            + "\n";
    }
}

attnscope::Status dumpTensors(const std::string& dir, const attnscope::Trace& t)
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
    // An attention-pool head's map [H, patches] (SigLIP's "map" head), the model's last: attn_pool.npy.
    if (t.poolAttention.numel() > 0)
        if (auto w = write("attn_pool.npy", t.poolAttention); !w)
            return w.error();
    return attnscope::Done {};
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
    std::vector<NamedGrid> grids;
    std::vector<NamedRelevance> relevances;
    std::vector<NamedTokenNorms> norms;
    std::optional<attnscope::LogitDecomposition> decomposition;
    std::optional<attnscope::QueryKeyFigure> queryKey;
    nlohmann::json manifest;           // all but the images,
    std::shared_ptr<RunJournal> journal; // the images, which finishReport writes into it
    double analysisSeconds = 0;
    // Where the run's time went (manifest "timings"): waiting for the read-ahead batch of images (decoding, hashing,
    // preparing, perturbing and staging them on CPU threads), and the forwards with their analyses, copies back
    // included; the rest of analysisSeconds is the host's bookkeeping between batches (statistics, journal, figures).
    double waitingForImagesSeconds = 0;
    double forwardSeconds = 0;
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

namespace {

attnscope::Result<std::shared_ptr<ReportResults>> analyseInto(const ReportRequest& request, const std::function<bool()>& isCancelled,
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
                           { "attention", toString(i.config.attention) },
                           { "input_size", { i.config.imageHeight, i.config.imageWidth } },
                           { "trained_input_size", { i.trainedHeight, i.trainedWidth } } };
        r.output.options = { { "neutreno_lambda", o.neutrenoLambda.value_or(i.config.neutrenoLambda) },
                             { "boost_t", o.boostT.value_or(i.config.boostT) }, { "seed", o.seed }, { "draws", o.draws } };
        std::string noises;
        for (const auto& p : o.perturbations)
            noises += (noises.empty() ? "" : " ") + p.spec();
        r.output.options["noise"] = o.snr ? noises : "";
        if (o.ablation) {
            // The accuracy change counts the images whose class folder names one of this model's classes.
            o.trueClasses = attnscope::classesOfFolders(request.images, i.labels);
            r.output.options["ablation"] = attnscope::toString(o.ablationMode);
            r.output.options["labelled_images"] = std::count_if(o.trueClasses.begin(), o.trueClasses.end(), [](int c) { return c >= 0; });
        }
        r.output.radius = o.radius;
        r.output.patchSize = i.config.patchSize;
        r.analysis = std::make_unique<attnscope::AnalysisRun>(m, o);
        runs.push_back(std::move(r));
    };
    const std::string& name = request.modelName;
    addRun(request.model, name, base);
    if (request.neutreno || request.boost) {
        attnscope::AnalysisOptions variant = base;
        variant.alsoRecord = base.alsoRecord; // --dump-tensors writes every run's tensors
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
        other.alsoRecord = base.alsoRecord;
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
    const bool onGpu = primary.info().device != "cpu";
    const size_t batch = size_t(request.batch > 0 ? request.batch : attnscope::defaultBatchSize(primary, base));
    const auto weightsSha = attnscope::sha256FileCached(primary.info().weightsPath);

    // --- the journal: what a resumed run continues from (RunJournal.h). Whatever changes the statistics, the
    // predictions or the files per image is part of the run's identity; the figures' options are not (a resumed run
    // draws its figures anew).
    nlohmann::json identity = { { "models", nlohmann::json::array() }, { "options", nlohmann::json::object() } };
    for (const auto& run : runs) {
        auto sha = run.model.get() == &primary ? weightsSha : attnscope::sha256FileCached(run.model->info().weightsPath);
        identity["models"].push_back({ { "model", run.model->info().path + " (sha256 " + (sha ? sha->substr(0, 12) : "?") + ")" },
                                       { "neutreno", run.output.options["neutreno_lambda"] }, { "boost", run.output.options["boost_t"] } });
    }
    // The table's options as this run resolved them (the device's batch, where the analyses run), by their CLI names.
    const nlohmann::json resolved = resolvedRunOptions(request, runs.front().output.options["noise"], int64_t(batch),
                                                       runs.front().analysis->analysesOnDevice());
    for (const RunOption& o : runOptions()) {
        const bool matters = o.identity && !(std::string(o.cli) == "ablation" && !base.ablation) // what an ablated head becomes
            && !(std::string(o.cli) == "outlier-ratio" && !base.norms); // the outlier count depends on it
        if (matters)
            identity["options"][o.cli] = resolved[o.cli];
    }
    // The door's options that change what is computed: the models' files, the device, the shard.
    identity["options"]["description"] = request.description;
    identity["options"]["compare"] = request.compareSpec;
    identity["options"]["device"] = primary.info().device;
    identity["options"]["shard"] = std::to_string(request.shardIndex) + "/" + std::to_string(request.shardCount);
    if (request.inputHeight > 0) // only when given: the journals of runs without it stay resumable
        identity["options"]["input-size"] = { request.inputHeight, request.inputWidth };
    auto opened = RunJournal::open(out, identity, paths, request.resume);
    if (!opened)
        return opened.error();
    std::shared_ptr<RunJournal> journal = std::move(*opened);
    RunCheckpoint state = journal->resumed();
    state.total = mine.size();
    if (!state.runs.empty())
        for (size_t r = 0; r < runs.size(); ++r)
            runs[r].analysis->restore(std::move(state.runs[r].stats), state.runs[r].images);

    std::vector<NamedGrid> grids;
    std::vector<NamedRelevance> relevances;
    int gridsWanted = std::max(0, request.gridImages);
    const size_t relevancesWanted = base.relevance ? size_t(std::max(1, request.gridImages)) : 0;
    std::vector<NamedTokenNorms> norms;
    const size_t normsWanted = base.norms ? size_t(std::max(1, request.gridImages)) : 0;
    std::optional<attnscope::LogitDecomposition> decomposition;
    // The per-image figures of the first images: each from a forward of its own, so that they do not depend on
    // which images shared its batch (nor on whether the run was resumed after it).
    const auto addFigures = [&](size_t index, const attnscope::Model::Prepared& prepared, const std::string& path) -> attnscope::Status {
        if (int(grids.size()) < gridsWanted || norms.size() < normsWanted) {
            attnscope::RunOptions maps;
            maps.record.attention = true;
            maps.record.blocks = norms.size() < normsWanted;
            maps.precision = base.precision;
            auto traced = primary.run(prepared.input, maps);
            if (!traced)
                return Error { path + ": " + traced.message() };
            if (norms.size() < normsWanted) {
                const auto& c = primary.config();
                norms.push_back({ "token_norms_" + stems[index],
                                  { name, stems[index], prepared.shown, c.classToken, c.numRegisters,
                                    attnscope::tokenNorms(*traced, c, base.outlierRatio) } });
            }
            if (int(grids.size()) >= gridsWanted) {
                // only the norms were wanted of this image
            } else if (traced->attention.empty() || traced->attention.back().empty()) {
                gridsWanted = 0; // a model without attention maps
            } else {
                auto query = gridQueryToken(request.gridQuery, traced->gridHeight, traced->gridWidth, traced->numPrefixTokens);
                if (!query)
                    return Error { primary.info().path + ": " + query.message() };
                attnscope::AttentionGrid grid = attnscope::attentionGrid(*traced, *query, request.rollout);
                grid.model = name;
                grid.image = stems[index];
                grid.shown = prepared.shown;
                grids.push_back({ "attention_grid_" + stems[index], std::move(grid) });
            }
        }
        if (relevances.size() < relevancesWanted) {
            auto r = attnscope::classRelevance(primary, prepared.input, request.relevance);
            if (!r)
                return Error { primary.info().path + ": " + r.message() };
            const auto& labels = primary.info().labels;
            const std::string label = size_t(r->targetClass) < labels.size() ? labels[size_t(r->targetClass)] : std::string();
            relevances.push_back({ "relevance_" + stems[index], { name, stems[index], label, prepared.shown, std::move(*r) } });
        }
        if (!decomposition && base.decomposition) {
            auto d = attnscope::decomposeLogits(primary, prepared.input);
            if (!d)
                return Error { primary.info().path + ": " + d.message() };
            decomposition = *d;
        }
        return attnscope::Done {};
    };
    // A resumed run draws the figures of the images behind it again.
    for (const auto& entry : journal->firstImages(std::max({ size_t(gridsWanted), relevancesWanted, normsWanted, size_t(base.decomposition ? 1 : 0) }))) {
        const std::string path = entry.value("path", "");
        auto image = attnscope::decodeImage(path);
        auto prepared = image ? primary.prepare(*image) : attnscope::Result<attnscope::Model::Prepared>(image.error());
        if (!prepared)
            return Error { path + ": " + prepared.message() + " (it was read before the run was resumed)" };
        if (auto f = addFigures(entry.value("index", size_t(0)), *prepared, path); !f)
            return f.error();
    }

    ReportOutcome outcome;
    outcome.total = int(mine.size());
    outcome.done = state.done;
    outcome.skipped = int(state.skipped.size());
    outcome.resumedAt = int(state.position);
    if (state.position > 0) {
        if (request.resumed)
            request.resumed(int(state.position), outcome.total);
        if (progress)
            progress(int(state.position), outcome.total);
    }
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
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    std::vector<const attnscope::AnalysisRun*> analyses;
    for (const auto& run : runs)
        analyses.push_back(run.analysis.get());
    BatchPrefetch prefetch(models, analyses, modelOfRun, paths, std::vector<size_t>(mine.begin() + long(state.position), mine.end()), batch,
                           onGpu ? int(std::max(2u, cores - 2)) : 1);
    // Every few seconds, after a batch all runs have added, the state a resume starts from.
    auto lastCheckpoint = clock::now();
    const auto checkpoint = [&]() -> attnscope::Status {
        state.runs.clear();
        for (const auto& run : runs)
            state.runs.push_back({ run.analysis->statistics(), run.analysis->images() });
        lastCheckpoint = clock::now();
        return journal->checkpoint(state);
    };
    // Two batches in flight: batch k + 1 is queued on each run's device before batch k is waited for and written out
    // (its predictions, figures, journal entries and position), so that the device works on one while the host writes
    // the other. A batch enters the statistics only when it is finished, on every run, so the runs always agree.
    struct InFlight {
        PrefetchedBatch batch;
        std::vector<attnscope::PendingBatch> runs;
    };
    const auto batchName = [](const std::vector<PrefetchedImage>& items) {
        return items.size() == 1 ? items.front().path + ": " : "images " + items.front().path + " to " + items.back().path + ": ";
    };
    const auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
    double waiting = 0, forwards = 0;
    const auto finishBatch = [&](InFlight& done) -> attnscope::Status {
        const std::vector<PrefetchedImage>& items = done.batch.images;
        for (size_t r = 0; r < done.runs.size(); ++r) {
            std::vector<attnscope::Trace> traces;
            const auto forwardStart = clock::now();
            auto added = runs[r].analysis->finish(done.runs[r], r == 0 || dumping ? &traces : nullptr);
            forwards += since(forwardStart);
            if (!added)
                return Error { batchName(items) + added.message() };
            std::string rows;
            for (size_t k = 0; k < traces.size(); ++k) {
                const PrefetchedImage& item = items[k];
                const attnscope::Trace& trace = traces[k];
                // Every run's tensors: the model's in tensors/, a variant's or the compared model's in runs/<label>/tensors/.
                if (dumping)
                    if (auto d = dumpTensors((fs::path(out) / runs[r].output.folder / "tensors" / stems[item.index]).string(), trace); !d)
                        return d.error();
                if (r != 0)
                    continue;
                if (classify)
                    appendPredictions(rows, item.path, trace.logits, primary.info().labels);
                if (auto f = addFigures(item.index, item.prepared[0], item.path); !f)
                    return f.error();
            }
            if (!rows.empty())
                if (auto w = journal->appendPredictions(rows); !w)
                    return w.error();
        }
        for (const auto& item : done.batch.skipped) {
            state.skipped.push_back({ { "index", item.index }, { "path", item.path }, { "cause", item.error } });
            ++outcome.skipped;
            if (request.skipped)
                request.skipped(item.error);
        }
        for (const auto& item : items)
            if (auto w = journal->appendImage({ { "index", item.index }, { "path", item.path }, { "sha256", item.sha256 }, { "stem", stems[item.index] } });
                !w)
                return w.error();
        outcome.done += int(items.size());
        state.position += items.size() + done.batch.skipped.size();
        state.done = outcome.done;
        if (std::chrono::duration<double>(clock::now() - lastCheckpoint).count() >= request.checkpointSeconds)
            if (auto c = checkpoint(); !c)
                return c.error();
        if (progress)
            progress(outcome.done + outcome.skipped, outcome.total);
        return attnscope::Done {};
    };
    std::optional<InFlight> inFlight;
    auto waitStart = clock::now();
    for (auto next = prefetch.next(); !next.end() && !cancelled(); waitStart = clock::now(), next = prefetch.next()) {
        waiting += since(waitStart);
        if (request.strict && !next.skipped.empty())
            return Error { next.skipped.front().error + " (--strict: the run stops at the first image it cannot read)" };
        if (!next.error.empty())
            return Error { next.error };
        InFlight queued { std::move(next), {} };
        bool stopped = false; // cancelled while queuing: the batch is dropped on every run
        for (size_t r = 0; r < runs.size() && !queued.batch.images.empty(); ++r) {
            const auto forwardStart = clock::now();
            auto pending = runs[r].analysis->enqueue(queued.batch.staged[r], cancelled, r == 0 || dumping);
            forwards += since(forwardStart);
            if (pending.cancelled()) {
                stopped = true;
                break;
            }
            if (!pending)
                return Error { batchName(queued.batch.images) + pending.message() };
            queued.runs.push_back(std::move(*pending));
        }
        if (inFlight)
            if (auto f = finishBatch(*inFlight); !f)
                return f.error();
        inFlight.reset();
        if (stopped)
            break;
        inFlight = std::move(queued);
    }
    if (inFlight) // the last batch, or the one queued before a cancellation
        if (auto f = finishBatch(*inFlight); !f)
            return f.error();
    outcome.complete = !cancelled();
    outcome.note = runs.front().analysis->cudaGraphNote();
    // The state every run has added (a batch cancelled while queued is in none of them).
    if (auto c = checkpoint(); !c)
        return c.error();

    // --- outputs
    auto results = std::make_shared<ReportResults>();
    nlohmann::json queryKeyRecord;
    if (request.queryKey.enabled && outcome.complete) {
        std::vector<std::string> myPaths, myStems;
        for (size_t i : mine) {
            myPaths.push_back(paths[i]);
            myStems.push_back(stems[i]);
        }
        auto maps = writeQueryKeyMaps(request, primary, myPaths, myStems);
        if (!maps)
            return maps.error();
        results->queryKey = std::move(maps->figure);
        queryKeyRecord = std::move(maps->record);
    }
    if (classify)
        if (auto w = journal->writePredictions((fs::path(out) / "predictions.csv").string(), "image,rank,class,label,prob\n"); !w)
            return w.error();
    nlohmann::json runList = nlohmann::json::array();
    for (auto& run : runs) {
        run.output.stats = run.analysis->statistics();
        run.output.images = run.analysis->images();
        if (auto w = writeRunOutput(out, run.output); !w)
            return w.error();
        runList.push_back({ { "label", run.output.label }, { "folder", run.output.folder }, { "model", run.output.model },
                            { "options", run.output.options } });
        results->outputs.push_back(run.output);
    }
    results->outcome = outcome;
    results->journal = journal;
    if (grids.size() == 1)
        grids.front().name = "attention_grid"; // one grid keeps the plain name
    results->grids = std::move(grids);
    if (relevances.size() == 1)
        relevances.front().name = "relevance";
    nlohmann::json relevanceList = nlohmann::json::array();
    for (const auto& r : relevances)
        relevanceList.push_back({ { "figure", r.name }, { "image", r.figure.image }, { "class", r.figure.relevance.targetClass },
                                  { "label", r.figure.label }, { "probability", r.figure.relevance.probability },
                                  { "gradcam_layer", r.figure.relevance.gradCamLayer } });
    results->relevances = std::move(relevances);
    if (norms.size() == 1)
        norms.front().name = "token_norms";
    nlohmann::json normsList = nlohmann::json::array();
    for (const auto& n : norms) {
        nlohmann::json outliers = nlohmann::json::array();
        for (const auto& l : n.figure.norms.layers)
            outliers.push_back(l.outliers.size());
        normsList.push_back({ { "figure", n.name }, { "image", n.figure.image }, { "outliers_per_layer", outliers } });
    }
    results->norms = std::move(norms);
    results->decomposition = std::move(decomposition);
    const auto& info = primary.info();
    const attnscope::ThreadSetup threads = attnscope::threadSetup();
    const attnscope::CpuKernels cpu = attnscope::cpuKernels();
    // The manifest records each option of the table under its key, then how and where the run ran.
    nlohmann::json manifestOptions = nlohmann::json::object();
    for (const RunOption& o : runOptions())
        if (*o.manifest)
            manifestOptions[o.manifest] = resolved[o.cli];
    manifestOptions.update({ { "device", info.device },
                             { "input_size", request.inputHeight > 0 ? nlohmann::json { request.inputHeight, request.inputWidth } : nlohmann::json() },
                             { "threads", request.threads },
                             { "cuda_graph_replays", runs.front().analysis->cudaGraphReplays() },
                             { "intra_op_threads", threads.intraOp }, { "inter_op_threads", threads.interOp },
                             { "omp_wait_policy", std::getenv("OMP_WAIT_POLICY") ? std::getenv("OMP_WAIT_POLICY") : "" },
                             { "cpu_kernels", { { "isa", cpu.isa }, { "blas", cpu.blas }, { "linear", cpu.linear }, { "attention", cpu.attention } } },
                             { "description", request.description }, { "compare", request.compareSpec }, { "formats", request.formatsText } });
    results->manifest = {
        { "tool", "attnscope" }, { "version", attnscope::version() },
        { "model", { { "path", info.path }, { "weights", info.weightsPath }, { "sha256", weightsSha ? *weightsSha : "" },
                     { "naming", info.naming }, { "family", info.family }, { "config_source", info.configSource }, { "guesses", info.guesses },
                     { "ignored_config_keys", info.ignoredConfigKeys },
                     { "layers", info.config.depth }, { "heads", info.config.numHeads }, { "width", info.config.width },
                     { "patch_size", info.config.patchSize }, { "classes", info.config.numClasses },
                     { "attention", toString(info.config.attention) },
                     { "input_size", { info.config.imageHeight, info.config.imageWidth } },
                     { "trained_input_size", { info.trainedHeight, info.trainedWidth } },
                     { "trained_neutreno_lambda", info.config.neutrenoLambda }, { "trained_boost_t", info.config.boostT } } },
        { "runs", runList },
        { "images", nullptr }, // finishReport writes the list in its place
        { "skipped", state.skipped },
        { "relevance", relevanceList },
        { "token_norms", normsList },
        { "query_key", queryKeyRecord },
        { "resumed_at", outcome.resumedAt },
        { "options", manifestOptions },
        { "shard", { { "index", request.shardIndex }, { "count", request.shardCount }, { "images_total", paths.size() } } },
        { "complete", outcome.complete },
    };
    results->analysisSeconds = std::chrono::duration<double>(clock::now() - start).count();
    results->waitingForImagesSeconds = waiting;
    results->forwardSeconds = forwards;
    return results;
}

} // namespace

attnscope::Result<std::shared_ptr<ReportResults>> analyseReport(const ReportRequest& request, const std::function<bool()>& isCancelled,
                                                                const std::function<void(int done, int total)>& progress)
{
    // A run that fails (an unreadable image, an analysis the model refuses) leaves no output folder it created behind.
    std::error_code ec;
    const bool existed = fs::exists(request.out, ec);
    auto results = analyseInto(request, isCancelled, progress);
    if (!results && !existed)
        fs::remove_all(request.out, ec);
    return results;
}

attnscope::Result<ReportOutcome> finishReport(const ReportRequest& request, const ReportResults& results)
{
    const auto start = std::chrono::steady_clock::now();
    if (auto drawn = writeFigures(request.out, results.outputs, { results.grids, results.relevances, results.norms, results.queryKey },
                                  results.decomposition ? &*results.decomposition : nullptr, request.formats);
        !drawn)
        return drawn.error();
    nlohmann::json manifest = results.manifest;
    manifest["figures"] = figuresRecord(request.formats);
    const double figures = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    manifest["timings"] = { { "load_seconds", request.loadSeconds },
                            { "total_seconds", request.loadSeconds + results.analysisSeconds + figures },
                            { "waiting_for_images_seconds", results.waitingForImagesSeconds },
                            { "forward_and_analyses_seconds", results.forwardSeconds },
                            { "figures_seconds", figures } };
    // The image list goes in where its placeholder is, streamed from the run's log.
    const std::string marker = "\"@images@\"";
    manifest["images"] = "@images@";
    const std::string text = manifest.dump(2) + "\n";
    const size_t at = text.find(marker);
    const size_t lineStart = text.rfind('\n', at) + 1;
    const std::string indent = text.substr(lineStart, text.find_first_not_of(' ', lineStart) - lineStart);
    auto writer = attnscope::TextFileWriter::open((fs::path(request.out) / "manifest.json").string());
    if (!writer)
        return writer.error();
    if (auto w = (*writer)->append(text.substr(0, at)); !w)
        return w.error();
    if (auto w = results.journal->copyImagesInto(**writer, indent); !w)
        return Error { (fs::path(request.out) / "manifest.json").string() + ": " + w.message() };
    if (auto w = (*writer)->append(text.substr(at + marker.size())); !w)
        return w.error();
    if (auto w = (*writer)->commit(); !w)
        return w.error();
    if (results.outcome.complete)
        results.journal->remove(); // nothing left to resume
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
