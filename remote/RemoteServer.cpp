#include "RemoteServer.h"

#include "RemoteAnalyses.h"
#include "ServerRequests.h"

#include <attnscope/Analyses.h>
#include <attnscope/CpuKernels.h>
#include <attnscope/Image.h>
#include <attnscope/ModelInfoJson.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace attnscope::remote {

using json = nlohmann::json;

namespace {

bool writeAll(int fd, const std::string& bytes)
{
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        done += size_t(n);
    }
    return true;
}

// The rollout's options, when `params` asks for the rollout's row: {"fusion": mean | max | min, "discard": [0, 1)},
// either left out for its default.
std::optional<RolloutOptions> rolloutOptions(const json& params)
{
    const json& r = field(params, "rollout");
    if (r.is_null())
        return std::nullopt;
    if (!r.is_object())
        throw RequestError { InvalidParams, "\"rollout\" is " + r.dump().substr(0, 40) + ", not {\"fusion\": ..., \"discard\": ...}" };
    RolloutOptions options;
    if (const json& fusion = field(r, "fusion"); !fusion.is_null()) {
        auto parsed = fusion.is_string() ? parseHeadFusion(fusion.get<std::string>())
                                         : Result<HeadFusion>(Error { "the head fusion " + fusion.dump().substr(0, 40) + " is not mean, max or min" });
        if (!parsed)
            throw RequestError { InvalidParams, "\"rollout\": " + parsed.message() };
        options.fusion = *parsed;
    }
    if (const json& discard = field(r, "discard"); !discard.is_null()) {
        if (!discard.is_number() || !(discard.get<double>() >= 0.0 && discard.get<double>() < 1.0))
            throw RequestError { InvalidParams, "\"rollout\": discard " + discard.dump().substr(0, 40) + " is not a number in [0, 1)" };
        options.discard = discard.get<double>();
    }
    return options;
}

std::string sha256Param(const json& params, const char* key)
{
    const std::string sha = text(params, key);
    if (!isSha256(sha))
        throw RequestError { InvalidParams, std::string("\"") + key + "\" is \"" + sha.substr(0, 70) + "\", not a sha256 (64 lowercase hex digits)" };
    return sha;
}

} // namespace

Server::Server(ServerOptions options)
    : m_options(std::move(options))
    , m_files(m_options.filesDir.empty() ? defaultFilesDir() : m_options.filesDir)
{
    m_methods = { { "hello", &Server::hello },
                  { "load_model", &Server::loadModel },
                  { "release_model", &Server::releaseModel },
                  { "trace", &Server::trace },
                  { "attention_rows", &Server::attentionRows },
                  { "explain", &Server::explain },
                  { "ablate", &Server::ablate },
                  { "query_key_map", &Server::queryKeyMap },
                  { "forward", &Server::forward },
                  { "prepare", &Server::prepare },
                  { "trace_tensor", &Server::traceTensor },
                  { "list_dir", &Server::listDir },
                  { "thumbnails", &Server::thumbnails },
                  { "set_start", &Server::setStart },
                  { "set_add", &Server::setAdd },
                  { "set_summary", &Server::setSummary },
                  { "set_release", &Server::setRelease },
                  { "release_trace", &Server::releaseTrace },
                  { "has_file", &Server::hasFile },
                  { "put_file", &Server::putFile },
                  { "shutdown", &Server::shutdown } };
}

Server::~Server() = default;

std::optional<json> Server::handle(const json& message)
{
    const json id = message.contains("id") ? message["id"] : json();
    const bool notification = !message.contains("id");
    if (!message.contains("method"))
        return std::nullopt; // a response: this server asks nothing of its client
    const std::string method = message["method"].get<std::string>();
    const auto handler = m_methods.find(method);
    const auto added = m_added.find(method);
    const std::string refused = m_gate ? m_gate(method) : std::string();
    json out;
    if (handler == m_methods.end() && added == m_added.end()) {
        out = errorResponse(id, NoSuchMethod, "no method \"" + method.substr(0, 60) + "\" (protocol version " + std::to_string(kProtocolVersion) + ")");
    } else if (!refused.empty()) {
        out = errorResponse(id, Failed, refused);
    } else {
        try {
            const json& params = message.contains("params") ? message["params"] : json::object();
            out = response(id, handler != m_methods.end() ? (this->*handler->second)(params) : added->second(params));
        } catch (const RequestError& e) {
            out = errorResponse(id, e.code, e.message);
        } catch (const std::exception& e) {
            out = errorResponse(id, Failed, method + ": " + e.what());
        }
    }
    if (notification)
        return std::nullopt;
    return out;
}

json Server::hello(const json& params)
{
    const int64_t theirs = integer(params, "protocol");
    if (theirs != kProtocolVersion)
        throw RequestError { WrongVersion, "the client speaks protocol version " + std::to_string(theirs) + "; this server (attnscope-cli "
                                               + version() + ") speaks version " + std::to_string(kProtocolVersion) };
    const ThreadSetup threads = threadSetup();
    const auto resolved = resolveDevice(m_options.device); // "cuda:0" for "auto" on a GPU node
    const std::string device = resolved ? *resolved : m_options.device;
    return { { "protocol", kProtocolVersion },
             { "server", std::string("attnscope-cli ") + version() },
             { "libtorch", libtorchVersion() },
             { "device", device },
             { "cpu_threads", std::max(threads.intraOp, threads.interOp) },
             { "limits",
               { { "max_frame_bytes", m_options.limits.maxFrameBytes }, { "max_depth", m_options.limits.maxDepth }, { "max_traces", m_options.maxTraces } } } };
}

json Server::loadModel(const json& params)
{
    LoadOptions options;
    options.device = m_options.device;
    options.acceptHierarchical = true; // a Swin's rows cross as each block's maps at its stage grid (attention_rows)
    options.descriptionPath = hostFile(params, "description", false);
    if (const json& size = field(params, "input_size"); !size.is_null()) {
        if (!size.is_array() || size.size() != 2 || !isCount(size[0]) || !isCount(size[1]))
            throw RequestError { InvalidParams, "\"input_size\" is not [height, width]" };
        options.inputHeight = size[0].get<int>();
        options.inputWidth = size[1].get<int>();
    }
    auto model = Model::load(hostFile(params, "path"), options);
    if (!model)
        throw RequestError { Failed, model.message() };
    const int64_t id = m_nextId++;
    m_models[id] = *model;
    return { { "model", id }, { "info", json::parse(modelInfoJson((*model)->info())) } };
}

const std::shared_ptr<const Model>& Server::modelOf(const json& params, const char* key)
{
    const int64_t id = integer(params, key); // a wrong one is said by its own name ("compare")
    const auto found = m_models.find(id);
    if (found == m_models.end())
        throw RequestError { InvalidParams, (std::string(key) == "model" ? "" : "\"" + std::string(key) + "\": ") + "no model "
                                                + std::to_string(id) + " (released, or never loaded)" };
    return found->second;
}

json Server::releaseModel(const json& params)
{
    const int64_t id = integer(params, "model");
    const auto found = m_models.find(id);
    if (found == m_models.end())
        return json::object(); // released twice: nothing to do
    const Model* model = found->second.get();
    m_traces.remove_if([&](const auto& t) { return t.second->model.get() == model; }); // its traces go with it
    releaseSetsOf(model); // and its image-set runs
    m_models.erase(found);
    return json::object();
}

Server::Input Server::inputOf(const Model& model, const json& params) const
{
    Input in;
    in.path = hostFile(params, "image");
    auto image = decodeImage(in.path);
    if (!image)
        throw RequestError { Failed, image.message() };
    in.preparation = model.describePreparation(image->width, image->height, image->channels);
    auto prepared = model.prepare(*image);
    if (!prepared)
        throw RequestError { Failed, in.path + ": " + prepared.message() };
    in.prepared = std::move(*prepared);
    return in;
}

json Server::trace(const json& params)
{
    const std::shared_ptr<const Model> model = modelOf(params);
    const Input input = inputOf(*model, params);
    const std::string& path = input.path;
    const std::string& preparation = input.preparation;
    const Model::Prepared* prepared = &input.prepared;
    auto traced = std::make_shared<Traced>();
    traced->model = model;
    traced->image = path;
    json analysed;
    if (const json& asked = field(params, "analyse"); !asked.is_null()) {
        // The trace and the image's analyses from one forward set, as the window's own engine makes them.
        analysed = analyse(model, *prepared, asked, params, path, traced->trace);
    } else {
        RunOptions run;
        run.record = RecordSpec::everything();
        run.neutrenoLambda = number(params, "neutreno_lambda");
        run.boostT = number(params, "boost_t");
        auto trace = model->run(prepared->input, run);
        if (!trace)
            throw RequestError { Failed, path + ": " + trace.message() };
        traced->trace = std::move(*trace);
    }
    const Trace& t = traced->trace;
    // "keep": false for a trace no view will ask rows of (analyses alone): it takes no place in the LRU, whose traces
    // are the window's.
    const json& keep = field(params, "keep");
    if (!keep.is_null() && !keep.is_boolean())
        throw RequestError { InvalidParams, "\"keep\" is " + keep.dump().substr(0, 40) + ", not true or false" };
    const int64_t id = keep.is_null() || keep.get<bool>() ? m_nextId++ : 0;
    if (id != 0)
        m_traces.emplace_front(id, traced);
    while (int(m_traces.size()) > std::max(1, m_options.maxTraces))
        m_traces.pop_back();
    const Image& shown = prepared->shown;
    json out = { { "trace", id },
             { "grid", { t.gridHeight, t.gridWidth } },
             { "prefix_tokens", t.numPrefixTokens },
             { "depth", t.depth },
             { "heads", t.numHeads },
             { "map_layers", lastMapLayer(t) },
             { "neutreno_lambda", t.neutrenoLambda },
             { "boost_t", t.boostT },
             { "logits", encodeTensor(t.logits) },
             { "preparation", preparation },
             { "shown",
               { { "width", shown.width }, { "height", shown.height }, { "channels", shown.channels },
                 { "pixels", encodeBytes(shown.pixels.data(), shown.pixels.size()) } } } };
    if (t.poolAttention.numel() > 0)
        out["pool"] = encodeTensor(t.poolAttention); // [heads, patches]: the model's last map, small
    if (t.hierarchical())
        out["windows"] = encodeWindows(t.windows); // a Swin's blocks: its stage, grid, window and shift each
    if (!analysed.is_null())
        out["analysis"] = std::move(analysed);
    return out;
}

json Server::analyse(const std::shared_ptr<const Model>& model, const Model::Prepared& prepared, const json& asked, const json& params, const std::string& path,
                     Trace& clean)
{
    auto options = decodeAnalysisOptions(asked);
    if (!options)
        throw RequestError { InvalidParams, "\"analyse\": " + options.message() };
    options->neutrenoLambda = number(params, "neutreno_lambda");
    options->boostT = number(params, "boost_t");
    options->alsoRecord = RecordSpec::everything(); // the view draws any layer, head and tap of the clean forward
    options->cleanTraceReady = [&clean](size_t, const Trace& t) { clean = t; };
    const bool decomposition = options->decomposition;
    AnalysisRun run(model, *options);
    if (auto added = run.addImage(prepared, 0); !added)
        throw RequestError { Failed, path + ": " + added.message() };
    json out = { { "stats", encodeStats(run.statistics()) }, { "images", run.images() }, { "radius", run.options().radius } };
    if (decomposition) {
        auto d = decomposeLogits(*model, prepared.input);
        if (d)
            out["decomposition"] = encodeDecomposition(*d);
        else
            out["decomposition_note"] = d.message();
    }
    return out;
}

std::shared_ptr<Server::Traced> Server::traceOf(const json& params)
{
    const int64_t id = integer(params, "trace");
    for (auto it = m_traces.begin(); it != m_traces.end(); ++it)
        if (it->first == id) {
            m_traces.splice(m_traces.begin(), m_traces, it); // most recently used
            return m_traces.front().second;
        }
    throw RequestError { InvalidParams, "no trace " + std::to_string(id) + " (released, or dropped from the " + std::to_string(m_options.maxTraces)
                                            + " kept: trace the image again)" };
}

json Server::attentionRows(const json& params)
{
    const auto traced = traceOf(params);
    const Trace& t = traced->trace;
    const int64_t query = integer(params, "query");
    const int64_t N = int64_t(t.numPrefixTokens) + int64_t(t.gridHeight) * t.gridWidth;
    if (query < 0 || query >= N)
        throw RequestError { InvalidParams, "query " + std::to_string(query) + " is not one of the trace's tokens 0 to " + std::to_string(N - 1) };
    const std::optional<RolloutOptions> rollout = rolloutOptions(params); // checked before anything is computed
    const std::optional<double> ratio = number(params, "norms");
    if (t.hierarchical() && (rollout || ratio)) // the window asks neither of a Swin; said as the engine says it
        throw RequestError { Failed, rollout ? std::string(kNoHierarchicalRollout) : std::string("token norms: not of a hierarchical (Swin) model yet") };
    // Row `query` of every head of every layer: depth x heads x N floats (ViT-B/16 at 224: 12 x 12 x 197, 113 KiB); a
    // Swin's maps of every head and mean at each block's stage grid (Swin-T at 224: 53,802 floats, 210 KiB).
    QueryRows rows;
    try {
        rows = queryRows(t, int(query));
    } catch (const std::invalid_argument& e) {
        throw RequestError { Failed, e.what() };
    }
    json out = rows.hierarchical() ? json { { "window_maps", encodeWindowMaps(rows.windowMaps) } } // each block's at its stage grid
                                   : json { { "rows", encodeTensor(rows.rows) } };
    if (rows.pool.numel() > 0)
        out["pool"] = encodeTensor(rows.pool); // [heads, patches]: the attention-pool head's one query
    if (rollout) {
        const RolloutOptions& made = traced->rolloutMadeWith.value_or(RolloutOptions {});
        if (!traced->rolloutMadeWith || made.fusion != rollout->fusion || made.discard != rollout->discard) {
            traced->rollout = attentionRollout(t, *rollout);
            traced->rolloutMadeWith = *rollout;
        }
        const AttentionMap map = rolloutMap(t, traced->rollout, int(query));
        out["rollout"] = { { "patches", encodeTensor(map.patches) }, { "prefix_mass", map.prefixMass } };
    }
    if (ratio) {
        // The token norms view: every layer's norms of the trace's tokens, the outliers above `ratio` x the median.
        if (!(*ratio > 0) || !std::isfinite(*ratio))
            throw RequestError { InvalidParams, "\"norms\" is " + std::to_string(*ratio) + ", not a positive outlier ratio" };
        out["norms"] = encodeTokenNorms(tokenNorms(t, traced->model->config(), *ratio));
    }
    return out;
}

json Server::ablate(const json& params)
{
    const std::shared_ptr<const Model> model = modelOf(params);
    const Input input = inputOf(*model, params);
    const HeadRef head { int(integer(params, "layer")), int(integer(params, "head")) };
    auto a = headAblation(*model, input.prepared.input, AblationMode::Zero, {}, 0, { head });
    if (!a)
        throw RequestError { Failed, input.path + ": " + a.message() };
    return encodeHeadAblation(*a);
}

json Server::queryKeyMap(const json& params)
{
    const std::shared_ptr<const Model> model = modelOf(params);
    const json& images = field(params, "images");
    if (!images.is_array() || images.empty() || images.size() > 256)
        throw RequestError { InvalidParams, "\"images\" is not a list of 1 to 256 images" };
    QueryKeyOptions options;
    if (const json& m = field(params, "method"); !m.is_null()) {
        auto method = parseQueryKeyMethod(text(params, "method"));
        if (!method)
            throw RequestError { InvalidParams, "\"method\": " + method.message() };
        options.method = *method;
    }
    // An image that cannot be read is left out (the window's strip says which); `used` says which made the map.
    std::vector<Tensor> inputs;
    json used = json::array();
    for (size_t i = 0; i < images.size(); ++i) {
        try {
            inputs.push_back(inputOf(*model, json { { "image", images[i] } }).prepared.input);
            used.push_back(i);
        } catch (const RequestError& e) {
            if (e.code != Failed)
                throw;
        }
    }
    if (inputs.empty())
        throw RequestError { Failed, "none of the images could be read" };
    auto map = attnscope::queryKeyMap(*model, inputs, int(integer(params, "layer")), int(integer(params, "head")), options);
    if (!map)
        throw RequestError { Failed, map.message() };
    return { { "map", encodeQueryKeyMap(*map) }, { "used", used } };
}

json Server::explain(const json& params)
{
    const std::shared_ptr<const Model> model = modelOf(params);
    const Input input = inputOf(*model, params);
    const std::string& path = input.path;
    const Model::Prepared* prepared = &input.prepared;
    RelevanceOptions options;
    if (const json& c = field(params, "target_class"); !c.is_null())
        options.targetClass = int(integer(params, "target_class"));
    if (const json& l = field(params, "gradcam_layer"); !l.is_null())
        options.gradCamLayer = int(integer(params, "gradcam_layer"));
    auto relevance = classRelevance(*model, prepared->input, options);
    if (!relevance)
        throw RequestError { Failed, path + ": " + relevance.message() };
    return encodeRelevance(*relevance);
}

json Server::releaseTrace(const json& params)
{
    const int64_t id = integer(params, "trace");
    m_traces.remove_if([&](const auto& t) { return t.first == id; });
    return json::object();
}

void Server::addMethod(const std::string& name, Method method) { m_added[name] = std::move(method); }

std::shared_ptr<const Model> Server::model(const json& params, const char* key) { return modelOf(params, key); }

std::string Server::hostPath(const json& value, const std::string& what) const
{
    const json params = { { what, value } };
    return hostFile(params, what.c_str());
}

std::string Server::hostFile(const json& params, const char* key, bool required) const
{
    const json& v = field(params, key);
    if (v.is_null() && !required)
        return {};
    if (v.is_string())
        return v.get<std::string>();
    if (v.is_object() && v.size() == 1 && v.contains("sha256")) {
        const std::string sha = sha256Param(v, "sha256");
        std::string path = m_files.find(sha);
        if (path.empty())
            throw RequestError { InvalidParams, "no file with sha256 " + sha + " on the host (send it first)" };
        return path;
    }
    throw RequestError { InvalidParams, std::string("\"") + key + "\" is " + (v.is_null() ? "missing" : v.dump().substr(0, 40))
                                            + ", not a path on the host or {\"sha256\": HEX} of a file sent" };
}

json Server::hasFile(const json& params)
{
    const std::string sha = sha256Param(params, "sha256");
    const bool present = !m_files.find(sha).empty();
    // An unfinished file's bytes so far: a client whose link dropped mid-file goes on from there.
    return { { "present", present }, { "received", present ? 0 : m_files.received(sha) } };
}

json Server::putFile(const json& params)
{
    const std::string sha = sha256Param(params, "sha256");
    const int64_t size = integer(params, "size");
    const int64_t offset = integer(params, "offset");
    std::string name = text(params, "name", false);
    if (name.empty() && field(params, "name").is_null())
        name = "file";
    if (auto named = checkFileName(name); !named)
        throw RequestError { InvalidParams, "\"name\": " + named.message() };
    const json& data = field(params, "data");
    if (!data.is_binary())
        throw RequestError { InvalidParams, "\"data\" is " + (data.is_null() ? std::string("missing") : data.dump().substr(0, 40)) + ", not bytes" };
    const size_t length = data.get_binary().size();
    if (size < 0 || uint64_t(size) > kMaxFileBytes)
        throw RequestError { InvalidParams, "\"size\" " + std::to_string(size) + " is not 0 to " + std::to_string(kMaxFileBytes) + " bytes" };
    if (length > kChunkBytes)
        throw RequestError { InvalidParams, "a chunk of " + std::to_string(length) + " bytes: at most " + std::to_string(kChunkBytes) + " a put_file" };
    if (offset < 0 || uint64_t(offset) + length > uint64_t(size))
        throw RequestError { InvalidParams, std::to_string(length) + " bytes at offset " + std::to_string(offset) + " go past the file's "
                                                + std::to_string(size) + " bytes" };
    if (m_files.find(sha).empty() && offset != 0 && uint64_t(offset) != m_files.received(sha))
        throw RequestError { InvalidParams, sha + ": a chunk at offset " + std::to_string(offset) + ", but " + std::to_string(m_files.received(sha))
                                                + " bytes of it have arrived (send from there)" };
    auto kept = m_files.put(sha, uint64_t(size), uint64_t(offset), data.get_binary().data(), length, name);
    if (!kept)
        throw RequestError { Failed, kept.message() };
    if (kept->empty())
        return { { "complete", false }, { "received", uint64_t(offset) + length } };
    return { { "complete", true }, { "path", *kept } };
}

json Server::shutdown(const json&)
{
    m_shutdown = true;
    return json::object();
}

int Server::serve(int in, int out)
{
    FrameReader reader(m_options.limits);
    std::vector<char> buffer(size_t(1) << 16);
    while (!m_shutdown) {
        const ssize_t n = ::read(in, buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            std::fprintf(stderr, "attnscope-cli serve: cannot read the link: %s\n", std::strerror(errno));
            return 1;
        }
        if (n == 0) {
            if (reader.midFrame()) {
                std::fprintf(stderr, "attnscope-cli serve: the link ended inside a frame\n");
                return 1;
            }
            return 0;
        }
        if (auto fed = reader.feed(buffer.data(), size_t(n)); !fed) {
            // Said to the client if it can still read, and on stderr, which the client shows when the link ends.
            writeAll(out, frame(encodeMessage(errorResponse(json(), ParseError, fed.message()))));
            std::fprintf(stderr, "attnscope-cli serve: %s\n", fed.message().c_str());
            return 1;
        }
        while (auto body = reader.next()) {
            auto message = decodeMessage(*body, m_options.limits);
            std::optional<json> reply;
            if (!message)
                reply = errorResponse(json(), InvalidRequest, message.message());
            else
                reply = handle(*message);
            if (reply && !writeAll(out, frame(encodeMessage(*reply)))) {
                std::fprintf(stderr, "attnscope-cli serve: cannot write to the link: %s\n", std::strerror(errno));
                return 1;
            }
            if (m_shutdown)
                break;
        }
    }
    return 0;
}

} // namespace attnscope::remote
