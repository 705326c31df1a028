#include "attnscope/AnalysisRun.h"


#include "BatchedAnalyses.h"
#include "ModelImpl.h"
#include "StatKeys.h"
#include "TensorImpl.h"
#include "Threads.h"

#include <ATen/ATen.h>


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

std::vector<std::string> split(const std::string& s, char sep)
{
    std::vector<std::string> parts;
    std::stringstream in(s);
    std::string p;
    while (std::getline(in, p, sep))
        parts.push_back(p);
    return parts;
}

Estimate estimate(const StatsTable& stats, const std::string& key)
{
    auto it = stats.find(key);
    if (it == stats.end())
        return { std::nan(""), std::nan(""), std::nan(""), 0 };
    return { it->second.mean(), it->second.sd(), it->second.ci95(), it->second.count() };
}

Tap tapFromName(const std::string& s) { return s == "attn" ? Tap::Attn : s == "residual" ? Tap::Residual : Tap::Block; }

} // namespace

Result<std::vector<std::string>> AnalysisOptions::parseList(const std::string& list)
{
    static const std::set<std::string> known { "similarity", "attention", "centres", "snr", "decomposition", "relevance", "norms" };
    std::vector<std::string> out;
    for (const auto& name : split(list, ',')) {
        if (!known.count(name))
            return Error { "unknown analysis \"" + name + "\" (similarity, attention, centres, snr, decomposition, relevance, norms)" };
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

// What one image's analyses produce before it enters the statistics: computed in parallel, added in one order.
struct AnalysisRun::ImageResults {
    std::vector<TokenSimilarityPoint> tokenSimilarity;
    std::vector<AttentionSimilarityPoint> attentionSimilarity;
    std::vector<HeadCentre> headCentres;
    std::vector<SnrResult> snr; // by perturbation, then draw
    TokenNorms norms;
};

void AnalysisRun::addResults(const ImageResults& r)
{
    for (const auto& p : r.tokenSimilarity)
        addValue(m_stats, keys::tokenSimilarity(p.layer, p.tap, p.tokens), p.value);
    for (const auto& p : r.attentionSimilarity) {
        addValue(m_stats, keys::attentionSimilarity(p.layer, "successive_cos"), p.successiveCos);
        addValue(m_stats, keys::attentionSimilarity(p.layer, "head_redundancy"), p.headRedundancy);
    }
    for (const auto& h : r.headCentres) {
        const double values[] = { h.centreDy, h.centreDx, h.peakDy, h.peakDx, h.meanDistancePx, h.bandwidth, h.prefixMass, h.windowMass };
        for (size_t i = 0; i < std::size(kCentreFields); ++i)
            addValue(m_stats, keys::headCentre(h.layer, h.head, kCentreFields[i]), values[i]);
        for (int64_t i = 0; i < h.offsetMap.numel(); ++i)
            addValue(m_stats, keys::offsetMapCell(h.layer, h.head, int(i)), h.offsetMap.data()[i]);
    }
    for (const auto& n : r.norms.layers) {
        const double values[] = { double(n.outliers.size()), n.patchMedian, n.maxRatio, n.clsRatio, n.registerRatio,
                                  n.outlierAttention, n.prefixAttention };
        for (size_t i = 0; i < std::size(keys::kNormFields); ++i)
            addValue(m_stats, keys::tokenNorm(n.layer, keys::kNormFields[i]), values[i]);
    }
    size_t k = 0;
    for (const auto& p : r.snr.empty() ? std::vector<Perturbation> {} : m_options.perturbations) {
        const std::string spec = p.spec();
        for (int draw = 0; draw < m_options.draws; ++draw) {
            const SnrResult& result = r.snr[k++];
            for (const auto& s : result.snr)
                addValue(m_stats, keys::snr(spec, s.layer, s.tap), s.snrDb);
            for (const auto& d : result.diagnostics) {
                const double values[] = { d.alpha, d.beta, d.gamma, d.gain, d.bound, d.conditionHolds ? 1.0 : 0.0, d.sensitivity };
                for (size_t f = 0; f < std::size(kDiagnosticFields); ++f)
                    addValue(m_stats, keys::snrDiagnostic(spec, d.layer, kDiagnosticFields[f]), values[f]);
            }
        }
    }
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
    return m_options.analysesOnDevice.value_or(!implOf(*m_model).device.is_cpu());
}

void AnalysisRun::restore(StatsTable stats, int64_t images)
{
    m_stats = std::move(stats);
    m_images = images;
    m_columnKeys.clear(); // the cached pointers were into the table replaced
    m_columnStats.clear();
}

Result<bool> AnalysisRun::addImage(const Model::Prepared& image, int64_t index, const std::function<bool()>& isCancelled,
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
};

Result<bool> AnalysisRun::addImages(const std::vector<const Model::Prepared*>& images, const std::vector<int64_t>& indices,
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

Result<bool> AnalysisRun::addStaged(const StagedBatch& batch, const std::function<bool()>& isCancelled, std::vector<Trace>* cleanTraces)
{
    const StagedBatch::Impl* staged = batch.impl().get();
    if (!staged)
        return Error { "addStaged: an empty batch" };
    if (staged->images == 0)
        return true;
    if (analysesOnDevice() != staged->stacked.defined())
        return Error { "addStaged: a batch staged for another run" };
    const RunOptions run = runOptions(isCancelled);
    return analysesOnDevice() ? analyseOnDevice(*staged, run, cleanTraces) : analyseOnHost(staged->inputs, staged->images, run, cleanTraces);
}

Result<bool> AnalysisRun::analyseOnHost(const std::vector<Tensor>& inputs, size_t images, const RunOptions& run,
                                        std::vector<Trace>* cleanTraces)
{
    auto traces = m_model->runBatch(inputs, run);
    if (!traces)
        return traces.error();
    const size_t stride = inputs.size() / images, noisyPerImage = stride - 1;
    if (m_options.cleanTraceReady)
        for (size_t i = 0; i < images; ++i)
            m_options.cleanTraceReady(i, (*traces)[i * stride]);
    // Every analysis of every image is a task of its own, spread over the threads (each analysis is sequential
    // inside); the SNRs, the longest, go first so that the threads finish together. The results enter the
    // statistics afterwards in one fixed order, so the numbers do not depend on the thread count.
    std::vector<ImageResults> results(images);
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
        if (m_options.norms)
            tasks.push_back([&] { r.norms = tokenNorms(clean, m_model->config(), m_options.outlierRatio); });
    }
    runInterOp(tasks.size(), interOpThreads(), [&](size_t t) { tasks[t](); });
    for (size_t i = 0; i < images; ++i) {
        addResults(results[i]);
        ++m_images;
        if (cleanTraces)
            cleanTraces->push_back(std::move((*traces)[i * stride]));
    }
    return true;
}

Result<bool> AnalysisRun::analyseOnDevice(const StagedBatch::Impl& staged, const RunOptions& run, std::vector<Trace>* cleanTraces)
{
    const ModelConfig& c = m_model->config();
    const size_t images = staged.images;
    const size_t stride = staged.inputs.size() / images;
    const at::Tensor& batch = staged.stacked;
    BatchedValues values;
    auto analysed = catchForwardErrors([&]() -> Result<bool> {
        const BatchForward forward = forwardBatch(*m_model, batch, run);
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
        if (cleanTraces || m_options.cleanTraceReady) {
            // The clean rows' logits; their taps only where the caller asked for them (a copy of every map of every
            // image would cost more than the analyses).
            const RecordSpec& also = m_options.alsoRecord;
            const bool taps = m_options.cleanTraceReady || also.attention || also.blocks || also.attnBranch || also.residual;
            std::vector<int64_t> rows;
            for (size_t i = 0; i < images; ++i)
                rows.push_back(int64_t(i * stride));
            auto traces = hostTraces(*m_model, forward, batch, rows, taps);
            if (m_options.cleanTraceReady)
                for (size_t i = 0; i < images; ++i)
                    m_options.cleanTraceReady(i, traces[i]);
            if (cleanTraces)
                for (auto& t : traces)
                    cleanTraces->push_back(std::move(t));
        }
        values = analyseBatch(forward.state, layout, m_options);
        return true;
    });
    if (!analysed)
        return analysed;
    // Into the statistics image by image, each column in order (an SNR key's draws in draw order), as addResults does.
    if (values.keys != m_columnKeys) {
        m_columnKeys = values.keys;
        m_columnStats.assign(m_columnKeys.size(), nullptr);
    }
    const int64_t columns = values.values.size(1);
    const double* v = values.values.data_ptr<double>();
    for (size_t i = 0; i < images; ++i, v += columns) {
        for (int64_t k = 0; k < columns; ++k) {
            if (!std::isfinite(v[k]))
                continue;
            RunningStats*& stats = m_columnStats[size_t(k)];
            if (!stats)
                stats = &m_stats[m_columnKeys[size_t(k)]];
            stats->add(v[k]);
        }
        ++m_images;
    }
    return true;
}

AnalysisSummary summarise(const StatsTable& stats, int64_t images, int radius)
{
    AnalysisSummary s;
    s.images = images;
    std::set<std::tuple<int, int, int>> ts;          // layer, tap, tokens
    std::set<std::pair<int, int>> hc;                // layer, head
    std::set<int> as;
    std::set<std::tuple<std::string, int, int>> snr; // spec, layer, tap
    std::set<std::pair<std::string, int>> snrd;
    std::set<int> tn;
    for (const auto& [key, value] : stats) {
        const auto p = split(key, '/');
        if (p[0] == "ts" && p.size() == 4)
            ts.insert({ std::stoi(p[1]), int(tapFromName(p[2])), p[3] == "all" ? 0 : 1 });
        else if (p[0] == "hc" && p.size() == 4)
            hc.insert({ std::stoi(p[1]), std::stoi(p[2]) });
        else if (p[0] == "as" && p.size() == 3)
            as.insert(std::stoi(p[1]));
        else if (p[0] == "snr" && p.size() == 4)
            snr.insert({ p[1], std::stoi(p[2]), int(tapFromName(p[3])) });
        else if (p[0] == "snrd" && p.size() == 4)
            snrd.insert({ p[1], std::stoi(p[2]) });
        else if (p[0] == "tn" && p.size() == 3)
            tn.insert(std::stoi(p[1]));
    }
    for (const auto& [layer, tap, tokens] : ts) {
        const Tap t = Tap(tap);
        const TokenSet set = tokens == 0 ? TokenSet::All : TokenSet::Patches;
        s.tokenSimilarity.push_back({ layer, t, set,
                                      estimate(stats, keys::tokenSimilarity(layer, t, set)) });
    }
    std::sort(s.tokenSimilarity.begin(), s.tokenSimilarity.end(), [](const auto& a, const auto& b) {
        return std::tie(a.tap, a.layer, a.tokens) < std::tie(b.tap, b.layer, b.tokens);
    });
    const int side = 2 * radius + 1;
    for (const auto& [layer, head] : hc) {
        HeadCentreRow r { layer, head, {}, {}, {}, {}, {}, {}, {}, {}, {}, radius, 0, 0 };
        Estimate* fields[] = { &r.centreDy, &r.centreDx, &r.peakDy, &r.peakDx, &r.meanDistancePx, &r.bandwidth, &r.prefixMass, &r.windowMass };
        for (size_t i = 0; i < std::size(kCentreFields); ++i)
            *fields[i] = estimate(stats, keys::headCentre(layer, head, kCentreFields[i]));
        double mass = 0;
        for (int i = 0; i < side * side; ++i) {
            const Estimate e = estimate(stats, keys::offsetMapCell(layer, head, i));
            r.offsetMap.push_back(e.n ? e.mean : std::nan(""));
            mass += e.n ? e.mean : 0;
        }
        // Contours of the mean map (Cordonnier et al. Fig. 4/6): the level whose cells hold 50% / 90% of the mass.
        std::vector<double> sorted;
        for (double v : r.offsetMap)
            if (std::isfinite(v))
                sorted.push_back(v);
        std::sort(sorted.rbegin(), sorted.rend());
        r.contour50 = r.contour90 = std::nan("");
        double cum = 0;
        for (double v : sorted) {
            cum += v;
            if (std::isnan(r.contour50) && cum >= 0.5 * mass)
                r.contour50 = v;
            if (std::isnan(r.contour90) && cum >= 0.9 * mass)
                r.contour90 = v;
        }
        if (!sorted.empty() && std::isnan(r.contour90))
            r.contour90 = sorted.back();
        if (!sorted.empty() && std::isnan(r.contour50))
            r.contour50 = sorted.back();
        s.headCentres.push_back(std::move(r));
    }
    for (int layer : as)
        s.attentionSimilarity.push_back({ layer, estimate(stats, keys::attentionSimilarity(layer, "successive_cos")),
                                          estimate(stats, keys::attentionSimilarity(layer, "head_redundancy")) });
    for (const auto& [spec, layer, tap] : snr)
        s.snr.push_back({ spec, layer, Tap(tap), estimate(stats, keys::snr(spec, layer, Tap(tap))) });
    std::sort(s.snr.begin(), s.snr.end(), [](const auto& a, const auto& b) {
        return std::tie(a.perturbation, a.tap, a.layer) < std::tie(b.perturbation, b.tap, b.layer);
    });
    for (const auto& [spec, layer] : snrd) {
        const auto field = [&](const char* name) { return estimate(stats, keys::snrDiagnostic(spec, layer, name)); };
        SnrDiagnosticsRow r;
        r.perturbation = spec;
        r.layer = layer;
        r.alpha = field("alpha");
        r.beta = field("beta");
        r.gamma = field("gamma");
        r.gain = field("gain");
        r.bound = field("bound");
        r.sensitivity = field("sensitivity");
        r.conditionShare = field("condition").mean;
        s.snrDiagnostics.push_back(r);
    }
    for (int layer : tn) {
        TokenNormRow r;
        r.layer = layer;
        Estimate* fields[] = { &r.outliers, &r.patchMedian, &r.maxRatio, &r.clsRatio, &r.registerRatio, &r.outlierAttention, &r.prefixAttention };
        for (size_t i = 0; i < std::size(keys::kNormFields); ++i)
            *fields[i] = estimate(stats, keys::tokenNorm(layer, keys::kNormFields[i]));
        s.tokenNorms.push_back(r);
    }
    return s;
}

} // namespace attnscope
