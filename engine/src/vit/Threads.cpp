#include "vit/Threads.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <dlfcn.h>
#include <exception>
#include <malloc.h>
#include <sched.h>
#include <string>
#include <unistd.h>
#include <mutex>
#include <thread>
#include <vector>

namespace attnscope {

namespace {

template <typename F>
F lookup(const char* name)
{
    return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

// OpenMP's count for the calling thread only (its ICV), in whichever OpenMP runtime LibTorch brought (libgomp, or
// the renamed copy of a pytorch.org build).
void setOmpThreadsHere(int threads)
{
    static const auto set = lookup<void (*)(int)>("omp_set_num_threads");
    if (set)
        set(threads);
}

// LibTorch sets a thread's OpenMP count to its intra-op count the first time the thread asks for it
// (at::get_num_threads' lazy initialisation), so the count set here is set after that has run: otherwise a fresh
// inter-op worker's first operator put it back, and with an intra-op count above 1 every forward of a pair ran an
// OpenMP team of its own (seen by ThreadSanitizer: a libgomp thread made by a worker).
class ScopedOmpThreads {
public:
    explicit ScopedOmpThreads(int threads)
        : m_previous(ompThreadsHere())
    {
        (void)at::get_num_threads(); // LibTorch's lazy initialisation of this thread, before the count is set
        setOmpThreadsHere(threads);
    }
    ~ScopedOmpThreads() { setOmpThreadsHere(m_previous); }
    ScopedOmpThreads(const ScopedOmpThreads&) = delete;
    ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

private:
    int m_previous;
};

// OpenBLAS built on pthreads keeps one pool and one thread count for the whole process: two callers asking for
// two threads each fight over it (ViT-S forwards 2.3x slower). While any inter-op section runs it is held at one
// thread; OpenBLAS built on OpenMP, and other BLAS libraries, follow each caller's OpenMP count instead.
class ScopedSingleThreadedBlas {
public:
    ScopedSingleThreadedBlas()
    {
        if (!pthreadPool())
            return;
        std::lock_guard lock(s_mutex);
        if (s_depth++ == 0) {
            static const auto get = lookup<int (*)()>("openblas_get_num_threads"); // present: pthreadPool() checked
            s_saved = get();
            setBlasThreads(1);
        }
    }
    ~ScopedSingleThreadedBlas()
    {
        if (!pthreadPool())
            return;
        std::lock_guard lock(s_mutex);
        if (--s_depth == 0)
            setBlasThreads(s_saved);
    }
    ScopedSingleThreadedBlas(const ScopedSingleThreadedBlas&) = delete;
    ScopedSingleThreadedBlas& operator=(const ScopedSingleThreadedBlas&) = delete;

private:
    static bool pthreadPool()
    {
        static const bool yes = [] {
            const auto parallel = lookup<int (*)()>("openblas_get_parallel"); // 0 sequential, 1 pthreads, 2 OpenMP
            return parallel && lookup<int (*)()>("openblas_get_num_threads") && parallel() == 1;
        }();
        return yes;
    }
    static inline std::mutex s_mutex;
    static inline int s_depth = 0;
    static inline int s_saved = 1;
};

} // namespace

int ompThreadsHere()
{
    static const auto get = lookup<int (*)()>("omp_get_max_threads");
    return get ? get() : 1;
}

std::string blasCoreName()
{
    const auto corename = lookup<char* (*)()>("openblas_get_corename");
    return corename ? std::string(corename()) : std::string();
}

void setBlasThreads(int threads)
{
    if (const auto set = lookup<void (*)(int)>("openblas_set_num_threads"))
        set(threads);
}

namespace {
std::atomic<int> g_interOpThreads { 0 }; // 0: OMP_NUM_THREADS, else the CPUs this process may run on

int availableCpus()
{
    // A count set in the environment (a batch scheduler's, a shard's) limits the whole process, not only OpenMP.
    if (const char* env = std::getenv("OMP_NUM_THREADS")) {
        const int n = std::atoi(env); // "4" or the first of a nested list "4,2"
        if (n > 0)
            return n;
    }
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        return std::max(1, CPU_COUNT(&set));
    return int(std::max(1u, std::thread::hardware_concurrency()));
}
} // namespace

void setInterOpThreads(int threads) { g_interOpThreads = std::max(0, threads); }

int interOpThreads()
{
    if (const int chosen = g_interOpThreads; chosen > 0)
        return chosen;
    static const int available = availableCpus();
    return available;
}

void runInterOp(size_t n, int threads, const std::function<void(size_t)>& task)
{
    const size_t workers = std::min(n, size_t(std::max(1, threads)));
    if (workers <= 1) {
        for (size_t i = 0; i < n; ++i)
            task(i);
        return;
    }
    ScopedSingleThreadedBlas blas;
    std::atomic<size_t> next { 0 };
    std::atomic<bool> failed { false };
    std::vector<std::exception_ptr> errors(workers);
    const auto work = [&](size_t w) {
        ScopedOmpThreads one(1);
        try {
            for (size_t i = next++; i < n && !failed; i = next++)
                task(i);
        } catch (...) {
            errors[w] = std::current_exception();
            failed = true;
        }
    };
    std::vector<std::thread> pool;
    pool.reserve(workers - 1);
    for (size_t w = 1; w < workers; ++w)
        pool.emplace_back(work, w);
    work(0);
    for (auto& t : pool)
        t.join();
    for (auto& e : errors)
        if (e)
            std::rethrow_exception(e);
}

void tuneAllocatorForForwards()
{
    static std::once_flag once;
    std::call_once(once, [] {
        if (!std::getenv("MALLOC_MMAP_THRESHOLD_"))
            mallopt(M_MMAP_THRESHOLD, 32 << 20);
        if (!std::getenv("MALLOC_TRIM_THRESHOLD_"))
            mallopt(M_TRIM_THRESHOLD, 256 << 20);
        if (!std::getenv("MALLOC_TOP_PAD_"))
            mallopt(M_TOP_PAD, 64 << 20);
    });
}

} // namespace attnscope
