#include "DatasetRun.h"

#include "Figures.h"
#include "QueryKeyReport.h"
#include "RunSpec.h"

#include <attnscope/CpuKernels.h>
#include <attnscope/Datasets.h>
#include <attnscope/Files.h>
#include <attnscope/Image.h>
#include <attnscope/Npy.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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

} // namespace

const std::vector<std::string>& DatasetRun::names() const
{
    return m_request.imageNames.size() == m_request.images.size() ? m_request.imageNames : m_request.images;
}

const std::string& DatasetRun::nameOf(size_t index) const { return names()[index]; }

std::string DatasetRun::batchName(const std::vector<PrefetchedImage>& items) const
{
    const std::string &first = nameOf(items.front().index), &last = nameOf(items.back().index);
    return items.size() == 1 ? first + ": " : "images " + first + " to " + last + ": ";
}

DatasetRun::DatasetRun(const ReportRequest& request, std::function<bool()> isCancelled, std::function<void(int done, int total)> progress)
    : m_request(request)
    , m_base(request.options)
    , m_isCancelled(std::move(isCancelled))
    , m_progress(std::move(progress))
    , m_dumping(request.options.alsoRecord.attention || request.options.alsoRecord.blocks)
{
}

attnscope::Result<std::shared_ptr<ReportResults>> DatasetRun::run()
{
    if (auto p = plan(); !p)
        return p.error();
    if (auto p = pipeline(); !p)
        return p.error();
    return outputs();
}

// --- plan: the runs, the images of this shard, the journal, the figures of the images behind a resumed run

// What a hierarchical model (Swin) takes so far (docs/analyses.md, "Hierarchical models"): the token similarity, the
// attention analyses and grids, the head centres, the SNR and head ablation; the rest is refused in one line.
static attnscope::Status hierarchicalRefusal(const ReportRequest& r)
{
    for (const auto* m : { r.model.get(), r.compare.get() }) {
        if (!m || !m->config().hierarchical())
            continue;
        const auto& o = r.options;
        std::string refused;
        const auto add = [&](bool on, const char* what) { refused += on ? std::string(refused.empty() ? "" : ", ") + what : ""; };
        add(o.decomposition, "decomposition");
        add(o.relevance, "relevance");
        add(o.norms, "norms");
        const std::string what = m->info().path + ": a Swin (hierarchical windowed attention) ";
        if (!refused.empty())
            return Error { what + "takes the analyses similarity, attention, centres, snr, ablation and qkmap so far, not " + refused + " (docs/analyses.md, \"Hierarchical models\")" };
        if (o.analysesOnDevice.value_or(false))
            return Error { what + "runs its analyses on the host (--analyses-on host or auto)" };
        if (r.neutreno || r.boost)
            return Error { what + "runs without the NeuTRENO and Boost variants" };
        if (o.alsoRecord.attention || o.alsoRecord.blocks || o.alsoRecord.attnBranch || o.alsoRecord.residual)
            return Error { what + "has no tensor dump yet (--dump-tensors)" };
    }
    return attnscope::Done {};
}

attnscope::Status DatasetRun::plan()
{
    if (auto refused = hierarchicalRefusal(m_request); !refused)
        return refused.error();
    const std::string& name = m_request.modelName;
    addRun(m_request.model, name, m_base);
    if (m_request.neutreno || m_request.boost) {
        attnscope::AnalysisOptions variant = m_base;
        variant.alsoRecord = m_base.alsoRecord; // --dump-tensors writes every run's tensors
        variant.neutrenoLambda = m_request.neutreno;
        variant.boostT = m_request.boost;
        addRun(m_request.model, variantRunLabel(name, m_request.neutreno, m_request.boost), variant);
    }
    if (m_request.compare) {
        attnscope::AnalysisOptions other = m_base;
        other.alsoRecord = m_base.alsoRecord;
        addRun(m_request.compare, compareRunLabel(m_request.compareName, name), other);
    }

    const auto& paths = m_request.images;
    std::error_code ec;
    fs::create_directories(m_request.out, ec);
    if (ec)
        return Error { m_request.out + ": cannot create output folder (" + ec.message() + ")" };
    // A rerun into the folder of a killed run: its half-written temporaries go (the files it finished stay, and are
    // replaced as this run writes them).
    attnscope::removeStaleTemporaries(m_request.out);
    m_stems = attnscope::uniqueImageStems(names());
    for (size_t i = 0; i < paths.size(); ++i)
        if (int(i % size_t(m_request.shardCount)) == m_request.shardIndex - 1)
            m_mine.push_back(i);
    m_batch = size_t(m_request.batch > 0 ? m_request.batch : attnscope::defaultBatchSize(primary(), m_base));
    if (auto sha = attnscope::sha256FileCached(primary().info().weightsPath))
        m_weightsSha = *sha;
    m_resolved = resolvedRunOptions(m_request, m_runs.front().output.options["noise"], int64_t(m_batch),
                                    m_runs.front().analysis->analysesOnDevice());
    if (auto j = openJournal(); !j)
        return j;

    m_gridsWanted = std::max(0, m_request.gridImages);
    m_relevancesWanted = m_base.relevance ? size_t(std::max(1, m_request.gridImages)) : 0;
    m_normsWanted = m_base.norms ? size_t(std::max(1, m_request.gridImages)) : 0;
    // A resumed run draws the figures of the images behind it again.
    const size_t figured = std::max({ size_t(m_gridsWanted), m_relevancesWanted, m_normsWanted, size_t(m_base.decomposition ? 1 : 0) });
    for (const auto& entry : m_journal->firstImages(figured)) {
        const size_t index = entry.value("index", size_t(0));
        if (index >= paths.size())
            return Error { m_request.out + ": the run's journal names image " + std::to_string(index) + " of " + std::to_string(paths.size()) };
        const std::string& path = paths[index];
        auto image = attnscope::decodeImage(path);
        auto prepared = image ? primary().prepare(*image) : attnscope::Result<attnscope::Model::Prepared>(image.error());
        if (!prepared)
            return Error { nameOf(index) + ": " + prepared.message() + " (it was read before the run was resumed)" };
        if (auto f = addFigures(index, *prepared, nameOf(index)); !f)
            return f;
    }

    m_outcome.total = int(m_mine.size());
    m_outcome.done = m_state.done;
    m_outcome.skipped = int(m_state.skipped.size());
    m_outcome.resumedAt = int(m_state.position);
    if (m_state.position > 0) {
        if (m_request.resumed)
            m_request.resumed(int(m_state.position), m_outcome.total);
        if (m_progress)
            m_progress(int(m_state.position), m_outcome.total);
    }
    return attnscope::Done {};
}

void DatasetRun::addRun(std::shared_ptr<const attnscope::Model> m, const std::string& label, attnscope::AnalysisOptions o)
{
    Run r;
    r.model = m;
    r.output.label = label;
    r.output.folder = m_runs.empty() ? "" : "runs/" + slugOf(label);
    const auto& i = m->info();
    r.output.model = runModelRecord(i, label);
    r.output.options = { { "neutreno_lambda", o.neutrenoLambda.value_or(i.config.neutrenoLambda) },
                         { "boost_t", o.boostT.value_or(i.config.boostT) }, { "seed", o.seed }, { "draws", o.draws } };
    std::string noises;
    for (const auto& p : o.perturbations)
        noises += (noises.empty() ? "" : " ") + p.spec();
    r.output.options["noise"] = o.snr ? noises : "";
    if (o.ablation) {
        // The accuracy change counts the images whose class folder names one of this model's classes.
        o.trueClasses = attnscope::classesOfFolders(names(), i.labels);
        r.output.options["ablation"] = attnscope::toString(o.ablationMode);
        r.output.options["labelled_images"] = std::count_if(o.trueClasses.begin(), o.trueClasses.end(), [](int c) { return c >= 0; });
    }
    r.output.radius = o.radius;
    r.output.patchSize = i.config.patchSize;
    r.analysis = std::make_unique<attnscope::AnalysisRun>(m, o);
    m_runs.push_back(std::move(r));
}

attnscope::Status DatasetRun::openJournal()
{
    // What a resumed run continues from (RunJournal.h). Whatever changes the statistics, the predictions or the files
    // per image is part of the run's identity; the figures' options are not (a resumed run draws its figures anew).
    nlohmann::json identity = { { "models", nlohmann::json::array() }, { "options", nlohmann::json::object() } };
    for (const auto& run : m_runs) {
        std::string sha = m_weightsSha;
        if (run.model.get() != &primary()) {
            auto other = attnscope::sha256FileCached(run.model->info().weightsPath);
            sha = other ? *other : "";
        }
        identity["models"].push_back({ { "model", run.model->info().path + " (sha256 " + (sha.empty() ? "?" : sha.substr(0, 12)) + ")" },
                                       { "neutreno", run.output.options["neutreno_lambda"] }, { "boost", run.output.options["boost_t"] } });
    }
    for (const RunOption& o : runOptions()) {
        const bool matters = o.identity && !(std::string(o.cli) == "ablation" && !m_base.ablation) // what an ablated head becomes
            && !(std::string(o.cli) == "outlier-ratio" && !m_base.norms); // the outlier count depends on it
        if (matters)
            identity["options"][o.cli] = m_resolved[o.cli];
    }
    // The door's options that change what is computed: the models' files, the device, the shard.
    identity["options"]["description"] = m_request.description;
    identity["options"]["compare"] = m_request.compareSpec;
    identity["options"]["device"] = primary().info().device;
    identity["options"]["shard"] = std::to_string(m_request.shardIndex) + "/" + std::to_string(m_request.shardCount);
    if (m_request.inputHeight > 0) // only when given: the journals of runs without it stay resumable
        identity["options"]["input-size"] = { m_request.inputHeight, m_request.inputWidth };
    auto opened = RunJournal::open(m_request.out, identity, m_request.images, m_request.resume);
    if (!opened)
        return opened.error();
    m_journal = std::move(*opened);
    m_state = m_journal->resumed();
    m_state.total = m_mine.size();
    if (!m_state.runs.empty())
        for (size_t r = 0; r < m_runs.size(); ++r)
            m_runs[r].analysis->restore(std::move(m_state.runs[r].stats), m_state.runs[r].images);
    return attnscope::Done {};
}

attnscope::Status DatasetRun::addFigures(size_t index, const attnscope::Model::Prepared& prepared, const std::string& path)
{
    const attnscope::Model& model = primary();
    const std::string& name = m_request.modelName;
    if (int(m_grids.size()) < m_gridsWanted || m_norms.size() < m_normsWanted) {
        attnscope::RunOptions maps;
        maps.record.attention = true;
        maps.record.blocks = m_norms.size() < m_normsWanted;
        maps.precision = m_base.precision;
        auto traced = model.run(prepared.input, maps);
        if (!traced)
            return Error { path + ": " + traced.message() };
        if (m_norms.size() < m_normsWanted) {
            const auto& c = model.config();
            m_norms.push_back({ "token_norms_" + m_stems[index],
                                { name, m_stems[index], prepared.shown, c.classToken, c.numRegisters,
                                  attnscope::tokenNorms(*traced, c, m_base.outlierRatio) } });
        }
        if (int(m_grids.size()) >= m_gridsWanted) {
            // only the norms were wanted of this image
        } else if (traced->attention.empty() || traced->attention.back().empty()) {
            m_gridsWanted = 0; // a model without attention maps
        } else {
            auto query = gridQueryToken(m_request.gridQuery, traced->gridHeight, traced->gridWidth, traced->numPrefixTokens);
            if (!query)
                return Error { model.info().path + ": " + query.message() };
            attnscope::AttentionGrid grid = attnscope::attentionGrid(*traced, *query, m_request.rollout);
            grid.model = name;
            grid.image = m_stems[index];
            grid.shown = prepared.shown;
            m_grids.push_back({ "attention_grid_" + m_stems[index], std::move(grid) });
        }
    }
    if (m_relevances.size() < m_relevancesWanted) {
        auto r = attnscope::classRelevance(model, prepared.input, m_request.relevance);
        if (!r)
            return Error { model.info().path + ": " + r.message() };
        const auto& labels = model.info().labels;
        const std::string label = size_t(r->targetClass) < labels.size() ? labels[size_t(r->targetClass)] : std::string();
        m_relevances.push_back({ "relevance_" + m_stems[index], { name, m_stems[index], label, prepared.shown, std::move(*r) } });
    }
    if (!m_decomposition && m_base.decomposition) {
        auto d = attnscope::decomposeLogits(model, prepared.input);
        if (!d)
            return Error { model.info().path + ": " + d.message() };
        m_decomposition = *d;
    }
    return attnscope::Done {};
}

// --- pipeline: the batches through every run, two in flight

attnscope::Status DatasetRun::pipeline()
{
    // Distinct models (a variant shares its model, and so its preprocessing, with the first run): each image is
    // prepared once per model, on the prefetch threads, a batch ahead of the forwards.
    std::vector<const attnscope::Model*> models;
    std::vector<size_t> modelOfRun;
    std::vector<const attnscope::AnalysisRun*> analyses;
    for (const auto& run : m_runs) {
        auto it = std::find(models.begin(), models.end(), run.model.get());
        modelOfRun.push_back(size_t(it - models.begin()));
        if (it == models.end())
            models.push_back(run.model.get());
        analyses.push_back(run.analysis.get());
    }
    const bool onGpu = primary().info().device != "cpu";
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    BatchPrefetch prefetch(models, analyses, modelOfRun, m_request.images,
                           std::vector<size_t>(m_mine.begin() + long(m_state.position), m_mine.end()), m_batch,
                           onGpu ? int(std::max(2u, cores - 2)) : 1);
    // Two batches in flight: batch k + 1 is queued on each run's device before batch k is waited for and written out
    // (its predictions, figures, journal entries and position), so that the device works on one while the host writes
    // the other. A batch enters the statistics only when it is finished, on every run, so the runs always agree.
    const auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
    const auto isCancelled = [this] { return cancelled(); };
    m_lastCheckpoint = Clock::now();
    std::optional<InFlight> inFlight;
    auto waitStart = Clock::now();
    for (auto next = prefetch.next(); !next.end() && !cancelled(); waitStart = Clock::now(), next = prefetch.next()) {
        m_waiting += since(waitStart);
        if (m_request.strict && !next.skipped.empty())
            return Error { next.skipped.front().error + " (--strict: the run stops at the first image it cannot read)" };
        if (!next.error.empty())
            return Error { next.error };
        InFlight queued { std::move(next), {} };
        bool stopped = false; // cancelled while queuing: the batch is dropped on every run
        for (size_t r = 0; r < m_runs.size() && !queued.batch.images.empty(); ++r) {
            const auto forwardStart = Clock::now();
            auto pending = m_runs[r].analysis->enqueue(queued.batch.staged[r], isCancelled, r == 0 || m_dumping);
            m_forwards += since(forwardStart);
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
                return f;
        inFlight.reset();
        if (stopped)
            break;
        inFlight = std::move(queued);
    }
    if (inFlight) // the last batch, or the one queued before a cancellation
        if (auto f = finishBatch(*inFlight); !f)
            return f;
    m_outcome.complete = !cancelled();
    m_outcome.note = m_runs.front().analysis->cudaGraphNote();
    // The state every run has added (a batch cancelled while queued is in none of them).
    return checkpoint();
}

attnscope::Status DatasetRun::finishBatch(InFlight& done)
{
    const std::vector<PrefetchedImage>& items = done.batch.images;
    const bool classify = primary().config().numClasses > 0 && !primary().config().headIsProjection;
    for (size_t r = 0; r < done.runs.size(); ++r) {
        std::vector<attnscope::Trace> traces;
        const auto forwardStart = Clock::now();
        auto added = m_runs[r].analysis->finish(done.runs[r], r == 0 || m_dumping ? &traces : nullptr);
        m_forwards += std::chrono::duration<double>(Clock::now() - forwardStart).count();
        if (!added)
            return Error { batchName(items) + added.message() };
        std::string rows;
        for (size_t k = 0; k < traces.size(); ++k) {
            const PrefetchedImage& item = items[k];
            const attnscope::Trace& trace = traces[k];
            // Every run's tensors: the model's in tensors/, a variant's or the compared model's in runs/<label>/tensors/.
            if (m_dumping)
                if (auto d = dumpTensors((fs::path(m_request.out) / m_runs[r].output.folder / "tensors" / m_stems[item.index]).string(), trace); !d)
                    return d;
            if (r != 0)
                continue;
            if (classify)
                appendPredictions(rows, nameOf(item.index), trace.logits, primary().info().labels);
            if (auto f = addFigures(item.index, item.prepared[0], nameOf(item.index)); !f)
                return f;
        }
        if (!rows.empty())
            if (auto w = m_journal->appendPredictions(rows); !w)
                return w;
    }
    for (const auto& item : done.batch.skipped) {
        // The cause as the user knows the file (the reader names the copy it read).
        std::string cause = item.error;
        if (const std::string& name = nameOf(item.index); name != item.path)
            for (size_t at = cause.find(item.path); at != std::string::npos; at = cause.find(item.path, at + name.size()))
                cause.replace(at, item.path.size(), name);
        m_state.skipped.push_back({ { "index", item.index }, { "path", nameOf(item.index) }, { "cause", cause } });
        ++m_outcome.skipped;
        if (m_request.skipped)
            m_request.skipped(cause);
    }
    for (const auto& item : items)
        if (auto w = m_journal->appendImage({ { "index", item.index }, { "path", nameOf(item.index) }, { "sha256", item.sha256 }, { "stem", m_stems[item.index] } });
            !w)
            return w;
    m_outcome.done += int(items.size());
    m_state.position += items.size() + done.batch.skipped.size();
    m_state.done = m_outcome.done;
    // Every few seconds, after a batch all runs have added, the state a resume starts from.
    if (std::chrono::duration<double>(Clock::now() - m_lastCheckpoint).count() >= m_request.checkpointSeconds)
        if (auto c = checkpoint(); !c)
            return c;
    if (m_progress)
        m_progress(m_outcome.done + m_outcome.skipped, m_outcome.total);
    return attnscope::Done {};
}

attnscope::Status DatasetRun::checkpoint()
{
    m_state.runs.clear();
    for (const auto& run : m_runs)
        m_state.runs.push_back({ run.analysis->statistics(), run.analysis->images() });
    m_lastCheckpoint = Clock::now();
    return m_journal->checkpoint(m_state);
}

// --- outputs: the query-key maps, predictions, each run's files, the manifest

attnscope::Result<std::shared_ptr<ReportResults>> DatasetRun::outputs()
{
    const std::string& out = m_request.out;
    auto results = std::make_shared<ReportResults>();
    nlohmann::json queryKeyRecord;
    if (m_request.queryKey.enabled && m_outcome.complete) {
        std::vector<std::string> myPaths, myStems;
        for (size_t i : m_mine) {
            myPaths.push_back(m_request.images[i]);
            myStems.push_back(m_stems[i]);
        }
        auto maps = writeQueryKeyMaps(m_request, primary(), myPaths, myStems);
        if (!maps)
            return maps.error();
        results->queryKey = std::move(maps->figure);
        queryKeyRecord = std::move(maps->record);
    }
    if (primary().config().numClasses > 0 && !primary().config().headIsProjection)
        if (auto w = m_journal->writePredictions((fs::path(out) / "predictions.csv").string(), "image,rank,class,label,prob\n"); !w)
            return w.error();
    nlohmann::json runList = nlohmann::json::array();
    for (auto& run : m_runs) {
        run.output.stats = run.analysis->statistics();
        run.output.images = run.analysis->images();
        if (auto w = writeRunOutput(out, run.output); !w)
            return w.error();
        runList.push_back({ { "label", run.output.label }, { "folder", run.output.folder }, { "model", run.output.model },
                            { "options", run.output.options } });
        results->outputs.push_back(run.output);
    }
    results->outcome = m_outcome;
    results->journal = m_journal;
    // One figure of a kind keeps the plain name.
    if (m_grids.size() == 1)
        m_grids.front().name = "attention_grid";
    if (m_relevances.size() == 1)
        m_relevances.front().name = "relevance";
    if (m_norms.size() == 1)
        m_norms.front().name = "token_norms";
    results->manifest = manifest(runList, queryKeyRecord);
    results->grids = std::move(m_grids);
    results->relevances = std::move(m_relevances);
    results->norms = std::move(m_norms);
    results->decomposition = std::move(m_decomposition);
    results->analysisSeconds = std::chrono::duration<double>(Clock::now() - m_start).count();
    results->waitingForImagesSeconds = m_waiting;
    results->forwardSeconds = m_forwards;
    return results;
}

nlohmann::json DatasetRun::manifest(const nlohmann::json& runList, const nlohmann::json& queryKeyRecord) const
{
    nlohmann::json relevanceList = nlohmann::json::array();
    for (const auto& r : m_relevances)
        relevanceList.push_back({ { "figure", r.name }, { "image", r.figure.image }, { "class", r.figure.relevance.targetClass },
                                  { "label", r.figure.label }, { "probability", r.figure.relevance.probability },
                                  { "gradcam_layer", r.figure.relevance.gradCamLayer } });
    nlohmann::json normsList = nlohmann::json::array();
    for (const auto& n : m_norms) {
        nlohmann::json outliers = nlohmann::json::array();
        for (const auto& l : n.figure.norms.layers)
            outliers.push_back(l.outliers.size());
        normsList.push_back({ { "figure", n.name }, { "image", n.figure.image }, { "outliers_per_layer", outliers } });
    }
    const auto& info = primary().info();
    const attnscope::ThreadSetup threads = attnscope::threadSetup();
    const attnscope::CpuKernels cpu = attnscope::cpuKernels();
    // Each option of the table under its key, then how and where the run ran.
    nlohmann::json options = nlohmann::json::object();
    for (const RunOption& o : runOptions())
        if (*o.manifest)
            options[o.manifest] = m_resolved[o.cli];
    options.update({ { "device", info.device },
                     { "input_size", m_request.inputHeight > 0 ? nlohmann::json { m_request.inputHeight, m_request.inputWidth } : nlohmann::json() },
                     { "threads", m_request.threads },
                     { "cuda_graph_replays", m_runs.front().analysis->cudaGraphReplays() },
                     { "intra_op_threads", threads.intraOp }, { "inter_op_threads", threads.interOp },
                     { "omp_wait_policy", std::getenv("OMP_WAIT_POLICY") ? std::getenv("OMP_WAIT_POLICY") : "" },
                     { "cpu_kernels", { { "isa", cpu.isa }, { "blas", cpu.blas }, { "linear", cpu.linear }, { "attention", cpu.attention } } },
                     { "description", m_request.description }, { "compare", m_request.compareSpec }, { "formats", m_request.formatsText } });
    return {
        { "tool", "attnscope" }, { "version", attnscope::version() },
        { "model", { { "path", info.path }, { "weights", info.weightsPath }, { "sha256", m_weightsSha },
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
        { "skipped", m_state.skipped },
        { "relevance", relevanceList },
        { "token_norms", normsList },
        { "query_key", queryKeyRecord },
        { "resumed_at", m_outcome.resumedAt },
        { "options", options },
        { "shard", { { "index", m_request.shardIndex }, { "count", m_request.shardCount }, { "images_total", m_request.images.size() } } },
        { "complete", m_outcome.complete },
    };
}
