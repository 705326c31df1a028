// The remote engine's server and client (docs/remote.md, issue 45): `attnscope-cli serve --stdio` reached through an
// ssh stand-in (ATTNSCOPE_SSH) answers what the local engine computes, bit for bit; versions are stated and a wrong
// one refused naming both; a server that dies or never starts is said so with its last stderr line; a garbled stream
// is answered with an error and the server exits, never crashes.
#include <RemoteClient.h>
#include <RemoteServer.h>

#include <attnscope/Analyses.h>
#include <attnscope/Image.h>
#include <attnscope/Model.h>

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace attnscope;
using namespace attnscope::remote;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kBoot = ATTNSCOPE_SOURCE_DIR "/resources/samples/fashion-mnist/test-0000-ankle-boot.png";

// The stand-in for ssh, for every test of this file.
struct StandIn {
    StandIn() { setenv("ATTNSCOPE_SSH", ATTNSCOPE_TEST_SOURCE_DIR "/remote/local-ssh.sh", 1); }
};
const StandIn standIn;

Endpoint endpoint(const std::string& cli = ATTNSCOPE_CLI)
{
    Endpoint e;
    e.host = "tester@gpu-node";
    e.cli = cli;
    return e;
}

std::string readFile(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Runs `attnscope-cli serve --stdio` on `input`; its exit status, stdout's messages and stderr.
struct Served {
    int status = -1;
    std::vector<json> messages;
    std::string error;
};
Served serveOnce(const std::string& input)
{
    const fs::path dir = fs::temp_directory_path() / ("attnscope-serve-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::ofstream(dir / "in", std::ios::binary) << input;
    const std::string command = std::string(ATTNSCOPE_CLI) + " serve --stdio < " + (dir / "in").string() + " > " + (dir / "out").string() + " 2> "
        + (dir / "err").string();
    Served s;
    const int raw = std::system(command.c_str());
    s.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    const std::string out = readFile(dir / "out");
    FrameReader reader;
    EXPECT_TRUE(reader.feed(out.data(), out.size()));
    while (auto body = reader.next()) {
        auto m = decodeMessage(*body);
        EXPECT_TRUE(m) << m.message();
        if (m)
            s.messages.push_back(*m);
    }
    s.error = readFile(dir / "err");
    fs::remove_all(dir);
    return s;
}

} // namespace

TEST(RemoteServer, SaysItsVersionAndRefusesAnotherNamingBoth)
{
    Server server;
    auto ok = server.handle(request(1, "hello", { { "protocol", kProtocolVersion }, { "client", "test" } }));
    ASSERT_TRUE(ok && ok->contains("result")) << ok->dump();
    EXPECT_EQ((*ok)["result"]["protocol"], kProtocolVersion);
    EXPECT_EQ((*ok)["result"]["server"], std::string("attnscope-cli ") + version());
    EXPECT_GT((*ok)["result"]["limits"]["max_frame_bytes"].get<int64_t>(), 0);

    auto old = server.handle(request(2, "hello", { { "protocol", 99 } }));
    ASSERT_TRUE(old && old->contains("error"));
    EXPECT_EQ((*old)["error"]["code"], WrongVersion);
    const std::string said = (*old)["error"]["message"];
    EXPECT_NE(said.find("protocol version 99"), std::string::npos) << said;
    EXPECT_NE(said.find("speaks version 1"), std::string::npos) << said;
}

TEST(RemoteServer, UnknownMethodsAndBadParamsAreSaid)
{
    Server server;
    const std::vector<std::tuple<json, int, std::string>> cases = {
        { request(1, "rm_rf", json::object()), NoSuchMethod, "no method \"rm_rf\"" },
        { request(2, "trace", { { "model", "one" } }), InvalidParams, "\"model\" is \"one\", not a whole number" },
        { request(3, "trace", { { "model", 5 }, { "image", kBoot } }), InvalidParams, "no model 5" },
        { request(4, "attention_rows", { { "trace", 9 }, { "query", 0 } }), InvalidParams, "no trace 9" },
        { request(5, "load_model", { { "path", "/nonexistent/model.safetensors" } }), Failed, "/nonexistent/model.safetensors" },
        { request(6, "load_model", json::object()), InvalidParams, "\"path\" is missing" },
    };
    for (const auto& [message, code, said] : cases) {
        auto reply = server.handle(message);
        ASSERT_TRUE(reply && reply->contains("error")) << message.dump();
        EXPECT_EQ((*reply)["error"]["code"], code) << reply->dump();
        EXPECT_NE((*reply)["error"]["message"].get<std::string>().find(said), std::string::npos) << reply->dump();
    }
    // A notification (no id) gets no answer, even a wrong one.
    EXPECT_FALSE(server.handle(json { { "jsonrpc", "2.0" }, { "method", "rm_rf" } }));
}

TEST(RemoteServer, ThroughTheLinkTheAnswersAreTheLocalEnginesBitForBit)
{
    const char* log = "ATTNSCOPE_TEST_SSH_LOG";
    const fs::path logFile = fs::temp_directory_path() / ("attnscope-ssh-log-" + std::to_string(::getpid()));
    fs::remove(logFile);
    setenv(log, logFile.c_str(), 1);
    auto connection = Connection::open(endpoint());
    unsetenv(log);
    ASSERT_TRUE(connection) << connection.message();
    Connection& c = **connection;
    EXPECT_EQ(c.hello()["protocol"], kProtocolVersion);
    // The stand-in was called as ssh is: the host with its user, then one command for the host's shell.
    const std::string called = readFile(logFile);
    fs::remove(logFile);
    EXPECT_EQ(called, std::string("tester@gpu-node\nexec '") + ATTNSCOPE_CLI + "' serve --stdio\n");

    auto loaded = c.call("load_model", { { "path", "builtin:fmnist-vit-d4" } });
    ASSERT_TRUE(loaded) << loaded.message();
    EXPECT_EQ((*loaded)["info"]["layers"], 4); // as `attnscope-cli info --json` says it
    auto traced = c.call("trace", { { "model", (*loaded)["model"] }, { "image", kBoot } });
    ASSERT_TRUE(traced) << traced.message();

    // The reference: the same model and image run in this process.
    auto model = Model::load("builtin:fmnist-vit-d4");
    ASSERT_TRUE(model) << model.message();
    auto image = decodeImage(kBoot);
    ASSERT_TRUE(image);
    auto prepared = (*model)->prepare(*image);
    ASSERT_TRUE(prepared);
    RunOptions run;
    run.record = RecordSpec::everything();
    auto trace = (*model)->run(prepared->input, run);
    ASSERT_TRUE(trace) << trace.message();

    auto logits = decodeTensor((*traced)["logits"]);
    ASSERT_TRUE(logits) << logits.message();
    ASSERT_EQ(logits->numel(), trace->logits.numel());
    EXPECT_EQ(std::memcmp(logits->data(), trace->logits.data(), size_t(logits->numel()) * 4), 0);
    auto pixels = decodeBytes((*traced)["shown"]["pixels"]);
    ASSERT_TRUE(pixels);
    EXPECT_EQ(*pixels, prepared->shown.pixels);

    const int64_t N = trace->numPrefixTokens + int64_t(trace->gridHeight) * trace->gridWidth;
    for (int query : { 0, 17, int(N - 1) }) {
        auto rows = c.call("attention_rows", { { "trace", (*traced)["trace"] }, { "query", query } });
        ASSERT_TRUE(rows) << rows.message();
        auto t = decodeTensor((*rows)["rows"]);
        ASSERT_TRUE(t) << t.message();
        ASSERT_EQ(t->shape(), (std::vector<int64_t> { trace->depth, trace->numHeads, N }));
        for (int l = 1; l <= trace->depth; ++l)
            for (int h = 0; h < trace->numHeads; ++h)
                ASSERT_EQ(std::memcmp(t->data() + (int64_t(l - 1) * trace->numHeads + h) * N,
                                      trace->attention[size_t(l)].data() + (int64_t(h) * N + query) * N, size_t(N) * 4),
                          0)
                    << "layer " << l << " head " << h << " query " << query;
    }
    auto outside = c.call("attention_rows", { { "trace", (*traced)["trace"] }, { "query", N } });
    ASSERT_FALSE(outside);
    EXPECT_NE(outside.message().find("is not one of the trace's tokens 0 to " + std::to_string(N - 1)), std::string::npos) << outside.message();
    EXPECT_GT(c.lastRoundTripMs(), 0);
}

TEST(RemoteServer, ALinkThatDropsIsSaidAndTheCallReturns)
{
    auto connection = Connection::open(endpoint());
    ASSERT_TRUE(connection) << connection.message();
    Connection& c = **connection;
    ASSERT_TRUE(c.call("load_model", { { "path", "builtin:fmnist-vit-d4" } }));
    ::kill(c.serverProcess(), SIGKILL); // ssh killed, the laptop asleep
    auto after = c.call("load_model", { { "path", "builtin:fmnist-vit-d4" } });
    ASSERT_FALSE(after);
    EXPECT_NE(after.message().find("tester@gpu-node: the engine is unreachable"), std::string::npos) << after.message();
    EXPECT_FALSE(c.alive());
    auto again = c.call("hello", { { "protocol", 1 } });
    ASSERT_FALSE(again);
    EXPECT_NE(again.message().find("unreachable"), std::string::npos);
}

TEST(RemoteServer, AServerThatCannotStartIsSaidWithItsLastLine)
{
    auto connection = Connection::open(endpoint("/nonexistent/attnscope-cli"));
    ASSERT_FALSE(connection);
    EXPECT_NE(connection.message().find("tester@gpu-node: the engine is unreachable"), std::string::npos) << connection.message();
    EXPECT_NE(connection.message().find("/nonexistent/attnscope-cli"), std::string::npos) << connection.message(); // the shell's line
}

TEST(RemoteServer, EndpointsAreUserHostAndPath)
{
    auto e = parseEndpoint("ana@gpu-07:/opt/attnscope/bin/attnscope-cli");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->host, "ana@gpu-07");
    EXPECT_EQ(e->cli, "/opt/attnscope/bin/attnscope-cli");
    e = parseEndpoint("gpu-07");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->cli, "attnscope-cli");
    for (const char* bad : { "", "@gpu", "ana@", "gpu:", "-oProxyCommand=x", "gpu;rm", "a b" })
        EXPECT_FALSE(parseEndpoint(bad)) << bad;
}

TEST(RemoteServer, TheExecutableAnswersGarbleWithAnErrorAndExits)
{
    // A garbled header: one error frame, a line on stderr, status 1.
    Served garbled = serveOnce("GET / HTTP/1.1\r\n\r\n");
    EXPECT_EQ(garbled.status, 1);
    ASSERT_EQ(garbled.messages.size(), 1u);
    EXPECT_EQ(garbled.messages[0]["error"]["code"], ParseError);
    EXPECT_NE(garbled.error.find("is not \"Name: value\""), std::string::npos) << garbled.error;

    // A body that is no message is answered and the stream goes on; then an old client's hello; then the end.
    const std::string stream = frame("\xc1") + frame(encodeMessage(request(1, "hello", { { "protocol", 0 } })))
        + frame(encodeMessage(request(2, "hello", { { "protocol", kProtocolVersion } })));
    Served s = serveOnce(stream);
    EXPECT_EQ(s.status, 0) << s.error;
    ASSERT_EQ(s.messages.size(), 3u);
    EXPECT_EQ(s.messages[0]["error"]["code"], InvalidRequest);
    EXPECT_EQ(s.messages[1]["error"]["code"], WrongVersion);
    EXPECT_EQ(s.messages[2]["result"]["protocol"], kProtocolVersion);

    // Truncated: the link ends inside a frame.
    Served cut = serveOnce("Content-Length: 100\r\n\r\nabc");
    EXPECT_EQ(cut.status, 1);
    EXPECT_NE(cut.error.find("ended inside a frame"), std::string::npos) << cut.error;
}

TEST(RemoteServer, TracesAreKeptBoundedAndReleased)
{
    ServerOptions options;
    options.maxTraces = 1; // the oldest trace goes when a second comes
    Server server(options);
    const auto call = [&](const char* method, json params) { return *server.handle(request(1, method, std::move(params))); };
    const json model = call("load_model", { { "path", "builtin:fmnist-vit-d4" } })["result"]["model"];
    const json first = call("trace", { { "model", model }, { "image", kBoot } })["result"]["trace"];
    const json second = call("trace", { { "model", model }, { "image", kBoot } })["result"]["trace"];
    const json dropped = call("attention_rows", { { "trace", first }, { "query", 0 } });
    ASSERT_TRUE(dropped.contains("error"));
    EXPECT_NE(dropped["error"]["message"].get<std::string>().find("dropped from the 1 kept"), std::string::npos) << dropped.dump();
    EXPECT_TRUE(call("attention_rows", { { "trace", second }, { "query", 0 } }).contains("result"));
    // A released trace is gone; a released model takes its traces with it.
    EXPECT_TRUE(call("release_trace", { { "trace", second } }).contains("result"));
    EXPECT_TRUE(call("attention_rows", { { "trace", second }, { "query", 0 } }).contains("error"));
    const json third = call("trace", { { "model", model }, { "image", kBoot } })["result"]["trace"];
    EXPECT_TRUE(call("release_model", { { "model", model } }).contains("result"));
    EXPECT_TRUE(call("attention_rows", { { "trace", third }, { "query", 0 } }).contains("error"));
    EXPECT_NE(call("trace", { { "model", model }, { "image", kBoot } })["error"]["message"].get<std::string>().find("no model"), std::string::npos);
    EXPECT_TRUE(call("shutdown", json::object()).contains("result"));
    EXPECT_TRUE(server.shutdownAsked());
}
