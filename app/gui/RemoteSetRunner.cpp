// RemoteBackend's image sets (docs/remote.md): a run kept on the host, fed several of the host's batches a request,
// that goes on after a dropped link from the statistics the host last sent.
#include "gui/RemoteBackend.h"

#include <RemoteAnalyses.h>

#include <attnscope/Summary.h>

#include <QFileInfo>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace attnscope {

using json = nlohmann::json;

// set_start, a set_add per step (the statistics so far with each answer), set_release at the end. Each answer is the
// run's journal here: when the link drops, the next step starts the run on the new link from the last statistics the
// host sent (AnalysisRun::restore), and the images after them then give the uninterrupted run's statistics exactly.
class RemoteBackend::RemoteSetRunner : public SetRunner {
public:
    RemoteSetRunner(RemoteBackend& backend, const EngineModel& model, json options, json started, double roundTripSeconds)
        : m_backend(backend)
        , m_model(model.info())
        , m_modelHandle(model.remote)
        , m_options(std::move(options))
        , m_run(started.value("run", int64_t(0)))
        , m_generation(backend.m_generation)
        , m_batch(std::max(1, started.value("batch", 1)))
        , m_roundTrip(roundTripSeconds)
    {
    }
    ~RemoteSetRunner() override
    {
        if (m_generation == m_backend.m_generation && m_backend.m_connection && m_backend.m_connection->running())
            m_backend.call("set_release", { { "run", m_run } }); // on the worker's thread, as every call; a link gone holds nothing
    }
    // A round trip is paid per request, so over a link far away a step is several of the host's batches (which the host
    // runs one by one, as here): enough that the host works 40 round trips per request (2 s over a 50 ms link: the
    // link's share 2.5%), at most the server's 1,024 images. Near (a round trip far below a batch's time), one batch.
    int batchSize() const override
    {
        if (m_secondsPerImage <= 0 || m_roundTrip <= 0)
            return m_batch;
        const double images = 40.0 * m_roundTrip / m_secondsPerImage;
        return m_batch * std::clamp(int(std::ceil(images / m_batch)), 1, std::max(1, 1024 / m_batch));
    }
    Status add(const QStringList& paths, const std::vector<int64_t>& indices, const std::function<void(QString)>& skipped,
               const std::function<bool()>& isCancelled) override
    {
        for (int attempt = 0;; ++attempt) {
            if (auto on = runOnThisLink(); !on)
                return on;
            json images = json::array(), sent = json::array();
            bool again = false; // the link dropped while a file went: the step again, on a new link
            for (int i = 0; i < paths.size() && !again; ++i) {
                if (isCancelled && isCancelled())
                    return Error::cancel();
                auto image = m_backend.fileParam(paths[i]);
                if (!image) {
                    if (!QFileInfo(paths[i]).isFile()) { // the host's: it is the host that says whether it can read it
                        skipped(QString::fromStdString(image.message()));
                        continue;
                    }
                    if (!dropped() || attempt > 0) // this machine's file, not sent
                        return image.error();
                    again = true; // the link is gone
                    continue;
                }
                images.push_back(*image);
                sent.push_back(indices[size_t(i)]);
            }
            if (again)
                continue;
            if (images.empty())
                return Done {};
            const auto start = std::chrono::steady_clock::now();
            // The statistics so far come with the answer: the worker asks for a summary after most steps.
            auto added = m_backend.call("set_add", { { "run", m_run }, { "images", images }, { "indices", sent }, { "summary", true } });
            if (!added) {
                if (dropped() && attempt == 0)
                    continue; // once: the run goes on, on a new link, from the statistics last sent
                return added.error();
            }
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            m_secondsPerImage = std::max(seconds - m_roundTrip, 1e-6) / double(images.size()); // the host's work, the link's taken off
            m_latest = *added;
            sayskipped(*added, paths, indices, skipped);
            return Done {};
        }
    }
    Result<std::shared_ptr<AnalysisSummary>> summary() override
    {
        auto answer = m_latest.contains("stats") ? Result<json>(m_latest) : m_backend.call("set_summary", { { "run", m_run } });
        if (!answer)
            return answer.error();
        auto stats = remote::decodeStats(answer->value("stats", json()));
        if (!stats)
            return Error { m_backend.m_endpoint.host + ": the image set's statistics: " + stats.message() };
        auto s = std::make_shared<AnalysisSummary>(summarise(*stats, answer->value("images", int64_t(0)), answer->value("radius", 3)));
        s->model = m_model.path;
        s->label = s->model;
        s->patchSize = m_model.config.patchSize;
        s->blockStages = blockStagesOf(m_model.config);
        return s;
    }

private:
    // The link the run lives on is gone (the backend made another, or it ended).
    bool dropped() const
    {
        return m_generation != m_backend.m_generation || !m_backend.m_connection || !m_backend.m_connection->running();
    }
    // The run on the link the backend has now: a new link (after a drop) gets the model again and the run started
    // again from the statistics the last answer brought, or from nothing before any.
    Status runOnThisLink()
    {
        if (m_generation == m_backend.m_generation && m_backend.m_connection && m_backend.m_connection->running())
            return Done {};
        auto model = m_backend.hostId(m_modelHandle); // makes the link, and loads the model on it
        if (!model)
            return model.error();
        if (m_generation == m_backend.m_generation)
            return Done {}; // the same link after all
        json params = { { "model", *model }, { "options", m_options } };
        if (m_latest.contains("stats"))
            params["restore"] = { { "stats", m_latest["stats"] }, { "images", m_latest.value("images", int64_t(0)) } };
        auto started = m_backend.call("set_start", params);
        if (!started)
            return started.error();
        m_run = started->value("run", int64_t(0));
        m_generation = m_backend.m_generation;
        return Done {};
    }
    // The host names a file it cannot read by its copy's path: say this machine's.
    static void sayskipped(const json& answer, const QStringList& paths, const std::vector<int64_t>& indices,
                           const std::function<void(QString)>& skipped)
    {
        for (const json& s : answer.value("skipped", json::array())) {
            const int64_t index = s.value("index", int64_t(-1));
            const auto at = std::find(indices.begin(), indices.end(), index);
            const QString path = at == indices.end() ? QString() : paths[int(at - indices.begin())];
            QString message = QString::fromStdString(s.value("message", std::string()));
            if (!path.isEmpty())
                message = path + QStringLiteral(": ") + message.section(QStringLiteral(": "), 1);
            skipped(message);
        }
    }

    RemoteBackend& m_backend;
    ModelInfo m_model;
    int64_t m_modelHandle; // this side's (EngineModel::remote)
    json m_options;        // set_start's, encoded
    int64_t m_run;         // the host's, on link m_generation
    int m_generation;
    int m_batch;                  // the host's images per forward
    double m_roundTrip;           // seconds, set_start's
    double m_secondsPerImage = 0; // the host's, as the last step took
    json m_latest;                // the last set_add's answer, with the run's statistics after it
};

Result<std::unique_ptr<SetRunner>> RemoteBackend::startSet(const EngineModel& model, AnalysisOptions options)
{
    auto modelId = hostId(model.remote);
    if (!modelId)
        return modelId.error();
    const json encoded = remote::encodeAnalysisOptions(options);
    const auto start = std::chrono::steady_clock::now();
    auto started = call("set_start", { { "model", *modelId }, { "options", encoded } });
    if (!started)
        return started.error();
    const double roundTrip = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); // the host does next to nothing
    return std::unique_ptr<SetRunner>(std::make_unique<RemoteSetRunner>(*this, model, encoded, *started, roundTrip));
}

} // namespace attnscope
