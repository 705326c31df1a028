// The image sets' methods of the remote server (docs/remote.md): a run kept on the host, fed a batch of images per
// request, so that the client steps it as the window's worker steps a local one (clicks answered between batches) and
// its statistics are the ones a run on the host alone makes.
#include "RemoteServer.h"

#include "RemoteAnalyses.h"
#include "ServerRequests.h"

#include <attnscope/Image.h>
#include <attnscope/Summary.h>

#include <algorithm>
#include <map>

namespace attnscope::remote {

using json = nlohmann::json;

struct Server::SetRun {
    std::shared_ptr<const Model> model;
    AnalysisRun run;
    int batch; // images per forward: the host's device's (defaultBatchSize)
    SetRun(std::shared_ptr<const Model> m, AnalysisOptions options)
        : model(m)
        , run(std::move(m), std::move(options))
        , batch(std::max(1, defaultBatchSize(*model, run.options())))
    {
    }
};

json Server::setStart(const json& params)
{
    const std::shared_ptr<const Model> model = modelOf(params);
    auto options = decodeAnalysisOptions(field(params, "options"));
    if (!options)
        throw RequestError { InvalidParams, "\"options\": " + options.message() };
    if (m_sets.size() >= kMaxSetRuns)
        throw RequestError { Failed, "this host already runs " + std::to_string(kMaxSetRuns) + " image sets for this window (release one first)" };
    auto set = std::make_shared<SetRun>(model, std::move(*options));
    // A run that a dropped link cut, going on: the statistics its last answer carried, and the images behind them.
    if (const json& restore = field(params, "restore"); !restore.is_null()) {
        auto stats = restore.is_object() ? decodeStats(field(restore, "stats")) : Result<StatsTable>(Error { "not {\"stats\": ..., \"images\": N}" });
        if (!stats)
            throw RequestError { InvalidParams, "\"restore\": " + stats.message() };
        const json& images = field(restore, "images");
        if (!isCountUpTo(images, INT64_MAX))
            throw RequestError { InvalidParams, "\"restore\": images is " + images.dump().substr(0, 40) + ", not a count" };
        set->run.restore(std::move(*stats), images.get<int64_t>());
    }
    const int64_t id = m_nextId++;
    const int batch = set->batch;
    m_sets[id] = std::move(set);
    return { { "run", id }, { "batch", batch } };
}

std::shared_ptr<Server::SetRun> Server::setOf(const json& params)
{
    const int64_t id = integer(params, "run");
    const auto found = m_sets.find(id);
    if (found == m_sets.end())
        throw RequestError { InvalidParams, "no image-set run " + std::to_string(id) + " (released: start it again)" };
    return found->second;
}

json Server::setAdd(const json& params)
{
    const auto set = setOf(params);
    const json& images = field(params, "images");
    const json& indices = field(params, "indices");
    if (!images.is_array() || !indices.is_array() || images.size() != indices.size() || images.empty() || images.size() > 1024)
        throw RequestError { InvalidParams, "\"images\" and \"indices\" are not two lists of 1 to 1024 entries each" };
    for (const json& index : indices)
        if (!isCount(index))
            throw RequestError { InvalidParams, "\"indices\" holds " + index.dump().substr(0, 40) + ", not an image's index" };
    // A client far away sends several of the host's batches a request (RemoteBackend's set runner: a round trip is paid
    // per request); each batch is prepared and run on its own, as the window's worker steps a run here, so that memory
    // stays one batch's and the forwards are the ones a run on this host makes.
    json skipped = json::array();
    for (size_t from = 0; from < images.size(); from += size_t(set->batch)) {
        const size_t to = std::min(images.size(), from + size_t(set->batch));
        // An image that cannot be read is left out with why, and the batch goes on (as the CLI and the window do).
        std::vector<Model::Prepared> prepared;
        std::vector<int64_t> kept;
        std::vector<std::string> paths;
        for (size_t i = from; i < to; ++i) {
            try {
                Input in = inputOf(*set->model, json { { "image", images[i] } });
                prepared.push_back(std::move(in.prepared));
                kept.push_back(indices[i].get<int64_t>());
                paths.push_back(in.path);
            } catch (const RequestError& e) {
                if (e.code != Failed)
                    throw;
                skipped.push_back({ { "index", indices[i] }, { "message", e.message } });
            }
        }
        if (prepared.empty())
            continue;
        std::vector<const Model::Prepared*> batch;
        for (const auto& p : prepared)
            batch.push_back(&p);
        if (auto added = set->run.addImages(batch, kept); !added)
            throw RequestError { Failed, (paths.size() == 1 ? paths.front() : "images " + paths.front() + " to " + paths.back()) + ": "
                                             + added.message() };
    }
    json out = { { "skipped", skipped }, { "images", set->run.images() } };
    // The run so far with it, when asked: a client far away saves set_summary's round trip.
    if (const json& summary = field(params, "summary"); summary.is_boolean() && summary.get<bool>())
        out.update(setSummary({ { "run", params["run"] } }));
    return out;
}

json Server::setSummary(const json& params)
{
    const auto set = setOf(params);
    return { { "stats", encodeStats(set->run.statistics()) }, { "images", set->run.images() }, { "radius", set->run.options().radius } };
}

void Server::releaseSetsOf(const Model* model)
{
    for (auto it = m_sets.begin(); it != m_sets.end();)
        it = it->second->model.get() == model ? m_sets.erase(it) : std::next(it);
}

json Server::setRelease(const json& params)
{
    m_sets.erase(integer(params, "run"));
    return json::object();
}

} // namespace attnscope::remote
