#pragma once

// The window's engine on a remote host (docs/remote.md): the worker's jobs (widgets/worker/EngineWorker.h) answered by
// `attnscope-cli serve --stdio` on HOST, reached through the user's own ssh. The window's code is the same as for the
// engine in its own process; only this backend differs. Traces stay on the host: a view asks for the rows of its query.

#include <worker/EngineWorker.h>

#include <RemoteClient.h>
#include <Report.h>
#include <RunSpec.h>

#include <QImage>

#include <map>
#include <memory>

namespace attnscope {

class RemoteBackend : public EngineBackend {
public:
    // Nothing is started here: the link is made by the first job, on the worker's thread (the window never waits on ssh).
    explicit RemoteBackend(remote::Endpoint endpoint);
    ~RemoteBackend() override;

    // "gpu-07 · cpu · LibTorch 1.13.1 · 3 ms": the host, its device and build, and the link's round trip
    // (Connection::roundTripMs).
    QString where() const override;
    QString endpoint() const override;
    void disconnect() override;
    // A model file on this machine is sent to the host once (cached there by its sha256); a folder, a builtin:NAME or a
    // path this machine has not is the host's.
    Result<std::shared_ptr<const EngineModel>> loadModel(const QString& path, const LoadOptions& options) override;
    // The image is sent once (by sha256) when this machine has it, and is the host's path otherwise.
    Result<std::shared_ptr<ImageTrace>> trace(const EngineModel& model, const QString& imagePath, std::optional<double> neutrenoLambda,
                                              std::optional<double> boostT, const std::function<bool()>& isCancelled) override;
    Result<ImageRows> rows(const EngineModel& model, const ImageTrace& trace, const RowsRequest& request) override;
    Result<Relevance> explain(const EngineModel& model, const QString& imagePath, const RelevanceOptions& options) override;
    // The statistics cross exactly; the summary is made from them here, as the local engine makes it.
    Result<std::shared_ptr<ImageAnalysis>> analyse(const EngineModel& model, const QString& imagePath, AnalysisOptions options,
                                                   const Traced& traced, const std::function<bool()>& isCancelled) override;
    // A run kept on the host, fed a batch per request (images on this machine sent once each, by sha256).
    Result<std::unique_ptr<SetRunner>> startSet(const EngineModel& model, AnalysisOptions options) override;
    Result<HeadAblation> ablate(const EngineModel& model, const QString& imagePath, HeadRef head,
                                const std::function<bool()>& isCancelled) override;
    Result<QueryKeyMap> queryKeyMap(const EngineModel& model, const QStringList& imagePaths, int layer, int head,
                                    const QueryKeyOptions& options, QStringList& used) override;

    // Export all on the host (docs/remote.md, "Export all"): the CLI's output folder of `images`, written by the host's
    // attnscope-cli where the models are. With `hostFolder` empty it is written in a staging folder of the host's cache
    // and copied into `localFolder` here, each file renamed into place once whole; otherwise it stays in the host's
    // folder named. A link that drops mid-run is made again once and the run resumed from its journal on the host;
    // failing that, the error says that exporting again resumes it.
    struct HostExport {
        std::shared_ptr<const EngineModel> model, compare;
        std::string modelName, compareName, compareSpec;
        QStringList images;
        RunSpec spec;
        std::string formats; // "png,svg,pdf"
        QString localFolder, hostFolder;
    };
    struct HostExportOutcome {
        ReportOutcome outcome;
        std::vector<std::string> skipped; // the images the host could not read, one line each
        int relinks = 0;                 // links made again while it ran
        std::string figuresNote;         // why the host drew no figures ("" when it did)
    };
    Result<HostExportOutcome> exportAll(const HostExport& job, const std::function<bool()>& isCancelled,
                                        const std::function<void(int done, int total)>& progress);

    // The remote file dialog's view of a host folder ("" the home folder), and thumbnails of host images for the
    // image strip, at most `size` pixels a side (a null image for one the host cannot read).
    struct HostEntry {
        QString name;
        bool folder = false, image = false;
        qint64 size = 0;
    };
    struct HostListing {
        QString path, parent; // as the host resolved them; parent "" at the root
        std::vector<HostEntry> entries; // folders first, by name
        qint64 total = 0;               // entries in the folder (more than listed when it holds over 20,000)
    };
    Result<HostListing> listHost(const QString& path);
    Result<std::vector<QImage>> thumbnails(const QStringList& hostPaths, int size);

private:
    class RemoteSetRunner;
    // report_start of `job` on the host, resuming its journal there when `resume`: the host's report id.
    Result<int64_t> startExport(const HostExport& job, const std::string& staging, bool resume, HostExportOutcome& outcome);
    // The files of an ended report brought into `folder`.
    Status copyExport(int64_t report, const nlohmann::json& files, const QString& folder);
    Result<remote::Connection*> link();
    Result<nlohmann::json> call(const std::string& method, nlohmann::json params);
    // What names a file in a request: {"sha256": ...} after sending a file this machine has, or the host's path.
    Result<nlohmann::json> fileParam(const QString& path);
    // `trace` on the host, with the image's analyses when `analyse` (encoded options) is set; `keep` false: the trace
    // is not kept there (analyses alone), and its answer's "trace" is 0.
    Result<nlohmann::json> traceOnHost(const EngineModel& model, const QString& imagePath, std::optional<double> neutrenoLambda,
                                       std::optional<double> boostT, const nlohmann::json& analyse, bool keep,
                                       const std::function<bool()>& isCancelled);
    Result<std::shared_ptr<ImageTrace>> readTrace(const nlohmann::json& answer, const QString& imagePath) const;

    remote::Endpoint m_endpoint;
    std::unique_ptr<remote::Connection> m_connection;
    QString m_failure; // why the link could not be made, or ended

    // What the host holds for the window (its models and traces), by this side's handle (EngineModel::remote,
    // ImageTrace::remoteTrace) with the request that made it: a host that has lost it (a new link after a drop, a trace
    // dropped from its LRU) is asked to make it again, so the window goes on as it was (docs/remote.md, faults).
    struct Held {
        std::string method; // load_model | trace
        nlohmann::json params;
        int64_t model = 0; // a trace's model, by its handle
        int64_t id = 0;    // the host's, on link m_generation == generation
        int generation = -1;
    };
    int64_t hold(std::string method, nlohmann::json params, int64_t model, int64_t id);
    Result<int64_t> hostId(int64_t handle);
    std::map<int64_t, Held> m_held;
    int64_t m_nextHandle = 1;
    int m_generation = 0; // links made so far
};

} // namespace attnscope
