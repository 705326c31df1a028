#include "Bindings.h"

#include <attnscope/CpuKernels.h>

// attnscope._native: the engine for Python. attnscope/__init__.py is the API users import; it takes images in every
// form (paths, numpy arrays, PIL images), names the results and draws progress.

PYBIND11_MODULE(_native, m)
{
    namespace python = attnscope::python;
    m.doc() = "attnscope's engine (docs/python.md); import attnscope, not this module";
    m.attr("torch_version") = attnscope::libtorchVersion(); // the LibTorch the module links
    python::registerErrors(m);
    python::bindModel(m);
    python::bindAnalyses(m);
    python::bindAnalyze(m);
    python::bindRemote(m);
    python::bindRemoteAnalyze(m);
}
