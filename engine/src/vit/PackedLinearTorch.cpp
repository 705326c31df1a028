// PackedLinears on LibTorch 2.x: its own oneDNN 3 through the operators Inductor uses for a CPU linear layer with
// frozen weights, mkldnn::_reorder_linear_weight (the weight reordered once into oneDNN's blocked layout for an inner
// product) and mkldnn::_linear_pointwise (the product on that weight, the bias and the activation as its epilogue).
// LibTorch 2.x links oneDNN into libtorch_cpu.so with its symbols hidden, so its operators are the one way to it
// without a second oneDNN in the process (docs/performance.md, "LibTorch 2.x"). The 1.13 build's path, with Debian's
// oneDNN 2 called directly, is in PackedLinear.cpp.
#include "vit/PackedLinearPaths.h"

#ifdef ATTNSCOPE_TORCH_ONEDNN

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <map>
#include <mutex>
#include <string_view>
#include <tuple>

namespace attnscope {

using packed::eligible;
using packed::plainForward;
using packed::plainSplit;

namespace {

using ReorderOp = at::Tensor(const at::Tensor&, std::optional<int64_t>);
using PointwiseOp = at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&, std::string_view,
                               c10::List<std::optional<at::Scalar>>, std::optional<std::string_view>);

// The two operators, found once; none where this LibTorch lacks them (built without oneDNN) or their signatures
// differ from the ones written here (another LibTorch version): then every layer goes through at::linear.
struct Operators {
    std::optional<c10::TypedOperatorHandle<ReorderOp>> reorder;
    std::optional<c10::TypedOperatorHandle<PointwiseOp>> pointwise;
    bool ok() const { return reorder && pointwise; }
};

const Operators& operators()
{
    static const Operators ops = [] {
        Operators o;
        try {
            auto& dispatcher = c10::Dispatcher::singleton();
            const auto reorder = dispatcher.findSchemaOrThrow("mkldnn::_reorder_linear_weight", "");
            const auto pointwise = dispatcher.findSchemaOrThrow("mkldnn::_linear_pointwise", "");
            o.reorder = reorder.typed<ReorderOp>();
            o.pointwise = pointwise.typed<PointwiseOp>();
        } catch (const c10::Error&) {
            return Operators {};
        }
        return o;
    }();
    return ops;
}

// The activation as the product's epilogue: LibTorch's names for oneDNN's eltwise algorithms ("gelu" with the erf or
// the tanh form, "swish" is x sigmoid(x)); none for CLIP's QuickGelu (swish with alpha 1.702, which the operator's
// "swish" does not take), applied after the product instead.
struct Epilogue {
    std::string_view attr = "none";
    std::optional<std::string_view> algorithm;
    bool fused = true;
};

Epilogue epilogueFor(std::optional<Activation> activation)
{
    if (!activation)
        return {};
    switch (*activation) {
    case Activation::Gelu: return { "gelu", "none" };
    case Activation::GeluTanh: return { "gelu", "tanh" };
    case Activation::Relu: return { "relu", std::nullopt };
    case Activation::Silu: return { "swish", std::nullopt };
    case Activation::QuickGelu: break;
    }
    return { "none", std::nullopt, false };
}

} // namespace

struct PackedLinears::State {
    // layer, the weight's first element and shape: one packed weight each (the whole layer, or one of its parts)
    using Key = std::tuple<const void*, const void*, int64_t, int64_t>;
    std::mutex mutex;
    std::map<Key, at::Tensor> weights;

    // w [out, in] reordered once into the blocked layout oneDNN's inner product reads; the layout is chosen for the
    // first call's row count and serves every later one (the kernel reads any layout it is given correctly).
    at::Tensor packedWeight(const torch::nn::LinearImpl& layer, const at::Tensor& w, int64_t rows)
    {
        const Key key { &layer, w.data_ptr(), w.size(0), w.size(1) };
        std::lock_guard lock(mutex);
        if (auto it = weights.find(key); it != weights.end())
            return it->second;
        at::Tensor packed = operators().reorder->call(w.contiguous(), rows);
        weights.emplace(key, packed);
        return packed;
    }

    // src [rows, in] w^T + b, then the activation
    at::Tensor product(const torch::nn::LinearImpl& layer, const at::Tensor& w, const at::Tensor& b, const at::Tensor& src,
                       std::optional<Activation> activation)
    {
        const Epilogue e = epilogueFor(activation);
        const std::optional<at::Tensor> bias = b.defined() ? std::optional<at::Tensor>(b) : std::nullopt;
        at::Tensor y = operators().pointwise->call(src, packedWeight(layer, w, src.size(0)), bias, e.attr,
                                                   c10::List<std::optional<at::Scalar>>(), e.algorithm);
        return e.fused ? y : applyActivation(y, *activation); // fused: also "none" without an activation
    }
};

PackedLinears::PackedLinears()
    : m_state(std::make_unique<State>())
{
}

PackedLinears::~PackedLinears() = default;

namespace {

// Whether oneDNN runs the packed weights on its brgemm kernels here: a CPU with AVX-512 (F, BW, VL, DQ: oneDNN's
// avx512_core) that ONEDNN_MAX_CPU_ISA, oneDNN's own limit, does not hold below it. Without AVX-512, oneDNN 3.10
// gives the inner product its gemm-based kernel on plain weights (ONEDNN_VERBOSE: gemm:jit:f32), slower than
// at::linear on MKL there (docs/performance.md, "LibTorch 2.x"), so the path stays off.
bool brgemmHere()
{
    if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")
          && __builtin_cpu_supports("avx512dq")))
        return false;
    const char* limit = std::getenv("ONEDNN_MAX_CPU_ISA");
    if (!limit || !*limit)
        return true;
    std::string isa(limit);
    std::transform(isa.begin(), isa.end(), isa.begin(), [](unsigned char c) { return char(std::toupper(c)); });
    return isa == "ALL" || isa == "DEFAULT" || isa.find("AVX512") != std::string::npos || isa.find("AVX10") != std::string::npos;
}

} // namespace

// ATTNSCOPE_PLAIN_LINEAR=1 turns the path off (at::linear throughout), to compare.
bool PackedLinears::available()
{
    static const bool on = std::getenv("ATTNSCOPE_PLAIN_LINEAR") == nullptr && operators().ok() && brgemmHere();
    return on;
}

// What ONEDNN_VERBOSE shows for every ViT-S layer on an AVX-512 CPU: brg_matmul:avx512_core (an inner product on
// brgemm), weights in a blocked layout (AB16b64a), the bias and the activation in the kernel.
const std::string& PackedLinears::kernelHere()
{
    static const std::string kernel = available() ? std::string("brgemm via mkldnn::_linear_pointwise") : std::string();
    return kernel;
}

at::Tensor PackedLinears::forward(torch::nn::Linear& layer, const at::Tensor& x, std::optional<Activation> activation)
{
    if (!eligible(layer, x))
        return plainForward(layer, x, activation);
    const at::Tensor& w = layer->weight;
    return m_state->product(*layer, w, layer->bias, packed::rowsOf(x, w.size(1)), activation).view(packed::shapeWithLast(x, w.size(0)));
}

std::vector<at::Tensor> PackedLinears::forwardSplit(torch::nn::Linear& layer, const at::Tensor& x, int parts)
{
    const at::Tensor& w = layer->weight;
    if (parts < 1 || !eligible(layer, x) || w.size(0) % parts)
        return plainSplit(layer, x, parts);
    const at::Tensor src = packed::rowsOf(x, w.size(1));
    const auto cut = packed::cutIntoParts(layer, parts);
    std::vector<at::Tensor> ys;
    for (int p = 0; p < parts; ++p)
        ys.push_back(m_state->product(*layer, cut.weights[size_t(p)], cut.biases[size_t(p)], src, std::nullopt)
                         .view(packed::shapeWithLast(x, w.size(0) / parts)));
    return ys;
}

} // namespace attnscope

#endif // ATTNSCOPE_TORCH_ONEDNN
