#include "attnscope/AnalysisRun.h"


#include "analyses/BatchGraph.h"
#include "analyses/BatchedAnalyses.h"
#include "vit/ModelImpl.h"
#include "analyses/StatKeys.h"
#include "io/TensorImpl.h"
#include "vit/Threads.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>


#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

namespace attnscope {

namespace {

using keys::kCentreFields;
using keys::kDiagnosticFields;

uint64_t mix(uint64_t x)
{
    // splitmix64: decorrelates the per-image seeds derived from (seed, image index, draw)
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

void addValue(StatsTable& stats, const std::string& key, double value)
{
    if (std::isfinite(value)) // undefined quantities (one head's redundancy, no interior query) are left out
        stats[key].add(value);
}

// What one image's analyses produce before it enters the statistics: computed in parallel, added in one order.
struct ImageResults {
    std::vector<TokenSimilarityPoint> tokenSimilarity;
    std::vector<AttentionSimilarityPoint> attentionSimilarity;
    std::vector<HeadCentre> headCentres;
    std::vector<SnrResult> snr; // by perturbation, then draw
    TokenNorms norms;
};

void addResults(StatsTable& stats, const AnalysisOptions& options, const ImageResults& r)
{
    for (const auto& p : r.tokenSimilarity)
        addValue(stats, keys::tokenSimilarity(p.layer, p.tap, p.tokens), p.value);
    for (const auto& p : r.attentionSimilarity) {
        addValue(stats, keys::attentionSimilarity(p.layer, "successive_cos"), p.successiveCos);
        addValue(stats, keys::attentionSimilarity(p.layer, "head_redundancy"), p.headRedundancy);
    }
    for (const auto& h : r.headCentres) {
        const double values[] = { h.centreDy, h.centreDx, h.peakDy, h.peakDx, h.meanDistancePx, h.bandwidth, h.prefixMass, h.windowMass };
        for (size_t i = 0; i < std::size(kCentreFields); ++i)
            addValue(stats, keys::headCentre(h.layer, h.head, kCentreFields[i]), values[i]);
        for (int64_t i = 0; i < h.offsetMap.numel(); ++i)
            addValue(stats, keys::offsetMapCell(h.layer, h.head, int(i)), h.offsetMap.data()[i]);
    }
    for (const auto& n : r.norms.layers) {
        const double values[] = { double(n.outliers.size()), n.patchMedian, n.maxRatio, n.clsRatio, n.registerRatio,
                                  n.outlierAttention, n.prefixAttention };
        for (size_t i = 0; i < std::size(keys::kNormFields); ++i)
            addValue(stats, keys::tokenNorm(n.layer, keys::kNormFields[i]), values[i]);
    }
    size_t k = 0;
    for (const auto& p : r.snr.empty() ? std::vector<Perturbation> {} : options.perturbations) {
        const std::string spec = p.spec();
        for (int draw = 0; draw < options.draws; ++draw) {
            const SnrResult& result = r.snr[k++];
            for (const auto& s : result.snr)
                addValue(stats, keys::snr(spec, s.layer, s.tap), s.snrDb);
            for (const auto& d : result.diagnostics) {
                const double values[] = { d.alpha, d.beta, d.gamma, d.gain, d.bound, d.conditionHolds ? 1.0 : 0.0, d.sensitivity };
                for (size_t f = 0; f < std::size(kDiagnosticFields); ++f)
                    addValue(stats, keys::snrDiagnostic(spec, d.layer, kDiagnosticFields[f]), values[f]);
            }
        }
    }
}

} // namespace

Result<std::vector<std::string>> AnalysisOptions::parseList(const std::string& list)
{
    static const std::set<std::string> known { "similarity", "attention", "centres", "snr", "decomposition", "relevance", "norms", "ablation", "qkmap" };
    std::vector<std::string> out;
    for (const auto& name : keys::split(list, ',')) {
        if (!known.count(name))
            return Error { "unknown analysis \"" + name + "\" (similarity, attention, centres, snr, decomposition, relevance, norms, ablation, qkmap)" };
        out.push_back(name);
    }
    return out;
}

AnalysisRun::AnalysisRun(std::shared_ptr<const Model> model, AnalysisOptions options)
    : m_model(std::move(model))
    , m_options(std::move(options))
{
}

RecordSpec AnalysisRun::recordSpec() const
{
    RecordSpec spec;
    spec.attention = m_options.attention || m_options.centres || m_options.norms;
    spec.blocks = m_options.similarity || m_options.snr || m_options.norms;
    spec.attnBranch = m_options.similarity || m_options.snr;
    spec.residual = m_options.similarity || m_options.snr;
    spec.attention = spec.attention || m_options.alsoRecord.attention;
    spec.blocks = spec.blocks || m_options.alsoRecord.blocks;
    spec.attnBranch = spec.attnBranch || m_options.alsoRecord.attnBranch;
    spec.residual = spec.residual || m_options.alsoRecord.residual;
    return spec;
}

int defaultBatchSize(const Model& model, const AnalysisOptions& options)
{
    if (!implOf(model).device.is_cpu())
        return 64;
    const int inputsPerImage = 1 + (options.snr ? int(options.perturbations.size()) * std::max(0, options.draws) : 0);
    return std::max(1, interOpThreads() / inputsPerImage);
}

bool AnalysisRun::analysesOnDevice() const
{
    if (m_model->config().hierarchical()) // the batched analyses read a ViT's [B, H, N, N] maps
        return false;
    return m_options.analysesOnDevice.value_or(!implOf(*m_model).device.is_cpu());
}

void AnalysisRun::restore(StatsTable stats, int64_t images)
{
    m_stats = std::move(stats);
    m_images = images;
    m_columnKeys.clear(); // the cached pointers were into the table replaced
    m_columnStats.clear();
}

Status AnalysisRun::addImage(const Model::Prepared& image, int64_t index, const std::function<bool()>& isCancelled,
                                   Trace* cleanTrace)
{
    std::vector<Trace> traces;
    auto added = addImages({ &image }, { index }, isCancelled, cleanTrace ? &traces : nullptr);
    if (added && cleanTrace)
        *cleanTrace = std::move(traces.front());
    return added;
}

// The staged inputs: one per forward row, and on the device path the same stacked (page-locked for a GPU).
struct StagedBatch::Impl {
    std::vector<Tensor> inputs;
    at::Tensor stacked;
    size_t images = 0;
    std::vector<int> classes; // each image's known class, -1 unknown (AnalysisOptions::trueClasses)
};

// A batch enqueued and not yet finished: what finish adds to the statistics, once `ready` has been reached.
struct PendingBatch::Impl {
    const AnalysisRun* run = nullptr;
    uint64_t number = 0; // its place in the order of enqueue, from 1 (finished once m_lastFinished reaches it)
    std::shared_ptr<const StagedBatch::Impl> staged; // kept until the device has read its inputs
    std::vector<HeadAblation> ablations;
    std::vector<ImageResults> results; // the host path's
    BatchedValues values;              // the device path's, in host memory once `ready` is reached
    std::vector<Trace> traces;         // the clean forwards', when asked for
    DeviceFence ready;
};

Status AnalysisRun::addImages(const std::vector<const Model::Prepared*>& images, const std::vector<int64_t>& indices,
                                    const std::function<bool()>& isCancelled, std::vector<Trace>* cleanTraces)
{
    auto staged = stage(images, indices);
    if (!staged)
        return staged.error();
    return addStaged(*staged, isCancelled, cleanTraces);
}

Result<StagedBatch> AnalysisRun::stage(const std::vector<const Model::Prepared*>& images, const std::vector<int64_t>& indices) const
{
    if (images.size() != indices.size())
        return Error { "addImages: " + std::to_string(images.size()) + " images but " + std::to_string(indices.size()) + " indices" };
    // One forward for every image's clean input and all its perturbed copies (none depends on another's trace),
    // in the order the statistics take them: image by image, clean first, then perturbation by draw.
    const size_t noisyPerImage = m_options.snr ? m_options.perturbations.size() * size_t(std::max(0, m_options.draws)) : 0;
    const size_t stride = 1 + noisyPerImage;
    auto impl = std::make_shared<StagedBatch::Impl>();
    impl->images = images.size();
    impl->inputs.resize(images.size() * stride);
    for (int64_t index : indices)
        impl->classes.push_back(index >= 0 && size_t(index) < m_options.trueClasses.size() ? m_options.trueClasses[size_t(index)] : -1);
    // On the device path the rows go straight into one stacked tensor, page-locked for a GPU, so that its copy to
    // the device can overlap the host's work.
    if (analysesOnDevice() && !images.empty()) {
        std::vector<Tensor> clean;
        for (const auto* image : images)
            clean.push_back(image->input);
        auto checked = checkedBatchInputs(m_model->config(), clean); // the perturbed copies take their size
        if (!checked)
            return checked.error();
        std::vector<int64_t> shape { int64_t(impl->inputs.size()) };
        for (int64_t d : checked->front().sizes())
            shape.push_back(d);
        try {
            impl->stacked = at::empty(shape, at::TensorOptions().dtype(at::kFloat).pinned_memory(!implOf(*m_model).device.is_cpu()));
        } catch (const c10::Error& e) {
            return Error { std::string("staging the batch failed: ") + e.what_without_backtrace() };
        }
    }
    std::vector<std::string> errors(impl->inputs.size());
    const size_t draws = size_t(std::max(1, m_options.draws));
    runInterOp(impl->inputs.size(), interOpThreads(), [&](size_t row) {
        const size_t i = row / stride, k = row % stride;
        if (k == 0) {
            impl->inputs[row] = images[i]->input;
        } else {
            const size_t draw = (k - 1) % draws;
            const uint64_t seed = mix(mix(m_options.seed) ^ mix(uint64_t(indices[i]) * 0x10001u + uint64_t(draw)));
            auto noisyInput = perturbInput(*m_model, *images[i], m_options.perturbations[(k - 1) / draws], seed);
            if (!noisyInput) {
                errors[row] = noisyInput.message();
                return;
            }
            impl->inputs[row] = *noisyInput;
        }
        if (impl->stacked.defined()) {
            at::Tensor into = impl->stacked[int64_t(row)];
            into.copy_(unwrap(impl->inputs[row]).reshape(into.sizes()));
        }
    });
    for (const auto& e : errors)
        if (!e.empty())
            return Error { e };
    return StagedBatch(std::move(impl));
}

RunOptions AnalysisRun::runOptions(const std::function<bool()>& isCancelled) const
{
    RunOptions run;
    run.record = recordSpec();
    run.isCancelled = isCancelled;
    run.neutrenoLambda = m_options.neutrenoLambda;
    run.boostT = m_options.boostT;
    run.precision = m_options.precision;
    return run;
}

Status AnalysisRun::addStaged(const StagedBatch& batch, const std::function<bool()>& isCancelled, std::vector<Trace>* cleanTraces)
{
    auto pending = enqueue(batch, isCancelled, cleanTraces != nullptr);
    if (!pending)
        return pending.error();
    return finish(*pending, cleanTraces);
}

Result<PendingBatch> AnalysisRun::enqueue(const StagedBatch& batch, const std::function<bool()>& isCancelled, bool cleanTraces)
{
    const std::shared_ptr<const StagedBatch::Impl>& staged = batch.impl();
    if (!staged)
        return Error { "addStaged: an empty batch" };
    if (staged->images > 0 && analysesOnDevice() != staged->stacked.defined())
        return Error { "addStaged: a batch staged for another run" };
    auto pending = std::make_shared<PendingBatch::Impl>();
    pending->run = this;
    pending->staged = staged;
    if (staged->images > 0) {
        const RunOptions run = runOptions(isCancelled);
        auto ablations = ablate(staged->inputs, staged->images, run);
        if (!ablations)
            return ablations.error();
        pending->ablations = std::move(*ablations);
        auto analysed = analysesOnDevice() ? analyseOnDevice(*staged, run, *pending, cleanTraces)
                                           : analyseOnHost(*staged, run, *pending, cleanTraces);
        if (!analysed)
            return analysed.error();
    }
    pending->number = ++m_enqueued;
    return PendingBatch(std::move(pending));
}

Status AnalysisRun::finish(PendingBatch& batch, std::vector<Trace>* cleanTraces)
{
    PendingBatch::Impl* pending = batch.impl().get();
    if (!pending)
        return Error { "finish: an empty batch" };
    if (pending->run != this)
        return Error { "finish: a batch enqueued on another run" };
    if (pending->number <= m_lastFinished)
        return Error { "finish: batches are finished once each, in the order they were enqueued" };
    // The device's failures inside the batch's work surface here, where the host first waits for it.
    auto reached = catchForwardErrors([&]() -> Status {
        pending->ready.wait();
        return Done {};
    });
    if (!reached)
        return reached;
    m_lastFinished = pending->number;
    // The ablations enter the statistics with the rest of the batch: a failed or cancelled batch leaves them as they were.
    for (size_t i = 0; i < pending->ablations.size(); ++i) {
        const HeadAblation& image = pending->ablations[i];
        const int truth = pending->staged->classes[i];
        for (const auto& e : image.heads) {
            const double values[] = { e.dlogit, e.dprob, e.kl, e.flip ? 1.0 : 0.0 };
            for (size_t f = 0; f < std::size(keys::kAblationFields); ++f)
                addValue(m_stats, keys::ablation(e.layer, e.head, keys::kAblationFields[f]), values[f]);
            // Its mean over the images of known class: the accuracy with the head ablated minus the clean accuracy.
            if (truth >= 0)
                addValue(m_stats, keys::ablation(e.layer, e.head, keys::kAccuracyChange),
                         double(e.predicted == truth) - double(image.predicted == truth));
        }
    }
    for (const auto& r : pending->results)
        addResults(m_stats, m_options, r);
    if (pending->values.values.defined())
        addColumns(*pending);
    m_images += int64_t(pending->staged->images);
    if (cleanTraces)
        for (auto& t : pending->traces)
            cleanTraces->push_back(std::move(t));
    pending->traces.clear();
    pending->staged.reset();
    return Done {};
}

// Head ablation (Analyses.h section 8) of each clean input: L x H ablated forwards (and the clean one) per image, batched
// along the batch dimension on the model's device; into "ab/<layer>/<head>/<field>" by addStaged. None without ablation.
Result<std::vector<HeadAblation>> AnalysisRun::ablate(const std::vector<Tensor>& inputs, size_t images, const RunOptions& run) const
{
    std::vector<HeadAblation> out;
    if (!m_options.ablation)
        return out;
    RunOptions plain = run;
    plain.record = {};
    const size_t stride = inputs.size() / images;
    for (size_t i = 0; i < images; ++i) {
        auto ablated = headAblation(*m_model, inputs[i * stride], m_options.ablationMode, plain);
        if (!ablated)
            return ablated.error();
        out.push_back(std::move(*ablated));
    }
    return out;
}

Status AnalysisRun::analyseOnHost(const StagedBatch::Impl& staged, const RunOptions& run, PendingBatch::Impl& pending, bool cleanTraces) const
{
    const std::vector<Tensor>& inputs = staged.inputs;
    const size_t images = staged.images;
    auto traces = m_model->runBatch(inputs, run);
    if (!traces)
        return traces.error();
    const size_t stride = inputs.size() / images, noisyPerImage = stride - 1;
    if (m_options.cleanTraceReady)
        for (size_t i = 0; i < images; ++i)
            m_options.cleanTraceReady(i, (*traces)[i * stride]);
    // Every analysis of every image is a task of its own, spread over the threads (each analysis is sequential
    // inside); the SNRs, the longest, go first so that the threads finish together. The results enter the
    // statistics afterwards (finish) in one fixed order, so the numbers do not depend on the thread count.
    std::vector<ImageResults>& results = pending.results;
    results.resize(images);
    std::vector<std::function<void()>> tasks;
    for (size_t i = 0; i < images; ++i) {
        ImageResults& r = results[i];
        const Trace& clean = (*traces)[i * stride];
        r.snr.resize(noisyPerImage);
        for (size_t k = 0; k < noisyPerImage; ++k)
            tasks.push_back([&, i, k] { r.snr[k] = signalToNoise(clean, (*traces)[i * stride + 1 + k], m_options.centreSignal); });
        if (m_options.centres)
            tasks.push_back([&] { r.headCentres = headCentres(clean, m_model->config().patchSize, m_options.radius); });
        if (m_options.attention)
            tasks.push_back([&] { r.attentionSimilarity = attentionSimilarity(clean); });
        if (m_options.similarity)
            tasks.push_back([&] { r.tokenSimilarity = tokenSimilarity(clean); });
        if (m_options.norms && !clean.hierarchical()) // not of a Swin yet (AnalysisOptions::norms)
            tasks.push_back([&] { r.norms = tokenNorms(clean, m_model->config(), m_options.outlierRatio); });
    }
    runInterOp(tasks.size(), interOpThreads(), [&](size_t t) { tasks[t](); });
    if (cleanTraces)
        for (size_t i = 0; i < images; ++i)
            pending.traces.push_back(std::move((*traces)[i * stride]));
    return Done {};
}

Status AnalysisRun::analyseOnDevice(const StagedBatch::Impl& staged, const RunOptions& run, PendingBatch::Impl& pending, bool cleanTraces)
{
    const ModelConfig& c = m_model->config();
    const at::Device device = implOf(*m_model).device;
    const size_t images = staged.images;
    const size_t stride = staged.inputs.size() / images;
    const at::Tensor& batch = staged.stacked;
    BatchLayout layout;
    layout.images = int64_t(images);
    layout.noisyPerImage = int64_t(stride) - 1;
    layout.gridHeight = int(batch.size(2) / c.patchSize);
    layout.gridWidth = int(batch.size(3) / c.patchSize);
    layout.prefixTokens = c.numPrefixTokens();
    layout.patchSize = c.patchSize;
    layout.depth = c.depth;
    layout.classToken = c.classToken;
    layout.registers = c.numRegisters;
    // The clean rows' logits; their taps only where the caller asked for them (a copy of every map of every image would
    // cost more than the analyses).
    const bool taps = copiesTaps();
    std::vector<int64_t> cleanRows;
    for (size_t i = 0; i < images; ++i)
        cleanRows.push_back(int64_t(i * stride));
    if (!m_tables)
        m_tables = std::make_shared<AnalysisTables>();
    if (m_options.cudaGraph && !m_graphs)
        m_graphs = std::make_shared<BatchGraphs>(device);
    const bool graphed = m_graphs && !taps; // a graph leaves the taps inside it
    const std::shared_ptr<void> onTheRunsStream = graphed ? m_graphs->useStream() : nullptr;
    return catchForwardErrors([&]() -> Status {
        // The phases are named for LibTorch's profiler and RecordFunction observers (device_path_bench counts the operators
        // of each): "attnscope::forward", "attnscope::analyses", "attnscope::copy_back", "attnscope::clean_traces", and
        // with CUDA graphs "attnscope::graph".
        std::optional<GraphedBatch> replayed;
        if (graphed) {
            RunOptions captured = run;
            captured.isCancelled = {}; // a batch replays whole: cancelled between batches
            RECORD_USER_SCOPE("attnscope::graph"); // the capture, or the replay: one launch for the batch
            replayed = m_graphs->run(batch, [&](const at::Tensor& input) {
                const BatchForward forward = forwardBatch(*m_model, input, captured, /*stackTaps=*/true);
                BatchedValues values = analyseBatch(forward.state, layout, m_options, m_tables.get());
                return GraphedBatch { values.keys, values.values, forward.logits };
            });
        }
        // Replayed, the batch's forward leaves only its logits (and the variant's values that traces carry).
        BatchForward forward;
        if (replayed) {
            pending.values = { replayed->keys, replayed->values };
            forward.logits = replayed->logits;
            forward.state.reset(c.depth);
            forward.state.neutrenoLambda = run.neutrenoLambda.value_or(c.neutrenoLambda);
            forward.state.boostT = run.boostT.value_or(c.boostT);
        } else {
            {
                RECORD_USER_SCOPE("attnscope::forward");
                forward = forwardBatch(*m_model, batch, run, /*stackTaps=*/true);
            }
            RECORD_USER_SCOPE("attnscope::analyses");
            pending.values = analyseBatch(forward.state, layout, m_options, m_tables.get());
        }
        // The analyses are queued first, then their values' one copy back, then the clean rows' logits: nothing here
        // waits for the device, which works through the batch while the host queues the next one (finish waits).
        {
            RECORD_USER_SCOPE("attnscope::copy_back");
            pending.values.values = hostCopyAsync(pending.values.values);
        }
        if (cleanTraces || m_options.cleanTraceReady) {
            RECORD_USER_SCOPE("attnscope::clean_traces");
            pending.traces = hostTraces(*m_model, forward, batch, cleanRows, taps, /*async=*/true);
        }
        pending.ready.record(device);
        if (m_options.cleanTraceReady) { // shown as soon as the forward is done: this batch is waited for here
            pending.ready.wait();
            for (size_t i = 0; i < images; ++i)
                m_options.cleanTraceReady(i, pending.traces[i]);
            if (!cleanTraces)
                pending.traces.clear();
        }
        return Done {};
    });
}

bool AnalysisRun::copiesTaps() const
{
    const RecordSpec& also = m_options.alsoRecord;
    return bool(m_options.cleanTraceReady) || also.attention || also.blocks || also.attnBranch || also.residual;
}

int AnalysisRun::cudaGraphReplays() const { return m_graphs ? m_graphs->replays() : 0; }

std::string AnalysisRun::cudaGraphNote() const
{
    if (!m_options.cudaGraph)
        return {};
    if (!analysesOnDevice())
        return "CUDA graphs need the analyses on the device: every batch ran eagerly";
    if (copiesTaps())
        return "CUDA graphs leave the taps inside them, and this run copies taps back: every batch ran eagerly";
    return m_graphs ? m_graphs->note() : std::string();
}

// The device path's values into the statistics image by image, each column in order (an SNR key's draws in draw order),
// as addResults does.
void AnalysisRun::addColumns(const PendingBatch::Impl& pending)
{
    const BatchedValues& values = pending.values;
    if (values.keys != m_columnKeys) {
        m_columnKeys = values.keys;
        m_columnStats.assign(m_columnKeys.size(), nullptr);
    }
    const int64_t columns = values.values.size(1);
    const double* v = values.values.data_ptr<double>();
    for (size_t i = 0; i < pending.staged->images; ++i, v += columns) {
        for (int64_t k = 0; k < columns; ++k) {
            if (!std::isfinite(v[k]))
                continue;
            RunningStats*& stats = m_columnStats[size_t(k)];
            if (!stats)
                stats = &m_stats[m_columnKeys[size_t(k)]];
            stats->add(v[k]);
        }
    }
}

} // namespace attnscope
