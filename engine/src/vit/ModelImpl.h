#pragma once

#include "vit/AttentionProducts.h"
#include "vit/PackedLinear.h"
#include "vit/SwinTransformer.h"
#include "vit/VisionTransformer.h"
#include "attnscope/Model.h"

#include <c10/core/Event.h>

#include <memory>
#include <stdexcept>

namespace attnscope {

// The inside of a loaded Model, for the engine functions that need its weights (decomposition, adversarial
// perturbations, training).
struct Model::Impl {
    ModelInfo info;
    VisionTransformer net { nullptr };
    SwinTransformer swin { nullptr }; // a hierarchical model (ModelConfig::hierarchical) has this instead of `net`
    at::Device device = at::kCPU;
    // Shared by the models made from this one at other input sizes (Model::withInputSize), as `net` is.
    std::shared_ptr<PackedLinears> linears = std::make_shared<PackedLinears>(); // the inference forward's
    std::shared_ptr<AttentionProducts> products = std::make_shared<AttentionProducts>(); // ... and its attention's
    // The position row of each token at the input size (info.config's grid), [1, N, D] on `device`: made once, when
    // the model is loaded or resized, for every forward at that size (undefined without a position embedding).
    at::Tensor positions;
    // ... and the rotary angles of every layer at that size (ModelConfig::rope; empty without).
    std::vector<RopeAngles> rope;
    // The preprocessing for the trained input size (info.preprocess is made from it for another size).
    PreprocessConfig trainedPreprocess;

    // The module's forward, the ViT's or the Swin's: [B, C, H, W] -> logits, recording what `state` asks.
    at::Tensor forward(const at::Tensor& x, ForwardState& state) const
    {
        return swin ? swin.ptr()->forward(x, state) : net.ptr()->forward(x, state);
    }
};

inline const Model::Impl& implOf(const Model& model) { return *model.m_impl; }

// One forward of a batch of normalised inputs [B, C, H, W] (in host or device memory) on the model's device, in the
// options' precision. The logits and the recorded taps ([B, ...] each) stay on that device. Throws RunCancelled when
// the options' isCancelled says so between blocks, c10::Error on a failure inside LibTorch, and std::invalid_argument
// for a precision the device does not have (TF32 off CUDA).
struct BatchForward {
    ForwardState state;
    at::Tensor logits;
};
// stackTaps: the token taps kept as one [L + 1, B, N, D] tensor per kind (ForwardState::stackTaps), for the batched
// analyses.
BatchForward forwardBatch(const Model& model, const at::Tensor& inputs, const RunOptions& options, bool stackTaps = false);
// The inputs of one batch as [C, H, W] tensors, checked against the model: its channels, a size that is a multiple of the
// patch size, one size for all. The one check of Model::runBatch and AnalysisRun::stage.
Result<std::vector<at::Tensor>> checkedBatchInputs(const ModelConfig& config, const std::vector<Tensor>& inputs);

// Runs `f` (a forward and what follows it), turning what a forward throws into the Error a run returns.
template <class F>
auto catchForwardErrors(F&& f) -> decltype(f())
{
    try {
        return f();
    } catch (const RunCancelled&) {
        return Error::cancel();
    } catch (const std::invalid_argument& e) {
        return Error { e.what() };
    } catch (const c10::Error& e) {
        return Error { std::string("forward failed: ") + e.what_without_backtrace() };
    } catch (const std::exception& e) { // a library below LibTorch's own (oneDNN's dnnl::error: no kernel for an op)
        return Error { std::string("forward failed: ") + e.what() };
    }
}

// The Traces of rows `rows` of a batch forward (all rows when empty), copied to the host as float32, one copy per
// recorded tensor; `inputs` is the batch [B, C, H, W] the forward ran on. Without `taps` only the logits are copied.
// `async`: the copies are only queued (hostCopyAsync), and the traces are read once a DeviceFence recorded after them
// has been waited for.
std::vector<Trace> hostTraces(const Model& model, const BatchForward& forward, const at::Tensor& inputs,
                              const std::vector<int64_t>& rows, bool taps = true, bool async = false);

// A copy of `t` in host memory that the device makes in its own time: page-locked, queued on the device's current
// stream and not waited for, so the host goes on queuing work (the next batch) meanwhile. Read it only after a
// DeviceFence recorded after it has been waited for. On the CPU, `t` itself (made contiguous).
at::Tensor hostCopyAsync(const at::Tensor& t);

// A point in a device's queue of work (a CUDA event): recorded once some work is queued, waited for by the host before
// it reads what that work wrote. On the CPU, where work has run by the time it is queued, it holds nothing.
class DeviceFence {
public:
    DeviceFence();
    ~DeviceFence();
    DeviceFence(DeviceFence&&) noexcept;
    DeviceFence& operator=(DeviceFence&&) noexcept;
    void record(const at::Device& device); // after everything queued so far on the device's current stream
    void wait() const;                     // throws c10::Error when the device reports a failure of that work

private:
    std::unique_ptr<c10::Event> m_event;
};

// "auto" (a GPU when there is one), "cpu", "cuda" or "cuda:<i>" (LoadOptions::device, TrainOptions::device); throws a
// LoadError naming the spec for a device this build or machine does not have.
at::Device parseDevice(const std::string& spec);

} // namespace attnscope
