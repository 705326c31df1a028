#include "RemoteBindings.h"

#include <RemoteAnalyses.h>

#include <attnscope/ModelInfoJson.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <unistd.h>

// The native half of attnscope.connect: the link, and the models on the host (their traces: RemoteTraceBindings.cpp).
// A trace stays on the host (a ViT-B/16's maps are 22 MB); what crosses is what is asked for: the logits with the
// trace, a query's rows for an attention map (attention_rows), a layer's tensor when one is read (trace_tensor).

namespace attnscope::python {

namespace fs = std::filesystem;

namespace {

json toJson(const py::handle& v)
{
    if (v.is_none())
        return nullptr;
    if (py::isinstance<py::bool_>(v))
        return v.cast<bool>();
    if (py::isinstance<py::int_>(v))
        return v.cast<int64_t>();
    if (py::isinstance<py::float_>(v))
        return v.cast<double>();
    if (py::isinstance<py::str>(v))
        return v.cast<std::string>();
    if (py::isinstance<py::dict>(v)) {
        json out = json::object();
        for (const auto& [key, value] : v.cast<py::dict>())
            out[key.cast<std::string>()] = toJson(value);
        return out;
    }
    if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
        json out = json::array();
        for (const auto& item : v)
            out.push_back(toJson(item));
        return out;
    }
    raise("cannot send a " + std::string(py::str(v.get_type().attr("__name__"))) + " to the host");
}

py::object fromJson(const json& v)
{
    switch (v.type()) {
    case json::value_t::null:
        return py::none();
    case json::value_t::boolean:
        return py::bool_(v.get<bool>());
    case json::value_t::number_integer:
        return py::int_(v.get<int64_t>());
    case json::value_t::number_unsigned:
        return py::int_(v.get<uint64_t>());
    case json::value_t::number_float:
        return py::float_(v.get<double>());
    case json::value_t::string:
        return py::str(v.get<std::string>());
    case json::value_t::binary:
        return py::bytes(reinterpret_cast<const char*>(v.get_binary().data()), v.get_binary().size());
    case json::value_t::array: {
        py::list out;
        for (const auto& item : v)
            out.append(fromJson(item));
        return out;
    }
    default: {
        py::dict out;
        for (const auto& [key, value] : v.items())
            out[py::str(key)] = fromJson(value);
        return out;
    }
    }
}

} // namespace

Image pixelsOf(const json& value, const Link& link)
{
    Image image;
    if (!value.is_object())
        return image;
    auto bytes = decoded(remote::decodeBytes(value.value("pixels", json())), link, "image");
    image.width = value.value("width", 0);
    image.height = value.value("height", 0);
    image.channels = value.value("channels", 0);
    if (bytes.size() != size_t(image.width) * size_t(image.height) * size_t(image.channels))
        raise(link.host() + ": the host sent an image whose size and pixels disagree");
    image.pixels = std::move(bytes);
    return image;
}

// ---- Link

Link::Link(const std::string& target)
{
    auto endpoint = remote::parseEndpoint(target);
    if (!endpoint)
        raise(endpoint.message());
    m_host = endpoint->host;
    Result<std::unique_ptr<remote::Connection>> opened = Error {};
    {
        py::gil_scoped_release release; // ssh, and the engine's start on the host, take seconds
        opened = remote::Connection::open(*endpoint);
    }
    if (!opened)
        raise(opened.message());
    m_connection = std::move(*opened);
    m_hello = m_connection->hello();
}

Link::~Link() { close(); }

std::string Link::prefixed(const std::string& message) const
{
    // The client's own messages name the host already ("HOST: the engine is unreachable ..."), the server's do not.
    return message.find(m_host + ": ") != std::string::npos ? message : m_host + ": " + message;
}

Result<json> Link::tryCall(const std::string& method, json params)
{
    std::vector<std::pair<std::string, json>> releases;
    {
        std::lock_guard<std::mutex> lock(m_releasesMutex);
        releases.swap(m_releases);
    }
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(m_mutex);
    if (!m_connection)
        return Error { m_host + ": the link is closed (attnscope.connect again)" };
    for (auto& [m, p] : releases)
        (void)m_connection->call(m, std::move(p)); // a release the host cannot do (already gone) changes nothing
    auto result = m_connection->call(method, std::move(params));
    if (!result)
        return Error { prefixed(result.message()) };
    return result;
}

json Link::call(const std::string& method, json params)
{
    auto result = tryCall(method, std::move(params));
    if (!result)
        raise(result.message());
    return std::move(*result);
}

json Link::sendFile(const std::string& path)
{
    Result<json> sent = Error {};
    {
        py::gil_scoped_release release;
        std::lock_guard<std::mutex> lock(m_mutex);
        if (!m_connection)
            sent = Error { m_host + ": the link is closed (attnscope.connect again)" };
        else
            sent = m_connection->sendFile(path);
    }
    if (!sent)
        raise(Error { prefixed(sent.message()) }, path);
    return std::move(*sent);
}

json Link::sendPixels(const py::array& pixels)
{
    static std::atomic<uint64_t> counter { 0 };
    const Image image = imageFrom(pixels);
    // A name never used before: sha256FileCached remembers a file by its path, size and time.
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    const fs::path file = fs::temp_directory_path()
        / ("attnscope-pixels-" + std::to_string(::getpid()) + "-" + std::to_string(now) + "-"
            + std::to_string(counter++) + ".png");
    if (auto written = writeImage(file.string(), image); !written)
        raise(written.error());
    struct Remove {
        fs::path path;
        ~Remove()
        {
            std::error_code ec;
            fs::remove(path, ec);
        }
    } remove { file };
    return sendFile(file.string());
}

void Link::releaseLater(const char* method, const char* key, int64_t id)
{
    std::lock_guard<std::mutex> lock(m_releasesMutex);
    m_releases.push_back({ method, json { { key, id } } });
}

void Link::close()
{
    std::unique_ptr<remote::Connection> connection;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        connection = std::move(m_connection);
    }
    connection.reset(); // asks the server to shut down, and reaps it
}

bool Link::alive()
{
    py::gil_scoped_release release; // a request in flight holds the link: other threads go on meanwhile
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_connection && m_connection->running();
}

py::dict Link::statistics()
{
    int64_t requests = 0, sent = 0, received = 0;
    double roundTrip = 0;
    {
        py::gil_scoped_release release;
        std::lock_guard<std::mutex> lock(m_mutex);
        if (m_connection) {
            requests = m_connection->requestsSent();
            sent = m_connection->bytesSent();
            received = m_connection->bytesReceived();
            roundTrip = m_connection->lastRoundTripMs();
        }
    }
    py::dict d;
    d["requests"] = requests;
    d["bytes_sent"] = sent;
    d["bytes_received"] = received;
    d["round_trip_ms"] = roundTrip;
    return d;
}

RemoteModel::~RemoteModel()
{
    if (link)
        link->releaseLater("release_model", "model", id);
}

namespace {

json imageParam(const py::object& image) { return toJson(image); }

std::shared_ptr<RemoteModel> loadOn(const std::shared_ptr<Link>& link, const py::object& path,
    const py::object& description, int height, int width, const std::string& given, const std::string& givenDescription)
{
    json params = { { "path", toJson(path) } };
    if (!description.is_none())
        params["description"] = toJson(description);
    if (height > 0 && width > 0)
        params["input_size"] = { height, width };
    const json answer = link->call("load_model", params);
    auto info = modelInfoFromJson(answer.value("info", json::object()).dump());
    if (!info)
        raise(link->host() + ": " + given + ": the host's description of the model: " + info.message());
    auto model = std::make_shared<RemoteModel>();
    model->link = link;
    model->id = answer.value("model", int64_t(0));
    model->info = std::move(*info);
    model->info.path = given; // what the user gave, not the host's cache of a file sent
    model->path = given;
    model->description = givenDescription;
    return model;
}

void bindRemoteModel(py::module_& m)
{
    py::class_<RemoteModel, std::shared_ptr<RemoteModel>>(m, "RemoteModel")
        .def_readonly("id", &RemoteModel::id)
        .def_readonly("path", &RemoteModel::path)
        .def_readonly("description", &RemoteModel::description)
        .def_property_readonly("config", [](const RemoteModel& r) { return configDict(r.info); })
        .def_property_readonly("info", [](const RemoteModel& r) { return infoDict(r.info); })
        .def_property_readonly("labels", [](const RemoteModel& r) { return r.info.labels; })
        .def_property_readonly("device", [](const RemoteModel& r) { return r.info.device; })
        .def(
            "forward",
            [](const std::shared_ptr<RemoteModel>& r, const py::object& image, const py::object& input, bool attention,
                bool attnBranch, bool residual, bool blocks, const std::vector<int>& layers,
                std::optional<double> neutreno, std::optional<double> boost, const std::string& precision,
                const py::object& ablate, const std::string& ablation) {
                json params = { { "model", r->id }, { "precision", precision }, { "ablation", ablation } };
                if (!image.is_none())
                    params["image"] = imageParam(image);
                else
                    params["input"] = remote::encodeTensor(tensorFrom(input.cast<py::array>()));
                if (neutreno)
                    params["neutreno_lambda"] = *neutreno;
                if (boost)
                    params["boost_t"] = *boost;
                if (!ablate.is_none())
                    params["ablate"] = toJson(ablate);
                RecordSpec recorded;
                recorded.attention = attention;
                recorded.attnBranch = attnBranch;
                recorded.residual = residual;
                recorded.blocks = blocks;
                recorded.layers = layers;
                const json answer = r->link->call("forward", params);
                return traceFromAnswer(r, std::move(params), answer, recorded);
            },
            py::arg("image"), py::arg("input"), py::arg("attention"), py::arg("attn_branch"), py::arg("residual"),
            py::arg("blocks"), py::arg("layers"), py::arg("neutreno"), py::arg("boost"), py::arg("precision"),
            py::arg("ablate"), py::arg("ablation"))
        .def(
            "prepare",
            [](const RemoteModel& r, const py::object& image, const std::string& perturbation, uint64_t seed) {
                json params = { { "model", r.id }, { "image", imageParam(image) } };
                if (!perturbation.empty())
                    params.update({ { "perturbation", perturbation }, { "seed", seed } });
                const json answer = r.link->call("prepare", params);
                const Tensor input = decoded(remote::decodeTensor(answer.value("input", json())), *r.link, "input");
                auto shown = std::make_shared<Image>(pixelsOf(answer.value("shown", json()), *r.link));
                return py::make_tuple(view(input), view(*shown, shown), answer.value("preparation", ""));
            },
            py::arg("image"), py::arg("perturbation") = "", py::arg("seed") = 0)
        .def(
            "relevance",
            [](const RemoteModel& r, const py::object& image, int targetClass, int gradCamLayer) {
                const json answer = r.link->call("explain",
                    { { "model", r.id }, { "image", imageParam(image) }, { "target_class", targetClass },
                        { "gradcam_layer", gradCamLayer } });
                return relevanceDict(decoded(remote::decodeRelevance(answer), *r.link, "relevance"));
            },
            py::arg("image"), py::arg("target_class"), py::arg("gradcam_layer"))
        .def(
            "head_ablation",
            [](const RemoteModel& r, const py::object& image) {
                // The host's `ablate` is one head's (the window's): every head is one request each.
                HeadAblation all;
                const json handle = imageParam(image);
                for (int l = 1; l <= r.info.config.depth; ++l)
                    for (int h = 0; h < r.info.config.numHeads; ++h) {
                        const json answer = r.link->call(
                            "ablate", { { "model", r.id }, { "image", handle }, { "layer", l }, { "head", h } });
                        HeadAblation one = decoded(remote::decodeHeadAblation(answer), *r.link, "head ablation");
                        all.mode = one.mode;
                        all.predicted = one.predicted;
                        all.probability = one.probability;
                        all.heads.insert(all.heads.end(), one.heads.begin(), one.heads.end());
                    }
                return headAblationDict(all);
            },
            py::arg("image"))
        .def(
            "query_key_map",
            [](const RemoteModel& r, const py::list& images, int layer, int head, const std::string& method) {
                const json answer = r.link->call("query_key_map",
                    { { "model", r.id }, { "images", toJson(images) }, { "layer", layer }, { "head", head },
                        { "method", method } });
                if (answer.value("used", json::array()).size() != images.size())
                    raise(r.link->host() + ": the query-key map: the host could read "
                        + std::to_string(answer.value("used", json::array()).size()) + " of the "
                        + std::to_string(images.size()) + " images");
                return queryKeyMapDict(
                    decoded(remote::decodeQueryKeyMap(answer.value("map", json())), *r.link, "query-key map"));
            },
            py::arg("images"), py::arg("layer"), py::arg("head"), py::arg("method"))
        .def(
            "decompose_logits",
            [](const RemoteModel& r, const py::object& image) {
                // `trace`'s analyses with the decomposition alone, the trace not kept.
                AnalysisOptions only;
                only.similarity = only.attention = only.centres = only.snr = only.norms = only.ablation = false;
                only.decomposition = true;
                const json answer = r.link->call("trace",
                    { { "model", r.id }, { "image", imageParam(image) }, { "keep", false },
                        { "analyse", remote::encodeAnalysisOptions(only) } });
                const json& analysis = answer.value("analysis", json::object());
                if (analysis.contains("decomposition_note"))
                    raise(r.link->host() + ": " + r.path + ": " + analysis["decomposition_note"].get<std::string>());
                return decompositionDict(decoded(remote::decodeDecomposition(analysis.value("decomposition", json())),
                    *r.link, "logit decomposition"));
            },
            py::arg("image"))
        .def("top_classes", [](const RemoteModel&, const py::array& logits, int k) {
            std::vector<py::tuple> out;
            for (const auto& c : topClasses(tensorFrom(logits), k))
                out.push_back(py::make_tuple(c.index, c.probability));
            return out;
        });
}

} // namespace

void bindRemote(py::module_& m)
{
    py::class_<Link, std::shared_ptr<Link>>(m, "RemoteLink")
        .def(py::init<const std::string&>(), py::arg("target"))
        .def_property_readonly("host", &Link::host)
        .def_property_readonly("hello", [](const Link& l) { return fromJson(l.hello()); })
        .def_property_readonly("alive", &Link::alive)
        .def("statistics", &Link::statistics)
        .def("close",
            [](Link& l) {
                py::gil_scoped_release release;
                l.close();
            })
        .def(
            "call",
            [](Link& l, const std::string& method, const py::object& params) {
                return fromJson(l.call(method, toJson(params)));
            },
            py::arg("method"), py::arg("params") = py::dict())
        .def(
            "send_file", [](Link& l, const std::string& path) { return fromJson(l.sendFile(path)); }, py::arg("path"))
        .def(
            "send_pixels", [](Link& l, const py::array& pixels) { return fromJson(l.sendPixels(pixels)); },
            py::arg("pixels"))
        .def(
            "load",
            [](const std::shared_ptr<Link>& l, const py::object& path, const py::object& description, int height,
                int width, const std::string& given, const std::string& givenDescription) {
                return loadOn(l, path, description, height, width, given, givenDescription);
            },
            py::arg("path"), py::arg("description"), py::arg("height"), py::arg("width"), py::arg("given"),
            py::arg("given_description"));
    bindRemoteModel(m);
    bindRemoteTrace(m);
}

} // namespace attnscope::python
