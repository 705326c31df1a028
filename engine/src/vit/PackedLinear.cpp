#include "vit/PackedLinear.h"

#include "vit/TeamThreads.h"
#include "vit/Threads.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <atomic>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#ifdef ATTNSCOPE_HAVE_DNNL
#include "vit/OneDnnSupport.h"
#endif
#include "vit/PackedLinearPaths.h"

namespace attnscope {

using packed::eligible;
using packed::plainForward;
using packed::plainSplit;

at::Tensor applyActivation(const at::Tensor& x, Activation a)
{
    switch (a) {
    case Activation::Gelu:
        return at::gelu(x);
    case Activation::GeluTanh:
        return at::gelu(x, "tanh");
    case Activation::QuickGelu:
        return x * at::sigmoid(1.702 * x); // CLIP's approximation (docs/models.md, "Configs and activations")
    case Activation::Relu:
        return at::relu(x);
    case Activation::Silu:
        return at::silu(x);
    }
    return x;
}

#ifdef ATTNSCOPE_HAVE_DNNL

struct PackedLinears::State {
    struct Entry {
        bool usable = false;
        dnnl::primitive primitive;
        dnnl::primitive_desc_base pd;
        std::shared_ptr<dnnl::memory> weights; // packed, shared by the entries of one layer with one layout
    };
    // layer, its weights' memory and shape, its bias's memory (none: null), rows, threads, activation + 1
    using Key = std::tuple<const void*, const void*, int64_t, int64_t, const void*, int64_t, int, int>;
    dnnl::engine engine { dnnl::engine::kind::cpu, 0 };
    std::mutex mutex;
    std::map<Key, std::shared_ptr<const Entry>> entries;
    std::map<std::tuple<const void*, const void*>, std::vector<std::shared_ptr<dnnl::memory>>> packedByLayer;

    // ys[p] [rows, out_p] = src [rows, in] ws[p]^T + bs[p] (then the activation) for every part p, into contiguous
    // ys; false where oneDNN has no fast kernel for one of them, and then the caller goes through at::linear for all.
    bool products(const torch::nn::LinearImpl& layer, const std::vector<at::Tensor>& ws, const std::vector<at::Tensor>& bs,
                  const at::Tensor& src, std::vector<at::Tensor>& ys, std::optional<Activation> activation);
    // y = src w^T + b for `rows` rows through the entry made for them (pointers to row-major [rows, in] and [rows, out]).
    void execute(const Entry& entry, const float* src, float* y, const at::Tensor& b);

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

    // The kernel for y [rows, out] = x [rows, in] w^T (+ b) (then the activation), in oneDNN's order of preference:
    // - matmul, where oneDNN 2.6 has brgemm (CPUs with AVX-512);
    // - else a 1x1 convolution over `rows` positions: x and y row-major are its nwc source and destination, and on
    //   AVX2 oneDNN runs its direct jit_1x1 kernel on them, with the weights packed for it. The matmul and inner
    //   product there are gemm-based, which OneDnnSupport.h refuses.
    // The activation is the kernel's epilogue; where neither takes it, at::linear and applyActivation run instead.
    static std::optional<dnnl::primitive_desc_base> choose(const dnnl::engine& engine, int64_t rows, int64_t in, int64_t out,
                                                           bool bias, std::optional<Activation> activation)
    {
        using dt = dnnl::memory::data_type;
        using tag = dnnl::memory::format_tag;
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user); // each calling thread brings its own
        if (activation) {
            dnnl::post_ops ops;
            appendActivation(ops, *activation);
            attr.set_post_ops(ops);
        }
        try {
            const dnnl::memory::desc src({ rows, in }, dt::f32, tag::ab), weights({ in, out }, dt::f32, tag::any),
                dst({ rows, out }, dt::f32, tag::ab), b({ 1, out }, dt::f32, tag::ab);
            const auto pd = bias ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, b, dst), attr, engine)
                                 : dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, dst), attr, engine);
            if (onednn::isUsableKernel(pd))
                return pd;
        } catch (const dnnl::error&) {
        }
        try {
            const dnnl::memory::desc src({ 1, in, rows }, dt::f32, tag::nwc), weights({ out, in, 1 }, dt::f32, tag::any),
                dst({ 1, out, rows }, dt::f32, tag::nwc), b({ out }, dt::f32, tag::x);
            const auto kind = dnnl::prop_kind::forward_inference;
            const auto direct = dnnl::algorithm::convolution_direct;
            const dnnl::memory::dims ones { 1 }, zeros { 0 };
            const auto pd = bias
                ? dnnl::convolution_forward::primitive_desc(
                      dnnl::convolution_forward::desc(kind, direct, src, weights, b, dst, ones, zeros, zeros), attr, engine)
                : dnnl::convolution_forward::primitive_desc(
                      dnnl::convolution_forward::desc(kind, direct, src, weights, dst, ones, zeros, zeros), attr, engine);
            // the layouts asked for, not ones oneDNN chose instead
            if (onednn::isUsableKernel(pd) && pd.src_desc() == src && pd.dst_desc() == dst)
                return pd;
        } catch (const dnnl::error&) {
        }
        return std::nullopt;
    }

    void build(Entry& e, const torch::nn::LinearImpl& layer, const at::Tensor& w, bool bias, int64_t rows,
               std::optional<Activation> activation)
    {
        using dt = dnnl::memory::data_type;
        using tag = dnnl::memory::format_tag;
        const int64_t out = w.size(0), in = w.size(1); // w [out, in]
        // A reference kernel would be slower than OpenBLAS, and a gemm-based one is unsafe (OneDnnSupport.h).
        const auto pd = choose(engine, rows, in, out, bias, activation);
        if (!pd)
            return;
        e.pd = *pd;
        const dnnl::memory::desc packedDesc = e.pd.weights_desc();
        for (const auto& packed : packedByLayer[{ &layer, w.data_ptr() }])
            if (packed->get_desc() == packedDesc)
                e.weights = packed;
        if (!e.weights) {
            const at::Tensor contiguous = w.contiguous();
            // w [out, in] row-major: the matmul's weights [in, out] transposed, or the convolution's [out, in, 1]
            const dnnl::memory::desc plainDesc = packedDesc.dims().size() == 2
                ? dnnl::memory::desc({ in, out }, dt::f32, tag::ba)
                : dnnl::memory::desc({ out, in, 1 }, dt::f32, tag::oiw);
            dnnl::memory plain(plainDesc, engine, contiguous.data_ptr<float>());
            e.weights = std::make_shared<dnnl::memory>(packedDesc, engine);
            dnnl::stream stream(engine);
            dnnl::reorder(plain, *e.weights).execute(stream, plain, *e.weights);
            stream.wait();
            packedByLayer[{ &layer, w.data_ptr() }].push_back(e.weights);
        }
        e.primitive = dnnl::primitive(e.pd.get()); // a matmul or a convolution, as the descriptor says
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

const std::string& PackedLinears::kernelHere()
{
    static const std::string kernel = [] {
        if (!available())
            return std::string();
        const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
        const auto pd = State::choose(engine, 197, 384, 1152, true, std::nullopt);
        return pd ? std::string(pd->impl_info_str()) : std::string();
    }();
    return kernel;
}

void PackedLinears::State::execute(const Entry& entry, const float* src, float* y, const at::Tensor& b)
{
    // The descriptors the primitive was made for: [rows, in] and [rows, out] row-major (the matmul's ab, the
    // convolution's nwc), the bias as [1, out] or [out].
    std::unordered_map<int, dnnl::memory> args { { DNNL_ARG_SRC, dnnl::memory(entry.pd.src_desc(), engine, const_cast<float*>(src)) },
                                                 { DNNL_ARG_WEIGHTS, *entry.weights },
                                                 { DNNL_ARG_DST, dnnl::memory(entry.pd.dst_desc(), engine, y) } };
    if (b.defined())
        args.emplace(DNNL_ARG_BIAS, dnnl::memory(entry.pd.weights_desc(1), engine, b.data_ptr<float>()));
    onednn::execute(entry.primitive, entry.pd, engine, std::move(args));
}

namespace {
// Rows a thread takes at least when a product is cut into blocks of rows.
constexpr int64_t kRowsPerBlock = 32;
} // namespace

// With more than one intra-op thread the rows are cut into one block per thread, each block a single-threaded product
// on its own team thread (runOnTeam): oneDNN's own split of one 197-row product over two threads reached 1.7x, its
// jit_1x1 kernel on 98 rows alone runs as fast per row as on 197 (docs/performance.md, "Which kernels run where").
bool PackedLinears::State::products(const torch::nn::LinearImpl& layer, const std::vector<at::Tensor>& ws, const std::vector<at::Tensor>& bs,
                                    const at::Tensor& src, std::vector<at::Tensor>& ys, std::optional<Activation> activation)
{
    const int64_t rows = src.size(0), in = src.size(1);
    std::atomic<bool> usable { true };
    const auto block = [&](int64_t begin, int64_t end) {
        for (size_t p = 0; p < ws.size() && usable; ++p) {
            const auto entry = entryFor(layer, ws[p], bs[p], end - begin, activation); // this thread's count
            if (!entry->usable) {
                usable = false;
                return;
            }
            const int64_t out = ws[p].size(0);
            execute(*entry, src.data_ptr<float>() + begin * in, ys[p].data_ptr<float>() + begin * out, bs[p]);
        }
    };
    const int64_t blocks = std::min<int64_t>(ompThreadsHere(), rows / kRowsPerBlock);
    if (blocks < 2 || !runOnTeam(blocks, [&](int64_t i) { block(rows * i / blocks, rows * (i + 1) / blocks); }))
        block(0, rows);
    return usable;
}

at::Tensor PackedLinears::forward(torch::nn::Linear& layer, const at::Tensor& x, std::optional<Activation> activation)
{
    if (!eligible(layer, x))
        return plainForward(layer, x, activation);
    const at::Tensor& w = layer->weight;
    const at::Tensor src = packed::rowsOf(x, w.size(1));
    std::vector<at::Tensor> ys { at::empty({ src.size(0), w.size(0) }, x.options()) };
    if (!m_state->products(*layer, { w }, { layer->bias }, src, ys, activation))
        return plainForward(layer, x, activation);
    return ys.front().view(packed::shapeWithLast(x, w.size(0)));
}

std::vector<at::Tensor> PackedLinears::forwardSplit(torch::nn::Linear& layer, const at::Tensor& x, int parts)
{
    const at::Tensor& w = layer->weight;
    if (parts < 1 || !eligible(layer, x) || w.size(0) % parts)
        return plainSplit(layer, x, parts);
    const int64_t each = w.size(0) / parts;
    const at::Tensor src = packed::rowsOf(x, w.size(1));
    const auto cut = packed::cutIntoParts(layer, parts);
    std::vector<at::Tensor> ys;
    for (int p = 0; p < parts; ++p)
        ys.push_back(at::empty({ src.size(0), each }, x.options()));
    // all parts one way: the same rounding for q, k and v
    if (!m_state->products(*layer, cut.weights, cut.biases, src, ys, std::nullopt))
        return plainSplit(layer, x, parts);
    for (auto& y : ys)
        y = y.view(packed::shapeWithLast(x, each));
    return ys;
}

#elif !defined(ATTNSCOPE_TORCH_ONEDNN) // no oneDNN in this build: at::linear throughout

struct PackedLinears::State { };
PackedLinears::PackedLinears() = default;
PackedLinears::~PackedLinears() = default;
bool PackedLinears::available() { return false; }
const std::string& PackedLinears::kernelHere()
{
    static const std::string none;
    return none;
}
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
