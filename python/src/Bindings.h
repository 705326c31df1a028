#pragma once

// Shared by the files of the Python module attnscope._native (docs/python.md): the engine's Results turned into
// Python exceptions, and its tensors and images into numpy arrays that view them.

#include <attnscope/Analyses.h>
#include <attnscope/Image.h>
#include <attnscope/Model.h>
#include <attnscope/QueryKey.h>
#include <attnscope/Result.h>
#include <attnscope/Tensor.h>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

struct RunSpec; // report/RunSpec.h

namespace attnscope::python {

namespace py = pybind11;

// An engine Error on its way to Python: attnscope.Error (a ValueError), attnscope.FileNotFound (also a
// FileNotFoundError) when `path` names a file that is not there, or KeyboardInterrupt for a cancelled run.
struct EngineError {
    std::string message;
    bool notFound = false;
    bool cancelled = false;
};
// Throws the EngineError of `error`; `path`, when given, is the file the call read (a missing one makes it FileNotFound).
[[noreturn]] void raise(const Error& error, const std::string& path = {});
[[noreturn]] void raise(const std::string& message);
template <typename T>
T take(Result<T>&& result, const std::string& path = {})
{
    if (!result)
        raise(result.error(), path);
    return std::move(*result);
}
void registerErrors(py::module_& m);

// pybind11 before 2.12 (Debian's is 2.10) reads a dtype's item size where numpy 1.x keeps it, so that under numpy 2.x
// the strides it works out for a new array are wrong: every array made here is given its C-order strides explicitly.
std::vector<py::ssize_t> cStrides(const std::vector<py::ssize_t>& shape, py::ssize_t itemSize);
// A read-only numpy view of `tensor` (no copy: the array keeps the tensor's data alive).
py::array view(const Tensor& tensor);
// A read-only uint8 numpy view of an image's pixels, [H, W] or [H, W, 3], kept alive by `owner`.
py::array view(const Image& image, const std::shared_ptr<const void>& owner);
// A float32 C-order copy of `array` (any float or integer dtype) as an engine Tensor.
Tensor tensorFrom(const py::array& array);
// A float64 numpy array of `values`, shaped `shape` (default: 1-D).
py::array doubles(const std::vector<double>& values, std::vector<py::ssize_t> shape = {});
py::array ints(const std::vector<int64_t>& values);
py::array strings(const std::vector<std::string>& values);

// A model as Python holds it: the engine's model and the path it came from.
struct PyModel {
    std::shared_ptr<const Model> model;
    std::string path;
    std::string description;
};

// The dicts the module returns, made in one place for a local model or trace and for a remote one (RemoteBindings.cpp),
// so that both give the same keys and the same numbers.
py::dict configDict(const ModelInfo& info);
py::dict infoDict(const ModelInfo& info);
Image imageFrom(const py::array& pixels); // uint8 [H, W], [H, W, 1] or [H, W, 3]
py::dict attentionMapDict(const AttentionMap& map);
// A Swin's blocks as Trace.windows gives them (stage, block, name, grid, window, shift, windows, heads, width); None
// for a ViT.
py::object windowsList(const Trace& trace);
py::dict attentionGridDict(const AttentionGrid& grid);
py::dict tokenNormsDict(const TokenNorms& norms);
py::dict decompositionDict(const LogitDecomposition& decomposition);
py::dict headAblationDict(const HeadAblation& ablation);
py::dict queryKeyMapDict(const QueryKeyMap& map);
py::dict relevanceDict(const Relevance& relevance);
// The checks of the local analyses' arguments, with their messages (AnalysesBindings.cpp).
RolloutOptions rolloutOptions(const std::string& fusion, double discard);
void checkOutlierRatio(double ratio);
// attnscope.analyze's keywords as the run's options (AnalyzeBinding.cpp): TypeError for one the table has not.
RunSpec specFromKeywords(const py::dict& options);
std::string pythonSpelling(const std::string& cliName); // "grid-images" -> "grid_images"

void bindModel(py::module_& m);
void bindAnalyses(py::module_& m);
void bindAnalyze(py::module_& m);
void bindRemote(py::module_& m);
void bindRemoteAnalyze(py::module_& m);

} // namespace attnscope::python
