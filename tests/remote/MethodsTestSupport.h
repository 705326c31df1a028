#pragma once

// What the remote method tests share (MethodsTest.cpp, ReportMethodsTest.cpp): a request handled in process, the
// built attnscope-cli reached through the ssh stand-in (Host), the sample images, and the check that a request is
// refused with its code and a message naming what is wrong.
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

namespace methodstest {

using namespace attnscope;
using namespace attnscope::remote;
using json = nlohmann::json;


inline const std::string kBoot = ATTNSCOPE_SOURCE_DIR "/resources/samples/fashion-mnist/test-0000-ankle-boot.png";

inline json call(Server& server, const std::string& method, json params)
{
    static int64_t id = 1;
    auto reply = server.handle(request(id++, method, std::move(params)));
    return reply ? *reply : json();
}

namespace fs = std::filesystem;

inline const std::string kSamples = ATTNSCOPE_SOURCE_DIR "/resources/samples/fashion-mnist";

// The sample images, in name order (test-0000-ankle-boot.png first).
inline std::vector<std::string> samples()
{
    std::vector<std::string> paths;
    for (const auto& e : fs::directory_iterator(kSamples))
        if (e.path().extension() == ".png")
            paths.push_back(e.path().string());
    std::sort(paths.begin(), paths.end());
    return paths;
}

inline std::string readFile(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Each case's request is refused with its code and a message that holds `said` (the param's name, or its value).
inline void expectRefused(const json& reply, int code, const std::string& said, const std::string& what)
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
inline json waitForReport(Host& host, const json& report)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
    for (;;) {
        const json reply = host.call("report_status", { { "report", report } });
        if (!reply.contains("result") || !reply["result"]["running"].get<bool>() || std::chrono::steady_clock::now() > deadline)
            return reply;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}


} // namespace methodstest
