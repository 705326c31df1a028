// RemoteBackend's Export all (docs/remote.md, "Export all"): the host's attnscope-cli writes the CLI's output folder
// (app/cli/ServeReports.h), this side follows it and brings the files home.
#include "gui/RemoteBackend.h"

#include <attnscope/Files.h>

#include <QDir>
#include <QFileInfo>

#include <chrono>
#include <cstdio>
#include <thread>

namespace attnscope {

using json = nlohmann::json;

namespace {

// The staging folder's name on the host: the same export (this host, this folder here, these models, images and
// options) finds the journal a dropped link left there, and another export never does.
std::string stagingToken(const std::string& text)
{
    uint64_t h = 1469598103934665603ull; // FNV-1a, 64 bits: a name, not a secret
    for (unsigned char c : text)
        h = (h ^ c) * 1099511628211ull;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return hex;
}

} // namespace

Result<int64_t> RemoteBackend::startExport(const HostExport& job, const std::string& staging, bool resume, HostExportOutcome& outcome)
{
    auto model = hostId(job.model->remote);
    if (!model)
        return model.error();
    json params = { { "model", *model }, { "model_name", job.modelName }, { "spec", runSpecToJson(job.spec) }, { "formats", job.formats },
                    { "resume", resume } };
    if (job.compare) {
        auto compare = hostId(job.compare->remote);
        if (!compare)
            return compare.error();
        params["compare"] = *compare;
        params["compare_name"] = job.compareName;
        params["compare_spec"] = job.compareSpec;
    }
    json images = json::array(), names = json::array();
    for (const QString& path : job.images) {
        auto image = fileParam(path); // sent once, by sha256, when this machine has it
        if (!image)
            return image.error();
        images.push_back(*image);
        names.push_back(path.toStdString()); // what the folder says of it: the path here, not the host's copy
    }
    params["images"] = std::move(images);
    params["names"] = std::move(names);
    params["out"] = staging.empty() ? json { { "folder", job.hostFolder.toStdString() } } : json { { "staging", staging } };
    auto started = call("report_start", std::move(params));
    if (!started)
        return started.error();
    outcome.figuresNote = started->value("figures_note", std::string());
    return started->value("report", int64_t(0));
}

Result<RemoteBackend::HostExportOutcome> RemoteBackend::exportAll(const HostExport& job, const std::function<bool()>& isCancelled,
                                                                    const std::function<void(int done, int total)>& progress)
{
    HostExportOutcome out;
    std::string staging;
    if (job.hostFolder.isEmpty()) {
        const auto made = [this](const std::shared_ptr<const EngineModel>& m) {
            const auto held = m ? m_held.find(m->remote) : m_held.end();
            return held == m_held.end() ? json() : held->second.params;
        };
        json identity = { { "host", m_endpoint.host }, { "folder", QDir(job.localFolder).absolutePath().toStdString() },
                          { "model", made(job.model) }, { "compare", made(job.compare) }, { "spec", runSpecToJson(job.spec) },
                          { "formats", job.formats } };
        for (const QString& path : job.images)
            identity["images"].push_back(QFileInfo(path).absoluteFilePath().toStdString());
        staging = stagingToken(identity.dump());
    }
    // A staging folder resumes whatever its journal holds (it is this export's); a folder the user named starts anew.
    auto report = startExport(job, staging, !staging.empty(), out);
    if (!report)
        return report.error();
    int generation = m_generation; // the link the run was started on: a call may make a new one when it has ended
    bool cancelSent = false;
    json ended;
    while (true) {
        if (!cancelSent && isCancelled && isCancelled()) {
            call("report_cancel", { { "report", *report } }); // the images so far are written, as locally
            cancelSent = true;
        }
        auto status = call("report_status", { { "report", *report } });
        if (!status) {
            const bool dropped = m_generation != generation || !(m_connection && m_connection->running());
            const std::string resume = staging.empty() ? "" : "; Export all to the same folder again resumes it from its journal on the host";
            if (!dropped || out.relinks > 0)
                return Error { status.message() + resume };
            ++out.relinks; // the link dropped: made again, the run resumed from the journal the host kept
            report = startExport(job, staging, true, out);
            if (!report)
                return Error { report.message() + resume };
            generation = m_generation;
            continue;
        }
        for (const auto& s : status->value("skipped", json::array()))
            out.skipped.push_back(s.get<std::string>());
        if (progress)
            progress(status->value("done", 0), status->value("total", 0));
        if (!status->value("running", true)) {
            ended = std::move(*status);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const json& o = ended["outcome"];
    out.outcome.done = o.value("done", 0);
    out.outcome.skipped = o.value("skipped", 0);
    out.outcome.total = o.value("total", 0);
    out.outcome.resumedAt = o.value("resumed_at", 0);
    out.outcome.complete = o.value("complete", false);
    out.outcome.note = o.value("note", std::string());
    if (!staging.empty()) {
        if (auto copied = copyExport(*report, ended.value("files", json::array()), job.localFolder); !copied)
            return copied.error();
        call("report_release", { { "report", *report } }); // the staging folder goes
    }
    return out;
}

Status RemoteBackend::copyExport(int64_t report, const json& files, const QString& folder)
{
    for (const auto& f : files) {
        const std::string relative = f.value("path", std::string());
        const uint64_t size = f.value("size", uint64_t(0));
        // A name from the host is one under the folder, never above it.
        const QString target = QDir(folder).filePath(QString::fromStdString(relative));
        if (relative.empty() || QDir::cleanPath(target) != target || !QDir::cleanPath(target).startsWith(QDir::cleanPath(folder) + "/")
            || relative.find("..") != std::string::npos)
            return Error { m_endpoint.host + ": the export lists \"" + relative.substr(0, 80) + "\", not a file under its folder" };
        if (!QDir().mkpath(QFileInfo(target).path()))
            return Error { QFileInfo(target).path().toStdString() + ": cannot create the folder" };
        auto writer = TextFileWriter::open(target.toStdString());
        if (!writer)
            return writer.error();
        uint64_t offset = 0;
        do {
            auto chunk = call("report_file", { { "report", report }, { "path", relative }, { "offset", offset } });
            if (!chunk)
                return Error { target.toStdString() + ": " + chunk.message() };
            auto bytes = remote::decodeBytes(chunk->value("data", json()));
            if (!bytes)
                return Error { target.toStdString() + ": " + bytes.message() };
            if (bytes->empty() && offset < size)
                return Error { target.toStdString() + ": the host sent no bytes at " + std::to_string(offset) };
            if (auto w = (*writer)->append(std::string(bytes->begin(), bytes->end())); !w)
                return w.error();
            offset += bytes->size();
        } while (offset < size);
        if (auto w = (*writer)->commit(); !w)
            return w.error();
    }
    return Done {};
}

} // namespace attnscope
