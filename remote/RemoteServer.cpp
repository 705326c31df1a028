#include "RemoteServer.h"

#include <attnscope/Analyses.h>
#include <attnscope/CpuKernels.h>
#include <attnscope/Image.h>
#include <attnscope/ModelInfoJson.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace attnscope::remote {

using json = nlohmann::json;

namespace {

// What a handler throws for a request it cannot answer: the error response's code and one line.
struct RequestError {
    int code;
    std::string message;
};

const json& field(const json& params, const char* key)
{
    static const json absent;
    if (!params.is_object() || !params.contains(key))
        return absent;
    return params[key];
}

int64_t integer(const json& params, const char* key)
{
    const json& v = field(params, key);
    if (!v.is_number_integer())
        throw RequestError { InvalidParams, std::string("\"") + key + "\" is " + (v.is_null() ? "missing" : v.dump().substr(0, 40)) + ", not a whole number" };
    return v.get<int64_t>();
}

std::string text(const json& params, const char* key, bool required = true)
{
    const json& v = field(params, key);
    if (v.is_null() && !required)
        return {};
    if (!v.is_string())
        throw RequestError { InvalidParams, std::string("\"") + key + "\" is " + (v.is_null() ? "missing" : v.dump().substr(0, 40)) + ", not a string" };
    return v.get<std::string>();
}

std::optional<double> number(const json& params, const char* key)
{
    const json& v = field(params, key);
    if (v.is_null())
        return std::nullopt;
    if (!v.is_number())
        throw RequestError { InvalidParams, std::string("\"") + key + "\" is " + v.dump().substr(0, 40) + ", not a number" };
    return v.get<double>();
}

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

} // namespace

struct Server::Traced {
    std::shared_ptr<const Model> model;
    std::string image;
    Trace trace;
};

Server::Server(ServerOptions options)
    : m_options(std::move(options))
{
    m_methods = { { "hello", &Server::hello },
                  { "load_model", &Server::loadModel },
                  { "release_model", &Server::releaseModel },
                  { "trace", &Server::trace },
                  { "attention_rows", &Server::attentionRows },
                  { "release_trace", &Server::releaseTrace },
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
    json out;
    if (handler == m_methods.end()) {
        out = errorResponse(id, NoSuchMethod, "no method \"" + method.substr(0, 60) + "\" (protocol version " + std::to_string(kProtocolVersion) + ")");
    } else {
        try {
            out = response(id, (this->*handler->second)(message.contains("params") ? message["params"] : json::object()));
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
    return { { "protocol", kProtocolVersion },
             { "server", std::string("attnscope-cli ") + version() },
             { "libtorch", libtorchVersion() },
             { "device", m_options.device },
             { "cpu_threads", std::max(threads.intraOp, threads.interOp) },
             { "limits",
               { { "max_frame_bytes", m_options.limits.maxFrameBytes }, { "max_depth", m_options.limits.maxDepth }, { "max_traces", m_options.maxTraces } } } };
}

json Server::loadModel(const json& params)
{
    LoadOptions options;
    options.device = m_options.device;
    options.descriptionPath = text(params, "description", false);
    if (const json& size = field(params, "input_size"); !size.is_null()) {
        if (!size.is_array() || size.size() != 2 || !size[0].is_number_unsigned() || !size[1].is_number_unsigned())
            throw RequestError { InvalidParams, "\"input_size\" is not [height, width]" };
        options.inputHeight = size[0].get<int>();
        options.inputWidth = size[1].get<int>();
    }
    auto model = Model::load(text(params, "path"), options);
    if (!model)
        throw RequestError { Failed, model.message() };
    const int64_t id = m_nextId++;
    m_models[id] = *model;
    return { { "model", id }, { "info", json::parse(modelInfoJson((*model)->info())) } };
}

const std::shared_ptr<const Model>& Server::modelOf(const json& params)
{
    const int64_t id = integer(params, "model");
    const auto found = m_models.find(id);
    if (found == m_models.end())
        throw RequestError { InvalidParams, "no model " + std::to_string(id) + " (released, or never loaded)" };
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
    m_models.erase(found);
    return json::object();
}

json Server::trace(const json& params)
{
    const std::shared_ptr<const Model> model = modelOf(params);
    const std::string path = text(params, "image");
    auto image = decodeImage(path);
    if (!image)
        throw RequestError { Failed, image.message() };
    const std::string preparation = model->describePreparation(image->width, image->height, image->channels);
    auto prepared = model->prepare(*image);
    if (!prepared)
        throw RequestError { Failed, path + ": " + prepared.message() };
    RunOptions run;
    run.record = RecordSpec::everything();
    run.neutrenoLambda = number(params, "neutreno_lambda");
    run.boostT = number(params, "boost_t");
    auto trace = model->run(prepared->input, run);
    if (!trace)
        throw RequestError { Failed, path + ": " + trace.message() };
    auto traced = std::make_shared<Traced>();
    traced->model = model;
    traced->image = path;
    traced->trace = std::move(*trace);
    const Trace& t = traced->trace;
    const int64_t id = m_nextId++;
    m_traces.emplace_front(id, traced);
    while (int(m_traces.size()) > std::max(1, m_options.maxTraces))
        m_traces.pop_back();
    const Image& shown = prepared->shown;
    return { { "trace", id },
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
}

std::shared_ptr<const Server::Traced> Server::traceOf(const json& params)
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
    // Row `query` of every head of every layer: depth x heads x N floats (ViT-B/16 at 224: 12 x 12 x 197, 113 KiB).
    std::vector<float> rows;
    rows.reserve(size_t(t.depth) * size_t(t.numHeads) * size_t(N));
    for (int l = 1; l <= t.depth; ++l) {
        const Tensor& a = t.attention.at(size_t(l)); // [H, N, N]
        if (a.dim() != 3 || a.size(0) != t.numHeads || a.size(1) != N || a.size(2) != N)
            throw RequestError { Failed, "layer " + std::to_string(l) + "'s attention was not recorded as [heads, tokens, tokens]" };
        for (int64_t h = 0; h < t.numHeads; ++h) {
            const float* row = a.data() + (h * N + query) * N;
            rows.insert(rows.end(), row, row + N);
        }
    }
    json out = { { "rows", encodeTensor(Tensor::fromVector({ t.depth, t.numHeads, N }, std::move(rows))) } };
    if (t.poolAttention.numel() > 0)
        out["pool"] = encodeTensor(t.poolAttention); // [heads, patches]: the attention-pool head's one query
    return out;
}

json Server::releaseTrace(const json& params)
{
    const int64_t id = integer(params, "trace");
    m_traces.remove_if([&](const auto& t) { return t.first == id; });
    return json::object();
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
