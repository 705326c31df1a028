#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace attnscope {

// The engine's thread plumbing (docs/performance.md, Thread policy): LibTorch's OpenMP team, OpenBLAS's own pool
// when it has one, and inter-op work spread over single-threaded workers.

// OpenMP's thread count for the calling thread (its ICV): what OpenMP-built libraries (oneDNN) called from it use.
int ompThreadsHere();

// OpenBLAS's thread count (looked up at run time: a LibTorch built against another BLAS is left alone).
void setBlasThreads(int threads);
// The kernels OpenBLAS picked for this CPU ("SkylakeX", "Haswell"), "" when LibTorch links another BLAS.
std::string blasCoreName();

// The threads inter-op work may use: what setNumThreads chose, else OMP_NUM_THREADS when set, else every CPU this
// process may run on. Inter-op
// threads never spin-wait (each is single-threaded inside), so using every CPU stays safe on a busy machine, unlike
// LibTorch's intra-op team, which keeps its own default (1 here) unless setNumThreads asks for more.
void setInterOpThreads(int threads);
int interOpThreads();

// Runs task(i) for every i in [0, n) on up to `threads` threads, the caller being one of them. Each thread is
// single-threaded inside (its own OpenMP count is 1; OpenBLAS, if it has a global pthread pool, is held at 1 thread
// while any such section runs) and takes the next index when it finishes one, so unequal tasks balance. The first
// exception stops the handing out of indices and is rethrown here once every thread has joined.
void runInterOp(size_t n, int threads, const std::function<void(size_t)>& task);

// glibc's allocator set for forwards: blocks up to 32 MiB come from the heap and freed memory is kept, so a forward
// reuses pages instead of mapping and faulting in fresh ones each time (two workers faulting at once contend on the
// process's memory map). Environment settings of the user's (MALLOC_*_) win. Called once, by Model::load.
void tuneAllocatorForForwards();

} // namespace attnscope
