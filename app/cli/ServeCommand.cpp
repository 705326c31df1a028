#include "cli/Commands.h"

#include "cli/ServeReports.h"

#include <RemoteServer.h>

#include <attnscope/CpuKernels.h>

#include <CLI/CLI.hpp>

#include <unistd.h>

void ServeCommand::addTo(CLI::App& app)
{
    app.add_flag("--stdio", stdio, "speak the protocol on stdin and stdout (the only transport: no socket is ever opened)");
    app.add_option("--device", device, "where models run: auto, cpu, cuda or cuda:<i>");
    app.add_option("--max-traces", maxTraces, "traces kept on this host, least recently used dropped first")->check(CLI::Range(1, 1024));
}

int ServeCommand::run() const
{
    if (!stdio)
        return usage("serve: say --stdio (the window starts it through ssh; it opens no socket)");
    // The protocol has stdout to itself: anything else that writes there (a library's print) goes to stderr, which the
    // client keeps and shows when the link ends.
    const int protocolOut = ::dup(1);
    if (protocolOut < 0 || ::dup2(2, 1) < 0)
        return fail("serve: cannot set up stdout for the protocol");
    if (auto where = attnscope::resolveDevice(device); !where) // said once, on stderr, which the client shows
        return fail("serve: " + where.message());
    attnscope::remote::ServerOptions options;
    options.device = device;
    options.maxTraces = maxTraces;
    attnscope::remote::Server server(options);
    ServeReports reports(server, ServeReports::defaultStagingRoot()); // Export all on this host
    return server.serve(0, protocolOut);
}
