#include "vit/AttentionProducts.h"

#include "vit/PackedLinear.h"
#include "vit/TeamThreads.h"
#include "vit/Threads.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#ifdef ATTNSCOPE_HAVE_DNNL
#include "vit/OneDnnSupport.h"
#endif

namespace attnscope {

namespace {

at::Tensor plainScores(const at::Tensor& q, const at::Tensor& k, double scale) { return at::matmul(q * scale, k.transpose(-2, -1)); }
at::Tensor plainMix(const at::Tensor& attn, const at::Tensor& v) { return at::matmul(attn, v); }

} // namespace

at::Tensor attentionScores(const at::Tensor& q, const at::Tensor& k, double scale, AttentionProducts* products)
{
    return products ? products->scores(q, k, scale) : plainScores(q, k, scale);
}

at::Tensor attentionMix(const at::Tensor& attn, const at::Tensor& v, AttentionProducts* products)
{
    return products ? products->mix(attn, v) : plainMix(attn, v);
}

#ifdef ATTNSCOPE_HAVE_DNNL

namespace {

// The operands this path takes: CPU float32 [B, H, rows, cols] views with non-negative strides, nothing to
// differentiate, and the packed path switched on (one switch for both: PackedLinears::available()).
bool eligible(const at::Tensor& a, const at::Tensor& b)
{
    if (!AttentionProducts::enabled())
        return false;
    const auto ok = [](const at::Tensor& t) {
        if (!t.device().is_cpu() || t.scalar_type() != at::kFloat || t.dim() != 4 || t.numel() == 0)
            return false;
        for (const int64_t s : t.strides())
            if (s < 0)
                return false;
        return true;
    };
    return ok(a) && ok(b) && a.size(0) == b.size(0) && a.size(1) == b.size(1)
        && a.size(3) == b.size(2) && (!c10::GradMode::is_enabled() || (!a.requires_grad() && !b.requires_grad()));
}

} // namespace

// ATTNSCOPE_PLAIN_ATTENTION=1 turns this path off alone (at::matmul on views of one qkv projection), to compare.
bool AttentionProducts::enabled()
{
    static const bool on = PackedLinears::available() && std::getenv("ATTNSCOPE_PLAIN_ATTENTION") == nullptr;
    return on;
}

struct AttentionProducts::State {
    struct Entry {
        bool usable = false;
        dnnl::matmul primitive;
        dnnl::matmul::primitive_desc pd;
    };
    // sizes and strides of src [B, H, M, K], weights [B, H, K, N] and dst [B, H, M, N], the scale's bits, threads
    using Key = std::array<int64_t, 4 + 3 * 4 + 1 + 1 + 1>;
    dnnl::engine engine { dnnl::engine::kind::cpu, 0 };
    std::mutex mutex;
    std::map<Key, std::shared_ptr<const Entry>> entries;

    static dnnl::memory::desc desc(const at::Tensor& t)
    {
        return dnnl::memory::desc(dnnl::memory::dims(t.sizes().begin(), t.sizes().end()), dnnl::memory::data_type::f32,
                                  dnnl::memory::dims(t.strides().begin(), t.strides().end()));
    }

    std::shared_ptr<const Entry> entryFor(const at::Tensor& a, const at::Tensor& b, const at::Tensor& dst, float scale)
    {
        Key key {};
        size_t i = 0;
        for (int d = 0; d < 4; ++d)
            key[i++] = d < 3 ? a.size(d) : b.size(3);
        for (const at::Tensor* t : { &a, &b, &dst })
            for (int d = 0; d < 4; ++d)
                key[i++] = t->stride(d);
        key[i++] = a.size(3);
        uint32_t bits = 0;
        std::memcpy(&bits, &scale, sizeof bits);
        key[i++] = bits;
        key[i++] = ompThreadsHere();
        std::lock_guard lock(mutex);
        if (auto it = entries.find(key); it != entries.end())
            return it->second;
        auto entry = std::make_shared<Entry>();
        try {
            dnnl::primitive_attr attr;
            attr.set_scratchpad_mode(dnnl::scratchpad_mode::user); // each calling thread brings its own
            if (scale != 1.f)
                attr.set_output_scales(0, { scale });
            entry->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(desc(a), desc(b), desc(dst)), attr, engine);
            // brgemm only: a reference kernel would be slower than at::matmul, and the gemm-based one is unsafe.
            if (onednn::isUsableKernel(entry->pd)) {
                entry->primitive = dnnl::matmul(entry->pd);
                entry->usable = true;
            }
        } catch (const dnnl::error&) {
            entry->usable = false; // no kernel for this layout here: at::matmul it is, from now on
        }
        entries.emplace(key, entry);
        return entry;
    }

    // dst = scale * a b; false (dst untouched) when oneDNN has no fast kernel for these operands.
    bool run(const at::Tensor& a, const at::Tensor& b, at::Tensor& dst, float scale)
    {
        const auto entry = entryFor(a, b, dst, scale);
        if (!entry->usable)
            return false;
        const auto memory = [&](const at::Tensor& t) { return dnnl::memory(desc(t), engine, t.data_ptr<float>()); };
        onednn::execute(entry->primitive, entry->pd, engine,
                        { { DNNL_ARG_SRC, memory(a) }, { DNNL_ARG_WEIGHTS, memory(b) }, { DNNL_ARG_DST, memory(dst) } });
        return true;
    }
};

const std::string& AttentionProducts::pathHere()
{
    static const std::string path = [] {
        if (!enabled())
            return std::string("at::matmul");
        // q k^T on the packed path's layout: q, k [1, 6, 197, 64] views of contiguous [1, 197, 384]
        const auto q = at::empty({ 1, 197, 384 }).view({ 1, 197, 6, 64 }).transpose(1, 2);
        const auto kt = at::empty({ 1, 197, 384 }).view({ 1, 197, 6, 64 }).permute({ 0, 2, 3, 1 });
        const auto logits = at::empty({ 1, 6, 197, 197 });
        const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
        try {
            const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(State::desc(q), State::desc(kt), State::desc(logits)), engine);
            if (onednn::isUsableKernel(pd))
                return "oneDNN " + std::string(pd.impl_info_str());
        } catch (const dnnl::error&) {
        }
        return std::string(PackedLinears::kernelHere().empty() ? "at::matmul" : "per head (at::addmm)");
    }();
    return path;
}

namespace {

// dst[b, h] = scale * a[b, h] b[b, h], one product per head on the operands' own strides (no copies), the heads spread
// over the OpenMP team (runOnTeam): where oneDNN has no brgemm (CPUs without AVX-512) the linear layers still run on
// oneDNN's kernels (PackedLinear.h) and OpenBLAS is held at one thread (Model.cpp), so at::matmul would run every head
// on one thread. Each head's product is the same call whatever the thread count. Only there: with the linear layers on
// OpenBLAS too, it has the threads, and at::matmul is used.
bool headwise(const at::Tensor& a, const at::Tensor& b, at::Tensor& dst, double scale)
{
    if (PackedLinears::kernelHere().empty())
        return false;
    const int64_t heads = a.size(1);
    const auto head = [&](int64_t i) {
        const auto pick = [&](const at::Tensor& t) { return t.select(0, i / heads).select(0, i % heads); };
        at::Tensor out = pick(dst);
        at::addmm_out(out, out, pick(a), pick(b), 0.0, scale);
    };
    if (!runOnTeam(a.size(0) * heads, head))
        for (int64_t i = 0; i < a.size(0) * heads; ++i)
            head(i);
    return true;
}

} // namespace

AttentionProducts::AttentionProducts()
    : m_state(std::make_unique<State>())
{
}

AttentionProducts::~AttentionProducts() = default;

at::Tensor AttentionProducts::scores(const at::Tensor& q, const at::Tensor& k, double scale)
{
    const at::Tensor kt = k.transpose(-2, -1);
    if (!eligible(q, kt))
        return plainScores(q, k, scale);
    at::Tensor out = at::empty({ q.size(0), q.size(1), q.size(2), k.size(2) }, q.options());
    return m_state->run(q, kt, out, float(scale)) || headwise(q, kt, out, scale) ? out : plainScores(q, k, scale);
}

at::Tensor AttentionProducts::mix(const at::Tensor& attn, const at::Tensor& v)
{
    if (!eligible(attn, v))
        return plainMix(attn, v);
    // [B, N, H, d] in memory, seen as [B, H, N, d]
    at::Tensor out = at::empty({ attn.size(0), attn.size(2), attn.size(1), v.size(3) }, attn.options()).transpose(1, 2);
    return m_state->run(attn, v, out, 1.f) || headwise(attn, v, out, 1.0) ? out : plainMix(attn, v);
}

#else // no oneDNN in this build: at::matmul throughout

struct AttentionProducts::State { };
bool AttentionProducts::enabled() { return false; }
const std::string& AttentionProducts::pathHere()
{
    static const std::string path = "at::matmul";
    return path;
}
AttentionProducts::AttentionProducts() = default;
AttentionProducts::~AttentionProducts() = default;
at::Tensor AttentionProducts::scores(const at::Tensor& q, const at::Tensor& k, double scale) { return plainScores(q, k, scale); }
at::Tensor AttentionProducts::mix(const at::Tensor& attn, const at::Tensor& v) { return plainMix(attn, v); }

#endif

} // namespace attnscope
