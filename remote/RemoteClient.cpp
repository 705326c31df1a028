#include "RemoteClient.h"

#include <algorithm>

#include <attnscope/Files.h>
#include <attnscope/Model.h>

#include <chrono>
#include <csignal>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace attnscope::remote {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A word for the remote shell: single-quoted, as ssh hands its command to the user's shell on the host.
std::string shellWord(const std::string& word)
{
    std::string out = "'";
    for (char c : word)
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

void closeFd(int& fd)
{
    if (fd >= 0)
        ::close(fd);
    fd = -1;
}

} // namespace

Result<Endpoint> parseEndpoint(const std::string& text)
{
    Endpoint e;
    const size_t colon = text.find(':');
    e.host = text.substr(0, colon);
    if (colon != std::string::npos) {
        e.cli = text.substr(colon + 1);
        if (e.cli.empty())
            return Error { "\"" + text + "\": nothing after ':' (the path of attnscope-cli on the host)" };
    }
    const size_t at = e.host.find('@');
    if (e.host.empty() || at == 0 || at + 1 == e.host.size())
        return Error { "\"" + text + "\" is not [USER@]HOST[:PATH]" };
    if (e.host.front() == '-' || e.host.find_first_of(" \t\n'\"\\;|&$`") != std::string::npos)
        return Error { "\"" + text + "\": a host name has no spaces, quotes or shell characters, and starts with no '-'" };
    return e;
}

Connection::Connection(Endpoint endpoint, Limits limits)
    : m_endpoint(std::move(endpoint))
    , m_limits(limits)
    , m_reader(limits)
{
}

Connection::~Connection()
{
    if (m_pid > 0 && m_toServer >= 0) {
        // Asked, not killed: the server ends its loop and exits; ssh follows when its channel closes.
        const std::string bye = frame(encodeMessage(json { { "jsonrpc", "2.0" }, { "method", "shutdown" }, { "params", json::object() } }));
        [[maybe_unused]] const ssize_t n = ::write(m_toServer, bye.data(), bye.size());
    }
    close();
}

bool Connection::running()
{
    if (m_pid > 0 && ::waitpid(m_pid, nullptr, WNOHANG) == m_pid) {
        m_pid = -1; // reaped
        close();
    }
    return m_pid > 0;
}

void Connection::close()
{
    closeFd(m_toServer);
    closeFd(m_fromServer);
    closeFd(m_errors);
    if (m_pid > 0) {
        // A server that does not go within two seconds of its input closing is stopped.
        for (int i = 0; i < 200; ++i) {
            if (::waitpid(m_pid, nullptr, WNOHANG) == m_pid) {
                m_pid = -1;
                return;
            }
            ::usleep(10000);
        }
        ::kill(m_pid, SIGTERM);
        ::waitpid(m_pid, nullptr, 0);
        m_pid = -1;
    }
}

Status Connection::start()
{
    const char* stand = std::getenv("ATTNSCOPE_SSH");
    const std::string ssh = stand && *stand ? stand : "ssh";
    // BatchMode: the window has no terminal to answer a password or host-key prompt with; ssh says so and fails.
    std::vector<std::string> args = { ssh };
    if (!(stand && *stand))
        args.insert(args.end(), { "-T", "-o", "BatchMode=yes" });
    args.push_back(m_endpoint.host);
    args.push_back("exec " + shellWord(m_endpoint.cli) + " serve --stdio"); // exec: the server is the process ssh waits on
    // Everything the child needs is made before fork: between fork and exec a threaded process may not allocate.
    std::vector<char*> argv;
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string cannot = "cannot run " + args.front() + "\n";
    int in[2], out[2], err[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
        return Error { std::string("cannot make the pipes to ssh: ") + std::strerror(errno) };
    const pid_t pid = ::fork();
    if (pid < 0)
        return Error { std::string("cannot start ssh: ") + std::strerror(errno) };
    if (pid == 0) {
        ::dup2(in[0], 0);
        ::dup2(out[1], 1);
        ::dup2(err[1], 2);
        ::execvp(argv[0], argv.data());
        [[maybe_unused]] const ssize_t n = ::write(2, cannot.data(), cannot.size());
        ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    m_pid = pid;
    m_toServer = in[1];
    m_fromServer = out[0];
    m_errors = err[0];
    ::fcntl(m_errors, F_SETFL, ::fcntl(m_errors, F_GETFL) | O_NONBLOCK);
    std::signal(SIGPIPE, SIG_IGN); // a server gone mid-write is an error returned, not a signal
    return Done {};
}

void Connection::readStderr()
{
    char buffer[4096];
    for (;;) {
        const ssize_t n = ::read(m_errors, buffer, sizeof buffer);
        if (n <= 0)
            return;
        m_stderrTail.append(buffer, size_t(n));
        if (m_stderrTail.size() > 8192)
            m_stderrTail.erase(0, m_stderrTail.size() - 8192);
    }
}

Error Connection::unreachable(const std::string& why)
{
    if (m_errors >= 0)
        readStderr();
    std::string last = m_stderrTail;
    while (!last.empty() && (last.back() == '\n' || last.back() == '\r'))
        last.pop_back();
    last = last.substr(last.find_last_of('\n') == std::string::npos ? 0 : last.find_last_of('\n') + 1);
    close();
    return Error { m_endpoint.host + ": the engine is unreachable (" + why + ")" + (last.empty() ? "" : ": " + last) };
}

Result<json> Connection::call(const std::string& method, json params)
{
    if (m_pid <= 0)
        return Error { m_endpoint.host + ": the engine is unreachable (the link is closed)" };
    const auto started = std::chrono::steady_clock::now();
    const int64_t id = m_nextId++;
    const std::string bytes = frame(encodeMessage(request(id, method, std::move(params))));
    for (size_t done = 0; done < bytes.size();) {
        const ssize_t n = ::write(m_toServer, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return unreachable("the link closed while sending");
        done += size_t(n);
        m_bytesSent += n;
    }
    std::vector<char> buffer(size_t(1) << 16);
    for (;;) {
        while (auto body = m_reader.next()) {
            auto message = decodeMessage(*body, m_limits);
            if (!message)
                return unreachable("the server sent " + message.message());
            const json& reply = *message;
            if (!reply.contains("id") || reply["id"] != id)
                continue; // a late answer to a request given up on
            m_lastRoundTripMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
            m_recentMs.push_back(m_lastRoundTripMs);
            if (m_recentMs.size() > 16)
                m_recentMs.pop_front();
            if (reply.contains("error")) {
                const json& e = reply["error"];
                return Error { e.is_object() && e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>()
                                                                                                     : std::string("an error without a message") };
            }
            return reply["result"];
        }
        pollfd fds[2] = { { m_fromServer, POLLIN, 0 }, { m_errors, POLLIN, 0 } };
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return unreachable(std::strerror(errno));
        }
        if (fds[1].revents & POLLIN)
            readStderr();
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            const ssize_t n = ::read(m_fromServer, buffer.data(), buffer.size());
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return unreachable(n == 0 ? "the link ended" : std::strerror(errno));
            m_bytesReceived += n;
            if (auto fed = m_reader.feed(buffer.data(), size_t(n)); !fed)
                return unreachable("the server sent " + fed.message());
        }
    }
}

double Connection::roundTripMs() const { return m_recentMs.empty() ? 0.0 : *std::min_element(m_recentMs.begin(), m_recentMs.end()); }

Result<json> Connection::sendFile(const std::string& localPath)
{
    auto sha = sha256FileCached(localPath);
    if (!sha)
        return Error { sha.message().find(localPath) == std::string::npos ? localPath + ": " + sha.message() : sha.message() };
    const json handle = { { "sha256", *sha } };
    if (m_hostHas.count(*sha))
        return handle; // known on this link: not even asked again (an image set's every image, run after run)
    auto has = call("has_file", handle);
    if (!has)
        return Error { localPath + ": " + has.message() };
    if (!has->is_object())
        return Error { localPath + ": the host answered has_file with " + has->dump().substr(0, 40) };
    if (has->value("present", false)) {
        m_hostHas.insert(*sha);
        return handle; // sent before: nothing crosses
    }
    const int fd = ::open(localPath.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
        const std::string why = std::strerror(errno);
        if (fd >= 0)
            ::close(fd);
        return Error { localPath + ": cannot read: " + why };
    }
    const uint64_t size = uint64_t(st.st_size);
    // Where an interrupted send stopped, if the host kept its bytes; a part longer than the file is not this file's.
    const json received = has->value("received", json(0));
    uint64_t offset = isCount(received) && received.get<uint64_t>() < size ? received.get<uint64_t>() : 0;
    const std::string name = fs::path(localPath).filename().string();
    std::vector<uint8_t> chunk;
    for (;;) {
        const size_t length = size_t(std::min<uint64_t>(kChunkBytes, size - offset));
        chunk.resize(length);
        for (size_t done = 0; done < length;) {
            const ssize_t n = ::pread(fd, chunk.data() + done, length - done, off_t(offset + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                const std::string why = n == 0 ? std::string("it became shorter while it was sent") : std::strerror(errno);
                ::close(fd);
                return Error { localPath + ": cannot read: " + why };
            }
            done += size_t(n);
        }
        auto put = call("put_file", { { "sha256", *sha }, { "size", size }, { "offset", offset }, { "name", name },
                                      { "data", encodeBytes(chunk.data(), chunk.size()) } });
        if (!put) {
            ::close(fd);
            return Error { localPath + ": " + put.message() };
        }
        offset += length;
        if ((put->is_object() && put->value("complete", false)) || offset >= size)
            break;
    }
    ::close(fd);
    m_hostHas.insert(*sha);
    return handle;
}

Result<std::unique_ptr<Connection>> Connection::open(const Endpoint& endpoint, const Limits& limits)
{
    std::unique_ptr<Connection> c(new Connection(endpoint, limits));
    if (auto started = c->start(); !started)
        return started.error();
    auto hello = c->call("hello", { { "protocol", kProtocolVersion }, { "client", std::string("attnscope ") + version() } });
    if (!hello)
        return Error { hello.message().rfind(endpoint.host + ":", 0) == 0 ? hello.message() : endpoint.host + ": " + hello.message() };
    if (!hello->is_object() || !(*hello).contains("protocol") || (*hello)["protocol"] != kProtocolVersion)
        return Error { endpoint.host + ": the server answered hello with protocol " + (hello->is_object() ? hello->value("protocol", json()).dump() : "none")
                       + "; this attnscope speaks version " + std::to_string(kProtocolVersion) };
    c->m_hello = *hello;
    return c;
}

} // namespace attnscope::remote
