// The remote engine through a real ssh (docs/remote.md, issue 45): Debian's sshd started by the test on 127.0.0.1 at a
// free port, as the user the test runs as (root or not), with throwaway host and user keys in a folder of its own,
// and the real ssh client reaching it through a Host alias of its own ssh_config (no ~/.ssh, no agent, no system-wide
// config). Through it: hello, a file sent by its sha256, the model loaded and the image traced with answers bit for
// bit the local engine's; then the host's side of the session killed, and the laptop's ssh killed, each said as the
// host unreachable, with no server left running on the host. Skipped, with the reason in one line, where sshd or ssh
// is absent, cannot start, or cannot log in (e.g. an account without a passwd entry, or locked, as sshd says).
#include "RemoteTestSupport.h"

#include <RemoteClient.h>

#include <attnscope/CpuKernels.h>
#include <attnscope/Files.h>
#include <attnscope/Image.h>
#include <attnscope/Model.h>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

extern char** environ;

using namespace attnscope;
using namespace attnscope::remote;
using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

const std::string kBoot = ATTNSCOPE_SOURCE_DIR "/resources/samples/fashion-mnist/test-0000-ankle-boot.png";
const char* const kSshd = "/usr/sbin/sshd";
const char* const kSsh = "/usr/bin/ssh";
const char* const kKeygen = "/usr/bin/ssh-keygen";
const char* const kAlias = "attnscope-sshd-test"; // the Host of the test's ssh_config
// The variables the test's ssh sends and its sshd accepts: the sanitizers' options (the server is this build's
// attnscope-cli), one OpenMP thread as every test here, and the cache folder where files sent are kept.
const char* const kPassedEnv = "ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS OMP_NUM_THREADS XDG_CACHE_HOME";

std::string readFile(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string lastLine(std::string text)
{
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
        text.pop_back();
    const size_t newline = text.find_last_of('\n');
    return newline == std::string::npos ? text : text.substr(newline + 1);
}

// sshd's line that says why (a refusal, an error), not the routine ones after it: else its last line.
std::string sshdSays(const std::string& log)
{
    std::istringstream lines(log);
    std::string line, telling, last;
    while (std::getline(lines, line)) {
        if (line.empty())
            continue;
        last = line;
        bool routine = false;
        for (const char* prefix :
            { "Server listening", "Accepted publickey", "Connection closed by", "Connection reset by",
                "Received disconnect", "Disconnected from", "Received signal", "Could not chdir to home" })
            routine = routine || line.rfind(prefix, 0) == 0;
        if (!routine)
            telling = line;
    }
    return telling.empty() ? last : telling;
}

// A value for ssh_config or sshd_config, double-quoted (a temporary folder may hold spaces).
std::string quoted(const fs::path& path) { return "\"" + path.string() + "\""; }

// Starts argv[0] (an absolute path) with stdin from /dev/null and stdout and stderr into `log`.
pid_t spawn(const std::vector<std::string>& args, const fs::path& log)
{
    std::vector<char*> argv;
    for (const auto& a : args)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = -1;
    const int failed = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    return failed ? -1 : pid;
}

// Waits for `pid` at most `limit`, then kills it: its exit status, or nullopt when it was killed for the time.
std::optional<int> waitFor(pid_t pid, std::chrono::milliseconds limit)
{
    const auto until = std::chrono::steady_clock::now() + limit;
    int status = 0;
    for (;;) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (done < 0)
            return -1;
        if (std::chrono::steady_clock::now() > until) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            return std::nullopt;
        }
        std::this_thread::sleep_for(20ms);
    }
}

// Runs a short command (ssh-keygen, a login) to its end within `limit`: "" when it exited 0, else why not, as `name`.
std::string run(const std::string& name, const std::vector<std::string>& args, const fs::path& log,
    std::chrono::milliseconds limit = 30s)
{
    const pid_t pid = spawn(args, log);
    if (pid < 0)
        return "cannot run " + args[0];
    const auto status = waitFor(pid, limit);
    if (!status)
        return name + " took longer than " + std::to_string(limit.count() / 1000) + " s (killed)";
    if (*status != 0)
        return name + " exited " + std::to_string(*status) + ": " + lastLine(readFile(log));
    return "";
}

// Every process's parent, from /proc.
std::map<pid_t, pid_t> parents()
{
    std::map<pid_t, pid_t> out;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos)
            continue;
        const std::string stat = readFile(entry.path() / "stat"); // PID (COMM) STATE PPID ...; COMM may hold spaces
        const size_t close = stat.rfind(')');
        if (close == std::string::npos)
            continue;
        std::istringstream rest(stat.substr(close + 1));
        char state = 0;
        pid_t ppid = 0;
        if (rest >> state >> ppid)
            out[pid_t(std::stoi(name))] = ppid;
    }
    return out;
}

// The processes below `root` (children, theirs, ...).
std::vector<pid_t> descendants(pid_t root)
{
    const auto parent = parents();
    std::vector<pid_t> out = { root };
    for (size_t i = 0; i < out.size(); ++i)
        for (const auto& [pid, ppid] : parent)
            if (ppid == out[i])
                out.push_back(pid);
    out.erase(out.begin());
    return out;
}

// Whether `pid` has ended: gone, or a zombie waiting for whoever inherited it.
bool ended(pid_t pid)
{
    const std::string stat = readFile("/proc/" + std::to_string(pid) + "/stat");
    const size_t close = stat.rfind(')');
    return close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] == 'Z' || stat[close + 2] == 'X';
}

bool waitEnded(pid_t pid, std::chrono::milliseconds limit)
{
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!ended(pid)) {
        if (std::chrono::steady_clock::now() > until)
            return false;
        std::this_thread::sleep_for(20ms);
    }
    return true;
}

bool isServer(pid_t pid)
{
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
    return !ec && fs::equivalent(exe, ATTNSCOPE_CLI, ec);
}

// A port of 127.0.0.1 free now (the kernel's choice), or 0.
int freePort()
{
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address {};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    int port = 0;
    if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0
        && ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0)
        port = ntohs(address.sin_port);
    if (fd >= 0)
        ::close(fd);
    return port;
}

// An environment variable set for the test's time, and put back as it was.
struct ScopedEnv {
    ScopedEnv(const char* name, const std::string& value)
        : name(name)
    {
        if (const char* old = std::getenv(name))
            before = old;
        setenv(name, value.c_str(), 1);
    }
    ~ScopedEnv()
    {
        if (before)
            setenv(name, before->c_str(), 1);
        else
            unsetenv(name);
    }
    const char* name;
    std::optional<std::string> before;
};

// sshd on 127.0.0.1, its keys and configs in a folder of its own; killed, with every process of its sessions, and the
// folder removed when it goes, whatever the test's outcome.
class LocalSshd {
public:
    LocalSshd()
    {
        std::string pattern = (fs::temp_directory_path() / "attnscope-sshd-XXXXXX").string(); // 0700
        if (::mkdtemp(pattern.data()))
            dir = pattern;
        else
            dirError = std::strerror(errno);
    }
    ~LocalSshd()
    {
        stop();
        std::error_code ec;
        if (!dir.empty())
            fs::remove_all(dir, ec);
    }

    // Starts sshd and logs in once: "" when ssh reaches it, else the reason to skip, in one line.
    std::string start()
    {
        if (dir.empty())
            return "cannot make a temporary folder: " + dirError;
        for (const char* program : { kSshd, kSsh, kKeygen })
            if (::access(program, X_OK) != 0)
                return std::string(program) + " is absent (Debian's "
                    + (program == kSshd ? "openssh-server" : "openssh-client") + ")";
        // ssh and sshd log in the user of this process's uid, as its passwd entry says (HOME is not read).
        const passwd* pw = ::getpwuid(::getuid());
        if (!pw)
            return "uid " + std::to_string(::getuid()) + " has no passwd entry: ssh cannot log in as it";
        user = pw->pw_name;
        // As root, sshd runs each login's pre-authentication half in /run/sshd (its privilege separation), which
        // the ssh service's start makes; a root where the service never started (a chroot, a container) has none.
        // It is left there after (empty, as the service leaves it): another sshd started meanwhile may be using it.
        if (::geteuid() == 0 && ::access("/run/sshd", F_OK) != 0 && ::mkdir("/run/sshd", 0755) != 0 && errno != EEXIST)
            return std::string("sshd needs /run/sshd when run as root, and it cannot be made: ") + std::strerror(errno);
        for (const char* key : { "host_key", "user_key" })
            if (auto failed = run("ssh-keygen",
                    { kKeygen, "-q", "-t", "ed25519", "-N", "", "-C", "attnscope-test", "-f", (dir / key).string() },
                    dir / "keygen.log");
                !failed.empty())
                return failed;
        // The user key may do nothing but run the command (no forwarding, no pty, no ~/.ssh/rc).
        std::ofstream(dir / "authorized_keys") << "restrict " << readFile(dir / "user_key.pub");
        // The host key known under the alias: the host is checked strictly, as a user's known_hosts would.
        std::ofstream(dir / "known_hosts") << kAlias << " " << readFile(dir / "host_key.pub");
        ::chmod((dir / "authorized_keys").c_str(), 0600);

        std::string why;
        for (int attempt = 0; attempt < 3; ++attempt) { // a port taken between freePort and sshd's bind: another
            why = listen();
            if (why.empty() || log().find("Address already in use") == std::string::npos)
                break;
        }
        if (!why.empty())
            return why;
        writeClientConfig();
        // One login first, bounded: a refusal (a locked account, a shell that is no shell) is said as sshd says it.
        if (auto failed = run("ssh", { wrapper().string(), kAlias, "exec true" }, dir / "login.log"); !failed.empty())
            return "ssh did not log " + user + " in to the test's sshd on 127.0.0.1:" + std::to_string(port) + ": "
                + failed + " (sshd: " + sshdSays(log()) + ")";
        return "";
    }

    // Kills the processes of the sessions on the host's side (sshd's children and theirs), except the servers,
    // which are left to see their input end.
    void killSessions()
    {
        for (pid_t pid : descendants(sshd))
            if (!isServer(pid))
                ::kill(pid, SIGKILL);
    }
    // The attnscope-cli processes that sshd's sessions run.
    std::vector<pid_t> servers()
    {
        std::vector<pid_t> out;
        for (pid_t pid : descendants(sshd))
            if (isServer(pid))
                out.push_back(pid);
        return out;
    }

    fs::path wrapper() const { return dir / "ssh"; }
    std::string log() const { return readFile(dir / "sshd.log"); }

    fs::path dir;
    std::string user;
    int port = 0;

private:
    std::string listen()
    {
        port = freePort();
        if (port == 0)
            return "no free port on 127.0.0.1";
        std::ofstream(dir / "sshd_config") << "ListenAddress 127.0.0.1\n"
                                           << "Port " << port << "\n"
                                           << "HostKey " << quoted(dir / "host_key") << "\n"
                                           << "PidFile " << quoted(dir / "sshd.pid") << "\n"
                                           << "AuthorizedKeysFile " << quoted(dir / "authorized_keys") << "\n"
                                           << "AllowUsers " << user << "\n"
                                           << "StrictModes no\n"
                                           << "UsePAM no\n"
                                           << "PubkeyAuthentication yes\n"
                                           << "PasswordAuthentication no\n"
                                           << "KbdInteractiveAuthentication no\n"
                                           << "PermitRootLogin prohibit-password\n"
                                           << "PermitUserRC no\n"
                                           << "PermitTTY no\n"
                                           << "X11Forwarding no\n"
                                           << "AllowTcpForwarding no\n"
                                           << "AllowAgentForwarding no\n"
                                           << "PrintMotd no\n"
                                           << "AcceptEnv " << kPassedEnv << "\n"
                                           << "LogLevel INFO\n";
        fs::remove(dir / "sshd.log");
        // -D: in the foreground, this process its parent; -e: its log on stderr, into sshd.log, which says when it
        // listens.
        sshd = spawn({ kSshd, "-D", "-e", "-f", (dir / "sshd_config").string() }, dir / "sshd.log");
        if (sshd < 0)
            return std::string("cannot run ") + kSshd;
        const auto until = std::chrono::steady_clock::now() + 20s;
        while (std::chrono::steady_clock::now() < until) {
            int status = 0;
            if (::waitpid(sshd, &status, WNOHANG) == sshd) {
                sshd = -1;
                return std::string("sshd did not start: ") + sshdSays(log());
            }
            if (log().find("Server listening on 127.0.0.1 port " + std::to_string(port)) != std::string::npos)
                return "";
            std::this_thread::sleep_for(50ms);
        }
        stop();
        return "sshd did not listen on 127.0.0.1:" + std::to_string(port) + " within 20 s: " + sshdSays(log());
    }

    void writeClientConfig()
    {
        std::ofstream(dir / "ssh_config") << "Host " << kAlias << "\n"
                                          << "    HostName 127.0.0.1\n"
                                          << "    Port " << port << "\n"
                                          << "    User " << user << "\n"
                                          << "    HostKeyAlias " << kAlias << "\n"
                                          << "    UserKnownHostsFile " << quoted(dir / "known_hosts") << "\n"
                                          << "    GlobalKnownHostsFile /dev/null\n"
                                          << "    StrictHostKeyChecking yes\n"
                                          << "    IdentityFile " << quoted(dir / "user_key") << "\n"
                                          << "    IdentitiesOnly yes\n"
                                          << "    IdentityAgent none\n"
                                          << "    BatchMode yes\n"
                                          << "    PasswordAuthentication no\n"
                                          << "    KbdInteractiveAuthentication no\n"
                                          << "    ConnectTimeout 10\n"
                                          << "    ServerAliveInterval 5\n"
                                          << "    ServerAliveCountMax 3\n"
                                          << "    ControlMaster no\n"
                                          << "    ControlPath none\n"
                                          << "    ForwardAgent no\n"
                                          << "    ForwardX11 no\n"
                                          << "    ClearAllForwardings yes\n"
                                          << "    SendEnv " << kPassedEnv << "\n";
        // ATTNSCOPE_SSH's program, called as ssh is (HOST COMMAND): the real ssh with the test's config alone
        // (-F: neither ~/.ssh/config nor /etc/ssh/ssh_config is read) and the options the client gives ssh.
        std::string config = (dir / "ssh_config").string(), escaped;
        for (char c : config)
            escaped += c == '\'' ? std::string("'\\''") : std::string(1, c);
        std::ofstream(wrapper()) << "#!/bin/sh\nexec " << kSsh << " -F '" << escaped
                                 << "' -T -o BatchMode=yes \"$@\"\n";
        ::chmod(wrapper().c_str(), 0755);
    }

    void stop()
    {
        if (sshd <= 0)
            return;
        for (pid_t pid : descendants(sshd))
            ::kill(pid, SIGKILL);
        ::kill(sshd, SIGTERM);
        if (!waitFor(sshd, 5s))
            ADD_FAILURE() << "sshd did not end within 5 s of SIGTERM (killed)";
        sshd = -1;
    }

    pid_t sshd = -1;
    std::string dirError;
};

// Waits for the link's session to start its server on the host (the first call has answered, so it has).
std::vector<pid_t> serversOf(LocalSshd& sshd)
{
    for (int i = 0; i < 100; ++i) {
        auto servers = sshd.servers();
        if (!servers.empty())
            return servers;
        std::this_thread::sleep_for(20ms);
    }
    return {};
}

} // namespace

TEST(RemoteSsh, ThroughARealSshdTheAnswersAreTheLocalEnginesAndADropIsSaid)
{
    LocalSshd sshd;
    if (const std::string why = sshd.start(); !why.empty())
        GTEST_SKIP() << why;
    const ScopedEnv ssh("ATTNSCOPE_SSH", sshd.wrapper().string());
    // The host's cache (files sent) and the client's hashes in the test's folder; sent through ssh (SendEnv).
    const ScopedEnv cache("XDG_CACHE_HOME", (sshd.dir / "cache").string());
    const ScopedEnv threads("OMP_NUM_THREADS", "1");

    auto endpoint = parseEndpoint(std::string(kAlias) + ":" + ATTNSCOPE_CLI);
    ASSERT_TRUE(endpoint) << endpoint.message();
    auto connection = Connection::open(*endpoint);
    ASSERT_TRUE(connection) << connection.message() << "\nsshd: " << sshd.log();
    Connection& c = **connection;
    EXPECT_EQ(c.hello()["protocol"], kProtocolVersion);
    EXPECT_EQ(c.hello()["server"], std::string("attnscope-cli ") + version());
    EXPECT_EQ(c.hello()["device"], libtorchHasCuda() ? "cuda:0" : "cpu");
    // The server runs under sshd, a login of this user: not a child of this process.
    const auto servers = serversOf(sshd);
    ASSERT_EQ(servers.size(), 1u) << "the server under sshd";

    // The image crosses by its sha256, once, into the cache sent through ssh; the second send on the link is nothing.
    auto sent = c.sendFile(kBoot);
    ASSERT_TRUE(sent) << sent.message();
    EXPECT_EQ((*sent)["sha256"], *sha256File(kBoot));
    const int64_t before = c.requestsSent();
    auto again = c.sendFile(kBoot);
    ASSERT_TRUE(again) << again.message();
    EXPECT_EQ(c.requestsSent(), before);
    EXPECT_TRUE(fs::exists(sshd.dir / "cache" / "attnscope" / "remote-files" / (*sent)["sha256"].get<std::string>()))
        << "the host kept it where XDG_CACHE_HOME, sent through ssh, says";

    auto loaded = c.call("load_model", { { "path", "builtin:fmnist-vit" } });
    ASSERT_TRUE(loaded) << loaded.message();
    auto traced = c.call("trace", { { "model", (*loaded)["model"] }, { "image", *sent } });
    ASSERT_TRUE(traced) << traced.message();

    // The reference: the same model and image in this process.
    auto model = Model::load("builtin:fmnist-vit");
    ASSERT_TRUE(model) << model.message();
    auto image = decodeImage(kBoot);
    ASSERT_TRUE(image);
    auto prepared = (*model)->prepare(*image);
    ASSERT_TRUE(prepared);
    RunOptions options;
    options.record = RecordSpec::everything();
    auto trace = (*model)->run(prepared->input, options);
    ASSERT_TRUE(trace) << trace.message();
    EXPECT_EQ((*loaded)["info"]["layers"], trace->depth);

    remotetest::expectTheLocalTrace(c, *traced, *trace, prepared->shown);
    if (testing::Test::HasFatalFailure())
        return;

    // The host's side of the session killed (its sshd processes gone, as when the host drops the link): the call
    // returns, naming the host, and the server on the host, its input ended, exits.
    sshd.killSessions();
    auto after = c.call("attention_rows", { { "trace", (*traced)["trace"] }, { "query", 0 } });
    ASSERT_FALSE(after);
    std::cout << "[ said     ] " << after.message() << "\n";
    EXPECT_EQ(after.message().rfind(std::string(kAlias) + ": the engine is unreachable (", 0), 0u) << after.message();
    EXPECT_FALSE(c.alive());
    for (pid_t pid : servers)
        EXPECT_TRUE(waitEnded(pid, 20s)) << "the server " << pid << " outlived its session";

    // The next link is made anew, the file already on the host; then the laptop's ssh killed: said the same way,
    // and the host's sshd ends the session and the server with it.
    auto second = Connection::open(*endpoint);
    ASSERT_TRUE(second) << second.message() << "\nsshd: " << lastLine(sshd.log());
    const int64_t start = (*second)->requestsSent();
    ASSERT_TRUE((*second)->sendFile(kBoot));
    EXPECT_EQ((*second)->requestsSent(), start + 1) << "the host kept the file across links";
    const auto secondServers = serversOf(sshd);
    ASSERT_EQ(secondServers.size(), 1u);
    ::kill((*second)->serverProcess(), SIGKILL); // the wrapper exec'd ssh: this is ssh
    auto cut = (*second)->call("hello", { { "protocol", kProtocolVersion } });
    ASSERT_FALSE(cut);
    std::cout << "[ said     ] " << cut.message() << "\n";
    EXPECT_EQ(cut.message().rfind(std::string(kAlias) + ": the engine is unreachable (", 0), 0u) << cut.message();
    EXPECT_TRUE(waitEnded(secondServers[0], 20s)) << "the server outlived the ssh that reached it";
}
