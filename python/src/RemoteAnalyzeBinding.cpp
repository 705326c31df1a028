#include "RemoteBindings.h"

#include "OutputFolder.h"
#include "Report.h"
#include "RunSpec.h"

#include <RemoteAnalyses.h>

#include <attnscope/Datasets.h>
#include <attnscope/Files.h>

#include <cstdio>
#include <filesystem>

// attnscope.analyze on a remote engine: the image-set run of the window's image sets (set_start, a batch per set_add,
// set_summary), one per run (the model, its variant, the compared model), with the options checked here by the table
// every door uses (report/RunSpec.h). The statistics cross exactly ([count, mean, M2] in float64), and each run's
// folder is written here by writeRunOutput, as a local run writes it: the same CSVs, to the digit.

namespace attnscope::python {

namespace fs = std::filesystem;

namespace {

struct SetRun {
    int64_t id = 0;
    int batch = 1;
    RunOutput output;
};

// What a run describes of itself in run.json, as DatasetRun::addRun writes it; the true classes of the ablation's
// accuracy change, by the images' class folders, set in `o`.
RunOutput outputOf(const RemoteModel& m, const std::string& label, bool first, AnalysisOptions& o,
    const std::vector<std::string>& paths)
{
    RunOutput r;
    r.label = label;
    r.folder = first ? "" : "runs/" + slugOf(label);
    const ModelInfo& i = m.info;
    r.model = runModelRecord(i, label);
    r.options = { { "neutreno_lambda", o.neutrenoLambda.value_or(i.config.neutrenoLambda) },
        { "boost_t", o.boostT.value_or(i.config.boostT) }, { "seed", o.seed }, { "draws", o.draws } };
    std::string noises;
    for (const auto& p : o.perturbations)
        noises += (noises.empty() ? "" : " ") + p.spec();
    r.options["noise"] = o.snr ? noises : "";
    if (o.ablation) {
        o.trueClasses = classesOfFolders(paths, i.labels);
        r.options["ablation"] = toString(o.ablationMode);
        r.options["labelled_images"]
            = std::count_if(o.trueClasses.begin(), o.trueClasses.end(), [](int c) { return c >= 0; });
    }
    r.radius = o.radius;
    r.patchSize = i.config.patchSize;
    return r;
}

// The host's message for an image it could not read names the file as the host has it (remote-files/<sha256>/<name>
// for one sent): said with its path here.
std::string laptopMessage(const std::string& message, const std::string& sha, const std::string& path)
{
    const size_t at = sha.empty() ? std::string::npos : message.find(sha);
    if (at == std::string::npos)
        return message;
    const size_t end = message.find(": ", at);
    return end == std::string::npos ? path + ": " + message : path + message.substr(end);
}

// The runs' ids on the host, released (with the next request) however the run ends.
struct Releases {
    Link& link;
    std::vector<int64_t> ids;
    ~Releases()
    {
        for (int64_t id : ids)
            link.releaseLater("set_release", "run", id);
    }
};

} // namespace

void bindRemoteAnalyze(py::module_& m)
{
    m.def(
        "remote_analyze",
        [](const std::shared_ptr<RemoteModel>& model, const std::vector<std::string>& images, const std::string& out,
            const RemoteModel* compare, const py::object& progress, const py::object& skipped,
            const py::dict& options) {
            Link& link = *model->link;
            const RunSpec spec = specFromKeywords(options);
            ReportRequest request;
            request.modelName = modelNameOf(model->path);
            if (auto checked = applyRunSpec(spec, pythonSpelling, request); !checked)
                raise(checked.error());
            // What the host's image sets do not (yet): refused in one line rather than left out of the summary.
            const AnalysisOptions& base = request.options;
            if (base.relevance || base.decomposition || request.queryKey.enabled)
                raise(link.host()
                    + ": analyze: decomposition, relevance and qkmap are per-image figures, which a run on a remote "
                      "engine does not make; "
                      "leave them out (logit_decomposition, relevance and query_key_map give them for an image)");
            if (spec.dumpTensors || spec.cudaGraph || spec.analysesOn != "auto")
                raise(link.host()
                    + ": analyze: dump_tensors, cuda_graph and analyses_on are not sent to a remote engine (the host "
                      "chooses where its "
                      "analyses run); leave them at their defaults");
            if (compare && compare->link.get() != &link)
                raise(link.host() + ": analyze: compare is a model of another engine (" + compare->link->host()
                    + "); load it on this one");

            // A file or folder here is sent (folders and list files expanded here, as the local run does); anything
            // else is a path on the host.
            std::vector<std::string> paths;
            std::vector<bool> here;
            for (const auto& image : images) {
                std::error_code ec;
                if (!fs::exists(image, ec)) {
                    paths.push_back(image);
                    here.push_back(false);
                    continue;
                }
                auto expanded = expandImagePaths({ image });
                if (!expanded)
                    raise(expanded.error());
                paths.insert(paths.end(), expanded->begin(), expanded->end());
                here.insert(here.end(), expanded->size(), true);
            }

            std::vector<SetRun> runs;
            Releases releases { link, {} };
            const auto start = [&](const RemoteModel& m, const std::string& label, AnalysisOptions o) {
                SetRun run;
                run.output = outputOf(m, label, runs.empty(), o, paths);
                const json answer
                    = link.call("set_start", { { "model", m.id }, { "options", remote::encodeAnalysisOptions(o) } });
                run.id = answer.value("run", int64_t(0));
                run.batch = std::max(1, answer.value("batch", 1));
                releases.ids.push_back(run.id);
                runs.push_back(std::move(run));
            };
            const std::string& name = request.modelName;
            start(*model, name, base);
            if (request.neutreno || request.boost) {
                AnalysisOptions variant = base;
                variant.neutrenoLambda = request.neutreno;
                variant.boostT = request.boost;
                start(*model, variantRunLabel(name, request.neutreno, request.boost), variant);
            }
            if (compare) {
                const std::string compareName = modelNameOf(compare->path);
                start(*compare, compareRunLabel(compareName, name), base);
            }

            // The batches of a local run (its size, or the one the host's device wants), so that the statistics are
            // those of a run on the host, to the bit.
            const size_t batch = size_t(request.batch > 0 ? request.batch : runs.front().batch);
            py::list skippedPaths;
            int done = 0, skippedCount = 0;
            const int total = int(paths.size());
            for (size_t first = 0; first < paths.size(); first += batch) {
                json handles = json::array(), indices = json::array();
                std::vector<std::string> shas;
                for (size_t i = first; i < std::min(paths.size(), first + batch); ++i) {
                    json handle = paths[i];
                    if (here[i])
                        handle = link.sendFile(paths[i]);
                    shas.push_back(handle.is_object() ? handle.value("sha256", "") : "");
                    handles.push_back(std::move(handle));
                    indices.push_back(i);
                }
                json unread = json::array();
                for (size_t r = 0; r < runs.size(); ++r) {
                    const json answer = link.call(
                        "set_add", { { "run", runs[r].id }, { "images", handles }, { "indices", indices } });
                    if (r == 0)
                        unread = answer.value("skipped", json::array());
                }
                for (const json& s : unread) {
                    const size_t index = s.value("index", size_t(0));
                    const size_t k = index - first;
                    std::string message = s.value("message", "");
                    if (k < shas.size())
                        message = laptopMessage(message, shas[k], paths[index]);
                    if (spec.strict)
                        raise(message + " (strict: the run stops at the first image it cannot read)");
                    ++skippedCount;
                    if (!skipped.is_none())
                        skipped(message);
                }
                done += int(handles.size()) - int(unread.size());
                if (!progress.is_none())
                    progress(done + skippedCount, total);
                if (PyErr_CheckSignals() != 0)
                    throw py::error_already_set(); // Ctrl-C between batches: the runs are released, nothing is written
            }

            for (auto& run : runs) {
                const json answer = link.call("set_summary", { { "run", run.id } });
                auto stats = remote::decodeStats(answer.value("stats", json()));
                if (!stats)
                    raise(link.host() + ": the host's statistics: " + stats.message());
                run.output.stats = std::move(*stats);
                run.output.images = answer.value("images", int64_t(0));
                run.output.radius = answer.value("radius", run.output.radius);
                if (auto w = writeRunOutput(out, run.output); !w)
                    raise(w.error());
            }
            py::dict d;
            d["done"] = done;
            d["skipped"] = skippedCount;
            d["total"] = total;
            d["resumed_at"] = 0;
            d["complete"] = true;
            d["images"] = paths;
            return d;
        },
        py::arg("model"), py::arg("images"), py::arg("out"), py::arg("compare"), py::arg("progress"),
        py::arg("skipped"), py::arg("options"));
}

} // namespace attnscope::python
