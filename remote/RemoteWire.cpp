#include "RemoteWire.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace attnscope::remote {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "tensors cross as the host's bytes, which the protocol says are little-endian");

using json = nlohmann::json;

namespace {

constexpr const char* kContentType = "application/msgpack";

std::string trimmed(const std::string& s)
{
    const auto first = s.find_first_not_of(" \t");
    const auto last = s.find_last_not_of(" \t");
    return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
}

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

// A header's text for a message: printable ASCII as it is, anything else as \xNN, at most 60 characters.
std::string shown(const std::string& s)
{
    std::string out;
    for (unsigned char c : s.substr(0, 60)) {
        if (c >= 0x20 && c < 0x7f) {
            out += char(c);
        } else {
            static const char digits[] = "0123456789abcdef";
            out += "\\x";
            out += digits[c >> 4];
            out += digits[c & 15];
        }
    }
    return s.size() > 60 ? out + "..." : out;
}

// nlohmann's DOM builder, stopped at a depth: MessagePack nests one level per byte, and the reader recurses once per
// level, so a body of a million 0x91 bytes would otherwise overflow the stack.
class DepthLimited {
public:
    DepthLimited(json& result, int maxDepth)
        : m_dom(result, false)
        , m_maxDepth(maxDepth)
    {
    }
    bool null() { return m_dom.null(); }
    bool boolean(bool v) { return m_dom.boolean(v); }
    bool number_integer(json::number_integer_t v) { return m_dom.number_integer(v); }
    bool number_unsigned(json::number_unsigned_t v) { return m_dom.number_unsigned(v); }
    bool number_float(json::number_float_t v, const json::string_t& s) { return m_dom.number_float(v, s); }
    bool string(json::string_t& v) { return m_dom.string(v); }
    bool binary(json::binary_t& v) { return m_dom.binary(v); }
    bool start_object(std::size_t n) { return deeper() && m_dom.start_object(n); }
    bool key(json::string_t& v) { return m_dom.key(v); }
    bool end_object()
    {
        --m_depth;
        return m_dom.end_object();
    }
    bool start_array(std::size_t n) { return deeper() && m_dom.start_array(n); }
    bool end_array()
    {
        --m_depth;
        return m_dom.end_array();
    }
    bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e)
    {
        if (m_error.empty())
            m_error = "byte " + std::to_string(position) + ": " + e.what();
        return false;
    }
    const std::string& error() const { return m_error; }

private:
    bool deeper()
    {
        if (++m_depth <= m_maxDepth)
            return true;
        if (m_error.empty())
            m_error = "nested deeper than " + std::to_string(m_maxDepth) + " levels";
        return false;
    }

    nlohmann::detail::json_sax_dom_parser<json> m_dom;
    int m_maxDepth;
    int m_depth = 0;
    std::string m_error;
};

} // namespace

FrameReader::FrameReader(Limits limits)
    : m_limits(limits)
{
}

Status FrameReader::parseHeader(const std::string& header)
{
    std::optional<size_t> length;
    size_t start = 0;
    while (start < header.size()) {
        const size_t end = std::min(header.find("\r\n", start), header.size()); // the last line has no \r\n of its own
        const std::string line = header.substr(start, end - start);
        start = end + 2;
        const size_t colon = line.find(':');
        if (colon == std::string::npos || colon == 0)
            return Error { "frame header line \"" + shown(line) + "\" is not \"Name: value\"" };
        const std::string name = lower(trimmed(line.substr(0, colon)));
        const std::string value = trimmed(line.substr(colon + 1));
        if (name == "content-length") {
            if (value.empty() || value.size() > 19 || !std::all_of(value.begin(), value.end(), [](unsigned char c) { return std::isdigit(c); }))
                return Error { "Content-Length \"" + shown(value) + "\" is not a length in bytes" };
            const unsigned long long n = std::stoull(value);
            if (n > m_limits.maxFrameBytes)
                return Error { "a frame of " + value + " bytes is over the limit of " + std::to_string(m_limits.maxFrameBytes) };
            length = size_t(n);
        } else if (name == "content-type") {
            if (lower(value).rfind(kContentType, 0) != 0)
                return Error { "Content-Type \"" + shown(value) + "\" is not " + kContentType };
        } // other headers: ignored, as LSP does
    }
    if (!length)
        return Error { "a frame header without Content-Length" };
    m_bodyLength = length;
    return Done {};
}

Status FrameReader::feed(const char* data, size_t size)
{
    if (m_failed)
        return *m_failed;
    size_t used = 0;
    while (used < size) {
        if (!m_bodyLength) {
            // The header, up to its empty line; never longer than the limit, however the bytes come.
            const size_t before = m_buffer.size();
            const size_t room = m_limits.maxHeaderBytes + 4 - std::min(before, m_limits.maxHeaderBytes + 4);
            const size_t take = std::min(size - used, room);
            m_buffer.append(data + used, take);
            const size_t end = m_buffer.find("\r\n\r\n", before >= 3 ? before - 3 : 0);
            if (end == std::string::npos) {
                used += take;
                if (m_buffer.size() > m_limits.maxHeaderBytes) {
                    m_failed = Error { "a frame header longer than " + std::to_string(m_limits.maxHeaderBytes) + " bytes (or no empty line ending it)" };
                    return *m_failed;
                }
                continue;
            }
            if (end > m_limits.maxHeaderBytes) {
                m_failed = Error { "a frame header longer than " + std::to_string(m_limits.maxHeaderBytes) + " bytes" };
                return *m_failed;
            }
            used += end + 4 - before; // the rest of what was appended is the body's
            auto parsed = parseHeader(m_buffer.substr(0, end));
            m_buffer.clear();
            if (!parsed) {
                m_failed = parsed.error();
                return *m_failed;
            }
            continue;
        }
        const size_t take = std::min(size - used, *m_bodyLength - m_buffer.size());
        m_buffer.append(data + used, take); // grows with what arrived, never to the length claimed
        used += take;
        if (m_buffer.size() == *m_bodyLength) {
            m_ready.push_back(std::move(m_buffer));
            m_buffer.clear();
            m_bodyLength.reset();
        }
    }
    // A zero-length body is complete as soon as its header is.
    if (m_bodyLength && *m_bodyLength == 0) {
        m_ready.emplace_back();
        m_bodyLength.reset();
    }
    return Done {};
}

std::optional<std::string> FrameReader::next()
{
    if (m_ready.empty())
        return std::nullopt;
    std::string body = std::move(m_ready.front());
    m_ready.pop_front();
    return body;
}

std::string frame(const std::string& body)
{
    return "Content-Length: " + std::to_string(body.size()) + "\r\nContent-Type: " + kContentType + "\r\n\r\n" + body;
}

std::string encodeMessage(const json& message)
{
    std::string out;
    json::to_msgpack(message, nlohmann::detail::output_adapter<char>(out));
    return out;
}

Result<json> decodeMessage(const std::string& body, const Limits& limits)
{
    json message;
    DepthLimited sax(message, limits.maxDepth);
    bool ok = false;
    try {
        ok = json::sax_parse(body.begin(), body.end(), &sax, json::input_format_t::msgpack, true);
    } catch (const std::exception& e) {
        return Error { std::string("not MessagePack: ") + e.what() };
    }
    if (!ok)
        return Error { "not MessagePack: " + (sax.error().empty() ? std::string("malformed") : sax.error()) };
    if (!message.is_object())
        return Error { "a message that is not an object" };
    const auto version = message.find("jsonrpc");
    if (version == message.end() || *version != "2.0")
        return Error { "a message without \"jsonrpc\": \"2.0\"" };
    const bool isRequest = message.contains("method");
    if (isRequest && !message["method"].is_string())
        return Error { "a request whose \"method\" is not a string" };
    if (!isRequest && !message.contains("result") && !message.contains("error"))
        return Error { "a message that is neither a request nor a response" };
    if (const auto id = message.find("id"); id != message.end() && !id->is_number_integer() && !id->is_string() && !id->is_null())
        return Error { "a message whose \"id\" is neither a number nor a string" };
    return message;
}

json request(int64_t id, const std::string& method, json params)
{
    return { { "jsonrpc", "2.0" }, { "id", id }, { "method", method }, { "params", std::move(params) } };
}

json response(const json& id, json result) { return { { "jsonrpc", "2.0" }, { "id", id }, { "result", std::move(result) } }; }

json errorResponse(const json& id, int code, const std::string& message)
{
    return { { "jsonrpc", "2.0" }, { "id", id }, { "error", { { "code", code }, { "message", message } } } };
}

json encodeTensor(const Tensor& tensor)
{
    json shape = json::array();
    for (int64_t s : tensor.shape())
        shape.push_back(s);
    const auto* bytes = reinterpret_cast<const uint8_t*>(tensor.data());
    return { { "dtype", "float32" }, { "shape", shape },
             { "data", json::binary_t(std::vector<uint8_t>(bytes, bytes + size_t(tensor.numel()) * sizeof(float))) } };
}

Result<Tensor> decodeTensor(const json& value)
{
    if (!value.is_object() || value.value("dtype", json()) != "float32")
        return Error { "a tensor that is not {\"dtype\": \"float32\", ...}" };
    const json& shape = value.contains("shape") ? value["shape"] : json();
    if (!shape.is_array() || shape.size() > 8)
        return Error { "a tensor whose shape is not a list of at most 8 sizes" };
    std::vector<int64_t> sizes;
    uint64_t count = 1;
    for (const json& s : shape) {
        if (!s.is_number_integer() || s.get<int64_t>() < 0 || s.get<uint64_t>() > (uint64_t(1) << 40))
            return Error { "a tensor whose shape holds " + s.dump().substr(0, 40) + ", not a size" };
        sizes.push_back(int64_t(s.get<uint64_t>()));
        count *= s.get<uint64_t>();
        if (count > (uint64_t(1) << 40))
            return Error { "a tensor of more than 2^40 elements" };
    }
    const json& data = value.contains("data") ? value["data"] : json();
    if (!data.is_binary())
        return Error { "a tensor whose data is not MessagePack binary" };
    const auto& bytes = data.get_binary();
    if (bytes.size() != count * sizeof(float))
        return Error { "a tensor of shape " + shape.dump() + " with " + std::to_string(bytes.size()) + " bytes of data, not "
                       + std::to_string(count * sizeof(float)) };
    return Tensor::fromData(std::move(sizes), reinterpret_cast<const float*>(bytes.data()));
}

json encodeBytes(const void* data, size_t size)
{
    const auto* p = static_cast<const uint8_t*>(data);
    return json::binary_t(std::vector<uint8_t>(p, p + size));
}

Result<std::vector<uint8_t>> decodeBytes(const json& value)
{
    if (!value.is_binary())
        return Error { "bytes that are not MessagePack binary" };
    return std::vector<uint8_t>(value.get_binary().begin(), value.get_binary().end());
}

} // namespace attnscope::remote
