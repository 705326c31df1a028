#pragma once

#include <cstdint>
#include <functional>

namespace attnscope {

// Runs task(i) for every i in [0, n) on LibTorch's OpenMP team (the calling thread's intra-op threads), for the
// engine's own splits of one operation where a library would split it worse: the attention's heads (AttentionProducts)
// and the rows of a linear layer (PackedLinears). Each task runs in the caller's InferenceMode (thread-local, so the
// team's threads do not have it of themselves) with an OpenMP count of 1 on its thread, so that a library it calls
// (oneDNN, OpenBLAS) stays on that thread. Tasks must not throw. Returns false, running nothing, where this build
// cannot reach the team (built without oneDNN: LibTorch 2.x brings its own OpenMP runtime, which this file does not
// link); then the caller keeps to its single call.
bool runOnTeam(int64_t n, const std::function<void(int64_t)>& task);

} // namespace attnscope
