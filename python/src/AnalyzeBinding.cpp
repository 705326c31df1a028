#include "Bindings.h"

#include "RunSpec.h"
#include "Report.h"

#include <attnscope/Files.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>
#include <variant>

// attnscope.analyze: the dataset run of `attnscope-cli analyze` through the same writeReport, so that the folder it
// writes is the CLI's, file for file. The GIL is released for the run; the run polls for Ctrl-C on the thread that
// called it and stops as the CLI does on SIGINT, leaving what was done (and its journal, to resume from) in the folder.

namespace attnscope::python {

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

// The run's options from Python keywords, by the table's names (report/RunSpec.h): a keyword the table does not have
// is a TypeError naming it, a value of the wrong type one naming the keyword and what it takes.
RunSpec specFromKeywords(const py::dict& options)
{
    RunSpec spec;
    for (const auto& [key, value] : options) {
        const std::string name = py::cast<std::string>(key);
        const RunOption* option = nullptr;
        for (const RunOption& o : runOptions())
            if (name == o.python)
                option = &o;
        if (!option)
            throw py::type_error("analyze() got an unexpected keyword argument '" + name + "'");
        std::visit(
            [&](auto member) {
                auto& field = spec.*member;
                using T = std::decay_t<decltype(field)>;
                try {
                    if constexpr (std::is_same_v<T, std::optional<double>>)
                        field = value.is_none() ? std::nullopt : std::optional<double>(py::cast<double>(value));
                    else if constexpr (std::is_same_v<T, bool>)
                        field = py::cast<bool>(value);
                    else
                        field = py::cast<T>(value);
                } catch (const py::cast_error&) {
                    throw py::type_error("analyze(): " + name + "=" + py::cast<std::string>(py::repr(value)) + " is not "
                                         + (std::is_same_v<T, std::string> ? "a string"
                                            : std::is_same_v<T, std::vector<std::string>> ? "a list of strings"
                                            : std::is_same_v<T, bool> ? "True or False"
                                            : std::is_floating_point_v<T> || std::is_same_v<T, std::optional<double>> ? "a number"
                                                                                                                       : "an integer"));
                }
            },
            option->field);
    }
    return spec;
}

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

// The table as Python sees it: (keyword, default, help) of each option, for attnscope.analyze's signature check.
py::list optionTable()
{
    static const RunSpec defaults;
    py::list table;
    for (const RunOption& o : runOptions()) {
        py::object value = std::visit(
            [](auto member) -> py::object {
                const auto& v = defaults.*member;
                using T = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<T, std::optional<double>>)
                    return v ? py::cast(*v) : py::none();
                else
                    return py::cast(v);
            },
            o.field);
        table.append(py::make_tuple(o.python, value, o.help));
    }
    return table;
}

} // namespace

void bindAnalyze(py::module_& m)
{
    m.def("model_name", &modelNameOf, py::arg("path"));
    m.def("run_options", &optionTable);
    m.def(
        "analyze",
        [](const PyModel& model, const std::vector<std::string>& images, const std::string& out, const PyModel* compare,
           const py::object& progress, const py::object& skipped, const py::dict& options) {
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
            const RunSpec spec = specFromKeywords(options);
            if (auto checked = applyRunSpec(spec, pythonSpelling, request); !checked)
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
        py::arg("model"), py::arg("images"), py::arg("out"), py::arg("compare"), py::arg("progress"), py::arg("skipped"),
        py::arg("options"));
}

} // namespace attnscope::python
