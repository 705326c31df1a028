#pragma once

// Export all on the remote engine (docs/remote.md, "Export all"): the methods attnscope-cli adds to its server, so that
// a window on another machine has the CLI's output folder of its images written here, where the models and the device
// are. The run is the CLI's own (report/Report.h: analyseReport on a thread of its own, so that the link answers
// report_status and report_cancel while it goes; the figures and the manifest then on the main thread, as the CLI
// draws them); the folder is one the user named on this host, or a staging folder of this host's cache that the client
// copies to its machine with report_file and releases. A run cut off (the link dropped, the server ended) leaves its
// journal in the folder, and the same report_start with "resume" continues it.
//
//   report_start    model, compare?, model_name, compare_name?, compare_spec?, images, names? (the client's paths of
//                   them, which the folder records), spec (the run's options by the
//                   option table's Python names, report/RunSpec.h), formats, out: {"folder": HOST PATH} | {"staging":
//                   TOKEN}, resume  ->  report, out, total, figures_note
//   report_status   report  ->  running, done, total, skipped [messages]; once ended: outcome {...}, files [{path, size}]
//   report_cancel   report  ->  {} (the images so far are written, as a partial result)
//   report_file     report, path (one of files), offset  ->  data (at most 4 MiB), size
//   report_release  report  ->  {} (a staging folder is removed)
//
// While a run goes, every other method but hello is refused saying so: the run's models are in use on another thread.

#include <RemoteServer.h>

#include <memory>
#include <string>

class ServeReports {
public:
    // Adds the methods to `server`, whose models they use; staging folders go under `stagingRoot`.
    ServeReports(attnscope::remote::Server& server, std::string stagingRoot);
    // A run still going is cancelled and waited for: its journal stays for a resume.
    ~ServeReports();
    ServeReports(const ServeReports&) = delete;
    ServeReports& operator=(const ServeReports&) = delete;

    // "<cache>/attnscope/remote-exports": beside the files the client sends (remote/RemoteFiles.h).
    static std::string defaultStagingRoot();

private:
    struct Run;
    nlohmann::json start(const nlohmann::json& params);
    nlohmann::json status(const nlohmann::json& params);
    nlohmann::json cancel(const nlohmann::json& params);
    nlohmann::json file(const nlohmann::json& params);
    nlohmann::json release(const nlohmann::json& params);
    Run& runOf(const nlohmann::json& params);
    // The run's figures and manifest once its analysis ended (main thread), and the files of its folder.
    nlohmann::json finish(Run& run);

    attnscope::remote::Server& m_server;
    std::string m_stagingRoot;
    std::unique_ptr<Run> m_run; // one at a time
    int64_t m_nextId = 1;
};
