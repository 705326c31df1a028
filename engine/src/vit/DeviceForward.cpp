// The forward of a batch on the model's device (ModelImpl.h): its precision, and the copy of its Traces to the host.
#include "vit/ModelImpl.h"
#include "io/TensorImpl.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/version.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace attnscope {

namespace {

void setAutocast(at::DeviceType device, bool enabled)
{
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(device, enabled);
    if (enabled)
        at::autocast::set_autocast_dtype(device, at::kBFloat16);
#else
    if (device == at::kCUDA) {
        at::autocast::set_enabled(enabled);
        if (enabled)
            at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    } else {
        at::autocast::set_cpu_enabled(enabled);
        if (enabled)
            at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    }
#endif
}

// The precision of one forward on this thread: CUDA's TF32 switches (process-wide; every forward sets them, FP32
// turning them off, cuDNN's included, which LibTorch leaves on by default for the patch embedding's convolution), and
// bfloat16 autocast for BF16, undone at the end of the scope.
class PrecisionScope {
public:
    PrecisionScope(Precision precision, const at::Device& device)
        : m_device(device.type())
        , m_autocast(precision == Precision::Bf16)
    {
        if (precision == Precision::Tf32 && !device.is_cuda())
            throw std::invalid_argument("precision tf32 needs a CUDA device (this model runs on " + device.str() + ")");
        if (device.is_cuda()) {
            at::globalContext().setAllowTF32CuBLAS(precision == Precision::Tf32);
            at::globalContext().setAllowTF32CuDNN(precision == Precision::Tf32);
        }
        if (m_autocast)
            setAutocast(m_device, true);
    }
    ~PrecisionScope()
    {
        if (!m_autocast)
            return;
        setAutocast(m_device, false);
        at::autocast::clear_cache();
    }
    PrecisionScope(const PrecisionScope&) = delete;
    PrecisionScope& operator=(const PrecisionScope&) = delete;

private:
    at::DeviceType m_device;
    bool m_autocast;
};

} // namespace

const char* toString(Precision p)
{
    switch (p) {
    case Precision::Fp32: return "fp32";
    case Precision::Tf32: return "tf32";
    case Precision::Bf16: return "bf16";
    }
    return "?";
}

Result<Precision> parsePrecision(const std::string& name)
{
    for (Precision p : { Precision::Fp32, Precision::Tf32, Precision::Bf16 })
        if (name == toString(p))
            return p;
    return Error { "unknown precision \"" + name + "\" (fp32, tf32, bf16)" };
}

const char* toString(AblationMode m) { return m == AblationMode::Mean ? "mean" : "zero"; }

Result<AblationMode> parseAblationMode(const std::string& name)
{
    for (AblationMode m : { AblationMode::Zero, AblationMode::Mean })
        if (name == toString(m))
            return m;
    return Error { "unknown ablation \"" + name + "\" (zero, mean)" };
}

BatchForward forwardBatch(const Model& model, const at::Tensor& inputs, const RunOptions& options, bool stackTaps)
{
    const Model::Impl& impl = implOf(model);
    const ModelConfig& c = impl.info.config;
    c10::InferenceMode guard;
    PrecisionScope precision(options.precision, impl.device);
    BatchForward out;
    ForwardState& state = out.state;
    state.spec = options.record;
    state.isCancelled = options.isCancelled;
    state.neutrenoLambda = options.neutrenoLambda.value_or(c.neutrenoLambda);
    state.boostT = options.boostT.value_or(c.boostT);
    state.reset(c.depth);
    state.stackTaps = stackTaps;
    // The oneDNN kernels are float32 only: under bfloat16 autocast every product goes through LibTorch.
    const bool fp32 = options.precision != Precision::Bf16;
    state.linears = fp32 ? impl.linears.get() : nullptr;
    state.products = fp32 ? impl.products.get() : nullptr;
    state.knownPositions = impl.positions;
    state.knownRope = impl.rope;
    state.knownGridH = c.gridHeight();
    state.knownGridW = c.gridWidth();
    if (!options.ablatedHeads.empty()) { // checked by Model::runBatch: one entry per input, in range
        auto mask = at::ones({ c.depth + 1, inputs.size(0), c.maxHeads() }, at::kFloat); // a Swin block reads its heads'
        auto m = mask.accessor<float, 3>();
        for (size_t b = 0; b < options.ablatedHeads.size(); ++b)
            if (options.ablatedHeads[b].layer > 0)
                m[options.ablatedHeads[b].layer][int64_t(b)][options.ablatedHeads[b].head] = 0.0f;
        state.headMask = mask.to(impl.device);
        state.ablateMean = options.ablation == AblationMode::Mean;
    }
    at::Tensor x = inputs;
    if (x.device() != impl.device) // from pinned host memory the copy runs beside the host's next work
        x = x.to(impl.device, /*non_blocking=*/x.is_pinned());
    out.logits = impl.forward(x, state);
    return out;
}

std::vector<Trace> hostTraces(const Model& model, const BatchForward& forward, const at::Tensor& inputs,
                              const std::vector<int64_t>& rows, bool withTaps, bool async)
{
    const ModelConfig& c = model.config();
    const ForwardState& state = forward.state;
    const int64_t count = rows.empty() ? inputs.size(0) : int64_t(rows.size());
    at::Tensor index;
    if (!rows.empty())
        index = at::tensor(rows, at::kLong);
    // One copy to the host per recorded tensor (not per image), after the forward: nothing inside it waits.
    const auto host = [&](const at::Tensor& t) {
        if (!t.defined())
            return at::Tensor();
        const at::Tensor picked = index.defined() ? t.index_select(0, index.to(t.device())) : t;
        return async ? hostCopyAsync(picked.to(at::kFloat)) : picked.to(at::kCPU).to(at::kFloat).contiguous();
    };
    const at::Tensor logits = host(forward.logits);
    const at::Tensor shownInputs = index.defined() ? inputs.index_select(0, index.to(inputs.device())) : inputs;
    std::vector<std::vector<at::Tensor>> taps;
    for (const auto* v : { &state.attention, &state.attnBranch, &state.residual, &state.blocks }) {
        taps.emplace_back();
        for (const auto& t : *v)
            taps.back().push_back(withTaps ? host(t) : at::Tensor()); // without taps: the logits alone
    }
    const at::Tensor pool = withTaps && state.poolAttention.defined() ? host(state.poolAttention) : at::Tensor();
    std::vector<Trace> traces(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
        Trace& trace = traces[size_t(i)];
        trace.input = wrap(shownInputs[i]);
        trace.logits = wrap(logits[i]);
        trace.gridHeight = int(inputs.size(2) / c.patchSize);
        trace.gridWidth = int(inputs.size(3) / c.patchSize);
        trace.numPrefixTokens = c.numPrefixTokens();
        trace.numHeads = c.numHeads;
        trace.depth = c.depth;
        trace.neutrenoLambda = state.neutrenoLambda;
        trace.boostT = state.boostT;
        if (c.hierarchical())
            trace.windows = windowBlocks(c);
        const auto pick = [i](const std::vector<at::Tensor>& v) {
            std::vector<Tensor> out;
            out.reserve(v.size());
            for (const auto& t : v)
                out.push_back(t.defined() ? wrap(t[i]) : Tensor());
            return out;
        };
        trace.attention = pick(taps[0]);
        trace.attnBranch = pick(taps[1]);
        trace.residual = pick(taps[2]);
        trace.blocks = pick(taps[3]);
        if (pool.defined())
            trace.poolAttention = wrap(pool[i]);
    }
    return traces;
}

at::Tensor hostCopyAsync(const at::Tensor& t)
{
    if (t.is_cpu()) // nothing to copy; still the `to` that device_path_bench counts as a copy to the host
        return t.to(at::kCPU).contiguous();
    at::Tensor host = at::empty(t.sizes(), t.options().device(at::kCPU).pinned_memory(true));
    host.copy_(t, /*non_blocking=*/true);
    return host;
}

DeviceFence::DeviceFence() = default;
DeviceFence::~DeviceFence() = default;
DeviceFence::DeviceFence(DeviceFence&&) noexcept = default;
DeviceFence& DeviceFence::operator=(DeviceFence&&) noexcept = default;

void DeviceFence::record(const at::Device& device)
{
    if (device.is_cpu()) {
        m_event.reset();
        return;
    }
    const c10::impl::VirtualGuardImpl guard(device.type());
    m_event = std::make_unique<c10::Event>(device.type());
    m_event->record(guard.getStream(device));
}

void DeviceFence::wait() const
{
    if (!m_event)
        return;
#if TORCH_VERSION_MAJOR >= 2
    m_event->synchronize();
#else
    while (!m_event->query()) // LibTorch 1.13's Event has no synchronize
        std::this_thread::sleep_for(std::chrono::microseconds(50));
#endif
}

} // namespace attnscope
