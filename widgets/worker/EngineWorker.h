#pragma once

#include <attnscope/AnalysisRun.h>
#include <attnscope/Model.h>
#include <attnscope/QueryKey.h>

#include <QObject>
#include <QString>
#include <QStringList>
#include <QThread>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace attnscope {

// A model as the window holds it: what it is, and where it runs: in this process (`local`), or on a remote engine
// (docs/remote.md), where `remote` is the host's id of it and `description` what the host said of it.
struct EngineModel {
    std::shared_ptr<const Model> local;
    int64_t remote = 0;
    ModelInfo description; // a remote model's (a local one's is local->info())

    const ModelInfo& info() const { return local ? local->info() : description; }
    const ModelConfig& config() const { return info().config; }
};

// One image as the GUI shows it: the preprocessed image, its trace with every tap, and where it came from. A trace made
// on a remote engine stays there (`remoteTrace`, the host's id of it): `trace` then holds its shape, logits and
// variant values and no tensor else, and the maps a view draws are asked of the host (EngineWorker::queryRows).
struct ImageTrace {
    QString path;
    QString preparation; // what preprocessing did to the file's image (Model::describePreparation); "" when nothing
    Image shown;
    Trace trace;
    int64_t remoteTrace = 0;
};

// One image's analyses (the plot docks of the current image): a one-image summary (token similarity, head
// centres, attention distance, SNR against the chosen perturbation) and the logit decomposition of layer 1 when
// the model has one.
struct ImageAnalysis {
    QString path;
    AnalysisSummary summary;
    std::shared_ptr<const LogitDecomposition> decomposition;
    QString decompositionNote; // why there is none
};

// One image's class relevance (Analyses.h, section 10) for the window's "relevance" and "Grad-CAM" views.
struct ImageRelevance {
    QString path;
    Relevance relevance;
};

// What a view asks of a trace for one query: every layer's and head's row of it, the rollout's row when `rollout` is set
// (made so), and the trace's token norms when `normsRatio` is (their outliers above that ratio of the median).
struct RowsRequest {
    int query = 0;
    std::optional<RolloutOptions> rollout;
    std::optional<double> normsRatio;
    bool operator==(const RowsRequest& o) const;
};
// What the views draw for one query of one trace, as a RowsRequest asked.
struct ImageRows {
    const ImageTrace* of = nullptr; // the trace they are rows of (held by whoever asked)
    RowsRequest request;
    QueryRows rows;
    AttentionMap rollout; // when request.rollout
    TokenNorms norms;     // when request.normsRatio
};
// The rows of a trace held here (one with its maps), at once; an Error for a query outside it.
Result<ImageRows> rowsOfTrace(const EngineModel& model, const ImageTrace& trace, const RowsRequest& request);

// One image set's run on a backend, a batch at a time: the worker steps it and lets interactive jobs in between.
class SetRunner {
public:
    virtual ~SetRunner() = default;
    virtual int batchSize() const = 0; // images per step (defaultBatchSize where the model runs)
    // Adds `paths` (their indices in the set: `indices`, which seed their perturbations). An image that cannot be read
    // goes to `skipped` with why, and the run goes on; an Error stops the run.
    virtual Status add(const QStringList& paths, const std::vector<int64_t>& indices, const std::function<void(QString)>& skipped,
                       const std::function<bool()>& isCancelled)
        = 0;
    virtual Result<std::shared_ptr<AnalysisSummary>> summary() = 0; // of the images added so far
};

// Where the worker's jobs run: in this process (LocalBackend), or on a remote engine (the window's RemoteBackend,
// docs/remote.md). Called on the worker's thread, one job at a time. A backend that cannot do a kind of job says so in
// its Error; the worker's job machinery (superseding, cancelling, progress) is the same for both.
class EngineBackend {
public:
    virtual ~EngineBackend() = default;
    // Where models run, for the status bar: "" for this process, "gpu-07 · CUDA H100 · LibTorch 2.11" for a host.
    virtual QString where() const = 0;
    // The remote engine as it was asked for ("me@gpu-07:/opt/attnscope-cli"); "" for this process. Constant.
    virtual QString endpoint() const { return {}; }
    // Drop the link to a remote engine, if any, so that the next job makes a new one (File -> Reconnect).
    virtual void disconnect() { }
    virtual Result<std::shared_ptr<const EngineModel>> loadModel(const QString& path, const LoadOptions& options) = 0;
    // One forward of `imagePath` recording every tap (with the variant values given; unset: the model's own).
    virtual Result<std::shared_ptr<ImageTrace>> trace(const EngineModel& model, const QString& imagePath,
                                                      std::optional<double> neutrenoLambda, std::optional<double> boostT,
                                                      const std::function<bool()>& isCancelled)
        = 0;
    virtual Result<ImageRows> rows(const EngineModel& model, const ImageTrace& trace, const RowsRequest& request) = 0;
    // The class relevance of an image (one forward and one backward).
    virtual Result<Relevance> explain(const EngineModel& model, const QString& imagePath, const RelevanceOptions& options) = 0;
    // The image's analyses as `options` say; with `traced` set, from the forward set that also gives its trace, which
    // goes to `traced` as soon as it is made (the heatmap need not wait for the curves).
    using Traced = std::function<void(std::shared_ptr<ImageTrace>)>;
    virtual Result<std::shared_ptr<ImageAnalysis>> analyse(const EngineModel& model, const QString& imagePath, AnalysisOptions options,
                                                           const Traced& traced, const std::function<bool()>& isCancelled)
        = 0;
    virtual Result<std::unique_ptr<SetRunner>> startSet(const EngineModel& model, AnalysisOptions options) = 0;
    // One head ablated on one image (Analyses.h section 8; zero ablation): the prediction it leaves.
    virtual Result<HeadAblation> ablate(const EngineModel& model, const QString& imagePath, HeadRef head,
                                        const std::function<bool()>& isCancelled)
        = 0;
    // The query-key map of one head over `imagePaths` (QueryKey.h); the images that could not be read are left out, and
    // `used` gets the ones the map is of, in its order.
    virtual Result<QueryKeyMap> queryKeyMap(const EngineModel& model, const QStringList& imagePaths, int layer, int head,
                                            const QueryKeyOptions& options, QStringList& used)
        = 0;
};

// The engine in this process.
class LocalBackend : public EngineBackend {
public:
    QString where() const override { return {}; }
    Result<std::shared_ptr<const EngineModel>> loadModel(const QString& path, const LoadOptions& options) override;
    Result<std::shared_ptr<ImageTrace>> trace(const EngineModel& model, const QString& imagePath, std::optional<double> neutrenoLambda,
                                              std::optional<double> boostT, const std::function<bool()>& isCancelled) override;
    Result<ImageRows> rows(const EngineModel& model, const ImageTrace& trace, const RowsRequest& request) override;
    Result<Relevance> explain(const EngineModel& model, const QString& imagePath, const RelevanceOptions& options) override;
    Result<std::shared_ptr<ImageAnalysis>> analyse(const EngineModel& model, const QString& imagePath, AnalysisOptions options,
                                                   const Traced& traced, const std::function<bool()>& isCancelled) override;
    Result<std::unique_ptr<SetRunner>> startSet(const EngineModel& model, AnalysisOptions options) override;
    Result<HeadAblation> ablate(const EngineModel& model, const QString& imagePath, HeadRef head,
                                const std::function<bool()>& isCancelled) override;
    Result<QueryKeyMap> queryKeyMap(const EngineModel& model, const QStringList& imagePaths, int layer, int head,
                                    const QueryKeyOptions& options, QStringList& used) override;
};

// Runs engine work off the GUI thread (docs/contributing.md section 5: one worker, jobs one at a time, in order). Jobs
// are of a kind (model, image: its trace and possibly its analyses, image analysis alone, image set, task) on a channel
// the caller picks (the window uses one per model and variant); a new request supersedes the pending or running job of
// its kind and channel: that job is cancelled (the engine polls between blocks) and reports `cancelled`. An image-set
// run goes one image per step and queues its next step behind whatever was asked meanwhile, so clicks stay interactive
// during a long run. Every job ends in exactly one of its result signal / failed / cancelled, delivered as queued
// signals carrying immutable results; an image job that also analyses sends its trace (imageTraced, not terminal)
// before it ends with imageAnalysed.
class EngineWorker : public QObject {
    Q_OBJECT
public:
    enum Kind { ModelJob, ImageJob, AnalysisJob, SetJob, TaskJob, RelevanceJob, RowsJob, KindCount };
    enum Missing { MissingWeights = 1, MissingDescription = 2 }; // modelIncomplete: the half of the model the file lacks
    using Progress = std::function<void(int done, int total)>;
    // A task gets the engine the worker's jobs run on (this process's, or a host's).
    using Task = std::function<QString(EngineBackend& engine, const std::function<bool()>& isCancelled, const Progress& progress)>;

    // Null `backend`: the engine in this process (LocalBackend).
    explicit EngineWorker(QObject* parent = nullptr, std::unique_ptr<EngineBackend> backend = nullptr);
    ~EngineWorker() override;

    // Each returns the job id.
    // inputHeight/inputWidth: the input size to run the model at (0, 0: as trained; LoadOptions). `description`: a model
    // description .json to read the checkpoint with (LoadOptions::descriptionPath); "" for none or the one beside it.
    quint64 loadModel(const QString& path, int channel = 0, int inputHeight = 0, int inputWidth = 0, const QString& description = {});
    // Variant values unset: the model's own (docs/analyses.md section 6).
    quint64 traceImage(std::shared_ptr<const EngineModel> model, const QString& imagePath, std::optional<double> neutrenoLambda = {},
                       std::optional<double> boostT = {}, int channel = 0);
    quint64 analyseImage(std::shared_ptr<const EngineModel> model, const QString& imagePath, AnalysisOptions options, int channel = 0);
    // Both from one forward set (the clean input and its perturbed copies in one Model::runBatch): imageTraced as
    // soon as the forward is done (the clean trace, every tap recorded, with options' variant values), then
    // imageAnalysed, which ends the job. An ImageJob: it supersedes, and is superseded by, traceImage on its channel.
    quint64 traceAndAnalyseImage(std::shared_ptr<const EngineModel> model, const QString& imagePath, AnalysisOptions options,
                                 int channel = 0);
    // Streams `paths` through an AnalysisRun; reports progress and a partial summary every `every` images, and
    // the final summary as setAnalysed(..., true).
    quint64 analyseSet(std::shared_ptr<const EngineModel> model, const QStringList& paths, AnalysisOptions options, int every = 10,
                       int channel = 0);
    // The class relevance of an image (one forward and one backward with autograd): imageExplained, or failed.
    quint64 explainImage(std::shared_ptr<const EngineModel> model, const QString& imagePath, RelevanceOptions options, int channel = 0);
    // Anything else that must not run on the GUI thread (export all); returns an error message or "".
    quint64 runTask(Task task, int channel = 0);
    // What `request` asks of a trace: rowsReady, or failed. A trace held here answers at once through rowsOfTrace; this
    // job is for a remote one's.
    quint64 queryRows(std::shared_ptr<const EngineModel> model, std::shared_ptr<const ImageTrace> trace, RowsRequest request, int channel = 0);
    // The backend's link dropped before the jobs asked after this one (EngineBackend::disconnect).
    void reconnect();
    void cancel(Kind kind, int channel = 0);
    void cancelAll();
    bool busy() const { return m_pending.load() > 0; }
    // Forward sets the jobs have started (each one Model::runBatch: a trace, or an analysed image's clean and
    // perturbed inputs together); for tests that check how much engine work a request costs.
    quint64 forwardSets() const { return m_forwardSets.load(); }
    // Where the jobs run (EngineBackend::where): "" for this process.
    QString where() const;
    bool isRemote() const { return m_remote; }
    QString endpoint() const { return m_endpoint; } // EngineBackend::endpoint

signals:
    void modelLoaded(quint64 job, std::shared_ptr<const attnscope::EngineModel> model);
    // Just before failed() of a model job whose file lacks its other half (Error::Missing): a checkpoint whose tensor
    // names need a description, a description that names no weights. Not terminal: failed() follows.
    void modelIncomplete(quint64 job, int missing);
    void imageTraced(quint64 job, std::shared_ptr<const attnscope::ImageTrace> result);
    void imageAnalysed(quint64 job, std::shared_ptr<const attnscope::ImageAnalysis> result);
    void rowsReady(quint64 job, std::shared_ptr<const attnscope::ImageRows> rows);
    void imageExplained(quint64 job, std::shared_ptr<const attnscope::ImageRelevance> result);
    void setProgress(quint64 job, int done, int total, double imagesPerSecond);
    void setAnalysed(quint64 job, std::shared_ptr<const attnscope::AnalysisSummary> summary, bool complete);
    // An image of a set that cannot be read: it is left out and the run goes on (`message` names it and the cause).
    void setSkipped(quint64 job, QString message);
    void taskProgress(quint64 job, int done, int total);
    void taskFinished(quint64 job);
    void failed(quint64 job, QString message);
    // Where the jobs run changed (where()): a link made or lost, another round trip.
    void whereChanged(QString where);
    void cancelled(quint64 job);

private:
    struct SetRun;
    quint64 next(Kind kind, int channel);
    quint64 analyse(Kind kind, std::shared_ptr<const EngineModel> model, const QString& imagePath, AnalysisOptions options,
                    bool sendTrace, int channel);
    bool isLatest(Kind kind, int channel, quint64 id) const;
    void post(std::function<void()> work);
    void stepSet(std::shared_ptr<SetRun> run);
    void finish(); // one job fewer pending

    std::unique_ptr<EngineBackend> m_backend; // used on m_thread only (and by the constructor, before it runs)
    const bool m_remote;
    const QString m_endpoint;
    QString m_where; // m_backend->where() after the last job, under m_mutex
    QThread m_thread;
    QObject* m_context = nullptr; // lives in m_thread; jobs run there, in order
    std::atomic<quint64> m_counter { 0 };
    mutable std::mutex m_mutex;
    std::map<std::pair<int, int>, quint64> m_latest; // (kind, channel) -> newest job id
    std::atomic<int> m_pending { 0 };
    std::atomic<quint64> m_forwardSets { 0 };
};

} // namespace attnscope

Q_DECLARE_METATYPE(std::shared_ptr<const attnscope::EngineModel>)
Q_DECLARE_METATYPE(std::shared_ptr<const attnscope::ImageRows>)
Q_DECLARE_METATYPE(std::shared_ptr<const attnscope::ImageTrace>)
Q_DECLARE_METATYPE(std::shared_ptr<const attnscope::ImageAnalysis>)
Q_DECLARE_METATYPE(std::shared_ptr<const attnscope::ImageRelevance>)
Q_DECLARE_METATYPE(std::shared_ptr<const attnscope::AnalysisSummary>)
