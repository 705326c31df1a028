#include "vit/PackedLinear.h"

#include "vit/Threads.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#ifdef ATTNSCOPE_HAVE_DNNL
#include "vit/OneDnnSupport.h"
#endif

namespace attnscope {

at::Tensor applyActivation(const at::Tensor& x, Activation a)
{
    switch (a) {
    case Activation::Gelu:
        return at::gelu(x);
    case Activation::GeluTanh:
        return at::gelu(x, "tanh");
    case Activation::QuickGelu:
        return x * at::sigmoid(1.702 * x); // CLIP's approximation (NAMING.md 5.7)
    case Activation::Relu:
        return at::relu(x);
    case Activation::Silu:
        return at::silu(x);
    }
    return x;
}

namespace {

at::Tensor plainForward(torch::nn::Linear& layer, const at::Tensor& x, std::optional<Activation> activation)
{
    return activation ? applyActivation(layer->forward(x), *activation) : layer->forward(x);
}

// layer->forward(x) cut into `parts` along its last dimension: views, not copies.
std::vector<at::Tensor> plainSplit(torch::nn::Linear& layer, const at::Tensor& x, int parts)
{
    return layer->forward(x).chunk(std::max(parts, 1), -1);
}

} // namespace

#ifdef ATTNSCOPE_HAVE_DNNL

struct PackedLinears::State {
    struct Entry {
        bool usable = false;
        dnnl::matmul primitive;
        dnnl::matmul::primitive_desc pd;
        std::shared_ptr<dnnl::memory> weights; // packed, shared by the entries of one layer with one layout
    };
    // layer, its weights' memory and shape, its bias's memory (none: null), rows, threads, activation + 1
    using Key = std::tuple<const void*, const void*, int64_t, int64_t, const void*, int64_t, int, int>;
    dnnl::engine engine { dnnl::engine::kind::cpu, 0 };
    std::mutex mutex;
    std::map<Key, std::shared_ptr<const Entry>> entries;
    std::map<std::tuple<const void*, const void*>, std::vector<std::shared_ptr<dnnl::memory>>> packedByLayer;

    at::Tensor run(const Entry& entry, const at::Tensor& x, const at::Tensor& src, const at::Tensor& b, int64_t out);

    // For the layer's weights `w` [out, in] and bias `b` (the layer's own, or rows of them: forwardSplit's parts).
    std::shared_ptr<const Entry> entryFor(const torch::nn::LinearImpl& layer, const at::Tensor& w, const at::Tensor& b, int64_t rows,
                                          std::optional<Activation> activation)
    {
        const Key key { &layer, w.data_ptr(), w.size(0), w.size(1), b.defined() ? b.data_ptr() : nullptr, rows, ompThreadsHere(),
                        activation ? int(*activation) + 1 : 0 };
        std::lock_guard lock(mutex);
        if (auto it = entries.find(key); it != entries.end())
            return it->second;
        auto entry = std::make_shared<Entry>();
        try {
            build(*entry, layer, w, b.defined(), rows, activation);
        } catch (const dnnl::error&) {
            entry->usable = false; // no kernel for this shape here: at::linear it is, from now on
        }
        entries.emplace(key, entry);
        return entry;
    }

    // The epilogue computing the activation: oneDNN's eltwise algorithms, with the same definitions as
    // applyActivation() (QuickGelu x sigmoid(1.702 x) is swish with alpha 1.702).
    static void appendActivation(dnnl::post_ops& ops, Activation a)
    {
        using alg = dnnl::algorithm;
        switch (a) {
        case Activation::Gelu: ops.append_eltwise(1.f, alg::eltwise_gelu_erf, 0.f, 0.f); return;
        case Activation::GeluTanh: ops.append_eltwise(1.f, alg::eltwise_gelu_tanh, 0.f, 0.f); return;
        case Activation::QuickGelu: ops.append_eltwise(1.f, alg::eltwise_swish, 1.702f, 0.f); return;
        case Activation::Relu: ops.append_eltwise(1.f, alg::eltwise_relu, 0.f, 0.f); return;
        case Activation::Silu: ops.append_eltwise(1.f, alg::eltwise_swish, 1.f, 0.f); return;
        }
    }

    void build(Entry& e, const torch::nn::LinearImpl& layer, const at::Tensor& w, bool bias, int64_t rows,
               std::optional<Activation> activation)
    {
        using dt = dnnl::memory::data_type;
        using tag = dnnl::memory::format_tag;
        const int64_t out = w.size(0), in = w.size(1); // w [out, in]
        const dnnl::memory::desc src({ rows, in }, dt::f32, tag::ab);
        const dnnl::memory::desc weightsAny({ in, out }, dt::f32, tag::any);
        const dnnl::memory::desc dst({ rows, out }, dt::f32, tag::ab);
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user); // each calling thread brings its own
        if (activation) {
            dnnl::post_ops ops;
            appendActivation(ops, *activation);
            attr.set_post_ops(ops);
        }
        e.pd = bias ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weightsAny, dnnl::memory::desc({ 1, out }, dt::f32, tag::ab), dst), attr, engine)
                    : dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weightsAny, dst), attr, engine);
        // A reference kernel would be slower than OpenBLAS, and a gemm-based one is unsafe (OneDnnSupport.h).
        if (!onednn::isUsableKernel(e.pd))
            return;
        for (const auto& packed : packedByLayer[{ &layer, w.data_ptr() }])
            if (packed->get_desc() == e.pd.weights_desc())
                e.weights = packed;
        if (!e.weights) {
            const at::Tensor contiguous = w.contiguous();
            dnnl::memory plain(dnnl::memory::desc({ in, out }, dt::f32, tag::ba), engine, contiguous.data_ptr<float>());
            e.weights = std::make_shared<dnnl::memory>(e.pd.weights_desc(), engine);
            dnnl::stream stream(engine);
            dnnl::reorder(plain, *e.weights).execute(stream, plain, *e.weights);
            stream.wait();
            packedByLayer[{ &layer, w.data_ptr() }].push_back(e.weights);
        }
        e.primitive = dnnl::matmul(e.pd);
        e.usable = true;
    }
};

PackedLinears::PackedLinears()
    : m_state(std::make_unique<State>())
{
}

PackedLinears::~PackedLinears() = default;

// ATTNSCOPE_PLAIN_LINEAR=1 turns the path off (at::linear throughout, OpenBLAS's threads as without oneDNN), to compare.
bool PackedLinears::available()
{
    static const bool on = std::getenv("ATTNSCOPE_PLAIN_LINEAR") == nullptr;
    return on;
}

namespace {

bool eligible(const torch::nn::Linear& layer, const at::Tensor& x)
{
    const at::Tensor& w = layer->weight;
    return PackedLinears::available() && x.device().is_cpu() && w.device().is_cpu() && x.scalar_type() == at::kFloat
        && w.scalar_type() == at::kFloat && w.dim() == 2 && x.dim() >= 1 && x.size(-1) == w.size(1)
        && x.numel() > 0
        && (!layer->bias.defined() || (layer->bias.scalar_type() == at::kFloat && layer->bias.is_contiguous() && layer->bias.device().is_cpu()))
        && (!c10::GradMode::is_enabled() || (!x.requires_grad() && !w.requires_grad()));
}

} // namespace

// y = src w^T + b through the entry made for w and b; src [rows, in] contiguous, y [..., out] with x's leading sizes.
at::Tensor PackedLinears::State::run(const Entry& entry, const at::Tensor& x, const at::Tensor& src, const at::Tensor& b, int64_t out)
{
    const int64_t in = src.size(-1), rows = src.numel() / in;
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape.back() = out;
    at::Tensor y = at::empty(shape, x.options());
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    dnnl::memory srcMem({ { rows, in }, dt::f32, tag::ab }, engine, src.data_ptr<float>());
    dnnl::memory dstMem({ { rows, out }, dt::f32, tag::ab }, engine, y.data_ptr<float>());
    std::unordered_map<int, dnnl::memory> args { { DNNL_ARG_SRC, srcMem }, { DNNL_ARG_WEIGHTS, *entry.weights }, { DNNL_ARG_DST, dstMem } };
    if (b.defined())
        args.emplace(DNNL_ARG_BIAS, dnnl::memory({ { 1, out }, dt::f32, tag::ab }, engine, b.data_ptr<float>()));
    onednn::execute(entry.primitive, entry.pd, engine, std::move(args));
    return y;
}

at::Tensor PackedLinears::forward(torch::nn::Linear& layer, const at::Tensor& x, std::optional<Activation> activation)
{
    if (!eligible(layer, x))
        return plainForward(layer, x, activation);
    const at::Tensor& w = layer->weight;
    const auto entry = m_state->entryFor(*layer, w, layer->bias, x.numel() / w.size(1), activation);
    if (!entry->usable)
        return plainForward(layer, x, activation);
    return m_state->run(*entry, x, x.contiguous(), layer->bias, w.size(0));
}

std::vector<at::Tensor> PackedLinears::forwardSplit(torch::nn::Linear& layer, const at::Tensor& x, int parts)
{
    const at::Tensor& w = layer->weight;
    if (parts < 1 || !eligible(layer, x) || w.size(0) % parts)
        return plainSplit(layer, x, parts);
    const int64_t each = w.size(0) / parts, rows = x.numel() / w.size(1);
    std::vector<std::shared_ptr<const State::Entry>> entries;
    std::vector<at::Tensor> biases;
    for (int p = 0; p < parts; ++p) {
        biases.push_back(layer->bias.defined() ? layer->bias.narrow(0, p * each, each) : at::Tensor());
        entries.push_back(m_state->entryFor(*layer, w.narrow(0, p * each, each), biases.back(), rows, std::nullopt));
        if (!entries.back()->usable)
            return plainSplit(layer, x, parts); // all parts one way: the same rounding for q, k and v
    }
    const at::Tensor src = x.contiguous();
    std::vector<at::Tensor> ys;
    for (int p = 0; p < parts; ++p)
        ys.push_back(m_state->run(*entries[size_t(p)], x, src, biases[size_t(p)], each));
    return ys;
}

#else // no oneDNN in this build: at::linear throughout

struct PackedLinears::State { };
PackedLinears::PackedLinears() = default;
PackedLinears::~PackedLinears() = default;
bool PackedLinears::available() { return false; }
at::Tensor PackedLinears::forward(torch::nn::Linear& layer, const at::Tensor& x, std::optional<Activation> activation)
{
    return plainForward(layer, x, activation);
}
std::vector<at::Tensor> PackedLinears::forwardSplit(torch::nn::Linear& layer, const at::Tensor& x, int parts)
{
    return plainSplit(layer, x, parts);
}

#endif

} // namespace attnscope
