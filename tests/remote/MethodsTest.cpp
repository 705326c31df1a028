// The window's methods of the remote server (docs/remote.md): each one's wrong params are refused by name with the
// JSON-RPC code that says whose fault it is, an image that cannot be read is said without stopping a set, and the
// server's bounds (image-set runs kept) hold. In-process: Server::handle, as serve --stdio calls it; Export all's
// methods (report_*), which attnscope-cli adds, through the built attnscope-cli reached by the ssh stand-in.
#include <RemoteServer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <poll.h>
#include <spawn.h>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <tuple>
#include <unistd.h>

extern char** environ;

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

namespace fs = std::filesystem;

const std::string kSamples = ATTNSCOPE_SOURCE_DIR "/resources/samples/fashion-mnist";

// The sample images, in name order (test-0000-ankle-boot.png first).
std::vector<std::string> samples()
{
    std::vector<std::string> paths;
    for (const auto& e : fs::directory_iterator(kSamples))
        if (e.path().extension() == ".png")
            paths.push_back(e.path().string());
    std::sort(paths.begin(), paths.end());
    return paths;
}

std::string readFile(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Each case's request is refused with its code and a message that holds `said` (the param's name, or its value).
void expectRefused(const json& reply, int code, const std::string& said, const std::string& what)
{
    ASSERT_TRUE(reply.contains("error")) << what << " -> " << reply.dump().substr(0, 400);
    EXPECT_EQ(reply["error"]["code"], code) << what << " -> " << reply.dump();
    EXPECT_NE(reply["error"]["message"].get<std::string>().find(said), std::string::npos) << what << " -> " << reply.dump();
}

// attnscope-cli serve --stdio, started as the window starts it (through the ssh stand-in, tests/remote/local-ssh.sh)
// with a cache folder of its own, so that its staging folders are the test's; unlike Connection, each reply comes
// whole, its error's code with it.
class Host {
public:
    explicit Host(const fs::path& cache)
    {
        std::signal(SIGPIPE, SIG_IGN); // a server that died is said by the reply that does not come, not by a signal
        int toServer[2], fromServer[2];
        if (::pipe2(toServer, O_CLOEXEC) != 0 || ::pipe2(fromServer, O_CLOEXEC) != 0)
            return;
        std::vector<std::string> env;
        for (char** e = environ; *e; ++e)
            if (std::strncmp(*e, "XDG_CACHE_HOME=", 15) != 0)
                env.emplace_back(*e);
        env.push_back("XDG_CACHE_HOME=" + cache.string());
        std::vector<std::string> args = { "sh", ATTNSCOPE_TEST_SOURCE_DIR "/remote/local-ssh.sh", "tester@gpu-node",
                                          std::string("exec '") + ATTNSCOPE_CLI + "' serve --stdio" };
        std::vector<char*> argv, envp;
        for (auto& a : args)
            argv.push_back(a.data());
        argv.push_back(nullptr);
        for (auto& e : env)
            envp.push_back(e.data());
        envp.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, toServer[0], 0);
        posix_spawn_file_actions_adddup2(&actions, fromServer[1], 1);
        if (::posix_spawn(&m_pid, "/bin/sh", &actions, nullptr, argv.data(), envp.data()) != 0)
            m_pid = -1;
        posix_spawn_file_actions_destroy(&actions);
        ::close(toServer[0]);
        ::close(fromServer[1]);
        m_in = toServer[1];
        m_out = fromServer[0];
    }
    ~Host() { close(); }

    bool started() const { return m_pid > 0; }

    // The whole reply to one request ({"result": ...} or {"error": {"code", "message"}}); null when none came.
    json call(const std::string& method, json params)
    {
        const int64_t id = m_nextId++;
        const std::string bytes = frame(encodeMessage(request(id, method, std::move(params))));
        for (size_t done = 0; done < bytes.size();) {
            const ssize_t n = ::write(m_in, bytes.data() + done, bytes.size() - done);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return json();
            done += size_t(n);
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10); // ASan on two cores
        std::vector<char> buffer(size_t(1) << 16);
        for (;;) {
            while (auto body = m_reader.next()) {
                auto message = decodeMessage(*body);
                if (message && message->contains("id") && (*message)["id"] == id)
                    return *message;
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
            if (left <= 0)
                return json();
            pollfd fd { m_out, POLLIN, 0 };
            const int ready = ::poll(&fd, 1, int(std::min<int64_t>(left, 1000)));
            if (ready <= 0)
                continue;
            const ssize_t n = ::read(m_out, buffer.data(), buffer.size());
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0 || !m_reader.feed(buffer.data(), size_t(n)))
                return json();
        }
    }
    // The result of a request that must succeed (null, and the test failed, otherwise).
    json ok(const std::string& method, json params)
    {
        const json reply = call(method, std::move(params));
        EXPECT_TRUE(reply.contains("result")) << method << " -> " << reply.dump().substr(0, 400);
        return reply.contains("result") ? reply["result"] : json();
    }

    // Asks the server to end and waits for it: its exit status (0 after a clean end; under ASan, a leak or an error
    // found in the server makes it another).
    int close()
    {
        if (m_pid <= 0)
            return -1;
        call("shutdown", json::object());
        ::close(m_in);
        ::close(m_out);
        int status = 0;
        while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
        }
        m_pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }

private:
    pid_t m_pid = -1;
    int m_in = -1, m_out = -1;
    FrameReader m_reader;
    int64_t m_nextId = 1;
};

// A cache folder of the test's own for the host (its staging folders go to <it>/attnscope/remote-exports), removed after.
struct HostCache {
    explicit HostCache(const std::string& name)
        : path(fs::temp_directory_path() / ("attnscope-" + name + "-" + std::to_string(::getpid())))
    {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~HostCache() { fs::remove_all(path); }
    fs::path staging(const std::string& token) const { return path / "attnscope" / "remote-exports" / token; }
    const fs::path path;
};

// Polls report_status until the run has ended (or a reply does not come): the last answer.
json waitForReport(Host& host, const json& report)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
    for (;;) {
        const json reply = host.call("report_status", { { "report", report } });
        if (!reply.contains("result") || !reply["result"]["running"].get<bool>() || std::chrono::steady_clock::now() > deadline)
            return reply;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
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

TEST(RemoteMethods, PythonsMethodsRefuseWrongParamsByName)
{
    ServerOptions options;
    options.filesDir = (fs::temp_directory_path() / ("attnscope-methods-py-" + std::to_string(::getpid()))).string();
    Server server(options);
    const json loaded = call(server, "load_model", { { "path", "builtin:fmnist-vit-d4" } });
    ASSERT_TRUE(loaded.contains("result")) << loaded.dump();
    const int64_t model = loaded["result"]["model"];
    const json forwarded = call(server, "forward", { { "model", model }, { "image", kBoot } });
    ASSERT_TRUE(forwarded.contains("result")) << forwarded.dump().substr(0, 400);
    const int64_t trace = forwarded["result"]["trace"];
    const int depth = forwarded["result"]["depth"], heads = forwarded["result"]["heads"];
    const json prepared = call(server, "prepare", { { "model", model }, { "image", kBoot } });
    ASSERT_TRUE(prepared.contains("result")) << prepared.dump().substr(0, 400);
    auto input = decodeTensor(prepared["result"]["input"]);
    ASSERT_TRUE(input) << input.message();
    ASSERT_EQ(input->dim(), 3);
    const int64_t C = input->shape()[0], H = input->shape()[1], W = input->shape()[2];
    const auto zeros = [](std::vector<int64_t> shape) {
        int64_t n = 1;
        for (int64_t d : shape)
            n *= d;
        return encodeTensor(Tensor::fromVector(shape, std::vector<float>(size_t(n), 0.0f)));
    };
    const json image = { { "model", model }, { "image", kBoot } };
    const auto with = [](json params, const json& more) { return params.update(more), params; };
    const std::string lastLayer = std::to_string(depth), layers = "1 to " + lastLayer;

    const std::vector<std::tuple<std::string, json, int, std::string>> cases = {
        // forward: an image or an input tensor, never both nor neither.
        { "forward", { { "model", model } }, InvalidParams, "give one of \"image\"" },
        { "forward", with(image, { { "input", zeros({ C, H, W }) } }), InvalidParams, "give one of \"image\"" },
        { "forward", { { "model", 999 }, { "image", kBoot } }, InvalidParams, "no model 999" },
        { "forward", { { "model", model }, { "input", "pixels" } }, InvalidParams, "\"input\"" },
        // The model's channels first, as Model.run takes it; a tensor of another rank or channels is said with its shape.
        { "forward", { { "model", model }, { "input", zeros({ C + 1, H, W }) } }, InvalidParams,
          "\"input\" is [" + std::to_string(C + 1) + ", " + std::to_string(H) },
        { "forward", { { "model", model }, { "input", zeros({ H, W }) } }, InvalidParams, "\"input\" is [" + std::to_string(H) },
        // Another size is the model at another input size: one that no patch fits is the run's failure, said.
        { "forward", { { "model", model }, { "input", zeros({ C, 1, 1 }) } }, Failed, "patch size" },
        { "forward", { { "model", model }, { "input", zeros({ C, 0, 0 }) } }, Failed, "0x0" },
        { "forward", { { "model", model }, { "image", "/nonexistent/cat.png" } }, Failed, "/nonexistent/cat.png" },
        { "forward", with(image, { { "neutreno_lambda", "high" } }), InvalidParams, "\"neutreno_lambda\"" },
        { "forward", with(image, { { "boost_t", true } }), InvalidParams, "\"boost_t\"" },
        { "forward", with(image, { { "precision", "fp8" } }), InvalidParams, "\"precision\"" },
        { "forward", with(image, { { "precision", 16 } }), InvalidParams, "\"precision\"" },
        { "forward", with(image, { { "ablate", { 1 } } }), InvalidParams, "\"ablate\"" },
        { "forward", with(image, { { "ablate", { 1, -1 } } }), InvalidParams, "\"ablate\"" },
        { "forward", with(image, { { "ablate", "1,0" } }), InvalidParams, "\"ablate\"" },
        { "forward", with(image, { { "ablate", { 1, 0 } }, { "ablation", "half" } }), InvalidParams, "\"ablation\"" },
        // A head outside the model is the engine's refusal, naming it (the client cannot know the model's shape first).
        { "forward", with(image, { { "ablate", { depth + 1, 0 } } }), Failed, "layer " + std::to_string(depth + 1) },
        { "forward", with(image, { { "ablate", { 1, heads } } }), Failed, "head " + std::to_string(heads) },
        // prepare: the image, and a perturbation by its spec with a seed from 0.
        { "prepare", { { "model", model } }, InvalidParams, "\"image\" is missing" },
        { "prepare", { { "model", "one" }, { "image", kBoot } }, InvalidParams, "\"model\" is \"one\"" },
        { "prepare", { { "model", model }, { "image", "/nonexistent/cat.png" } }, Failed, "/nonexistent/cat.png" },
        { "prepare", with(image, { { "perturbation", "bogus:x=1" } }), InvalidParams, "\"perturbation\"" },
        { "prepare", with(image, { { "perturbation", 8 } }), InvalidParams, "\"perturbation\" is 8" },
        { "prepare", with(image, { { "perturbation", "gaussian:sigma=8" }, { "seed", -1 } }), InvalidParams, "\"seed\" is -1" },
        { "prepare", with(image, { { "perturbation", "gaussian:sigma=8" }, { "seed", 1.5 } }), InvalidParams, "\"seed\" is 1.5" },
        // trace_tensor: a trace kept, one of the taps by name, a layer in its range, a head of the attention only.
        { "trace_tensor", { { "trace", 999 }, { "tensor", "input" } }, InvalidParams, "no trace 999" },
        { "trace_tensor", { { "tensor", "input" } }, InvalidParams, "\"trace\" is missing" },
        { "trace_tensor", { { "trace", trace } }, InvalidParams, "\"tensor\" is missing" },
        { "trace_tensor", { { "trace", trace }, { "tensor", 5 } }, InvalidParams, "\"tensor\" is 5" },
        { "trace_tensor", { { "trace", trace }, { "tensor", "weights" } }, InvalidParams, "\"tensor\" is \"weights\"" },
        { "trace_tensor", { { "trace", trace }, { "tensor", "attention" } }, InvalidParams, "\"layer\" is missing" },
        { "trace_tensor", { { "trace", trace }, { "tensor", "attention" }, { "layer", 0 } }, InvalidParams, "attention of layer 0: the trace's layers are " + layers },
        { "trace_tensor", { { "trace", trace }, { "tensor", "attn_branch" }, { "layer", depth + 1 } }, InvalidParams, "the trace's layers are " + layers },
        { "trace_tensor", { { "trace", trace }, { "tensor", "residual" }, { "layer", depth + 1 } }, InvalidParams, "the trace's layers are " + layers },
        { "trace_tensor", { { "trace", trace }, { "tensor", "block" }, { "layer", -1 } }, InvalidParams, "the trace's layers are 0 to " + lastLayer },
        { "trace_tensor", { { "trace", trace }, { "tensor", "block" }, { "layer", depth + 1 } }, InvalidParams, "the trace's layers are 0 to " + lastLayer },
        { "trace_tensor", { { "trace", trace }, { "tensor", "attention" }, { "layer", 1 }, { "head", heads } }, InvalidParams,
          "\"head\" " + std::to_string(heads) + ": one of the attention's heads 0 to " + std::to_string(heads - 1) },
        { "trace_tensor", { { "trace", trace }, { "tensor", "attention" }, { "layer", 1 }, { "head", -1 } }, InvalidParams, "\"head\" -1" },
        { "trace_tensor", { { "trace", trace }, { "tensor", "attention" }, { "layer", 1 }, { "head", "all" } }, InvalidParams, "\"head\" is \"all\"" },
        { "trace_tensor", { { "trace", trace }, { "tensor", "residual" }, { "layer", 1 }, { "head", 0 } }, InvalidParams, "\"head\" 0" },
        { "trace_tensor", { { "trace", trace }, { "tensor", "rollout" }, { "rollout", "mean" } }, InvalidParams, "\"rollout\" is \"mean\"" },
        { "trace_tensor", { { "trace", trace }, { "tensor", "rollout" }, { "rollout", { { "fusion", "median" } } } }, InvalidParams, "\"rollout\"" },
        { "trace_tensor", { { "trace", trace }, { "tensor", "rollout" }, { "rollout", { { "discard", 1 } } } }, InvalidParams, "discard 1" },
    };
    for (const auto& [method, params, code, said] : cases)
        expectRefused(call(server, method, params), code, said, method + " " + params.dump().substr(0, 200));

    // The edges of each range are answered: block 0 (the embedding), the last layer's last head, the rollout.
    for (const json& params : { json { { "trace", trace }, { "tensor", "block" }, { "layer", 0 } },
                                json { { "trace", trace }, { "tensor", "attention" }, { "layer", depth }, { "head", heads - 1 } },
                                json { { "trace", trace }, { "tensor", "rollout" }, { "rollout", { { "fusion", "max" }, { "discard", 0.5 } } } } })
        EXPECT_TRUE(call(server, "trace_tensor", params).contains("result")) << params.dump();

    // An answer that a frame would not hold is refused saying so (and, for the attention, to ask a head at a time);
    // one head of it fits. The server bounded so that the whole attention of a layer does not fit and a head does.
    auto attention = decodeTensor(call(server, "trace_tensor", { { "trace", trace }, { "tensor", "attention" }, { "layer", 1 } })["result"]["tensor"]);
    ASSERT_TRUE(attention) << attention.message();
    const int64_t N = attention->shape()[1];
    ServerOptions bounded = options;
    bounded.limits.maxFrameBytes = (size_t(1) << 20) + size_t(N * N) * 4;
    Server small(bounded);
    const int64_t smallModel = call(small, "load_model", { { "path", "builtin:fmnist-vit-d4" } })["result"]["model"];
    const json smallTrace = call(small, "forward", { { "model", smallModel }, { "image", kBoot } });
    ASSERT_TRUE(smallTrace.contains("result")) << smallTrace.dump().substr(0, 400);
    expectRefused(call(small, "trace_tensor", { { "trace", smallTrace["result"]["trace"] }, { "tensor", "attention" }, { "layer", 1 } }), Failed,
                  "ask one head at a time", "a layer's attention past the frame");
    EXPECT_TRUE(call(small, "trace_tensor", { { "trace", smallTrace["result"]["trace"] }, { "tensor", "attention" }, { "layer", 1 }, { "head", 0 } })
                    .contains("result"));
    std::filesystem::remove_all(options.filesDir);
}

TEST(RemoteMethods, ARestoreOfAnotherShapeIsRefusedByName)
{
    ServerOptions options;
    options.filesDir = (fs::temp_directory_path() / ("attnscope-methods-restore-" + std::to_string(::getpid()))).string();
    Server server(options);
    const json loaded = call(server, "load_model", { { "path", "builtin:fmnist-vit-d4" } });
    ASSERT_TRUE(loaded.contains("result")) << loaded.dump();
    const int64_t model = loaded["result"]["model"];
    const json stats = { { "similarity/layer1", { 2, 0.5, 0.25 } } };
    const std::vector<std::tuple<json, std::string>> cases = {
        { 3, "\"restore\": not {\"stats\": ..., \"images\": N}" },
        { { { "images", 2 } }, "\"restore\": the statistics are not an object" },
        { { { "stats", { 1, 2, 3 } }, { "images", 2 } }, "\"restore\": the statistics are not an object" },
        { { { "stats", { { "k", { 1, 2 } } } }, { "images", 2 } }, "\"restore\": the statistic \"k\" is not [count, mean, m2]" },
        { { { "stats", { { "k", { -1, 0.0, 0.0 } } } }, { "images", 2 } }, "the statistic \"k\" is not [count, mean, m2]" },
        { { { "stats", { { "k", { 1, "mean", 0.0 } } } }, { "images", 2 } }, "the statistic \"k\" is not [count, mean, m2]" },
        { { { "stats", { { "k", 1 } } }, { "images", 2 } }, "the statistic \"k\" is not [count, mean, m2]" },
        { { { "stats", stats } }, "\"restore\": images is null, not a count" },
        { { { "stats", stats }, { "images", -1 } }, "\"restore\": images is -1, not a count" },
        { { { "stats", stats }, { "images", "2" } }, "\"restore\": images is \"2\", not a count" },
        { { { "stats", stats }, { "images", 1.5 } }, "\"restore\": images is 1.5, not a count" },
    };
    for (const auto& [restore, said] : cases)
        expectRefused(call(server, "set_start", { { "model", model }, { "options", json::object() }, { "restore", restore } }), InvalidParams, said,
                      "restore " + restore.dump());
    // A refused start keeps no run: the host still has room for all of its runs.
    for (size_t i = 0; i < Server::kMaxSetRuns; ++i)
        ASSERT_TRUE(call(server, "set_start", { { "model", model }, { "options", json::object() } }).contains("result")) << i;
    // A restore of the right shape is taken, and is what the run's summary then says.
    ASSERT_TRUE(call(server, "release_model", { { "model", model } }).contains("result"));
    const int64_t again = call(server, "load_model", { { "path", "builtin:fmnist-vit-d4" } })["result"]["model"];
    const json restored = call(server, "set_start", { { "model", again }, { "options", json::object() }, { "restore", { { "stats", stats }, { "images", 2 } } } });
    ASSERT_TRUE(restored.contains("result")) << restored.dump();
    const json summary = call(server, "set_summary", { { "run", restored["result"]["run"] } });
    ASSERT_TRUE(summary.contains("result")) << summary.dump();
    EXPECT_EQ(summary["result"]["images"], 2);
    EXPECT_EQ(summary["result"]["stats"].dump(), stats.dump());
    std::filesystem::remove_all(options.filesDir);
}

TEST(RemoteMethods, ARunRestoredFromItsFirstImagesEndsAsTheUncutRunToTheBit)
{
    ServerOptions options;
    options.filesDir = (fs::temp_directory_path() / ("attnscope-methods-resumed-" + std::to_string(::getpid()))).string();
    Server server(options);
    const json loaded = call(server, "load_model", { { "path", "builtin:fmnist-vit-d4" } });
    ASSERT_TRUE(loaded.contains("result")) << loaded.dump();
    const int64_t model = loaded["result"]["model"];
    // Analyses whose numbers hang on each image's index (its perturbations' seeds), so that a restore at the wrong
    // place could not pass.
    const json analyses = { { "similarity", true },    { "attention", true }, { "centres", true },
                            { "snr", true },           { "norms", true },     { "perturbations", { "gaussian:sigma=8" } },
                            { "draws", 2 },            { "seed", 7 } };
    const json whole = call(server, "set_start", { { "model", model }, { "options", analyses } });
    ASSERT_TRUE(whole.contains("result")) << whole.dump();
    const int64_t batch = whole["result"]["batch"];
    ASSERT_GE(batch, 1);
    // The samples, again as often as it takes for more than two of the host's batches (64 images on a GPU): each
    // place in the set is an image of its own to the run, whose noise is seeded by its index.
    std::vector<std::string> images;
    while (images.size() < size_t(2 * batch + 3) || images.size() < 6)
        for (const auto& image : samples())
            images.push_back(image);
    const auto feed = [&](const json& run, size_t from, size_t to) {
        json paths = json::array(), indices = json::array();
        for (size_t i = from; i < to; ++i) {
            paths.push_back(images[i]);
            indices.push_back(i);
        }
        const json added = call(server, "set_add", { { "run", run }, { "images", paths }, { "indices", indices } });
        EXPECT_TRUE(added.contains("result")) << added.dump().substr(0, 400);
        EXPECT_TRUE(added["result"]["skipped"].empty()) << added.dump().substr(0, 400);
    };
    const auto summary = [&](const json& run) {
        const json s = call(server, "set_summary", { { "run", run } });
        EXPECT_TRUE(s.contains("result")) << s.dump().substr(0, 400);
        return s["result"];
    };

    // The uncut run: every image.
    feed(whole["result"]["run"], 0, images.size());
    const json uncut = summary(whole["result"]["run"]);
    ASSERT_EQ(uncut["images"], images.size());

    // The run cut after its first K images (a whole number of the host's batches, where a window's step ends), its
    // statistics carried over the wire (MessagePack, as the window's journal has them) into a run on a new start.
    const size_t K = size_t(batch) * std::max<size_t>(1, (images.size() / 2) / size_t(batch));
    ASSERT_LT(K, images.size());
    const json first = call(server, "set_start", { { "model", model }, { "options", analyses } });
    ASSERT_TRUE(first.contains("result")) << first.dump();
    feed(first["result"]["run"], 0, K);
    const json cut = summary(first["result"]["run"]);
    ASSERT_EQ(cut["images"], K);
    auto carried = decodeMessage(encodeMessage(request(1, "set_start", { { "model", model }, { "options", analyses },
                                                                         { "restore", { { "stats", cut["stats"] }, { "images", cut["images"] } } } })));
    ASSERT_TRUE(carried) << carried.message();
    const json resumed = call(server, "set_start", (*carried)["params"]);
    ASSERT_TRUE(resumed.contains("result")) << resumed.dump();
    EXPECT_EQ(summary(resumed["result"]["run"])["images"], K);
    feed(resumed["result"]["run"], K, images.size());
    const json goneOn = summary(resumed["result"]["run"]);
    EXPECT_EQ(goneOn["images"], images.size());
    EXPECT_EQ(goneOn["radius"], uncut["radius"]);
    // The statistics, every key's count, mean and M2, to the bit (the JSON's numbers are written round-trip exact).
    EXPECT_EQ(goneOn["stats"].dump(), uncut["stats"].dump());
    EXPECT_GT(uncut["stats"].size(), 10u); // the analyses asked for made statistics to compare
    std::filesystem::remove_all(options.filesDir);
}

// A whole number past the range the handler keeps it in is refused, not taken as another one (it once wrapped).
TEST(RemoteMethods, NumbersPastTheirRangeAreRefusedNotWrapped)
{
    ServerOptions options;
    options.filesDir = (fs::temp_directory_path() / ("attnscope-methods-wrap-" + std::to_string(::getpid()))).string();
    Server server(options);
    const json loaded = call(server, "load_model", { { "path", "builtin:fmnist-vit-d4" } });
    ASSERT_TRUE(loaded.contains("result")) << loaded.dump();
    const int64_t model = loaded["result"]["model"];
    // forward's "ablate" [layer, head] is kept in ints: 2^32 + 1 was once run as layer 1.
    expectRefused(call(server, "forward", { { "model", model }, { "image", kBoot }, { "ablate", { 4294967297ll, 0 } } }), InvalidParams, "\"ablate\"",
                  "ablate [2^32 + 1, 0]");
    // set_start's "restore": a count or an image total of 2^63 or more was once read as -1 images.
    const uint64_t huge = 18446744073709551615ull;
    expectRefused(call(server, "set_start", { { "model", model }, { "options", json::object() },
                                              { "restore", { { "stats", json::object() }, { "images", huge } } } }),
                  InvalidParams, "images", "restore images 2^64 - 1");
    expectRefused(call(server, "set_start", { { "model", model }, { "options", json::object() },
                                              { "restore", { { "stats", { { "k", { huge, 0.5, 0.0 } } } }, { "images", 1 } } } }),
                  InvalidParams, "\"k\"", "restore count 2^64 - 1");
    std::filesystem::remove_all(options.filesDir);
}

TEST(RemoteReports, WrongParamsAreRefusedByName)
{
    const HostCache cache("reports-params");
    Host host(cache.path);
    ASSERT_TRUE(host.started());
    const json model = host.ok("load_model", { { "path", "builtin:fmnist-vit-d4" } })["model"];
    ASSERT_TRUE(model.is_number_integer());
    const std::string token = "00112233445566778899aabbccddeeff";
    const json good = { { "model", model },         { "model_name", "fmnist-vit-d4" },     { "images", { kBoot } },
                        { "spec", json::object() }, { "formats", "none" },                 { "out", { { "staging", token } } } };
    // `good` with one key changed, or left out (null).
    const auto but = [&](const std::string& key, const json& value) {
        json params = good;
        if (value.is_null())
            params.erase(key);
        else
            params[key] = value;
        return params;
    };
    const std::string zeros(64, '0');
    const std::vector<std::tuple<json, int, std::string>> cases = {
        { but("model", nullptr), InvalidParams, "\"model\" is missing" },
        { but("model", 999), InvalidParams, "no model 999" },
        { but("model_name", nullptr), InvalidParams, "\"model_name\" is missing" },
        { but("model_name", 3), InvalidParams, "\"model_name\" is 3" },
        { but("compare", 999), InvalidParams, "no model 999" },
        { but("compare", model), InvalidParams, "\"compare_name\" is missing" },
        { but("images", json::array()), InvalidParams, "\"images\" is not a list of images" },
        { but("images", kBoot), InvalidParams, "\"images\" is not a list of images" },
        { but("images", { kBoot, 5 }), InvalidParams, "\"images[1]\" is 5" },
        { but("images", { { { "sha256", zeros } } }), InvalidParams, "no file with sha256 " + zeros },
        { but("images", { { { "sha256", "../../etc/passwd" } } }), InvalidParams, "not a sha256" },
        { but("names", { "a.png", "b.png" }), InvalidParams, "\"names\" is not a name for each image" },
        { but("names", { "" }), InvalidParams, "\"names\" is not a name for each image" },
        { but("names", "a.png"), InvalidParams, "\"names\" is not a name for each image" },
        // The run's options by Python's names (attnscope.analyze's keywords): an unknown one, a wrong type or value,
        // each said by that name.
        { but("spec", nullptr), InvalidParams, "\"spec\": the run's options are null, not an object" },
        { but("spec", { { "bogus", 1 } }), InvalidParams, "\"spec\": no run option \"bogus\"" },
        { but("spec", { { "grid-images", 1 } }), InvalidParams, "no run option \"grid-images\"" },
        { but("spec", { { "draws", "many" } }), InvalidParams, "the run option \"draws\" is \"many\", not an integer" },
        { but("spec", { { "seed", -1 } }), InvalidParams, "the run option \"seed\" is -1" },
        { but("spec", { { "draws", 0 } }), InvalidParams, "draws 0: expected 1 or more" },
        { but("spec", { { "grid_images", -1 } }), InvalidParams, "grid_images -1" },
        { but("spec", { { "analyses", "similarity,magic" } }), InvalidParams, "magic" },
        { but("spec", { { "qk_layer", 2 } }), InvalidParams, "qk_layer" },
        { but("spec", { { "checkpoint_seconds", -1 } }), InvalidParams, "checkpoint_seconds -1" },
        { but("formats", "gif"), InvalidParams, "unknown format \"gif\"" },
        { but("formats", 5), InvalidParams, "\"formats\" is 5" },
        // The folder: one the user named on the host, or a staging folder named by a token of 16 to 64 lowercase hex
        // digits (never a path: it is a name under the host's cache).
        { but("out", nullptr), InvalidParams, "\"out\" is null" },
        { but("out", "/tmp/x"), InvalidParams, "\"out\"" },
        { but("out", { { "folder", "" } }), InvalidParams, "\"out\"" },
        { but("out", { { "folder", 5 } }), InvalidParams, "\"out\"" },
        { but("out", { { "folder", "/tmp/x" }, { "staging", token } }), InvalidParams, "\"out\"" },
        { but("out", { { "staging", "0123456789ABCDEF" } }), InvalidParams, "\"out\"" },
        { but("out", { { "staging", "0123456789abcde" } }), InvalidParams, "\"out\"" },
        { but("out", { { "staging", std::string(65, 'a') } }), InvalidParams, "\"out\"" },
        { but("out", { { "staging", "../../../../../tmp/attnscope-x" } }), InvalidParams, "\"out\"" },
        { but("out", { { "staging", "0123456789abcdef/../../x" } }), InvalidParams, "\"out\"" },
        { but("out", { { "staging", 1234567890123456789 } }), InvalidParams, "\"out\"" },
        { but("out", { { "elsewhere", "/tmp/x" } }), InvalidParams, "\"out\"" },
    };
    for (const auto& [params, code, said] : cases) {
        const json reply = host.call("report_start", params);
        expectRefused(reply, code, said, "report_start " + params.dump().substr(0, 300));
        if (reply.contains("result")) // started when it should not have: ended, so that the next cases are theirs
            host.call("report_release", { { "report", reply["result"]["report"] } });
    }
    // A refused start made no folder (the staging root may be made; nothing under it).
    const fs::path root = cache.path / "attnscope" / "remote-exports";
    EXPECT_TRUE(!fs::exists(root) || fs::is_empty(root)) << root;
    EXPECT_FALSE(fs::exists("/tmp/attnscope-x"));

    // The other methods name a report by its id: one never started (or released) is said.
    const std::vector<std::tuple<std::string, json, int, std::string>> others = {
        { "report_status", json::object(), InvalidParams, "\"report\" is missing" },
        { "report_status", { { "report", "1" } }, InvalidParams, "\"report\" is \"1\", not a whole number" },
        { "report_status", { { "report", 1 } }, InvalidParams, "no report 1" },
        { "report_cancel", { { "report", 1 } }, InvalidParams, "no report 1" },
        { "report_cancel", { { "report", 1.5 } }, InvalidParams, "\"report\" is 1.5" },
        { "report_file", { { "report", 1 }, { "path", "stats.json" }, { "offset", 0 } }, InvalidParams, "no report 1" },
        { "report_release", { { "report", 1 } }, InvalidParams, "no report 1" },
        { "report_release", json::object(), InvalidParams, "\"report\" is missing" },
    };
    for (const auto& [method, params, code, said] : others)
        expectRefused(host.call(method, params), code, said, method + " " + params.dump());
    EXPECT_EQ(host.close(), 0);
}

TEST(RemoteReports, ATinyReportIsWrittenFetchedInChunksAndReleased)
{
    const HostCache cache("reports-tiny");
    Host host(cache.path);
    ASSERT_TRUE(host.started());
    const json model = host.ok("load_model", { { "path", "builtin:fmnist-vit-d4" } })["model"];
    ASSERT_TRUE(model.is_number_integer());
    const std::vector<std::string> all = samples();
    ASSERT_GE(all.size(), 3u);
    const std::vector<std::string> images(all.begin(), all.begin() + 3);
    // The names the folder records are the client's paths, not the host's.
    json names = json::array();
    for (const auto& image : images)
        names.push_back("/laptop/shots/" + fs::path(image).filename().string());
    const std::string token = "0123456789abcdef0123456789abcdef";
    const json started = host.ok("report_start", { { "model", model },
                                                   { "model_name", "fmnist-vit-d4" },
                                                   { "images", images },
                                                   { "names", names },
                                                   { "spec", { { "grid_images", 0 } } },
                                                   { "formats", "none" },
                                                   { "out", { { "staging", token } } } });
    ASSERT_TRUE(started.contains("report")) << started.dump();
    const json report = started["report"];
    const fs::path staging = cache.staging(token);
    EXPECT_EQ(started["out"], staging.string());
    EXPECT_EQ(started["total"], 3);

    const json ended = waitForReport(host, report);
    ASSERT_TRUE(ended.contains("result")) << ended.dump().substr(0, 400);
    const json& status = ended["result"];
    ASSERT_FALSE(status["running"].get<bool>()) << status.dump();
    EXPECT_EQ(status["done"], 3);
    EXPECT_EQ(status["outcome"]["complete"], true) << status.dump();
    EXPECT_EQ(status["outcome"]["done"], 3);
    EXPECT_EQ(status["outcome"]["total"], 3);
    EXPECT_EQ(status["outcome"]["skipped"], 0);
    EXPECT_EQ(status["outcome"]["resumed_at"], 0);
    // The folder's files, each with its size on the host; none of them the run's journal.
    std::map<std::string, uint64_t> files;
    for (const json& f : status["files"])
        files[f["path"].get<std::string>()] = f["size"].get<uint64_t>();
    for (const char* needed : { "manifest.json", "predictions.csv", "stats.json" })
        EXPECT_TRUE(files.count(needed)) << needed << " not in " << status["files"].dump();
    for (const auto& [path, size] : files) {
        EXPECT_EQ(path.find(".attnscope-run"), std::string::npos) << path;
        EXPECT_EQ(fs::file_size(staging / path), size) << path;
    }
    EXPECT_NE(readFile(staging / "predictions.csv").find("/laptop/shots/" + fs::path(images[0]).filename().string()), std::string::npos)
        << readFile(staging / "predictions.csv");

    // Every file fetched as the window copies it home, a chunk from where the last ended, equals the host's bytes; a
    // fetch from the middle is the file's tail, and one from its end is empty.
    for (const auto& [path, size] : files) {
        std::string fetched;
        for (uint64_t offset = 0; fetched.size() < size || size == 0;) {
            const json chunk = host.ok("report_file", { { "report", report }, { "path", path }, { "offset", offset } });
            ASSERT_EQ(chunk["size"], size) << path;
            auto bytes = decodeBytes(chunk["data"]);
            ASSERT_TRUE(bytes) << bytes.message();
            ASSERT_TRUE(!bytes->empty() || size == 0) << path << " at " << offset;
            fetched.append(bytes->begin(), bytes->end());
            offset += bytes->size();
            if (size == 0)
                break;
        }
        EXPECT_EQ(fetched, readFile(staging / path)) << path;
    }
    const std::string stats = readFile(staging / "stats.json");
    ASSERT_GT(stats.size(), 2u);
    const json tail = host.ok("report_file", { { "report", report }, { "path", "stats.json" }, { "offset", stats.size() / 2 } });
    auto tailBytes = decodeBytes(tail["data"]);
    ASSERT_TRUE(tailBytes);
    EXPECT_EQ(std::string(tailBytes->begin(), tailBytes->end()), stats.substr(stats.size() / 2));
    const json end = host.ok("report_file", { { "report", report }, { "path", "stats.json" }, { "offset", stats.size() } });
    EXPECT_TRUE(decodeBytes(end["data"]) && decodeBytes(end["data"])->empty()) << end.dump();

    // Only a file of the report's own list is sent: no path above the folder, no absolute path (even to the report's
    // own file), no other spelling of a listed one, and no file put in the folder after the list was made; so no
    // other file of the host can be read. Offsets outside the file are refused too.
    std::ofstream(staging / "later.txt") << "written after the run ended";
    std::ofstream(cache.path / "secret.txt") << "not the report's";
    const std::vector<std::tuple<json, std::string>> refused = {
        { "../x", "\"../x\" is not a file of report" },
        { "../secret.txt", "is not a file of report" },
        { "../../secret.txt", "is not a file of report" },
        { "../../../secret.txt", "is not a file of report" },
        { "../" + token + "/stats.json", "is not a file of report" },
        { (staging / "stats.json").string(), "is not a file of report" },
        { (cache.path / "secret.txt").string(), "is not a file of report" },
        { "/etc/passwd", "\"/etc/passwd\" is not a file of report" },
        { "./stats.json", "is not a file of report" },
        { "stats.json/", "is not a file of report" },
        { "later.txt", "\"later.txt\" is not a file of report" },
        { ".attnscope-run", "is not a file of report" },
        { "", "is not a file of report" },
        { 5, "\"path\" is 5, not a string" },
        { nullptr, "\"path\" is missing" },
    };
    for (const auto& [path, said] : refused) {
        json params = { { "report", report }, { "offset", 0 } };
        if (!path.is_null())
            params["path"] = path;
        const json reply = host.call("report_file", params);
        expectRefused(reply, InvalidParams, said, "report_file " + params.dump());
        EXPECT_FALSE(reply.contains("result") && reply["result"].contains("data")) << reply.dump().substr(0, 200);
    }
    for (const json& offset : { json(stats.size() + 1), json(-1), json("0"), json(1.5), json() }) {
        json params = { { "report", report }, { "path", "stats.json" } };
        if (!offset.is_null())
            params["offset"] = offset;
        expectRefused(host.call("report_file", params), InvalidParams, "\"offset\"", "report_file " + params.dump());
    }

    // Released: the staging folder is gone, and so is the report; the models are the link's again.
    EXPECT_TRUE(host.ok("report_release", { { "report", report } }).is_object());
    EXPECT_FALSE(fs::exists(staging)) << staging;
    EXPECT_TRUE(fs::exists(cache.path / "secret.txt"));
    expectRefused(host.call("report_status", { { "report", report } }), InvalidParams, "no report " + report.dump(), "a released report");
    expectRefused(host.call("report_file", { { "report", report }, { "path", "stats.json" }, { "offset", 0 } }), InvalidParams,
                  "no report " + report.dump(), "a released report's file");
    EXPECT_TRUE(host.ok("trace", { { "model", model }, { "image", kBoot }, { "keep", false } }).is_object());
    EXPECT_EQ(host.close(), 0);
}

TEST(RemoteReports, WhileOneRunsTheModelsAreItsAloneAndTheLinkStillAnswers)
{
    const HostCache cache("reports-gate");
    Host host(cache.path);
    ASSERT_TRUE(host.started());
    const json model = host.ok("load_model", { { "path", "builtin:fmnist-vit-d4" } })["model"];
    ASSERT_TRUE(model.is_number_integer());
    // A run long enough to be going through the checks below (it is cancelled after them): many images, each with
    // every head ablated and many draws of noise.
    json images = json::array();
    const std::vector<std::string> all = samples();
    for (int i = 0; i < 100; ++i)
        for (const auto& image : all)
            images.push_back(image);
    const fs::path folder = cache.path / "host-folder";
    const json params = { { "model", model },
                          { "model_name", "fmnist-vit-d4" },
                          { "images", images },
                          { "spec", { { "analyses", "similarity,attention,centres,snr,ablation" }, { "draws", 16 }, { "grid_images", 0 } } },
                          { "formats", "none" },
                          { "out", { { "folder", folder.string() } } } };
    const json started = host.ok("report_start", params);
    ASSERT_TRUE(started.contains("report")) << started.dump();
    const json report = started["report"];

    // The run's models are in use on its thread: every other method that uses a model is refused, saying why.
    for (const auto& [method, p] : std::vector<std::pair<std::string, json>> {
             { "trace", { { "model", model }, { "image", kBoot } } },
             { "forward", { { "model", model }, { "image", kBoot } } },
             { "load_model", { { "path", "builtin:fmnist-vit-d4" } } },
             { "set_start", { { "model", model }, { "options", json::object() } } },
             { "release_model", { { "model", model } } } })
        expectRefused(host.call(method, p), Failed, "the host is running Export all", method);
    // A second Export all is refused while the first goes, naming it.
    expectRefused(host.call("report_start", params), Failed, "an Export all is running already (report " + report.dump() + ")", "a second report_start");
    // Its files are not listed until it has ended.
    expectRefused(host.call("report_file", { { "report", report }, { "path", "stats.json" }, { "offset", 0 } }), Failed, "has not ended",
                  "report_file while running");
    // The link still answers what uses no model: hello, has_file, and the report's own status.
    const json hello = host.ok("hello", { { "protocol", kProtocolVersion }, { "client", "test" } });
    EXPECT_EQ(hello["protocol"], kProtocolVersion);
    const json has = host.ok("has_file", { { "sha256", std::string(64, '0') } });
    EXPECT_EQ(has["present"], false);
    const json going = host.ok("report_status", { { "report", report } });
    EXPECT_EQ(going["running"], true) << going.dump();
    EXPECT_EQ(going["total"], images.size());

    // Cancelled, it ends as a partial result; then the models are the link's again, and the folder the user named
    // stays after the release.
    EXPECT_TRUE(host.ok("report_cancel", { { "report", report } }).is_object());
    const json ended = waitForReport(host, report);
    ASSERT_TRUE(ended.contains("result")) << ended.dump().substr(0, 400);
    EXPECT_EQ(ended["result"]["running"], false);
    EXPECT_EQ(ended["result"]["outcome"]["complete"], false) << ended.dump().substr(0, 400);
    EXPECT_LT(ended["result"]["outcome"]["done"].get<int>(), int(images.size()));
    EXPECT_TRUE(host.ok("trace", { { "model", model }, { "image", kBoot }, { "keep", false } }).is_object());
    EXPECT_TRUE(host.ok("report_release", { { "report", report } }).is_object());
    EXPECT_TRUE(fs::exists(folder / "manifest.json")) << folder;
    EXPECT_EQ(host.close(), 0);
}

// A wrong "compare" is said by its own name (Server::model once named every model param "model").
TEST(RemoteReports, AWrongCompareIsSaidByItsName)
{
    const HostCache cache("reports-compare");
    Host host(cache.path);
    ASSERT_TRUE(host.started());
    const json model = host.ok("load_model", { { "path", "builtin:fmnist-vit-d4" } })["model"];
    ASSERT_TRUE(model.is_number_integer());
    const json reply = host.call("report_start", { { "model", model },
                                                   { "compare", "two" },
                                                   { "compare_name", "b" },
                                                   { "model_name", "a" },
                                                   { "images", { kBoot } },
                                                   { "spec", json::object() },
                                                   { "formats", "none" },
                                                   { "out", { { "staging", "00112233445566778899aabbccddeeff" } } } });
    expectRefused(reply, InvalidParams, "\"compare\" is \"two\"", "compare \"two\"");
    // "resume" other than true or false is refused: taken as false it would discard the folder's journal.
    expectRefused(host.call("report_start", { { "model", model }, { "model_name", "a" }, { "images", { kBoot } }, { "spec", json::object() },
                                              { "formats", "none" }, { "resume", "yes" },
                                              { "out", { { "staging", "00112233445566778899aabbccddeeff" } } } }),
                  InvalidParams, "\"resume\"", "resume \"yes\"");
    EXPECT_EQ(host.close(), 0);
}
