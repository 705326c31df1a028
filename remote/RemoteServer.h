#pragma once

// The remote engine's server (docs/remote.md): what `attnscope-cli serve --stdio` runs on a GPU node, reached through
// the user's own ssh. It answers JSON-RPC requests (RemoteWire.h) one at a time, in order: models loaded by path on the
// host (or sent from the client, RemoteFiles.h), images traced there, and only what a view needs sent back (a query's
// attention rows over every layer and head, and its rollout row, not the trace). Traces stay on the host in an LRU of
// bounded count, each with the last rollout asked of it; models stay until released.
//
// No listening socket, no code run from a message: a request names a method from the fixed table below and files the
// user gave; sizes are bounded by Limits and kMaxFileBytes; files sent are written in one folder (RemoteFiles.h).

#include "RemoteFiles.h"
#include "RemoteWire.h"

#include <attnscope/Model.h>

#include <functional>
#include <list>
#include <map>
#include <memory>
#include <string>

namespace attnscope::remote {

struct ServerOptions {
    Limits limits;
    std::string device = "auto"; // where models run: auto | cpu | cuda | cuda:<i>
    int maxTraces = 8;           // traces kept on the host, least recently used dropped first
    std::string filesDir;        // where files sent by the client are kept; empty: defaultFilesDir() (RemoteFiles.h)
};

class Server {
public:
    explicit Server(ServerOptions options = {});
    ~Server();

    // One message in, its response out (nullopt for a notification, which has no id). Never throws.
    std::optional<nlohmann::json> handle(const nlohmann::json& message);
    // Reads frames from `in` and writes responses to `out` until the input ends or `shutdown` is asked. 0 after a
    // clean end; 1 after a stream it could not read (said on stderr in one line).
    int serve(int in, int out);
    bool shutdownAsked() const { return m_shutdown; }
    // Image-set runs kept at once: a window runs two (a model and its variant) per model shown.
    static constexpr size_t kMaxSetRuns = 8;

    // A method a tier above the engine adds (attnscope-cli adds Export all's, app/cli/ServeReports.h), answered as the
    // table's are: its params in, its result out, a RequestError (ServerRequests.h) when it refuses.
    using Method = std::function<nlohmann::json(const nlohmann::json& params)>;
    void addMethod(const std::string& name, Method method);
    // Asked before each request: a reason (non-empty) refuses the method with it, e.g. while an Export all runs.
    void setGate(std::function<std::string(const std::string& method)> gate) { m_gate = std::move(gate); }
    // For the methods added: the model a request's `key` names (a RequestError when it names none), and a path on the
    // host from a value as load_model's `path` takes it (a host path, or {"sha256": HEX} of a file sent).
    std::shared_ptr<const Model> model(const nlohmann::json& params, const char* key = "model");
    std::string hostPath(const nlohmann::json& value, const std::string& what) const;

private:
    struct Traced;
    using Handler = nlohmann::json (Server::*)(const nlohmann::json& params);
    nlohmann::json hello(const nlohmann::json& params);
    nlohmann::json loadModel(const nlohmann::json& params);
    nlohmann::json releaseModel(const nlohmann::json& params);
    nlohmann::json trace(const nlohmann::json& params);
    nlohmann::json attentionRows(const nlohmann::json& params);
    nlohmann::json explain(const nlohmann::json& params);
    nlohmann::json ablate(const nlohmann::json& params);
    nlohmann::json queryKeyMap(const nlohmann::json& params);
    // Python's attnscope.connect (RemoteTensors.cpp): Model.run, an image prepared or perturbed, a trace's tensors.
    nlohmann::json forward(const nlohmann::json& params);
    nlohmann::json prepare(const nlohmann::json& params);
    nlohmann::json traceTensor(const nlohmann::json& params);
    // The window's remote file dialog and the image strip's thumbnails of host images (RemoteBrowse.cpp).
    nlohmann::json listDir(const nlohmann::json& params);
    nlohmann::json thumbnails(const nlohmann::json& params);
    // Image sets (RemoteSets.cpp): a run on the host, fed a batch per set_add.
    struct SetRun;
    nlohmann::json setStart(const nlohmann::json& params);
    nlohmann::json setAdd(const nlohmann::json& params);
    nlohmann::json setSummary(const nlohmann::json& params);
    nlohmann::json setRelease(const nlohmann::json& params);
    std::shared_ptr<SetRun> setOf(const nlohmann::json& params);
    void releaseSetsOf(const Model* model);
    // The request's "image" decoded and prepared for `model`; a RequestError naming the file otherwise.
    struct Input {
        std::string path; // on the host
        std::string preparation;
        Model::Prepared prepared;
    };
    Input inputOf(const Model& model, const nlohmann::json& params) const;
    // `trace`'s analyses (its "analyse" options): the statistics of one image, from the forward set that also gives
    // `clean`, the trace kept.
    nlohmann::json analyse(const std::shared_ptr<const Model>& model, const Model::Prepared& prepared, const nlohmann::json& asked,
                           const nlohmann::json& params, const std::string& path, Trace& clean);
    nlohmann::json releaseTrace(const nlohmann::json& params);
    nlohmann::json hasFile(const nlohmann::json& params);
    nlohmann::json putFile(const nlohmann::json& params);
    nlohmann::json shutdown(const nlohmann::json& params);
    const std::shared_ptr<const Model>& modelOf(const nlohmann::json& params, const char* key = "model");
    std::shared_ptr<Traced> traceOf(const nlohmann::json& params);
    // params[key]: a path on the host, or {"sha256": HEX} naming a file the client sent before.
    std::string hostFile(const nlohmann::json& params, const char* key, bool required = true) const;

    ServerOptions m_options;
    std::map<std::string, Handler> m_methods;
    std::map<std::string, Method> m_added;
    std::function<std::string(const std::string& method)> m_gate;
    std::map<int64_t, std::shared_ptr<const Model>> m_models;
    std::list<std::pair<int64_t, std::shared_ptr<Traced>>> m_traces; // most recently used first
    std::map<int64_t, std::shared_ptr<SetRun>> m_sets;
    FileStore m_files;
    int64_t m_nextId = 1;
    bool m_shutdown = false;
};

} // namespace attnscope::remote
