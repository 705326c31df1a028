#include "cli/ServeReports.h"

#include "DatasetRun.h"
#include "FigureDrawing.h"
#include "Figures.h"
#include "Report.h"
#include "RunSpec.h"

#include <RemoteFiles.h>
#include <ServerRequests.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace fs = std::filesystem;
using json = nlohmann::json;
using attnscope::remote::Failed;
using attnscope::remote::InvalidParams;
using attnscope::remote::RequestError;
using attnscope::remote::field;
using attnscope::remote::integer;
using attnscope::remote::text;

struct ServeReports::Run {
    int64_t id = 0;
    ReportRequest request;
    bool staging = false;
    std::thread thread;
    std::atomic<bool> cancelled { false }, ended { false };
    std::atomic<int> done { 0 }, total { 0 }, resumedAt { 0 };
    std::mutex mutex;
    std::vector<std::string> skipped; // said since the last report_status
    std::optional<attnscope::Result<std::shared_ptr<ReportResults>>> results;
    std::optional<json> finished; // the outcome and the files, once finish() ran
    std::string failure;          // why the run failed, said by every report_status after
    std::vector<std::pair<std::string, uint64_t>> files;
};

namespace {

bool isToken(const std::string& s)
{
    return s.size() >= 16 && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Every file of `dir` but an unfinished run's journal, by its path under `dir` ("figures/snr.png").
std::vector<std::pair<std::string, uint64_t>> filesUnder(const std::string& dir)
{
    std::vector<std::pair<std::string, uint64_t>> files;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_directory() && it->path().filename() == ".attnscope-run") {
            it.disable_recursion_pending();
            continue;
        }
        if (it->is_regular_file())
            files.emplace_back(fs::relative(it->path(), dir).generic_string(), uint64_t(it->file_size()));
    }
    std::sort(files.begin(), files.end());
    return files;
}

} // namespace

std::string ServeReports::defaultStagingRoot()
{
    return (fs::path(attnscope::remote::defaultFilesDir()).parent_path() / "remote-exports").string();
}

ServeReports::ServeReports(attnscope::remote::Server& server, std::string stagingRoot)
    : m_server(server)
    , m_stagingRoot(std::move(stagingRoot))
{
    m_server.addMethod("report_start", [this](const json& p) { return start(p); });
    m_server.addMethod("report_status", [this](const json& p) { return status(p); });
    m_server.addMethod("report_cancel", [this](const json& p) { return cancel(p); });
    m_server.addMethod("report_file", [this](const json& p) { return file(p); });
    m_server.addMethod("report_release", [this](const json& p) { return release(p); });
    // The run's models are in use on its thread: nothing else may use a model until it ends.
    m_server.setGate([this](const std::string& method) -> std::string {
        static const std::set<std::string> free { "hello", "shutdown", "has_file", "put_file", "list_dir", "thumbnails" };
        if (!m_run || m_run->ended || free.count(method) || method.rfind("report_", 0) == 0)
            return {};
        return "the host is running Export all (" + std::to_string(m_run->done) + "/" + std::to_string(m_run->total)
            + " images): wait for it or cancel it";
    });
}

ServeReports::~ServeReports()
{
    if (m_run && m_run->thread.joinable()) {
        m_run->cancelled = true;
        m_run->thread.join();
    }
}

json ServeReports::start(const json& params)
{
    if (m_run && !m_run->ended)
        throw RequestError { Failed, "an Export all is running already (report " + std::to_string(m_run->id) + ")" };
    if (m_run && m_run->thread.joinable())
        m_run->thread.join();
    auto run = std::make_unique<Run>();
    ReportRequest& r = run->request;
    r.model = m_server.model(params, "model");
    r.modelName = text(params, "model_name");
    if (!field(params, "compare").is_null()) {
        r.compare = m_server.model(params, "compare");
        r.compareName = text(params, "compare_name");
        r.compareSpec = text(params, "compare_spec", false);
    }
    const json& images = field(params, "images");
    if (!images.is_array() || images.empty())
        throw RequestError { InvalidParams, "\"images\" is not a list of images" };
    for (size_t i = 0; i < images.size(); ++i)
        r.images.push_back(m_server.hostPath(images[i], "images[" + std::to_string(i) + "]"));
    // The images as the user knows them (the client's paths), for what the folder says of them.
    if (const json& names = field(params, "names"); !names.is_null()) {
        if (!names.is_array() || names.size() != images.size()
            || !std::all_of(names.begin(), names.end(), [](const json& n) { return n.is_string() && !n.get<std::string>().empty(); }))
            throw RequestError { InvalidParams, "\"names\" is not a name for each image" };
        r.imageNames = names.get<std::vector<std::string>>();
    }
    auto spec = runSpecFromJson(field(params, "spec"));
    if (!spec)
        throw RequestError { InvalidParams, "\"spec\": " + spec.message() };
    const json& resume = field(params, "resume");
    if (!resume.is_null() && !resume.is_boolean())
        throw RequestError { InvalidParams, "\"resume\" is " + resume.dump().substr(0, 40) + ", not true or false" };
    spec->fresh = !(resume.is_boolean() && resume.get<bool>()); // a fresh run discards the folder's journal
    auto formats = parseFigureFormats(text(params, "formats", false));
    if (!formats)
        throw RequestError { InvalidParams, "\"formats\": " + formats.message() };
    std::string note;
    if (!formats->empty() && !figureDrawingUnavailable().empty()) {
        note = figureDrawingUnavailable();
        formats->clear();
    }
    const json& out = field(params, "out");
    if (out.is_object() && out.size() == 1 && out.contains("folder") && out["folder"].is_string() && !out["folder"].get<std::string>().empty()) {
        r.out = out["folder"].get<std::string>();
    } else if (out.is_object() && out.size() == 1 && out.contains("staging") && out["staging"].is_string() && isToken(out["staging"].get<std::string>())) {
        run->staging = true;
        std::error_code ec;
        fs::create_directories(m_stagingRoot, ec);
        fs::permissions(m_stagingRoot, fs::perms::owner_all, fs::perm_options::replace, ec);
        r.out = (fs::path(m_stagingRoot) / out["staging"].get<std::string>()).string();
    } else {
        throw RequestError { InvalidParams, "\"out\" is " + out.dump().substr(0, 60) + ", not {\"folder\": PATH} or {\"staging\": HEX}" };
    }
    if (auto checked = applyRunSpec(*spec, [](std::string name) { return std::replace(name.begin(), name.end(), '-', '_'), name; }, r); !checked)
        throw RequestError { InvalidParams, checked.message() };
    r.formats = *formats;
    for (const auto& f : r.formats)
        r.formatsText += (r.formatsText.empty() ? "" : ",") + f;
    Run* p = run.get();
    r.skipped = [p](const std::string& message) {
        std::lock_guard lock(p->mutex);
        p->skipped.push_back(message);
    };
    r.resumed = [p](int at, int) { p->resumedAt = at; };
    run->id = m_nextId++;
    run->total = int(r.images.size());
    run->thread = std::thread([p] {
        auto results = analyseReport(p->request, [p] { return p->cancelled.load(); }, [p](int done, int total) {
            p->done = done;
            p->total = total;
        });
        p->results = std::move(results);
        p->ended = true;
    });
    m_run = std::move(run);
    return { { "report", m_run->id }, { "out", r.out }, { "total", int(r.images.size()) }, { "figures_note", note } };
}

ServeReports::Run& ServeReports::runOf(const json& params)
{
    const int64_t id = integer(params, "report");
    if (!m_run || m_run->id != id)
        throw RequestError { InvalidParams, "no report " + std::to_string(id) + " (released, or never started)" };
    return *m_run;
}

json ServeReports::status(const json& params)
{
    Run& run = runOf(params);
    json out = { { "report", run.id }, { "done", run.done.load() }, { "total", run.total.load() }, { "resumed_at", run.resumedAt.load() } };
    {
        std::lock_guard lock(run.mutex);
        out["skipped"] = run.skipped;
        run.skipped.clear();
    }
    out["running"] = !run.ended;
    if (!run.ended)
        return out;
    if (run.thread.joinable())
        run.thread.join();
    if (!run.finished && run.failure.empty()) {
        try {
            run.finished = finish(run);
        } catch (const RequestError& e) {
            run.failure = e.message;
        }
    }
    if (!run.failure.empty())
        throw RequestError { Failed, run.failure };
    out.update(*run.finished);
    return out;
}

json ServeReports::finish(Run& run)
{
    if (!*run.results)
        throw RequestError { Failed, run.results->message() };
    auto outcome = finishReport(run.request, ***run.results);
    if (!outcome)
        throw RequestError { Failed, outcome.message() };
    run.files = filesUnder(run.request.out);
    json files = json::array();
    for (const auto& [path, size] : run.files)
        files.push_back({ { "path", path }, { "size", size } });
    return { { "outcome",
               { { "done", outcome->done },
                 { "skipped", outcome->skipped },
                 { "total", outcome->total },
                 { "resumed_at", outcome->resumedAt },
                 { "complete", outcome->complete },
                 { "note", outcome->note } } },
             { "files", files } };
}

json ServeReports::cancel(const json& params)
{
    runOf(params).cancelled = true;
    return json::object();
}

json ServeReports::file(const json& params)
{
    Run& run = runOf(params);
    if (!run.finished)
        throw RequestError { Failed, "report " + std::to_string(run.id) + " has not ended (ask report_status)" };
    const std::string path = text(params, "path");
    // Only a file the run listed: a request names no other path on this host.
    const auto found = std::find_if(run.files.begin(), run.files.end(), [&](const auto& f) { return f.first == path; });
    if (found == run.files.end())
        throw RequestError { InvalidParams, "\"" + path.substr(0, 80) + "\" is not a file of report " + std::to_string(run.id) };
    const json& at = field(params, "offset");
    if (!attnscope::remote::isCount(at) || at.get<uint64_t>() > found->second)
        throw RequestError { InvalidParams, "\"offset\" is " + at.dump().substr(0, 40) + ", not a byte of " + path };
    const uint64_t offset = at.get<uint64_t>();
    std::string bytes(size_t(std::min<uint64_t>(attnscope::remote::kChunkBytes, found->second - offset)), '\0');
    std::ifstream in(fs::path(run.request.out) / path, std::ios::binary);
    in.seekg(std::streamoff(offset));
    if (!in.read(bytes.data(), std::streamsize(bytes.size())))
        throw RequestError { Failed, (fs::path(run.request.out) / path).string() + ": cannot be read" };
    return { { "data", attnscope::remote::encodeBytes(bytes.data(), bytes.size()) }, { "size", found->second } };
}

json ServeReports::release(const json& params)
{
    Run& run = runOf(params);
    if (run.thread.joinable()) {
        run.cancelled = true;
        run.thread.join();
    }
    if (run.staging) {
        std::error_code ec;
        fs::remove_all(run.request.out, ec);
    }
    m_run.reset();
    return json::object();
}
