#pragma once

// attnscope.connect's engine side (docs/python.md, "On a remote engine"): a link to `attnscope-cli serve --stdio` on a
// host (remote/RemoteClient.h), and the models and traces held there. The Python classes of attnscope/_remote.py wrap
// these; what the host sends back is turned into the local module's dicts and arrays by the same code
// (Bindings.h), so that a notebook gets the same keys and numbers from either.

#include "Bindings.h"

#include <RemoteClient.h>

#include <nlohmann/json.hpp>

#include <mutex>
#include <utility>

namespace attnscope::python {

using json = nlohmann::json;

// One link, shared by everything made through it. Calls are one at a time (the protocol answers in order); the GIL
// is released while one waits for the host.
class Link {
public:
    explicit Link(const std::string& target);
    ~Link();

    // The result of `method`, or an EngineError of one line that names the host.
    json call(const std::string& method, json params);
    Result<json> tryCall(const std::string& method, json params);
    // A file of this machine on the host, sent once (by sha256): what a request takes in place of a host path.
    json sendFile(const std::string& path);
    // Pixels sent as a PNG (lossless: the host decodes the same pixels), for an image that is no file here.
    json sendPixels(const py::array& pixels);
    // Asked of the host with the next request: destructors (run by Python's garbage collector) wait on no link.
    void releaseLater(const char* method, const char* key, int64_t id);
    void close();
    bool alive();
    const std::string& host() const { return m_host; }
    const json& hello() const { return m_hello; }
    py::dict statistics();

private:
    std::string prefixed(const std::string& message) const;

    std::mutex m_mutex; // the connection, one request at a time
    std::unique_ptr<remote::Connection> m_connection;
    std::mutex m_releasesMutex;
    std::vector<std::pair<std::string, json>> m_releases;
    std::string m_host;
    json m_hello;
};

// A model loaded on the host: its id there and its description, as load_model gave it.
struct RemoteModel {
    std::shared_ptr<Link> link;
    int64_t id = 0;
    ModelInfo info;
    std::string path, description;
    ~RemoteModel();
};

// The engine's Result from what the host sent, or an EngineError naming the host.
template <typename T> T decoded(Result<T>&& r, const Link& link, const char* what)
{
    if (!r)
        raise(link.host() + ": the host's " + what + ": " + r.message());
    return std::move(*r);
}

// An image as the host sends it ({"width", "height", "channels", "pixels"}); empty when it sent none.
Image pixelsOf(const json& value, const Link& link);

// The attnscope.RemoteTrace a `forward` answer describes (RemoteTraceBindings.cpp); `made`, the forward's params, makes
// it again when the host has dropped it from the traces it keeps.
py::object traceFromAnswer(
    const std::shared_ptr<RemoteModel>& model, json made, const json& answer, const RecordSpec& recorded);
void bindRemoteTrace(py::module_& m);

} // namespace attnscope::python
