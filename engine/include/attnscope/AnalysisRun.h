#pragma once

// One model (or one variant of it) over a stream of images: each image is run once (twice per perturbation draw
// for the SNR), analysed, added to mergeable statistics and dropped, so memory does not grow with the images.

#include "attnscope/Analyses.h"
#include "attnscope/Perturbation.h"
#include "attnscope/Statistics.h"
#include "attnscope/Summary.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attnscope {

struct AnalysisOptions {
    bool similarity = true;
    bool attention = true;     // attention similarity (the attention grid is a per-image figure)
    bool centres = true;
    bool snr = true;           // needs at least one perturbation
    bool decomposition = false;
    bool relevance = false;    // class relevance of the first images (a per-image figure, Analyses.h section 10)
    bool norms = false;        // token norms, high-norm outliers and attention sinks (Analyses.h section 7); none of a
                               // hierarchical model yet (its runs leave them out; attnscope-cli refuses the analysis)
    bool ablation = false;     // head ablation: every head of every layer ablated in turn (Analyses.h section 8)
    AblationMode ablationMode = AblationMode::Zero;
    // The class each image is known to be, by its index (its class folder's among the model's labels: classesOfFolders),
    // -1 unknown: the ablation's accuracy change counts the images of known class. Empty: none known.
    std::vector<int> trueClasses;
    double outlierRatio = kDefaultOutlierRatio; // a patch token above this times the patch median is an outlier
    std::vector<Perturbation> perturbations;
    int draws = 1;             // perturbation draws per image
    uint64_t seed = 0;
    int radius = 3;            // offset-map window of the head centres
    bool centreSignal = true;  // SNR: centre the signal (docs/analyses.md section 4)
    std::optional<double> neutrenoLambda;
    std::optional<double> boostT;
    Precision precision = Precision::Fp32; // of the forwards (Model.h)
    // Where the analyses run: on the model's device, as tensor operations over the whole batch in float64 (one copy of
    // the per-image values back per batch), or on the host, in float64 loops over each image's Trace. Unset: on the
    // device when the model is on a GPU. Both give the same statistics up to float64 rounding.
    std::optional<bool> analysesOnDevice;
    // On a CUDA device, with the analyses there: each batch shape's forward and analyses captured once as a CUDA graph
    // and replayed for every later batch of that shape (the first batch of a shape runs eagerly, as every batch does
    // without this). The same kernels on the same inputs: the same statistics. Off CUDA, in a build without CUDA graphs,
    // or where the clean traces' taps are asked for, batches run eagerly and cudaGraphNote() says why.
    bool cudaGraph = false;
    RecordSpec alsoRecord; // taps the caller wants from the clean forward (e.g. to dump them)
    // Called on the calling thread as soon as the forward is done, before the analyses start, with each image's
    // clean trace (`image`: its position among the images of the call): to show it while the analyses run.
    // The trace's tensors are shared with the analyses, which only read them.
    std::function<void(size_t image, const Trace& clean)> cleanTraceReady;

    static Result<std::vector<std::string>> parseList(const std::string& commaSeparated); // validates names
};

// The inputs of one batch made ready for its forward: each image's clean input and its perturbed copies (stacked in
// page-locked memory when the analyses run on a GPU, so that the copy to it overlaps other work). Made by
// AnalysisRun::stage, on any thread: a reader thread stages batch k + 1 while the device runs batch k.
class StagedBatch {
public:
    struct Impl;
    StagedBatch() = default;
    explicit StagedBatch(std::shared_ptr<const Impl> impl)
        : m_impl(std::move(impl))
    {
    }
    const std::shared_ptr<const Impl>& impl() const { return m_impl; }

private:
    std::shared_ptr<const Impl> m_impl;
};

// A batch whose forward and analyses have been queued on the model's device (AnalysisRun::enqueue) and not yet added to
// the statistics (AnalysisRun::finish). On a GPU the device still works on it while the host queues the next batch and
// writes out the one before; on the CPU its work is done when enqueue returns.
class PendingBatch {
public:
    struct Impl;
    PendingBatch() = default;
    explicit PendingBatch(std::shared_ptr<Impl> impl)
        : m_impl(std::move(impl))
    {
    }
    bool empty() const { return !m_impl; }
    const std::shared_ptr<Impl>& impl() const { return m_impl; }

private:
    std::shared_ptr<Impl> m_impl;
};

struct AnalysisTables; // engine-internal
class BatchGraphs;     // engine-internal: what the device path's analyses keep between batches

class AnalysisRun {
public:
    AnalysisRun(std::shared_ptr<const Model> model, AnalysisOptions options);

    // Analyses image `index` (its position in the whole, unsharded list, which seeds its perturbations, so that
    // shards merge to exactly the unsharded run). Returns Error "cancelled" when isCancelled says so.
    // `cleanTrace`, when given, receives the clean forward's trace (for predictions and tensor dumps). When the analyses
    // run on the device, that trace holds the logits, and the taps only where alsoRecord or cleanTraceReady asks.
    Status addImage(const Model::Prepared& image, int64_t index, const std::function<bool()>& isCancelled = {},
                          Trace* cleanTrace = nullptr);
    // Several images at once: their clean and perturbed inputs go through one batched forward (they must share
    // one input size). The statistics are those of addImage on each in turn, up to float rounding.
    Status addImages(const std::vector<const Model::Prepared*>& images, const std::vector<int64_t>& indices,
                           const std::function<bool()>& isCancelled = {}, std::vector<Trace>* cleanTraces = nullptr);
    // addImages in two steps: the inputs (perturbing each image, over the inter-op threads; const, so any thread may
    // stage while another adds), then the forward, the analyses and the statistics.
    Result<StagedBatch> stage(const std::vector<const Model::Prepared*>& images, const std::vector<int64_t>& indices) const;
    Status addStaged(const StagedBatch& batch, const std::function<bool()>& isCancelled = {},
                           std::vector<Trace>* cleanTraces = nullptr);
    // addStaged in two steps, so that two batches are in flight: enqueue queues the batch's forward and analyses (and
    // the head ablations, which it runs) and returns without waiting for the device; finish waits for them and adds
    // the batch to the statistics. Batches are finished in the order they were enqueued; one not finished (cancelled,
    // failed, dropped) changes nothing. `cleanTraces`: finish will hand out the clean forwards' traces.
    Result<PendingBatch> enqueue(const StagedBatch& batch, const std::function<bool()>& isCancelled = {}, bool cleanTraces = false);
    Status finish(PendingBatch& batch, std::vector<Trace>* cleanTraces = nullptr);
    const AnalysisOptions& options() const { return m_options; }
    // Whether the analyses run on the model's device (AnalysisOptions::analysesOnDevice).
    bool analysesOnDevice() const;

    const StatsTable& statistics() const { return m_stats; }
    // Continues from the statistics of `images` images saved by an interrupted run of the same model and options
    // (a resumed report): adding the remaining images then gives exactly the uninterrupted run's statistics.
    void restore(StatsTable stats, int64_t images);
    int64_t images() const { return m_images; }
    // The RecordSpec one forward needs for these analyses.
    RecordSpec recordSpec() const;
    // With AnalysisOptions::cudaGraph: how many batches were replayed from a graph, and why some or all were not
    // ("" when nothing is to be said).
    int cudaGraphReplays() const;
    std::string cudaGraphNote() const;

private:
    RunOptions runOptions(const std::function<bool()>& isCancelled) const;
    Status analyseOnDevice(const StagedBatch::Impl& staged, const RunOptions& run, PendingBatch::Impl& pending, bool cleanTraces);
    Status analyseOnHost(const StagedBatch::Impl& staged, const RunOptions& run, PendingBatch::Impl& pending, bool cleanTraces) const;
    void addColumns(const PendingBatch::Impl& pending);
    bool copiesTaps() const; // the clean traces' taps come back to the host (cleanTraceReady, alsoRecord)
    Result<std::vector<HeadAblation>> ablate(const std::vector<Tensor>& inputs, size_t images, const RunOptions& run) const;

    std::shared_ptr<const Model> m_model;
    AnalysisOptions m_options;
    StatsTable m_stats;
    int64_t m_images = 0;
    // The device path's columns (BatchedValues::keys) and their entries of m_stats (null until a first finite value).
    std::vector<std::string> m_columnKeys;
    std::vector<RunningStats*> m_columnStats;
    std::shared_ptr<AnalysisTables> m_tables; // made on the first device-path batch, uploaded once
    std::shared_ptr<BatchGraphs> m_graphs;    // with cudaGraph, made on the first device-path batch
    uint64_t m_enqueued = 0, m_lastFinished = 0; // batches enqueued, and the number of the last one finished
};

// How many images a run of these analyses should put in one forward (analyze --batch 0, the window's image sets): on a
// GPU 64 (the clean and perturbed inputs of 64 images fill an H100 with ViT-S/16; docs/performance.md, GPU); on the CPU
// enough images that every inter-op thread has an input of its own (one image's clean and noisy inputs already do
// on two cores), at least 1.
int defaultBatchSize(const Model& model, const AnalysisOptions& options);

} // namespace attnscope
