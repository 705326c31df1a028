#include "Bindings.h"

#include <filesystem>

namespace attnscope::python {

namespace fs = std::filesystem;

namespace {

// The Python classes of attnscope/__init__.py, given once at import (attnscope._native._set_error_classes).
py::object& errorClass()
{
    static py::object* c = new py::object(); // never destroyed: the interpreter may be gone at exit
    return *c;
}
py::object& notFoundClass()
{
    static py::object* c = new py::object();
    return *c;
}

} // namespace

std::vector<py::ssize_t> cStrides(const std::vector<py::ssize_t>& shape, py::ssize_t itemSize)
{
    std::vector<py::ssize_t> strides(shape.size());
    py::ssize_t step = itemSize;
    for (size_t i = shape.size(); i-- > 0;) {
        strides[i] = step;
        step *= shape[i];
    }
    return strides;
}

namespace {

void makeReadOnly(py::array& a)
{
    py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
}

} // namespace

void raise(const Error& error, const std::string& path)
{
    EngineError e { error.message, false, error.cancelled };
    std::error_code ec;
    e.notFound = !error.cancelled && !path.empty() && path.rfind("builtin:", 0) != 0 && !fs::exists(path, ec);
    throw e;
}

void raise(const std::string& message) { throw EngineError { message }; }

void registerErrors(py::module_& m)
{
    m.def(
        "_set_error_classes",
        [](py::object error, py::object notFound) {
            errorClass() = std::move(error);
            notFoundClass() = std::move(notFound);
        },
        "Called once by attnscope/__init__.py with attnscope.Error and attnscope.FileNotFound.");
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p)
                std::rethrow_exception(p);
        } catch (const EngineError& e) {
            if (e.cancelled) {
                PyErr_SetNone(PyExc_KeyboardInterrupt);
                return;
            }
            py::object& c = e.notFound ? notFoundClass() : errorClass();
            PyErr_SetString(c ? c.ptr() : PyExc_ValueError, e.message.c_str());
        }
    });
}

py::array view(const Tensor& tensor)
{
    auto* keep = new Tensor(tensor);
    py::capsule owner(keep, [](void* p) { delete static_cast<Tensor*>(p); });
    std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
    py::array a(py::dtype::of<float>(), shape, cStrides(shape, sizeof(float)), tensor.data(), owner);
    makeReadOnly(a);
    return a;
}

py::array view(const Image& image, const std::shared_ptr<const void>& owner)
{
    auto* keep = new std::shared_ptr<const void>(owner);
    py::capsule capsule(keep, [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); });
    std::vector<py::ssize_t> shape { image.height, image.width };
    if (image.channels != 1)
        shape.push_back(image.channels);
    py::array a(py::dtype::of<uint8_t>(), shape, cStrides(shape, 1), image.pixels.data(), capsule);
    makeReadOnly(a);
    return a;
}

Tensor tensorFrom(const py::array& array)
{
    if (!(array.dtype().kind() == 'f' || array.dtype().kind() == 'i' || array.dtype().kind() == 'u'))
        raise("expected a numeric array, got dtype " + std::string(py::str(array.dtype())));
    auto floats = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(array);
    std::vector<int64_t> shape(floats.shape(), floats.shape() + floats.ndim());
    return Tensor::fromData(shape, floats.data());
}

py::array doubles(const std::vector<double>& values, std::vector<py::ssize_t> shape)
{
    if (shape.empty())
        shape.push_back(py::ssize_t(values.size()));
    py::array_t<double> a(shape, cStrides(shape, sizeof(double)));
    std::copy(values.begin(), values.end(), a.mutable_data());
    return a;
}

py::array ints(const std::vector<int64_t>& values)
{
    py::array_t<int64_t> a({ py::ssize_t(values.size()) }, { py::ssize_t(sizeof(int64_t)) });
    std::copy(values.begin(), values.end(), a.mutable_data());
    return a;
}

py::array strings(const std::vector<std::string>& values)
{
    return py::module_::import("numpy").attr("array")(py::cast(values), py::arg("dtype") = "str");
}

} // namespace attnscope::python
