#include "vit/TeamThreads.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace attnscope {

// Compiled with -fopenmp where the build has oneDNN (engine/CMakeLists.txt): at::parallel_for is a template whose
// `#pragma omp parallel` is compiled here, in the caller; without the flag it would run every index on this thread.
bool runOnTeam(int64_t n, const std::function<void(int64_t)>& task)
{
#ifdef _OPENMP
    const bool inference = c10::InferenceMode::is_enabled();
    at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
        c10::InferenceMode mode(inference);
        const int previous = omp_get_max_threads();
        omp_set_num_threads(1);
        for (int64_t i = begin; i < end; ++i)
            task(i);
        omp_set_num_threads(previous);
    });
    return true;
#else
    (void)n;
    (void)task;
    return false;
#endif
}

} // namespace attnscope
