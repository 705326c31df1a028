// CUDA graphs of the device path's batches (BatchGraph.h).
#include "analyses/BatchGraph.h"

#include <ATen/ATen.h>

#if ATTNSCOPE_CUDA_GRAPHS
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <map>

namespace attnscope {

#if ATTNSCOPE_CUDA_GRAPHS

namespace {

std::string firstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

} // namespace

struct BatchGraphs::Impl {
    at::Device device = at::kCPU;
    std::optional<c10::cuda::CUDAStream> stream;
    struct Entry {
        int seen = 0;
        bool failed = false;
        std::unique_ptr<at::cuda::CUDAGraph> graph;
        at::Tensor input; // the static input every replay reads, on the device
        GraphedBatch outputs;
    };
    std::map<std::vector<int64_t>, Entry> entries; // by input shape
};

bool BatchGraphs::available() { return true; }

BatchGraphs::BatchGraphs(const at::Device& device)
    : m_impl(std::make_unique<Impl>())
{
    m_impl->device = device;
    if (device.is_cuda())
        m_impl->stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index());
    else
        m_note = "CUDA graphs need a CUDA device (this run is on " + device.str() + "): every batch ran eagerly";
}

std::shared_ptr<void> BatchGraphs::useStream()
{
    if (!m_impl->stream)
        return nullptr;
    return std::make_shared<c10::cuda::CUDAStreamGuard>(*m_impl->stream);
}

std::optional<GraphedBatch> BatchGraphs::run(const at::Tensor& inputs, const std::function<GraphedBatch(const at::Tensor& input)>& work)
{
    Impl& d = *m_impl;
    if (!d.stream)
        return std::nullopt;
    constexpr size_t kMaxShapes = 4; // a run has one batch shape and its last, partial batch
    const std::vector<int64_t> key(inputs.sizes().begin(), inputs.sizes().end());
    if (!d.entries.count(key) && d.entries.size() >= kMaxShapes)
        return std::nullopt;
    Impl::Entry& e = d.entries[key];
    if (e.failed || ++e.seen < 2) // the first batch of a shape runs eagerly: the warm-up of what is captured
        return std::nullopt;
    if (!e.graph) {
        // Captured on the run's stream in thread-local mode: the reader threads keep allocating page-locked memory
        // meanwhile, which the global mode would forbid. The capture runs nothing; the replay below does.
        e.input = at::empty(inputs.sizes(), inputs.options().device(d.device).pinned_memory(false));
        auto graph = std::make_unique<at::cuda::CUDAGraph>();
        try {
            graph->capture_begin({ 0, 0 }, cudaStreamCaptureModeThreadLocal);
            GraphedBatch out;
            try {
                out = work(e.input);
            } catch (...) {
                try {
                    graph->capture_end(); // ends the stream's capture, which the failure invalidated
                } catch (...) {
                }
                throw;
            }
            graph->capture_end();
            e.outputs = std::move(out);
            e.graph = std::move(graph);
        } catch (const c10::Error& error) {
            e.failed = true;
            m_note = "a CUDA graph capture failed (" + firstLine(error.what_without_backtrace()) + "): those batches ran eagerly";
            return std::nullopt;
        }
    }
    e.input.copy_(inputs, /*non_blocking=*/inputs.is_pinned());
    e.graph->replay();
    ++m_replays;
    return e.outputs;
}

#else

struct BatchGraphs::Impl { };

bool BatchGraphs::available() { return false; }

BatchGraphs::BatchGraphs(const at::Device& device)
{
    m_note = device.is_cuda() ? "this build has no CUDA graphs (its LibTorch or CUDA toolkit lacks them): every batch ran eagerly"
                              : "CUDA graphs need a CUDA device (this run is on " + device.str() + "): every batch ran eagerly";
}

std::shared_ptr<void> BatchGraphs::useStream() { return nullptr; }

std::optional<GraphedBatch> BatchGraphs::run(const at::Tensor&, const std::function<GraphedBatch(const at::Tensor&)>&)
{
    return std::nullopt;
}

#endif

BatchGraphs::~BatchGraphs() = default;

} // namespace attnscope
