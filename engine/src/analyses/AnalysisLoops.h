#pragma once

// The float64 loops the analyses share (Analyses.cpp, SignalToNoise.cpp): fixed-lane reductions that vectorise without
// reassociating, and the instruction-set clones. Both files are built with -ffp-contract=off (engine/CMakeLists.txt).

#include "attnscope/Analyses.h"

#include <cstdint>
#include <limits>
#include <vector>

namespace attnscope::loops {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The loops below have two shapes that GCC and Clang vectorise at -O3 (and mostly at -O2) without reassociating
// anything: element-wise loops over contiguous arrays, and reductions that keep kLanes independent float64 partial
// sums, lane k taking the terms i = k (mod kLanes). A single running sum can neither be vectorised (that would
// reassociate it) nor go faster than the adder's latency. The lanes are fixed in the source, so the result does not
// depend on the vector width the compiler picks.
constexpr int kLanes = 8;

// The same loops built for AVX2 and AVX-512 too, the CPU choosing at load time (GCC function multi-versioning on
// x86-64 Linux). The lanes fix the summation order and this file is built with -ffp-contract=off (no fused
// multiply-adds), so every version gives the same bits. Not in sanitizer builds: the dynamic loader runs the
// clones' resolvers while relocating, before the sanitizer's runtime has started, and an instrumented resolver
// crashes there (make test-tsan's binaries died before main).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && !defined(__SANITIZE_THREAD__) \
    && !defined(__SANITIZE_ADDRESS__)
#define ATTNSCOPE_VECTOR_CLONES __attribute__((target_clones("default", "avx2", "avx512f")))
#define ATTNSCOPE_INLINE inline __attribute__((always_inline)) // into each clone, built for its instruction set
#else
#define ATTNSCOPE_VECTOR_CLONES
#define ATTNSCOPE_INLINE inline
#endif

// sum over i in [0, n) of f(i), in float64, kLanes partial sums. Keep f a single product or square: a fused body
// with several sums is left scalar by GCC 12.
template <class F>
ATTNSCOPE_INLINE double laneSum(int64_t n, F&& f)
{
    double acc[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int k = 0; k < kLanes; ++k)
            acc[k] += f(i + k);
    for (; i < n; ++i)
        acc[i % kLanes] += f(i);
    double s = 0;
    for (double v : acc)
        s += v;
    return s;
}

ATTNSCOPE_INLINE double sum(const double* x, int64_t n)
{
    return laneSum(n, [x](int64_t i) { return x[i]; });
}

ATTNSCOPE_INLINE double squaredNorm(const float* x, int64_t n)
{
    return laneSum(n, [x](int64_t i) { const double v = x[i]; return v * v; });
}

ATTNSCOPE_INLINE double dot(const double* x, const double* y, int64_t n)
{
    return laneSum(n, [x, y](int64_t i) { return x[i] * y[i]; });
}

// Column means of an [n, d] tap (zeros when not centring).
std::vector<double> columnMeans(const Tensor& t, bool centre);

// The recorded tensors of one tap.
const std::vector<Tensor>& tapOf(const Trace& t, Tap tap);

} // namespace attnscope::loops
