// libFuzzer harness of the remote engine's wire decoder (remote/RemoteWire.h, docs/remote.md): what a garbled or
// hostile link can hand the window or the server.
//
// Byte 0 picks how the stream arrives: in pieces of 1 + byte0 % 64 bytes. The rest is the stream: frames are cut
// from it (FrameReader) and each body decoded as a message (decodeMessage), and the whole rest is also decoded as one
// body. Properties: no throw, no crash; a frame's body is never over the limit; a decoded message is a JSON-RPC object
// that encodes and decodes back to itself; a tensor inside one decodes only when its bytes match its shape. Memory is
// bounded by the input (ASan's allocation limits, as `make fuzz` runs it): a claimed length is never allocated.
//
// Seeds: tests/fuzz/corpus/remote_frame. Dictionary: remote_frame.dict.
#include "FuzzSupport.h"

#include <RemoteWire.h>

#include <string>

namespace {

using attnscope::fuzz::fail;
using namespace attnscope::remote;

void checkMessage(const std::string& body, const Limits& limits)
{
    auto message = decodeMessage(body, limits);
    if (!message)
        return;
    if (!message->is_object() || (*message)["jsonrpc"] != "2.0")
        fail("decodeMessage returned something that is not a JSON-RPC object");
    auto again = decodeMessage(encodeMessage(*message), limits);
    if (!again || *again != *message)
        fail("a decoded message does not encode and decode back to itself");
    for (const char* key : { "params", "result" })
        if (message->contains(key) && (*message)[key].is_object())
            for (const auto& [name, value] : (*message)[key].items())
                if (auto tensor = decodeTensor(value); tensor && value["data"].get_binary().size() != size_t(tensor->numel()) * 4)
                    fail("a tensor decoded with data of another size than its shape's");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size == 0)
        return 0;
    Limits limits;
    limits.maxFrameBytes = size_t(1) << 20;
    const size_t piece = 1 + data[0] % 64;
    const char* stream = reinterpret_cast<const char*>(data + 1);
    const size_t length = size - 1;
    FrameReader reader(limits);
    for (size_t at = 0; at < length; at += piece) {
        if (!reader.feed(stream + at, std::min(piece, length - at)))
            break;
        while (auto body = reader.next()) {
            if (body->size() > limits.maxFrameBytes)
                fail("a frame body over the limit");
            checkMessage(*body, limits);
        }
    }
    checkMessage(std::string(stream, length), limits);
    return 0;
}
