// The remote engine's server and client (docs/remote.md, issue 45): `attnscope-cli serve --stdio` reached through an
// ssh stand-in (ATTNSCOPE_SSH) answers what the local engine computes, bit for bit; versions are stated and a wrong
// one refused naming both; a server that dies or never starts is said so with its last stderr line; a garbled stream
// is answered with an error and the server exits, never crashes.
#include "RemoteTestSupport.h"

#include <RemoteAnalyses.h>
#include <RemoteClient.h>
#include <RemoteServer.h>

#include <attnscope/Analyses.h>
#include <attnscope/CpuKernels.h>
#include <attnscope/Files.h>
#include <attnscope/Image.h>
#include <attnscope/Model.h>

#include <gtest/gtest.h>

#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

using namespace attnscope;
using namespace attnscope::remote;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kBoot = ATTNSCOPE_SOURCE_DIR "/resources/samples/fashion-mnist/test-0000-ankle-boot.png";

// The stand-in for ssh, for every test of this file; and a cache folder of its own, so that the files sent (the
// server's remote-files) and the client's hashes (sha256FileCached) go there, not to ~/.cache.
struct StandIn {
    StandIn()
    {
        setenv("ATTNSCOPE_SSH", ATTNSCOPE_TEST_SOURCE_DIR "/remote/local-ssh.sh", 1);
        fs::remove_all(cache);
        fs::create_directories(cache);
        setenv("XDG_CACHE_HOME", cache.c_str(), 1);
    }
    ~StandIn() { fs::remove_all(cache); }
    const fs::path cache = fs::temp_directory_path() / ("attnscope-remote-cache-" + std::to_string(::getpid()));
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
    // The device models will run on, resolved ("auto" says nothing to the window's status bar).
    EXPECT_EQ((*ok)["result"]["device"], libtorchHasCuda() ? "cuda:0" : "cpu");

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

    remotetest::expectTheLocalTrace(c, *traced, *trace, prepared->shown);
    if (testing::Test::HasFatalFailure())
        return;
    const int64_t N = trace->numPrefixTokens + int64_t(trace->gridHeight) * trace->gridWidth;
    auto outside = c.call("attention_rows", { { "trace", (*traced)["trace"] }, { "query", N } });
    ASSERT_FALSE(outside);
    EXPECT_NE(outside.message().find("is not one of the trace's tokens 0 to " + std::to_string(N - 1)), std::string::npos) << outside.message();
    EXPECT_GT(c.lastRoundTripMs(), 0);
    EXPECT_GT(c.roundTripMs(), 0);
    EXPECT_LE(c.roundTripMs(), c.lastRoundTripMs()); // the quickest of the recent requests
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

TEST(RemoteServer, ADeviceTheHostHasNotIsSaidBeforeServing)
{
    if (libtorchHasCuda())
        GTEST_SKIP() << "this machine has a GPU: cuda:7 may be there too";
    const std::string out = testing::TempDir() + "/serve-device.txt";
    const std::string command = std::string(ATTNSCOPE_CLI) + " serve --stdio --device cuda:7 < /dev/null > /dev/null 2> " + out;
    EXPECT_EQ(WEXITSTATUS(std::system(command.c_str())), 1);
    std::ifstream said(out);
    std::string line;
    std::getline(said, line);
    EXPECT_NE(line.find("serve: device cuda:7"), std::string::npos) << line;
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
    // A trace not kept (analyses alone) takes no place: the kept one stays.
    const json unkept = call("trace", { { "model", model }, { "image", kBoot }, { "keep", false } });
    ASSERT_TRUE(unkept.contains("result")) << unkept.dump();
    EXPECT_EQ(unkept["result"]["trace"], 0);
    EXPECT_TRUE(call("attention_rows", { { "trace", second }, { "query", 0 } }).contains("result"));
    EXPECT_TRUE(call("trace", { { "model", model }, { "image", kBoot }, { "keep", "no" } }).contains("error"));
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

namespace {

// The reference: builtin:fmnist-vit-d4 run on the ankle boot in this process, every map recorded.
Trace localTrace()
{
    auto model = Model::load("builtin:fmnist-vit-d4");
    EXPECT_TRUE(model) << model.message();
    auto image = decodeImage(kBoot);
    EXPECT_TRUE(image);
    auto prepared = (*model)->prepare(*image);
    EXPECT_TRUE(prepared);
    RunOptions run;
    run.record = RecordSpec::everything();
    auto trace = (*model)->run(prepared->input, run);
    EXPECT_TRUE(trace) << trace.message();
    return *trace;
}

bool sameFloats(const Tensor& a, const Tensor& b)
{
    return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), size_t(a.numel()) * sizeof(float)) == 0;
}

std::string hashOf(const std::string& bytes)
{
    const fs::path file = standIn.cache / "to-hash";
    std::ofstream(file, std::ios::binary) << bytes;
    auto sha = sha256File(file.string());
    fs::remove(file);
    EXPECT_TRUE(sha) << sha.message();
    return sha ? *sha : std::string();
}

} // namespace

// attention_rows with a rollout: the rollout's row of the query, as the local engine makes it, for each fusion and
// discard, one after another (each a different cached rollout); its options checked, naming the value.
TEST(RemoteServer, TheRolloutRowIsTheLocalRolloutsBitForBit)
{
    Server server;
    const auto call = [&](const char* method, json params) { return *server.handle(request(1, method, std::move(params))); };
    const json model = call("load_model", { { "path", "builtin:fmnist-vit-d4" } })["result"]["model"];
    const json traced = call("trace", { { "model", model }, { "image", kBoot } })["result"]["trace"];
    const Trace trace = localTrace();
    const int N = trace.numPrefixTokens + trace.gridHeight * trace.gridWidth;
    const std::vector<std::pair<json, RolloutOptions>> options = {
        { json::object(), {} },
        { { { "fusion", "max" }, { "discard", 0.5 } }, { HeadFusion::Max, 0.5 } },
        { { { "fusion", "min" } }, { HeadFusion::Min, 0.0 } },
        { { { "fusion", "mean" }, { "discard", 0.9 } }, { HeadFusion::Mean, 0.9 } },
        { json::object(), {} }, // back to the first: made again, not the last one's
    };
    for (const auto& [asked, local] : options) {
        const Tensor rollout = attentionRollout(trace, local);
        for (int query : { 0, 7, N - 1 }) {
            const json reply = call("attention_rows", { { "trace", traced }, { "query", query }, { "rollout", asked } });
            ASSERT_TRUE(reply.contains("result")) << reply.dump().substr(0, 300);
            const AttentionMap want = rolloutMap(trace, rollout, query);
            auto patches = decodeTensor(reply["result"]["rollout"]["patches"]);
            ASSERT_TRUE(patches) << patches.message();
            EXPECT_TRUE(sameFloats(*patches, want.patches)) << asked.dump() << " query " << query;
            EXPECT_EQ(reply["result"]["rollout"]["prefix_mass"].get<double>(), want.prefixMass) << asked.dump() << " query " << query;
            auto rows = decodeTensor(reply["result"]["rows"]);
            ASSERT_TRUE(rows) << rows.message();
            EXPECT_TRUE(sameFloats(*rows, queryRows(trace, query).rows));
        }
    }
    EXPECT_FALSE(call("attention_rows", { { "trace", traced }, { "query", 0 } })["result"].contains("rollout")); // not asked
    const std::vector<std::pair<json, std::string>> bad = {
        { { { "fusion", "median" } }, "unknown head fusion \"median\"" },
        { { { "fusion", 2 } }, "the head fusion 2 is not mean, max or min" },
        { { { "discard", 1.0 } }, "discard 1.0 is not a number in [0, 1)" },
        { { { "discard", -0.5 } }, "discard -0.5 is not a number in [0, 1)" },
        { { { "discard", "half" } }, "discard \"half\" is not a number in [0, 1)" },
        { "mean", "\"rollout\" is \"mean\", not {" },
    };
    for (const auto& [asked, said] : bad) {
        const json reply = call("attention_rows", { { "trace", traced }, { "query", 0 }, { "rollout", asked } });
        ASSERT_TRUE(reply.contains("error")) << asked.dump();
        EXPECT_EQ(reply["error"]["code"], InvalidParams);
        EXPECT_NE(reply["error"]["message"].get<std::string>().find(said), std::string::npos) << reply.dump();
    }
}

// A Swin over the link (docs/remote.md, "A Swin"): the trace names its blocks as the local trace has them, a query's
// rows are each block's maps at its stage grid bit for bit (NaN outside the window, the padding's share), a rollout or
// token norms are refused with the engine's reason, and a query-key map says its stage and grid.
TEST(RemoteServer, ASwinsBlocksAndWindowMapsAreTheLocalOnesBitForBit)
{
    Server server;
    const auto call = [&](const char* method, json params) { return *server.handle(request(1, method, std::move(params))); };
    const std::string swin = ATTNSCOPE_SOURCE_DIR "/tests/golden/swin/timm_swin";
    const json loaded = call("load_model", { { "path", swin } });
    ASSERT_TRUE(loaded.contains("result")) << loaded.dump().substr(0, 300);
    const json model = loaded["result"]["model"];
    const json traced = call("trace", { { "model", model }, { "image", kBoot } })["result"];
    LoadOptions options;
    options.acceptHierarchical = true;
    auto local = Model::load(swin, options);
    ASSERT_TRUE(local) << local.message();
    RunOptions run;
    run.record = RecordSpec::everything();
    auto trace = (*local)->run((*local)->prepare(*decodeImage(kBoot))->input, run);
    ASSERT_TRUE(trace) << trace.message();
    auto windows = decodeWindows(traced["windows"]);
    ASSERT_TRUE(windows) << windows.message();
    ASSERT_EQ(windows->size(), trace->windows.size());
    for (size_t l = 0; l < windows->size(); ++l) {
        const WindowBlock &a = (*windows)[l], &b = trace->windows[l];
        EXPECT_TRUE(a.stage == b.stage && a.index == b.index && a.gridH == b.gridH && a.gridW == b.gridW && a.windowH == b.windowH
                    && a.shiftH == b.shiftH && a.shiftW == b.shiftW && a.heads == b.heads && a.width == b.width)
            << "block " << l + 1;
    }
    for (int query : { 0, 5 * 16 + 6, 255 }) {
        const json reply = call("attention_rows", { { "trace", traced["trace"] }, { "query", query } });
        ASSERT_TRUE(reply.contains("result")) << reply.dump().substr(0, 300);
        EXPECT_FALSE(reply["result"].contains("rows"));
        auto maps = decodeWindowMaps(reply["result"]["window_maps"], *windows);
        ASSERT_TRUE(maps) << maps.message();
        const QueryRows want = queryRows(*trace, query);
        for (size_t l = 0; l < want.windowMaps.size(); ++l)
            for (size_t h = 0; h < want.windowMaps[l].size(); ++h) {
                EXPECT_TRUE(sameFloats((*maps)[l][h].patches, want.windowMaps[l][h].patches)) << "query " << query << " block " << l + 1 << " map " << h;
                EXPECT_EQ((*maps)[l][h].paddingMass, want.windowMaps[l][h].paddingMass);
            }
    }
    // A map list that is not the trace's blocks' is refused, naming what is wrong.
    json short_ = call("attention_rows", { { "trace", traced["trace"] }, { "query", 0 } })["result"]["window_maps"];
    short_[2].erase(short_[2].size() - 1);
    const auto refusedMaps = decodeWindowMaps(short_, *windows);
    ASSERT_FALSE(refusedMaps);
    EXPECT_NE(refusedMaps.message().find("block 3 without its 4 heads and their mean"), std::string::npos) << refusedMaps.message();
    const json rollout = call("attention_rows", { { "trace", traced["trace"] }, { "query", 0 }, { "rollout", json::object() } });
    ASSERT_TRUE(rollout.contains("error"));
    EXPECT_NE(rollout["error"]["message"].get<std::string>().find("no rollout of a hierarchical model"), std::string::npos) << rollout.dump();
    const json norms = call("attention_rows", { { "trace", traced["trace"] }, { "query", 0 }, { "norms", 10.0 } });
    ASSERT_TRUE(norms.contains("error"));
    EXPECT_NE(norms["error"]["message"].get<std::string>().find("token norms: not of a hierarchical (Swin) model yet"), std::string::npos);

    const json qk = call("query_key_map", { { "model", model }, { "images", { kBoot } }, { "layer", 3 }, { "head", 1 } });
    ASSERT_TRUE(qk.contains("result")) << qk.dump().substr(0, 300);
    auto map = decodeQueryKeyMap(qk["result"]["map"]);
    ASSERT_TRUE(map) << map.message();
    EXPECT_EQ(map->stage, 1);
    EXPECT_EQ(map->gridWidth, 8);
    EXPECT_EQ(map->points.size(), 128u);
}

// A file of the laptop crosses once: an image sent and traced by its sha256 gives what the path gives, a model sent
// loads, a file of several chunks arrives whole (in the test's cache folder, made 0700); a second send on the same
// link is nothing at all, and on a new link one has_file and nothing more.
TEST(RemoteServer, AFileSentOnceIsUsedBySha256)
{
    auto connection = Connection::open(endpoint());
    ASSERT_TRUE(connection) << connection.message();
    Connection& c = **connection;
    auto sent = c.sendFile(kBoot);
    ASSERT_TRUE(sent) << sent.message();
    ASSERT_TRUE(sent->contains("sha256"));
    EXPECT_EQ((*sent)["sha256"], *sha256File(kBoot));
    const int64_t before = c.requestsSent();
    auto again = c.sendFile(kBoot);
    ASSERT_TRUE(again) << again.message();
    EXPECT_EQ(*again, *sent);
    EXPECT_EQ(c.requestsSent(), before) << "a file sent on this link is not asked about again";
    {
        auto other = Connection::open(endpoint());
        ASSERT_TRUE(other) << other.message();
        const int64_t first = (*other)->requestsSent();
        auto onOther = (*other)->sendFile(kBoot);
        ASSERT_TRUE(onOther) << onOther.message();
        EXPECT_EQ(*onOther, *sent);
        EXPECT_EQ((*other)->requestsSent(), first + 1) << "a file the host has is asked about, not sent";
    }

    // The weights alone (a file sent is kept alone: no config.json beside it on the host), by their path and sent.
    const fs::path weights = standIn.cache / "laptop" / "model.safetensors";
    fs::create_directories(weights.parent_path());
    fs::copy_file(ATTNSCOPE_SOURCE_DIR "/resources/models/fmnist-vit-d4/model.safetensors", weights, fs::copy_options::overwrite_existing);
    auto sentModel = c.sendFile(weights.string());
    ASSERT_TRUE(sentModel) << sentModel.message();
    auto byPath = c.call("load_model", { { "path", weights.string() } });
    auto bySha = c.call("load_model", { { "path", *sentModel } });
    ASSERT_TRUE(byPath && bySha) << byPath.message() << " / " << bySha.message();
    EXPECT_EQ((*bySha)["info"]["layers"], 4);
    json infoByPath = (*byPath)["info"], infoBySha = (*bySha)["info"];
    for (json* info : { &infoByPath, &infoBySha })
        for (const char* where : { "path", "weights" })
            info->erase(where);
    EXPECT_EQ(infoBySha, infoByPath);
    const std::string keptModel = (*bySha)["info"]["path"];
    EXPECT_EQ(keptModel.rfind((standIn.cache / "attnscope" / "remote-files").string(), 0), 0u) << keptModel;
    EXPECT_EQ(fs::path(keptModel).filename().string(), "model.safetensors"); // the name kept: loaders that go by it still work

    auto tracedPath = c.call("trace", { { "model", (*byPath)["model"] }, { "image", kBoot } });
    auto tracedSha = c.call("trace", { { "model", (*bySha)["model"] }, { "image", *sent } });
    ASSERT_TRUE(tracedPath && tracedSha) << tracedPath.message() << " / " << tracedSha.message();
    EXPECT_TRUE(sameFloats(*decodeTensor((*tracedPath)["logits"]), *decodeTensor((*tracedSha)["logits"])));
    for (int query : { 0, 5 }) {
        auto a = c.call("attention_rows", { { "trace", (*tracedPath)["trace"] }, { "query", query }, { "rollout", json::object() } });
        auto b = c.call("attention_rows", { { "trace", (*tracedSha)["trace"] }, { "query", query }, { "rollout", json::object() } });
        ASSERT_TRUE(a && b);
        EXPECT_TRUE(sameFloats(*decodeTensor((*a)["rows"]), *decodeTensor((*b)["rows"])));
        EXPECT_TRUE(sameFloats(*decodeTensor((*a)["rollout"]["patches"]), *decodeTensor((*b)["rollout"]["patches"])));
    }

    // Three chunks: 2 x kChunkBytes and a part.
    std::string big(2 * kChunkBytes + 12345, '\0');
    for (size_t i = 0; i < big.size(); ++i)
        big[i] = char((i * 2654435761u) >> 13);
    const fs::path local = standIn.cache / "laptop" / "big.bin";
    std::ofstream(local, std::ios::binary) << big;
    const int64_t start = c.requestsSent();
    auto sentBig = c.sendFile(local.string());
    ASSERT_TRUE(sentBig) << sentBig.message();
    EXPECT_EQ(c.requestsSent(), start + 4); // has_file, then three put_file
    const fs::path folder = standIn.cache / "attnscope" / "remote-files";
    EXPECT_EQ(readFile(folder / (*sentBig)["sha256"].get<std::string>() / "big.bin"), big);
    EXPECT_TRUE((fs::status(folder).permissions() & fs::perms::all) == fs::perms::owner_all) << "the folder is the user's alone";
    EXPECT_FALSE(fs::exists(folder / ((*sentBig)["sha256"].get<std::string>() + ".part")));

    auto missing = c.sendFile("/nonexistent/cat.png");
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.message().find("/nonexistent/cat.png"), std::string::npos) << missing.message();
}

// put_file takes only the next bytes of a file named by a well-formed sha256, under a plain name, and keeps only a
// file whose bytes have that sha256; a file never sent is said so where a path is taken.
TEST(RemoteServer, PutFileRefusesWhatIsNotTheFileItNames)
{
    ServerOptions options;
    options.filesDir = (standIn.cache / "refusals").string();
    Server server(options);
    const auto call = [&](const char* method, json params) { return *server.handle(request(1, method, std::move(params))); };
    const std::string bytes = "0123456789abcdefghij";
    const std::string sha = hashOf(bytes);
    const auto chunk = [&](size_t from, size_t length) { return encodeBytes(bytes.data() + from, length); };
    const auto expectRefused = [&](const json& reply, const std::string& said) {
        ASSERT_TRUE(reply.contains("error")) << reply.dump().substr(0, 300);
        EXPECT_NE(reply["error"]["message"].get<std::string>().find(said), std::string::npos) << reply.dump().substr(0, 300);
    };

    EXPECT_EQ(call("has_file", { { "sha256", sha } })["result"]["present"], false);
    expectRefused(call("has_file", { { "sha256", "../../etc/passwd" } }), "\"sha256\" is \"../../etc/passwd\", not a sha256");
    std::string upper = sha;
    for (char& ch : upper)
        ch = char(std::toupper(static_cast<unsigned char>(ch)));
    expectRefused(call("put_file", { { "sha256", upper }, { "size", 20 }, { "offset", 0 }, { "data", chunk(0, 10) } }), "not a sha256");
    for (const char* name : { "a/b.png", "..", "../x", "", "x..y" })
        expectRefused(call("put_file", { { "sha256", sha }, { "size", 20 }, { "offset", 0 }, { "name", name }, { "data", chunk(0, 10) } }),
                      "is not one path component");
    expectRefused(call("put_file", { { "sha256", sha }, { "size", 20 }, { "offset", 0 }, { "data", "0123" } }), "\"data\" is \"0123\", not bytes");
    expectRefused(call("put_file", { { "sha256", sha }, { "size", int64_t(kMaxFileBytes) + 1 }, { "offset", 0 }, { "data", chunk(0, 10) } }),
                  "\"size\" 4294967297 is not 0 to 4294967296 bytes");
    const std::vector<uint8_t> tooLarge(kChunkBytes + 1);
    expectRefused(call("put_file", { { "sha256", sha }, { "size", int64_t(kMaxFileBytes) }, { "offset", 0 },
                                     { "data", encodeBytes(tooLarge.data(), tooLarge.size()) } }),
                  "a chunk of 4194305 bytes: at most 4194304");
    expectRefused(call("put_file", { { "sha256", sha }, { "size", 20 }, { "offset", 15 }, { "data", chunk(0, 10) } }), "go past the file's 20 bytes");

    // The next bytes only: after 10, a chunk at 5 (or at 12) is refused, one at 10 taken.
    const json first = call("put_file", { { "sha256", sha }, { "size", 20 }, { "offset", 0 }, { "name", "digits.txt" }, { "data", chunk(0, 10) } });
    ASSERT_TRUE(first.contains("result")) << first.dump();
    EXPECT_EQ(first["result"]["complete"], false);
    EXPECT_EQ(call("has_file", { { "sha256", sha } })["result"]["received"], 10);
    expectRefused(call("put_file", { { "sha256", sha }, { "size", 20 }, { "offset", 5 }, { "data", chunk(5, 10) } }),
                  "a chunk at offset 5, but 10 bytes of it have arrived");
    expectRefused(call("put_file", { { "sha256", sha }, { "size", 20 }, { "offset", 12 }, { "data", chunk(12, 8) } }), "but 10 bytes");
    const json last = call("put_file", { { "sha256", sha }, { "size", 20 }, { "offset", 10 }, { "name", "digits.txt" }, { "data", chunk(10, 10) } });
    ASSERT_TRUE(last.contains("result")) << last.dump();
    EXPECT_EQ(last["result"]["complete"], true);
    EXPECT_EQ(readFile(last["result"]["path"].get<std::string>()), bytes);
    EXPECT_EQ(fs::path(last["result"]["path"].get<std::string>()).filename().string(), "digits.txt");
    EXPECT_EQ(call("has_file", { { "sha256", sha } })["result"]["present"], true);

    // Bytes that are not the file their sha256 names: refused at the end, and nothing kept.
    const std::string other = hashOf("something else");
    const json forged = call("put_file", { { "sha256", other }, { "size", 20 }, { "offset", 0 }, { "data", chunk(0, 20) } });
    expectRefused(forged, "the file sent as " + other + " has sha256 " + sha);
    EXPECT_EQ(forged["error"]["code"], Failed);
    EXPECT_EQ(call("has_file", { { "sha256", other } })["result"], json({ { "present", false }, { "received", 0 } }));
    EXPECT_FALSE(fs::exists(standIn.cache / "refusals" / (other + ".part")));

    // Where a path is taken: a sha256 never sent, one malformed, a handle with more than a sha256.
    const json model = call("load_model", { { "path", "builtin:fmnist-vit-d4" } })["result"]["model"];
    expectRefused(call("trace", { { "model", model }, { "image", { { "sha256", other } } } }),
                  "no file with sha256 " + other + " on the host (send it first)");
    expectRefused(call("load_model", { { "path", { { "sha256", "cafe" } } } }), "\"sha256\" is \"cafe\", not a sha256");
    expectRefused(call("load_model", { { "path", { { "sha256", sha }, { "name", "x" } } } }), "not a path on the host or {\"sha256\": HEX}");
    expectRefused(call("load_model", { { "path", 5 } }), "\"path\" is 5, not a path on the host");
}
