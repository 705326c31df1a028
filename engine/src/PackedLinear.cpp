#include "PackedLinear.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <dlfcn.h>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#ifdef ATTNSCOPE_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace attnscope {

#ifdef ATTNSCOPE_HAVE_DNNL

namespace {

// OpenMP's count for the calling thread, which oneDNN's OpenMP build runs with (an inter-op worker's is 1).
int ompThreadsHere()
{
    using Get = int (*)();
    static const auto get = reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
    return get ? get() : 1;
}

} // namespace

struct PackedLinears::State {
    struct Entry {
        bool usable = false;
        dnnl::matmul primitive;
        dnnl::matmul::primitive_desc pd;
        std::shared_ptr<dnnl::memory> weights; // packed, shared by the entries of one layer with one layout
        size_t scratchpad = 0;
    };
    // layer, its weights' memory and shape (a layer freed and another made at its address is another key), rows,
    // threads
    using Key = std::tuple<const void*, const void*, int64_t, int64_t, int64_t, int>;
    dnnl::engine engine { dnnl::engine::kind::cpu, 0 };
    const bool disabled = std::getenv("ATTNSCOPE_PLAIN_LINEAR") != nullptr; // at::linear throughout (to compare)
    std::mutex mutex;
    std::map<Key, std::shared_ptr<const Entry>> entries;
    std::map<std::tuple<const void*, const void*>, std::vector<std::shared_ptr<dnnl::memory>>> packedByLayer;

    std::shared_ptr<const Entry> entryFor(const torch::nn::LinearImpl& layer, int64_t rows)
    {
        const Key key { &layer, layer.weight.data_ptr(), layer.weight.size(0), layer.weight.size(1), rows, ompThreadsHere() };
        std::lock_guard lock(mutex);
        if (auto it = entries.find(key); it != entries.end())
            return it->second;
        auto entry = std::make_shared<Entry>();
        try {
            build(*entry, layer, rows);
        } catch (const dnnl::error&) {
            entry->usable = false; // no kernel for this shape here: at::linear it is, from now on
        }
        entries.emplace(key, entry);
        return entry;
    }

    void build(Entry& e, const torch::nn::LinearImpl& layer, int64_t rows)
    {
        using dt = dnnl::memory::data_type;
        using tag = dnnl::memory::format_tag;
        const at::Tensor& w = layer.weight; // [out, in]
        const int64_t out = w.size(0), in = w.size(1);
        const bool bias = layer.bias.defined();
        const dnnl::memory::desc src({ rows, in }, dt::f32, tag::ab);
        const dnnl::memory::desc weightsAny({ in, out }, dt::f32, tag::any);
        const dnnl::memory::desc dst({ rows, out }, dt::f32, tag::ab);
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user); // each calling thread brings its own
        e.pd = bias ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weightsAny, dnnl::memory::desc({ 1, out }, dt::f32, tag::ab), dst), attr, engine)
                    : dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weightsAny, dst), attr, engine);
        // A reference kernel would be slower than OpenBLAS: only oneDNN's JIT kernels are worth it.
        const std::string impl = e.pd.impl_info_str();
        if (impl.find("ref") != std::string::npos)
            return;
        for (const auto& packed : packedByLayer[{ &layer, layer.weight.data_ptr() }])
            if (packed->get_desc() == e.pd.weights_desc())
                e.weights = packed;
        if (!e.weights) {
            const at::Tensor contiguous = w.contiguous();
            dnnl::memory plain(dnnl::memory::desc({ in, out }, dt::f32, tag::ba), engine, contiguous.data_ptr<float>());
            e.weights = std::make_shared<dnnl::memory>(e.pd.weights_desc(), engine);
            dnnl::stream stream(engine);
            dnnl::reorder(plain, *e.weights).execute(stream, plain, *e.weights);
            stream.wait();
            packedByLayer[{ &layer, layer.weight.data_ptr() }].push_back(e.weights);
        }
        e.primitive = dnnl::matmul(e.pd);
        e.scratchpad = e.pd.scratchpad_desc().get_size();
        e.usable = true;
    }
};

PackedLinears::PackedLinears()
    : m_state(std::make_unique<State>())
{
}

PackedLinears::~PackedLinears() = default;

bool PackedLinears::available() { return true; }

at::Tensor PackedLinears::forward(torch::nn::Linear& layer, const at::Tensor& x)
{
    const at::Tensor& w = layer->weight;
    const bool plain = x.device().is_cpu() && w.device().is_cpu() && x.scalar_type() == at::kFloat
        && w.scalar_type() == at::kFloat && w.dim() == 2 && x.dim() >= 1 && x.size(-1) == w.size(1) && x.numel() > 0
        && (!layer->bias.defined() || (layer->bias.scalar_type() == at::kFloat && layer->bias.is_contiguous() && layer->bias.device().is_cpu()))
        && (!c10::GradMode::is_enabled() || (!x.requires_grad() && !w.requires_grad()));
    if (!plain)
        return layer->forward(x);
    const int64_t in = w.size(1), out = w.size(0), rows = x.numel() / in;
    if (m_state->disabled)
        return layer->forward(x);
    const auto entry = m_state->entryFor(*layer, rows);
    if (!entry->usable)
        return layer->forward(x);
    const at::Tensor src = x.contiguous();
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape.back() = out;
    at::Tensor y = at::empty(shape, x.options());
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    const auto& engine = m_state->engine;
    dnnl::memory srcMem({ { rows, in }, dt::f32, tag::ab }, engine, src.data_ptr<float>());
    dnnl::memory dstMem({ { rows, out }, dt::f32, tag::ab }, engine, y.data_ptr<float>());
    thread_local std::vector<uint8_t> scratch;
    if (scratch.size() < entry->scratchpad)
        scratch.resize(entry->scratchpad);
    dnnl::memory scratchMem(entry->pd.scratchpad_desc(), engine, scratch.data());
    std::unordered_map<int, dnnl::memory> args { { DNNL_ARG_SRC, srcMem }, { DNNL_ARG_WEIGHTS, *entry->weights },
                                                 { DNNL_ARG_DST, dstMem }, { DNNL_ARG_SCRATCHPAD, scratchMem } };
    if (layer->bias.defined())
        args.emplace(DNNL_ARG_BIAS, dnnl::memory({ { 1, out }, dt::f32, tag::ab }, engine, layer->bias.data_ptr<float>()));
    dnnl::stream stream(engine);
    entry->primitive.execute(stream, args);
    stream.wait();
    return y;
}

#else // no oneDNN in this build: at::linear throughout

struct PackedLinears::State { };
PackedLinears::PackedLinears() = default;
PackedLinears::~PackedLinears() = default;
bool PackedLinears::available() { return false; }
at::Tensor PackedLinears::forward(torch::nn::Linear& layer, const at::Tensor& x) { return layer->forward(x); }

#endif

} // namespace attnscope
