#pragma once

// The device path of a batch captured once as a CUDA graph and replayed for every later batch of the same shape
// (AnalysisOptions::cudaGraph): the forward, the batched analyses and the concatenation of their values become one
// graph launch instead of some 1,800 operator launches, so a GPU is fed however slowly the host dispatches.
//
// A run's graphs and everything else its device path queues go on one stream of the run's own (captures cannot use
// the default stream), so that a replay never overtakes the reads of the batch before it: the previous batch's
// values are copied out before the next replay overwrites them. A shape is captured the second time it is seen (the
// first, eager batch is the warm-up: cuBLAS handles, the analyses' tables, the allocator); a shape seen once (the last,
// partial batch) stays eager. Only in builds with a CUDA LibTorch and CUDA (ATTNSCOPE_CUDA_GRAPHS); elsewhere
// available() is false and a run asking for graphs runs eagerly, saying so in note().

#include <ATen/Tensor.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attnscope {

// What the captured work leaves on the device for one batch: valid until the next replay (stream-ordered).
struct GraphedBatch {
    std::vector<std::string> keys; // the analyses' columns (BatchedValues::keys), fixed per shape
    at::Tensor values;             // [images, keys] float64
    at::Tensor logits;             // [inputs, classes] every row's logits
};

class BatchGraphs {
public:
    explicit BatchGraphs(const at::Device& device);
    ~BatchGraphs();
    BatchGraphs(const BatchGraphs&) = delete;
    BatchGraphs& operator=(const BatchGraphs&) = delete;

    static bool available(); // this build can capture CUDA graphs

    // While the returned handle lives, the run's stream is the current one on this thread (null: nothing to do).
    std::shared_ptr<void> useStream();
    // Batch `inputs` (host or device, [R, C, H, W]) through `work`, which queues the batch's device work on the
    // input it is given and returns its outputs: captured and replayed, or nullopt when this batch is to run eagerly
    // (not a CUDA device, no graphs in this build, a shape seen for the first time, a capture that failed).
    std::optional<GraphedBatch> run(const at::Tensor& inputs, const std::function<GraphedBatch(const at::Tensor& input)>& work);
    // What happened, for the user: "" while nothing noteworthy did (e.g. "a capture failed: ..., running eagerly").
    const std::string& note() const { return m_note; }
    int replays() const { return m_replays; }

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
    std::string m_note;
    int m_replays = 0;
};

} // namespace attnscope
