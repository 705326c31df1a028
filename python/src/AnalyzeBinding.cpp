#include "Bindings.h"

#include "AnalyzeArguments.h"
#include "Report.h"

#include <attnscope/Files.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

// attnscope.analyze: the dataset run of `attnscope-cli analyze` through the same writeReport, so that the folder it
// writes is the CLI's, file for file. The GIL is released for the run; the run polls for Ctrl-C on the thread that
// called it and stops as the CLI does on SIGINT, leaving what was done (and its journal, to resume from) in the folder.

namespace attnscope::python {

namespace {

// Runs the Python callbacks of a run with the GIL, and keeps the first exception one raises (a KeyboardInterrupt
// delivered while it ran, most often) to raise once the run has stopped: nothing may unwind through the engine.
struct Callbacks {
    std::thread::id caller = std::this_thread::get_id();
    std::atomic<bool> stop { false };
    std::unique_ptr<py::error_already_set> pending;

    template <typename F>
    void call(F&& f)
    {
        py::gil_scoped_acquire gil;
        if (pending)
            return;
        try {
            f();
        } catch (py::error_already_set& e) {
            pending = std::make_unique<py::error_already_set>(std::move(e));
            stop = true;
        }
    }
    bool cancelled()
    {
        if (!stop && std::this_thread::get_id() == caller)
            call([] {
                if (PyErr_CheckSignals() != 0)
                    throw py::error_already_set();
            });
        return stop;
    }
};

std::string pythonSpelling(const std::string& cliName)
{
    if (cliName == "class")
        return "target_class";
    std::string s = cliName;
    for (char& c : s)
        if (c == '-')
            c = '_';
    return s;
}

} // namespace

void bindAnalyze(py::module_& m)
{
    m.def("model_name", &modelNameOf, py::arg("path"));
    m.def(
        "analyze",
        [](const PyModel& model, const std::vector<std::string>& images, const std::string& out, const std::string& analyses,
           const std::vector<std::string>& noise, int draws, uint64_t seed, const PyModel* compare, std::optional<double> neutreno,
           std::optional<double> boost, int batch, const std::string& precision, const std::string& analysesOn, int gridImages,
           const std::string& query, const std::string& rollout, double discard, int targetClass, int gradCamLayer,
           double outlierRatio, const std::string& ablation, int qkLayer, int qkHead, int qkImages, const std::string& qkMethod, bool dumpTensors, bool strict, bool fresh, double checkpointSeconds, const py::object& progress,
           const py::object& skipped) {
            ReportRequest request;
            request.model = model.model;
            request.modelName = modelNameOf(model.path);
            request.description = model.description;
            const auto& c = model.model->config();
            const auto& info = model.model->info();
            if (c.imageHeight != info.trainedHeight || c.imageWidth != info.trainedWidth) {
                request.inputHeight = c.imageHeight;
                request.inputWidth = c.imageWidth;
            }
            if (compare) {
                request.compare = compare->model;
                request.compareName = modelNameOf(compare->path);
                request.compareSpec = compare->path;
            }
            AnalyzeArguments arguments;
            arguments.analyses = analyses;
            arguments.noise = noise;
            arguments.draws = draws;
            arguments.seed = seed;
            arguments.batch = batch;
            arguments.precision = precision;
            arguments.analysesOn = analysesOn;
            arguments.gridImages = gridImages;
            arguments.query = query;
            arguments.rollout = rollout;
            arguments.discard = discard;
            arguments.targetClass = targetClass;
            arguments.gradCamLayer = gradCamLayer;
            arguments.outlierRatio = outlierRatio;
            arguments.ablation = ablation;
            arguments.qkLayer = qkLayer;
            arguments.qkHead = qkHead;
            arguments.qkImages = qkImages;
            arguments.qkMethod = qkMethod;
            arguments.checkpointSeconds = checkpointSeconds;
            arguments.dumpTensors = dumpTensors;
            if (auto checked = applyAnalyzeArguments(arguments, pythonSpelling, request); !checked)
                raise(checked.error());
            for (const auto& image : images) {
                std::error_code ec;
                if (!std::filesystem::exists(image, ec))
                    raise(Error { image + ": no such file or folder" }, image);
            }
            auto paths = expandImagePaths(images);
            if (!paths)
                raise(paths.error());
            request.images = *paths;
            request.out = out;
            request.neutreno = neutreno;
            request.boost = boost;
            request.strict = strict;
            request.resume = !fresh;

            Callbacks callbacks;
            if (!skipped.is_none())
                request.skipped = [&](const std::string& message) { callbacks.call([&] { skipped(message); }); };
            request.resumed = [](int, int) {}; // outcome.resumedAt says it
            const auto onProgress = [&](int done, int total) {
                if (!progress.is_none())
                    callbacks.call([&] { progress(done, total); });
            };
            Result<ReportOutcome> outcome = Error {};
            {
                py::gil_scoped_release release;
                outcome = writeReport(request, [&] { return callbacks.cancelled(); }, onProgress);
            }
            if (callbacks.pending)
                throw *callbacks.pending; // the KeyboardInterrupt (or the callback's error), after the folder was written
            if (!outcome)
                raise(outcome.error());
            py::dict d;
            d["done"] = outcome->done;
            d["skipped"] = outcome->skipped;
            d["total"] = outcome->total;
            d["resumed_at"] = outcome->resumedAt;
            d["complete"] = outcome->complete;
            d["images"] = *paths;
            return d;
        },
        py::arg("model"), py::arg("images"), py::arg("out"), py::arg("analyses"), py::arg("noise"), py::arg("draws"), py::arg("seed"),
        py::arg("compare"), py::arg("neutreno"), py::arg("boost"), py::arg("batch"), py::arg("precision"), py::arg("analyses_on"),
        py::arg("grid_images"), py::arg("query"), py::arg("rollout"), py::arg("discard"), py::arg("target_class"), py::arg("gradcam_layer"),
        py::arg("outlier_ratio"), py::arg("ablation"), py::arg("qk_layer"), py::arg("qk_head"), py::arg("qk_images"), py::arg("qk_method"),
        py::arg("dump_tensors"), py::arg("strict"), py::arg("fresh"), py::arg("checkpoint_seconds"),
        py::arg("progress"), py::arg("skipped"));
}

} // namespace attnscope::python
