#include "gui/RemoteBackend.h"

#include <RemoteAnalyses.h>

#include <attnscope/ModelInfoJson.h>
#include <attnscope/Summary.h>

#include <QDir>
#include <QFileInfo>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace attnscope {

using json = nlohmann::json;
using remote::decodeBytes;
using remote::decodeTensor;

namespace {

QString fromStd(const std::string& s) { return QString::fromStdString(s); }

// What a model's loader reads beside its weights (docs/models.md).
const char* const kBesideModel[] = { "config.json", "preprocessor_config.json", "attnscope.json" };

Result<Image> decodePixels(const json& value)
{
    if (!value.is_object() || !value.contains("pixels"))
        return Error { "the host sent no image" };
    auto bytes = decodeBytes(value["pixels"]);
    if (!bytes)
        return bytes.error();
    Image image;
    image.width = value.value("width", 0);
    image.height = value.value("height", 0);
    image.channels = value.value("channels", 0);
    if (image.width <= 0 || image.height <= 0 || (image.channels != 1 && image.channels != 3)
        || bytes->size() != size_t(image.width) * size_t(image.height) * size_t(image.channels))
        return Error { "the host sent an image whose size and pixels disagree" };
    image.pixels = std::move(*bytes);
    return image;
}

Result<AttentionMap> decodeMap(const json& value)
{
    if (!value.is_object())
        return Error { "the host sent no map" };
    auto patches = decodeTensor(value.value("patches", json()));
    if (!patches)
        return patches.error();
    AttentionMap map;
    map.patches = std::move(*patches);
    map.prefixMass = value.value("prefix_mass", 0.0);
    return map;
}

} // namespace

RemoteBackend::RemoteBackend(remote::Endpoint endpoint)
    : m_endpoint(std::move(endpoint))
{
}

RemoteBackend::~RemoteBackend() = default;

QString RemoteBackend::endpoint() const
{
    return fromStd(m_endpoint.host) + (m_endpoint.cli == "attnscope-cli" ? QString() : QStringLiteral(":") + fromStd(m_endpoint.cli));
}

void RemoteBackend::disconnect()
{
    m_connection.reset(); // a server still there is asked to shut down; the next call makes a new link
}

QString RemoteBackend::where() const
{
    const QString host = fromStd(m_endpoint.host);
    if (!m_connection)
        return m_failure.isEmpty() ? QObject::tr("%1 · connecting…").arg(host) : QObject::tr("%1 · unreachable").arg(host);
    if (!m_connection->alive())
        return QObject::tr("%1 · unreachable").arg(host);
    const json& hello = m_connection->hello();
    return QObject::tr("%1 · %2 · LibTorch %3 · %4 ms")
        .arg(host, fromStd(hello.value("device", std::string("?"))), fromStd(hello.value("libtorch", std::string("?"))))
        .arg(m_connection->roundTripMs(), 0, 'f', m_connection->roundTripMs() < 10 ? 1 : 0);
}

Result<remote::Connection*> RemoteBackend::link()
{
    if (m_connection && m_connection->running())
        return m_connection.get();
    auto opened = remote::Connection::open(m_endpoint);
    if (!opened) {
        m_failure = fromStd(opened.message());
        return opened.error();
    }
    m_connection = std::move(*opened);
    m_failure.clear();
    ++m_generation; // a new server: what the last one held is gone
    return m_connection.get();
}

int64_t RemoteBackend::hold(std::string method, json params, int64_t model, int64_t id)
{
    const int64_t handle = m_nextHandle++;
    m_held[handle] = Held { std::move(method), std::move(params), model, id, m_generation };
    return handle;
}

Result<int64_t> RemoteBackend::hostId(int64_t handle)
{
    const auto found = m_held.find(handle);
    if (found == m_held.end())
        return Error { m_endpoint.host + ": no model or trace " + std::to_string(handle) + " was made on it" };
    if (auto connection = link(); !connection)
        return connection.error();
    Held& held = found->second;
    if (held.generation == m_generation)
        return held.id;
    json params = held.params;
    if (held.model != 0) { // a trace: its model first
        auto model = hostId(held.model);
        if (!model)
            return model.error();
        params["model"] = *model;
    }
    auto made = call(held.method, std::move(params));
    if (!made)
        return made.error();
    held.id = made->value(held.method == "trace" ? "trace" : "model", int64_t(0));
    held.generation = m_generation;
    return held.id;
}

Result<json> RemoteBackend::call(const std::string& method, json params)
{
    auto connection = link();
    if (!connection)
        return connection.error();
    return (*connection)->call(method, std::move(params));
}

Result<json> RemoteBackend::fileParam(const QString& path)
{
    if (!QFileInfo(path).isFile())
        return json(path.toStdString()); // the host's
    auto connection = link();
    if (!connection)
        return connection.error();
    return (*connection)->sendFile(path.toStdString());
}

Result<std::shared_ptr<const EngineModel>> RemoteBackend::loadModel(const QString& path, const LoadOptions& options)
{
    // A file is sent alone: the config files a loader reads beside it (a model folder's) would not go with it, and
    // the model would load as something else (its labels, preprocessing, even its architecture taken by convention).
    const QFileInfo here(path);
    const bool besideConfig = here.isFile()
        && std::any_of(std::begin(kBesideModel), std::end(kBesideModel), [&](const char* name) { return here.dir().exists(QString::fromLatin1(name)); });
    if (here.isDir() || besideConfig)
        return Error { path.toStdString() + ": a model folder on this machine cannot be sent to " + m_endpoint.host
                       + " yet (docs/remote.md); copy it there and open the host's path" };
    auto file = fileParam(path);
    if (!file)
        return file.error();
    json params = { { "path", *file } };
    if (!options.descriptionPath.empty()) {
        auto description = fileParam(fromStd(options.descriptionPath));
        if (!description)
            return description.error();
        params["description"] = *description;
    }
    if (options.inputHeight > 0 && options.inputWidth > 0)
        params["input_size"] = { options.inputHeight, options.inputWidth };
    auto loaded = call("load_model", params);
    if (!loaded)
        return loaded.error();
    auto info = modelInfoFromJson(loaded->value("info", json::object()).dump());
    if (!info)
        return Error { m_endpoint.host + ": " + path.toStdString() + ": the host's description of the model: " + info.message() };
    auto model = std::make_shared<EngineModel>();
    model->remote = hold("load_model", params, 0, loaded->value("model", int64_t(0)));
    model->description = std::move(*info);
    model->description.path = path.toStdString(); // what the user gave, not the host's cache
    return std::shared_ptr<const EngineModel>(std::move(model));
}

Result<json> RemoteBackend::traceOnHost(const EngineModel& model, const QString& imagePath, std::optional<double> neutrenoLambda,
                                        std::optional<double> boostT, const json& analyse, bool keep,
                                        const std::function<bool()>& isCancelled)
{
    auto image = fileParam(imagePath);
    if (!image)
        return image.error();
    if (isCancelled && isCancelled())
        return Error::cancel();
    auto modelId = hostId(model.remote);
    if (!modelId)
        return modelId.error();
    json params = { { "image", *image } };
    if (neutrenoLambda)
        params["neutreno_lambda"] = *neutrenoLambda;
    if (boostT)
        params["boost_t"] = *boostT;
    json asked = params;
    asked["model"] = *modelId;
    if (!analyse.is_null())
        asked["analyse"] = analyse;
    if (!keep)
        asked["keep"] = false; // analyses alone: nothing of it is asked later, so the host's LRU keeps the window's traces
    auto traced = call("trace", std::move(asked));
    if (!traced)
        return traced.error();
    // Made again, if the host loses it, without its analyses: the views need the trace only.
    if (keep)
        (*traced)["trace"] = hold("trace", std::move(params), model.remote, traced->value("trace", int64_t(0)));
    return traced;
}

Result<std::shared_ptr<ImageTrace>> RemoteBackend::readTrace(const json& r, const QString& imagePath) const
{
    auto result = std::make_shared<ImageTrace>();
    result->path = imagePath;
    result->preparation = fromStd(r.value("preparation", std::string()));
    result->remoteTrace = r.value("trace", int64_t(0));
    auto shown = decodePixels(r.value("shown", json()));
    auto logits = decodeTensor(r.value("logits", json()));
    const json grid = r.value("grid", json());
    if (!shown || !logits || !grid.is_array() || grid.size() != 2 || !grid[0].is_number_integer() || !grid[1].is_number_integer())
        return Error { m_endpoint.host + ": " + imagePath.toStdString() + ": "
                       + (!shown ? shown.message() : !logits ? logits.message() : "the host sent no grid") };
    result->shown = std::move(*shown);
    Trace& t = result->trace;
    t.logits = std::move(*logits);
    t.gridHeight = grid[0].get<int>();
    t.gridWidth = grid[1].get<int>();
    t.numPrefixTokens = r.value("prefix_tokens", 0);
    t.depth = r.value("depth", 0);
    t.numHeads = r.value("heads", 0);
    t.neutrenoLambda = r.value("neutreno_lambda", 0.0);
    t.boostT = r.value("boost_t", 0.0);
    if (r.contains("pool")) {
        auto pool = decodeTensor(r["pool"]); // small: [heads, patches], the model's last map
        if (!pool)
            return Error { m_endpoint.host + ": " + imagePath.toStdString() + ": " + pool.message() };
        t.poolAttention = std::move(*pool);
    }
    if (r.contains("windows")) { // a Swin: its blocks, for its rows and the view's names of them
        auto windows = remote::decodeWindows(r["windows"]);
        if (!windows || int(windows->size()) != t.depth)
            return Error { m_endpoint.host + ": " + imagePath.toStdString() + ": " + (windows ? "the host sent another number of blocks than the trace's depth" : windows.message()) };
        t.windows = std::move(*windows);
    }
    return result;
}

Result<std::shared_ptr<ImageTrace>> RemoteBackend::trace(const EngineModel& model, const QString& imagePath,
                                                         std::optional<double> neutrenoLambda, std::optional<double> boostT,
                                                         const std::function<bool()>& isCancelled)
{
    auto traced = traceOnHost(model, imagePath, neutrenoLambda, boostT, json(), true, isCancelled);
    if (!traced)
        return traced.error();
    return readTrace(*traced, imagePath);
}

Result<std::shared_ptr<ImageAnalysis>> RemoteBackend::analyse(const EngineModel& model, const QString& imagePath, AnalysisOptions options,
                                                              const Traced& traced, const std::function<bool()>& isCancelled)
{
    // One request: the host's forward set gives the trace (kept there) and the statistics, which cross exactly.
    auto answer = traceOnHost(model, imagePath, options.neutrenoLambda, options.boostT, remote::encodeAnalysisOptions(options),
                              bool(traced), isCancelled);
    if (!answer)
        return answer.error();
    if (traced) {
        auto trace = readTrace(*answer, imagePath);
        if (!trace)
            return trace.error();
        traced(std::move(*trace));
    }
    const json analysis = answer->value("analysis", json::object());
    auto stats = remote::decodeStats(analysis.value("stats", json()));
    if (!stats)
        return Error { m_endpoint.host + ": " + imagePath.toStdString() + ": " + stats.message() };
    auto result = std::make_shared<ImageAnalysis>();
    result->path = imagePath;
    result->summary = summarise(*stats, analysis.value("images", int64_t(0)), analysis.value("radius", options.radius));
    result->summary.model = model.info().path;
    result->summary.label = result->summary.model;
    result->summary.patchSize = model.config().patchSize;
    result->summary.blockStages = blockStagesOf(model.config()); // a Swin's stages: the figures mark the merges
    if (analysis.contains("decomposition")) {
        auto d = remote::decodeDecomposition(analysis["decomposition"]);
        if (!d)
            return Error { m_endpoint.host + ": " + imagePath.toStdString() + ": " + d.message() };
        result->decomposition = std::make_shared<const LogitDecomposition>(std::move(*d));
    }
    result->decompositionNote = fromStd(analysis.value("decomposition_note", std::string()));
    return result;
}

Result<HeadAblation> RemoteBackend::ablate(const EngineModel& model, const QString& imagePath, HeadRef head,
                                           const std::function<bool()>& isCancelled)
{
    auto image = fileParam(imagePath);
    auto modelId = image ? hostId(model.remote) : Result<int64_t>(image.error());
    if (!modelId)
        return modelId.error();
    if (isCancelled && isCancelled())
        return Error::cancel();
    auto answer = call("ablate", { { "model", *modelId }, { "image", *image }, { "layer", head.layer }, { "head", head.head } });
    if (!answer)
        return answer.error();
    auto a = remote::decodeHeadAblation(*answer);
    if (!a)
        return Error { m_endpoint.host + ": " + imagePath.toStdString() + ": " + a.message() };
    return a;
}

Result<QueryKeyMap> RemoteBackend::queryKeyMap(const EngineModel& model, const QStringList& imagePaths, int layer, int head,
                                               const QueryKeyOptions& options, QStringList& used)
{
    json images = json::array();
    QStringList sent;
    for (const QString& path : imagePaths) {
        auto image = fileParam(path);
        if (!image) {
            if (QFileInfo(path).isFile())
                return image.error(); // this machine's file, not sent: the link is gone
            continue;
        }
        images.push_back(*image);
        sent << path;
    }
    auto modelId = hostId(model.remote);
    if (!modelId)
        return modelId.error();
    auto answer = call("query_key_map", { { "model", *modelId }, { "images", images }, { "layer", layer }, { "head", head },
                                          { "method", toString(options.method) } });
    if (!answer)
        return answer.error();
    for (const json& i : answer->value("used", json::array()))
        if (remote::isCount(i) && i.get<size_t>() < size_t(sent.size()))
            used << sent[int(i.get<size_t>())];
    auto map = remote::decodeQueryKeyMap(answer->value("map", json()));
    if (!map)
        return Error { m_endpoint.host + ": " + map.message() };
    return map;
}

Result<ImageRows> RemoteBackend::rows(const EngineModel&, const ImageTrace& trace, const RowsRequest& request)
{
    json params = { { "query", request.query } };
    const bool swin = trace.trace.hierarchical(); // neither a rollout nor token norms: the view says why (rowsOfTrace)
    if (request.rollout && !swin)
        params["rollout"] = { { "fusion", toString(request.rollout->fusion) }, { "discard", request.rollout->discard } };
    if (request.normsRatio && !swin)
        params["norms"] = *request.normsRatio;
    Result<json> answer = Error {};
    for (int attempt = 0; attempt < 2; ++attempt) {
        auto id = hostId(trace.remoteTrace);
        if (!id)
            return id.error();
        params["trace"] = *id;
        answer = call("attention_rows", params);
        // A trace the host dropped from its LRU (other images traced since): made again, once.
        if (answer || answer.message().rfind("no trace ", 0) != 0)
            break;
        m_held[trace.remoteTrace].generation = -1;
    }
    if (!answer)
        return answer.error();
    const Trace& t = trace.trace;
    const auto wrong = [&](const std::string& what) { return Error { m_endpoint.host + ": " + trace.path.toStdString() + ": " + what }; };
    ImageRows out;
    out.of = &trace;
    out.request = request;
    out.rows.query = request.query;
    out.rows.gridHeight = t.gridHeight;
    out.rows.gridWidth = t.gridWidth;
    out.rows.numPrefixTokens = t.numPrefixTokens;
    out.rows.numHeads = t.numHeads;
    out.rows.depth = t.depth;
    if (swin) {
        auto maps = remote::decodeWindowMaps(answer->value("window_maps", json()), t.windows);
        if (!maps)
            return wrong(maps.message());
        out.rows.windows = t.windows;
        out.rows.windowMaps = std::move(*maps);
        out.rows.numHeads = 0; // the most heads of any block, as queryRows has it
        for (const WindowBlock& g : t.windows)
            out.rows.numHeads = std::max(out.rows.numHeads, g.heads);
        return out;
    }
    auto rows = decodeTensor(answer->value("rows", json()));
    if (!rows)
        return wrong(rows.message());
    const int64_t N = int64_t(t.numPrefixTokens) + int64_t(t.gridHeight) * t.gridWidth;
    if (rows->numel() != int64_t(t.depth) * t.numHeads * N)
        return wrong("the host sent rows of another shape than the trace's");
    out.rows.rows = std::move(*rows);
    out.rows.pool = t.poolAttention;
    if (request.rollout) {
        auto map = decodeMap(answer->value("rollout", json()));
        if (!map)
            return wrong(map.message());
        out.rollout = std::move(*map);
    }
    if (request.normsRatio) {
        auto norms = remote::decodeTokenNorms(answer->value("norms", json()));
        if (!norms)
            return wrong(norms.message());
        out.norms = std::move(*norms);
    }
    return out;
}

Result<Relevance> RemoteBackend::explain(const EngineModel& model, const QString& imagePath, const RelevanceOptions& options)
{
    auto image = fileParam(imagePath);
    if (!image)
        return image.error();
    auto modelId = hostId(model.remote);
    if (!modelId)
        return modelId.error();
    json params = { { "model", *modelId }, { "image", *image }, { "target_class", options.targetClass },
                    { "gradcam_layer", options.gradCamLayer } };
    auto answer = call("explain", std::move(params));
    if (!answer)
        return answer.error();
    auto relevance = remote::decodeRelevance(*answer);
    if (!relevance)
        return Error { m_endpoint.host + ": " + imagePath.toStdString() + ": " + relevance.message() };
    return relevance;
}

} // namespace attnscope
