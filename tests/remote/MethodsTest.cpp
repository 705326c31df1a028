// The window's methods of the remote server (docs/remote.md): each one's wrong params are refused by name with the
// JSON-RPC code that says whose fault it is, an image that cannot be read is said without stopping a set, and the
// server's bounds (image-set runs kept) hold. In-process: Server::handle, as serve --stdio calls it.
#include <RemoteServer.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <tuple>
#include <unistd.h>

using namespace attnscope;
using namespace attnscope::remote;
using json = nlohmann::json;

namespace {

const std::string kBoot = ATTNSCOPE_SOURCE_DIR "/resources/samples/fashion-mnist/test-0000-ankle-boot.png";

json call(Server& server, const std::string& method, json params)
{
    static int64_t id = 1;
    auto reply = server.handle(request(id++, method, std::move(params)));
    return reply ? *reply : json();
}

} // namespace

TEST(RemoteMethods, WrongParamsAreRefusedByName)
{
    ServerOptions options;
    options.filesDir = (std::filesystem::temp_directory_path() / ("attnscope-methods-" + std::to_string(::getpid()))).string();
    Server server(options);
    const json loaded = call(server, "load_model", { { "path", "builtin:fmnist-vit-d4" } });
    ASSERT_TRUE(loaded.contains("result")) << loaded.dump();
    const int64_t model = loaded["result"]["model"];
    const json traced = call(server, "trace", { { "model", model }, { "image", kBoot } });
    ASSERT_TRUE(traced.contains("result")) << traced.dump();
    const int64_t trace = traced["result"]["trace"];
    const json started = call(server, "set_start", { { "model", model }, { "options", json::object() } });
    ASSERT_TRUE(started.contains("result")) << started.dump();
    const int64_t run = started["result"]["run"];

    const std::vector<std::tuple<std::string, json, int, std::string>> cases = {
        { "explain", { { "model", model }, { "image", kBoot }, { "target_class", "cat" } }, InvalidParams, "\"target_class\"" },
        { "explain", { { "model", model }, { "image", "/nonexistent/cat.png" } }, Failed, "/nonexistent/cat.png" },
        { "ablate", { { "model", model }, { "image", kBoot }, { "layer", 99 }, { "head", 0 } }, Failed, "99" },
        { "ablate", { { "model", model }, { "image", kBoot }, { "head", 0 } }, InvalidParams, "\"layer\" is missing" },
        { "query_key_map", { { "model", model }, { "images", json::array() }, { "layer", 1 }, { "head", 0 } }, InvalidParams, "\"images\"" },
        { "query_key_map", { { "model", model }, { "images", { "/nonexistent/a.png" } }, { "layer", 1 }, { "head", 0 } }, Failed,
          "none of the images could be read" },
        { "query_key_map", { { "model", model }, { "images", { kBoot } }, { "layer", 1 }, { "head", 0 }, { "method", "umap" } },
          InvalidParams, "umap" },
        { "set_start", { { "model", model }, { "options", { { "bogus", 1 } } } }, InvalidParams, "no analysis option \"bogus\"" },
        { "set_add", { { "run", 999 }, { "images", { kBoot } }, { "indices", { 0 } } }, InvalidParams, "no image-set run 999" },
        { "set_add", { { "run", run }, { "images", { kBoot, kBoot } }, { "indices", { 0 } } }, InvalidParams, "two lists" },
        { "set_add", { { "run", run }, { "images", { kBoot } }, { "indices", { -3 } } }, InvalidParams, "\"indices\"" },
        { "attention_rows", { { "trace", trace }, { "query", 0 }, { "norms", -1 } }, InvalidParams, "\"norms\"" },
        { "trace", { { "model", model }, { "image", kBoot }, { "analyse", { { "draws", 0 } } } }, InvalidParams, "\"draws\"" },
    };
    for (const auto& [method, params, code, said] : cases) {
        const json reply = call(server, method, params);
        ASSERT_TRUE(reply.contains("error")) << method << " " << params.dump() << " -> " << reply.dump();
        EXPECT_EQ(reply["error"]["code"], code) << method << " " << reply.dump();
        EXPECT_NE(reply["error"]["message"].get<std::string>().find(said), std::string::npos) << method << " " << reply.dump();
    }

    // An image of a set that cannot be read is said and left out; the others are added.
    const json added = call(server, "set_add", { { "run", run }, { "images", { kBoot, "/nonexistent/b.png" } }, { "indices", { 0, 1 } } });
    ASSERT_TRUE(added.contains("result")) << added.dump();
    EXPECT_EQ(added["result"]["images"], 1);
    ASSERT_EQ(added["result"]["skipped"].size(), 1u);
    EXPECT_EQ(added["result"]["skipped"][0]["index"], 1);
    EXPECT_NE(added["result"]["skipped"][0]["message"].get<std::string>().find("/nonexistent/b.png"), std::string::npos);

    // At most kMaxSetRuns runs are kept; a released one is gone, and so are a released model's.
    for (size_t i = 1; i < Server::kMaxSetRuns; ++i)
        ASSERT_TRUE(call(server, "set_start", { { "model", model }, { "options", json::object() } }).contains("result"));
    const json tooMany = call(server, "set_start", { { "model", model }, { "options", json::object() } });
    ASSERT_TRUE(tooMany.contains("error"));
    EXPECT_NE(tooMany["error"]["message"].get<std::string>().find("already runs 8"), std::string::npos) << tooMany.dump();
    EXPECT_TRUE(call(server, "set_release", { { "run", run } }).contains("result"));
    EXPECT_TRUE(call(server, "set_summary", { { "run", run } }).contains("error"));
    EXPECT_TRUE(call(server, "set_start", { { "model", model }, { "options", json::object() } }).contains("result"));
    EXPECT_TRUE(call(server, "release_model", { { "model", model } }).contains("result"));
    EXPECT_TRUE(call(server, "set_summary", { { "run", run + 1 } }).contains("error"));
    std::filesystem::remove_all(options.filesDir);
}
