// The remote engine's wire format (docs/remote.md, issue 45 item 4 and 5): frames cut from a stream however its bytes
// arrive, messages and tensors round-trip exactly, and a garbled or hostile stream is refused with a message, never a
// crash, a hang or an allocation of the size it claims.
#include <RemoteWire.h>

#include <gtest/gtest.h>

#include <random>

using namespace attnscope;
using namespace attnscope::remote;
using json = nlohmann::json;

namespace {

std::vector<std::string> cut(const std::string& stream, size_t piece, const Limits& limits = {}, std::string* error = nullptr)
{
    FrameReader reader(limits);
    std::vector<std::string> bodies;
    for (size_t at = 0; at < stream.size(); at += piece) {
        auto fed = reader.feed(stream.data() + at, std::min(piece, stream.size() - at));
        if (!fed) {
            if (error)
                *error = fed.message();
            break;
        }
        while (auto body = reader.next())
            bodies.push_back(*body);
    }
    return bodies;
}

} // namespace

TEST(RemoteWire, FramesAreCutWhereverTheBytesBreak)
{
    const std::vector<json> messages = { request(1, "hello", { { "protocol", 1 } }), response(1, { { "ok", true } }),
                                         errorResponse(json(), ParseError, "garbled"), request(2, "shutdown", json::object()) };
    std::string stream;
    for (const json& m : messages)
        stream += frame(encodeMessage(m));
    stream += "Content-Length: 0\r\n\r\n"; // an empty body is a frame too (and no message)
    for (size_t piece : { size_t(1), size_t(2), size_t(3), size_t(7), size_t(64), stream.size() }) {
        const auto bodies = cut(stream, piece);
        ASSERT_EQ(bodies.size(), messages.size() + 1) << "pieces of " << piece;
        for (size_t i = 0; i < messages.size(); ++i) {
            auto decoded = decodeMessage(bodies[i]);
            ASSERT_TRUE(decoded) << decoded.message();
            EXPECT_EQ(*decoded, messages[i]);
        }
        EXPECT_TRUE(bodies.back().empty());
        EXPECT_FALSE(decodeMessage(bodies.back()));
    }
}

TEST(RemoteWire, HeadersAreReadAsLspWritesThem)
{
    const std::string body = encodeMessage(request(7, "hello", json::object()));
    // Any case, extra headers ignored, the content type's parameters allowed.
    const std::string stream = "content-length:" + std::to_string(body.size()) + "\r\nX-Other: 1\r\nContent-Type: application/msgpack; v=1\r\n\r\n" + body;
    const auto bodies = cut(stream, 5);
    ASSERT_EQ(bodies.size(), 1u);
    EXPECT_EQ(bodies[0], body);
}

TEST(RemoteWire, TensorsCrossAsTheirBytes)
{
    std::vector<float> values(2 * 3 * 5);
    std::mt19937 random(7);
    for (float& v : values)
        v = std::uniform_real_distribution<float>(-3, 3)(random);
    values[4] = 1e-38f; // a denormal-adjacent value and a negative zero survive as bits
    values[5] = -0.0f;
    const Tensor t = Tensor::fromVector({ 2, 3, 5 }, values);
    const json encoded = encodeTensor(t);
    ASSERT_TRUE(encoded["data"].is_binary());
    EXPECT_EQ(encoded["data"].get_binary().size(), values.size() * 4);
    auto back = decodeMessage(encodeMessage(response(1, { { "t", encoded } })));
    ASSERT_TRUE(back) << back.message();
    auto decoded = decodeTensor((*back)["result"]["t"]);
    ASSERT_TRUE(decoded) << decoded.message();
    EXPECT_EQ(decoded->shape(), (std::vector<int64_t> { 2, 3, 5 }));
    EXPECT_EQ(std::memcmp(decoded->data(), values.data(), values.size() * 4), 0);
    // The body is MessagePack with the tensor as binary: about its bytes, not three to four times them as text.
    EXPECT_LT(encodeMessage(encoded).size(), values.size() * 4 + 64);
}

TEST(RemoteWire, MalformedTensorsAreSaidNotRead)
{
    const json good = encodeTensor(Tensor::fromVector({ 2, 2 }, { 1, 2, 3, 4 }));
    json wrongSize = good;
    wrongSize["shape"] = { 3, 2 };
    json wrongType = good;
    wrongType["dtype"] = "float64";
    json huge = good;
    huge["shape"] = { 1u << 30, 1u << 30, 1u << 30 };
    json textData = good;
    textData["data"] = "AAAA";
    json negative = good;
    negative["shape"] = { -1, 4 };
    for (const auto& [bad, said] : { std::pair { wrongSize, "with 16 bytes of data, not 24" }, { wrongType, "not {\"dtype\": \"float32\"" },
                                     { huge, "more than 2^40 elements" }, { textData, "not MessagePack binary" }, { negative, "not a size" } }) {
        auto decoded = decodeTensor(bad);
        ASSERT_FALSE(decoded) << bad.dump().substr(0, 80);
        EXPECT_NE(decoded.message().find(said), std::string::npos) << said << " / " << decoded.message();
    }
}

TEST(RemoteWire, HostileStreamsAreRefusedWithAMessage)
{
    struct Case {
        std::string stream;
        const char* said;
    };
    const std::vector<Case> cases = {
        { "Content-Length: 99999999999\r\n\r\n", "over the limit" },
        { "Content-Length: 18446744073709551616\r\n\r\n", "is not a length in bytes" }, // past 64 bits
        { "Content-Length: 12x\r\n\r\n", "is not a length in bytes" },
        { "Content-Length: -5\r\n\r\n", "is not a length in bytes" },
        { "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", "is not application/msgpack" },
        { "no colon here\r\n\r\n", "is not \"Name: value\"" },
        { "X-Only: 1\r\n\r\n", "without Content-Length" },
        { std::string(5000, 'A'), "header longer than 4096 bytes" },
        { "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "is not \"Name: value\"" },
    };
    for (const Case& c : cases) {
        for (size_t piece : { size_t(1), size_t(4096) }) {
            std::string error;
            const auto bodies = cut(c.stream, piece, {}, &error);
            EXPECT_TRUE(bodies.empty());
            EXPECT_NE(error.find(c.said), std::string::npos) << "stream " << c.stream.substr(0, 40) << " piece " << piece << ": " << error;
        }
    }
    // A failed reader stays failed: the stream cannot be resynchronised.
    FrameReader reader;
    ASSERT_FALSE(reader.feed("bad\r\n\r\n", 7));
    const std::string good = frame(encodeMessage(request(1, "hello", json::object())));
    EXPECT_FALSE(reader.feed(good.data(), good.size()));
    EXPECT_FALSE(reader.next());
}

TEST(RemoteWire, AClaimedLengthIsNotAllocatedBeforeItsBytesCome)
{
    // 60 MiB claimed (under the limit), 10 bytes sent: the frame is incomplete and holds what came.
    FrameReader reader;
    const std::string header = "Content-Length: 62914560\r\n\r\n0123456789";
    ASSERT_TRUE(reader.feed(header.data(), header.size()));
    EXPECT_FALSE(reader.next());
    EXPECT_TRUE(reader.midFrame()); // at the end of the stream: a truncated frame
}

TEST(RemoteWire, GarbledBodiesAreRefusedWithAMessage)
{
    const std::string deep(100000, char(0x91)); // [[[[...: a million levels would overflow a recursive reader's stack
    const std::vector<std::pair<std::string, const char*>> cases = {
        { std::string("\xc1"), "not MessagePack" },                                   // a byte MessagePack never uses
        { std::string("\xdb\xff\xff\xff\xff", 5), "not MessagePack" },               // a str of 4 GiB, 0 bytes present
        { std::string("\xdd\xff\xff\xff\xff", 5), "not MessagePack" },               // an array of 4 G elements, none present
        { deep, "nested deeper than 32 levels" },
        { encodeMessage(json::array({ 1, 2 })), "not an object" },
        { encodeMessage(json { { "id", 1 }, { "method", "hello" } }), "without \"jsonrpc\": \"2.0\"" },
        { encodeMessage(json { { "jsonrpc", "2.0" }, { "id", 1 }, { "method", 5 } }), "\"method\" is not a string" },
        { encodeMessage(json { { "jsonrpc", "2.0" }, { "id", 1 } }), "neither a request nor a response" },
        { encodeMessage(json { { "jsonrpc", "2.0" }, { "id", json::array() }, { "method", "x" } }), "\"id\" is neither" },
        { encodeMessage(request(1, "hello", json::object())) + "x", "not MessagePack" }, // bytes after the message
    };
    for (const auto& [body, said] : cases) {
        auto decoded = decodeMessage(body);
        ASSERT_FALSE(decoded);
        EXPECT_NE(decoded.message().find(said), std::string::npos) << decoded.message();
    }
}
