#pragma once

// The remote engine's wire format (docs/remote.md): JSON-RPC 2.0 messages, each encoded as MessagePack and framed as
// the Language Server Protocol frames its messages, with a header of "Name: value" lines ending in an empty line, then
// Content-Length bytes of body. Both ends are nlohmann-json (its MessagePack codec); tensors travel as MessagePack
// binary of raw little-endian bytes with their dtype and shape, never as text.
//
// What a hostile or garbled stream can do is bounded by Limits: a header is at most maxHeaderBytes, a body at most
// maxFrameBytes and kept only as its bytes arrive (a frame that claims 60 MiB and sends 10 bytes holds 10), a message
// nests at most maxDepth arrays or maps; anything else is an Error naming what was wrong, and the stream is not read
// further (it cannot be resynchronised).

#include <attnscope/Result.h>
#include <attnscope/Tensor.h>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <climits>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace attnscope::remote {

// The protocol's version: both ends say theirs in `hello`, and a server refuses a client of another version.
constexpr int kProtocolVersion = 1;

struct Limits {
    size_t maxHeaderBytes = 4096;
    size_t maxFrameBytes = size_t(64) << 20; // a file crosses in chunks of at most kChunkBytes
    int maxDepth = 32;
};
constexpr size_t kChunkBytes = size_t(4) << 20;

// Cuts a byte stream into frame bodies.
class FrameReader {
public:
    explicit FrameReader(Limits limits = {});
    // The bytes as read from the stream, in order. An error leaves the reader failed: every later feed returns it.
    Status feed(const char* data, size_t size);
    // The body of the next complete frame, oldest first.
    std::optional<std::string> next();
    // Part of a frame has arrived and not the rest: at the end of the stream, a truncated frame.
    bool midFrame() const { return !m_buffer.empty() || m_bodyLength.has_value(); }

private:
    Status parseHeader(const std::string& header);

    Limits m_limits;
    std::string m_buffer;                 // header bytes, then body bytes, as they came
    std::optional<size_t> m_bodyLength;   // set once the header is read
    std::deque<std::string> m_ready;      // complete bodies not yet taken
    std::optional<Error> m_failed;
};

// A frame: its header (Content-Length, Content-Type: application/msgpack) and the body.
std::string frame(const std::string& body);

// A JSON-RPC 2.0 message as MessagePack, and back. decodeMessage refuses what is not one object of "jsonrpc": "2.0"
// with a request's "method" or a response's "result" or "error", and what nests deeper than limits.maxDepth.
std::string encodeMessage(const nlohmann::json& message);
Result<nlohmann::json> decodeMessage(const std::string& body, const Limits& limits = {});

nlohmann::json request(int64_t id, const std::string& method, nlohmann::json params);
nlohmann::json response(const nlohmann::json& id, nlohmann::json result);
// JSON-RPC's codes: -32700 parse error, -32600 invalid request, -32601 no such method, -32602 invalid params;
// attnscope's own from -32000 down (docs/remote.md).
nlohmann::json errorResponse(const nlohmann::json& id, int code, const std::string& message);
enum ErrorCode { ParseError = -32700, InvalidRequest = -32600, NoSuchMethod = -32601, InvalidParams = -32602, Failed = -32000,
                 WrongVersion = -32001, Cancelled = -32002 };

// A float32 tensor: {"dtype": "float32", "shape": [...], "data": <binary, little-endian>}.
nlohmann::json encodeTensor(const Tensor& tensor);
// Checks the dtype, that the shape is of at most 8 non-negative sizes, and that the data holds exactly their product.
Result<Tensor> decodeTensor(const nlohmann::json& value);
// Bytes as they are (an image's pixels, a file's chunk): MessagePack binary.
nlohmann::json encodeBytes(const void* data, size_t size);
Result<std::vector<uint8_t>> decodeBytes(const nlohmann::json& value);
// A whole number >= 0, however it was encoded (MessagePack gives positive ones as unsigned, a json built in C++ as signed).
inline bool isCount(const nlohmann::json& v) { return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0); }
// A count that fits where it goes (an int, an int64_t): one past it would wrap when read, and is refused instead.
inline bool isCountUpTo(const nlohmann::json& v, uint64_t most) { return isCount(v) && v.get<uint64_t>() <= most; }

} // namespace attnscope::remote
