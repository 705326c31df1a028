#pragma once

#include "attnscope/Result.h"

#include <string>

namespace attnscope {

// What the CPU forward runs on this machine (docs/performance.md, "Which kernels run where"), for make bench and the
// manifest:
// - isa: the vector ISA oneDNN uses here ("avx512_core_amx", "avx2"; ONEDNN_MAX_CPU_ISA lowers it; "" without oneDNN);
// - blas: OpenBLAS's kernels ("SkylakeX", "Haswell"; OPENBLAS_CORETYPE picks them; "" with another BLAS);
// - linear: the linear layers' path ("oneDNN brg:avx512_core", "oneDNN jit_1x1:avx2", "at::linear");
// - attention: the attention's products' path ("oneDNN brg:avx512_core", "per head (at::addmm)", "at::matmul").
struct CpuKernels {
    std::string isa, blas, linear, attention;
};
CpuKernels cpuKernels();

// The LibTorch this build links ("1.13.1", "2.11.0"), and whether it has CUDA: for the window's About.
std::string libtorchVersion();
bool libtorchHasCuda();
// Where a model loaded with LoadOptions::device `spec` (auto | cpu | cuda | cuda:<i>) runs, as ModelInfo::device names it
// ("cpu", "cuda:0"): for the remote engine's hello. An Error for a device this machine has not, saying why.
Result<std::string> resolveDevice(const std::string& spec);

} // namespace attnscope
