#include "Report.h"

#include "DatasetRun.h"
#include "Figures.h"
#include "RunJournal.h"

#include <attnscope/Files.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>

namespace fs = std::filesystem;
using attnscope::Error;

std::string variantRunLabel(const std::string& name, std::optional<double> neutreno, std::optional<double> boost)
{
    const auto number = [](double v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", v);
        return std::string(buf);
    };
    std::string label = name + " (";
    if (neutreno)
        label += "NeuTRENO " + number(*neutreno);
    if (boost)
        label += std::string(neutreno ? ", " : "") + "Boost " + number(*boost);
    return label + ")";
}

std::string compareRunLabel(const std::string& compareName, const std::string& name)
{
    return compareName == name ? name + " (2)" : compareName;
}

std::string modelNameOf(const std::string& path)
{
    if (path.rfind("builtin:", 0) == 0)
        return path.substr(8);
    fs::path p(path);
    if (p.filename().empty())
        p = p.parent_path();
    return fs::is_directory(p) ? p.filename().string() : p.stem().string();
}

attnscope::Result<std::shared_ptr<ReportResults>> analyseReport(const ReportRequest& request, const std::function<bool()>& isCancelled,
                                                                const std::function<void(int done, int total)>& progress)
{
    // A run that fails (an unreadable image, an analysis the model refuses) leaves no output folder it created behind.
    std::error_code ec;
    const bool existed = fs::exists(request.out, ec);
    auto results = DatasetRun(request, isCancelled, progress).run();
    if (!results && !existed)
        fs::remove_all(request.out, ec);
    return results;
}

attnscope::Result<ReportOutcome> finishReport(const ReportRequest& request, const ReportResults& results)
{
    const auto start = std::chrono::steady_clock::now();
    if (auto drawn = writeFigures(request.out, results.outputs, { results.grids, results.relevances, results.norms, results.queryKey },
                                  results.decomposition ? &*results.decomposition : nullptr, request.formats);
        !drawn)
        return drawn.error();
    nlohmann::json manifest = results.manifest;
    manifest["figures"] = figuresRecord(request.formats);
    const double figures = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    manifest["timings"] = { { "load_seconds", request.loadSeconds },
                            { "total_seconds", request.loadSeconds + results.analysisSeconds + figures },
                            { "waiting_for_images_seconds", results.waitingForImagesSeconds },
                            { "forward_and_analyses_seconds", results.forwardSeconds },
                            { "figures_seconds", figures } };
    // The image list goes in where its placeholder is, streamed from the run's log.
    const std::string marker = "\"@images@\"";
    manifest["images"] = "@images@";
    const std::string text = manifest.dump(2) + "\n";
    const size_t at = text.find(marker);
    const size_t lineStart = text.rfind('\n', at) + 1;
    const std::string indent = text.substr(lineStart, text.find_first_not_of(' ', lineStart) - lineStart);
    auto writer = attnscope::TextFileWriter::open((fs::path(request.out) / "manifest.json").string());
    if (!writer)
        return writer.error();
    if (auto w = (*writer)->append(text.substr(0, at)); !w)
        return w.error();
    if (auto w = results.journal->copyImagesInto(**writer, indent); !w)
        return Error { (fs::path(request.out) / "manifest.json").string() + ": " + w.message() };
    if (auto w = (*writer)->append(text.substr(at + marker.size())); !w)
        return w.error();
    if (auto w = (*writer)->commit(); !w)
        return w.error();
    if (results.outcome.complete)
        results.journal->remove(); // nothing left to resume
    return results.outcome;
}

attnscope::Result<ReportOutcome> writeReport(const ReportRequest& request, const std::function<bool()>& isCancelled,
                                             const std::function<void(int done, int total)>& progress)
{
    auto results = analyseReport(request, isCancelled, progress);
    if (!results)
        return results.error();
    return finishReport(request, **results);
}
