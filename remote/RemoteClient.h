#pragma once

// The remote engine's client (docs/remote.md): starts `attnscope-cli serve --stdio` on a host through the user's own
// ssh (their config, keys, agent and jump hosts; no port opened anywhere) and calls it. ATTNSCOPE_SSH names another
// command to use in ssh's place, called as ssh is: `COMMAND [USER@]HOST REMOTE-COMMAND`; the tests use a stand-in
// that runs the remote command on this machine.

#include "RemoteWire.h"

#include <sys/types.h>

#include <deque>
#include <memory>
#include <set>
#include <string>

namespace attnscope::remote {

// `[USER@]HOST[:PATH]`: PATH is where attnscope-cli is on the host (default: the one on its PATH).
struct Endpoint {
    std::string host; // with the user, as ssh takes it
    std::string cli = "attnscope-cli";
};
Result<Endpoint> parseEndpoint(const std::string& text);

class Connection {
public:
    // Starts the server on the host and says hello; an error says what went wrong in one line (ssh's last line of
    // stderr when the link never came up, both versions when they differ).
    static Result<std::unique_ptr<Connection>> open(const Endpoint& endpoint, const Limits& limits = {});
    ~Connection(); // asks the server to shut down and reaps it

    // One request and its result. An error response is an Error with the server's message; a link that ended is
    // "HOST: the engine is unreachable (...)" with the server's last stderr line.
    Result<nlohmann::json> call(const std::string& method, nlohmann::json params = nlohmann::json::object());
    // Sends a file of this machine to the host, once: its sha256 (sha256FileCached), `has_file` (once a link: a file
    // the host has is remembered), and when the host has it not, `put_file` in chunks of kChunkBytes (from where an interrupted send stopped). The result,
    // {"sha256": HEX}, is what load_model's `path` (or `description`) and trace's `image` take in place of a host path.
    // Errors name the local file.
    Result<nlohmann::json> sendFile(const std::string& localPath);

    const nlohmann::json& hello() const { return m_hello; } // the server's: protocol, build, device, limits
    const Endpoint& endpoint() const { return m_endpoint; }
    double lastRoundTripMs() const { return m_lastRoundTripMs; }
    // The link's round trip as the requests show it: the quickest of the last 16 (a request the host answers at once,
    // such as a click's rows, is mostly the link's; one that runs a forward is not).
    double roundTripMs() const;
    bool alive() const { return m_pid > 0; }
    // Whether the server (or the ssh that reaches it) still runs: one that has ended is reaped and the link closed, so
    // that the caller makes a new one instead of writing to a dead pipe. (A link that hangs is found by a call.)
    bool running();
    pid_t serverProcess() const { return m_pid; } // the local ssh (or stand-in) process
    int64_t requestsSent() const { return m_nextId - 1; } // hello included
    // The bytes written to the link and read from it so far, frames and headers included (the benchmark's per-click cost).
    int64_t bytesSent() const { return m_bytesSent; }
    int64_t bytesReceived() const { return m_bytesReceived; }

private:
    Connection(Endpoint endpoint, Limits limits);
    Status start();
    Error unreachable(const std::string& why);
    void readStderr();
    void close();

    Endpoint m_endpoint;
    Limits m_limits;
    FrameReader m_reader;
    pid_t m_pid = -1;
    int m_toServer = -1, m_fromServer = -1, m_errors = -1;
    std::string m_stderrTail; // the last lines the server (or ssh) wrote to stderr
    nlohmann::json m_hello;
    int64_t m_nextId = 1;
    double m_lastRoundTripMs = 0;
    std::deque<double> m_recentMs; // the last requests' times
    int64_t m_bytesSent = 0, m_bytesReceived = 0;
    std::set<std::string> m_hostHas; // sha256s the host has said it has, or was sent, on this link
};

} // namespace attnscope::remote
