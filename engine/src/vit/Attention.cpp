#include "vit/Attention.h"

#include "vit/AttentionProducts.h"
#include "vit/PackedLinear.h"

#include <ATen/ATen.h>

#include <cmath>

namespace attnscope {

namespace {
thread_local bool t_skipInit = false;
} // namespace

SkipParameterInit::SkipParameterInit()
    : m_previous(t_skipInit)
{
    t_skipInit = true;
}
SkipParameterInit::~SkipParameterInit() { t_skipInit = m_previous; }
bool SkipParameterInit::active() { return t_skipInit; }

torch::nn::Linear makeLinear(int64_t in, int64_t out, bool bias)
{
    if (!t_skipInit)
        return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
    // A 1 x 1 layer (its initialisation costs nothing) given parameters of the real shape, unwritten: the loader
    // checks those shapes and then shares the checkpoint's memory with set_data. forward() reads only the tensors.
    torch::nn::Linear layer(torch::nn::LinearOptions(1, 1).bias(bias));
    layer->weight.set_data(at::empty({ out, in }));
    if (bias)
        layer->bias.set_data(at::empty({ out }));
    return layer;
}

at::Tensor AttentionBase::mix(const at::Tensor& logits, const at::Tensor& v, AttentionContext& ctx) const
{
    // [B, H, N, N], rows sum to 1; the same kernel either way
    at::Tensor& into = ctx.attnInto;
    const bool inPlace = into.defined() && logits.scalar_type() == into.scalar_type() && logits.sizes().equals(into.sizes());
    auto attn = inPlace ? at::_softmax_out(into, logits, -1, false) : at::softmax(logits, -1);
    if (ctx.attnOut)
        *ctx.attnOut = attn;
    auto o = attentionMix(attn, v, ctx.products); // [B, H, N, d]
    if (ctx.firstValues) {
        if (ctx.isFirstLayer)
            *ctx.firstValues = v; // V_1: the term below is zero in layer 1
        else if (ctx.neutrenoLambda != 0.0)
            o = o + ctx.neutrenoLambda * (*ctx.firstValues - v); // NeuTRENO, Nguyen et al. Eq. 26 (Definition 1)
    }
    const int64_t B = o.size(0), N = o.size(2);
    if (ctx.headMask.defined()) { // O_l[h] = 0 or the mean of its rows where the mask is 0 (docs/analyses.md section 8)
        const auto keep = ctx.headMask.to(o.scalar_type()).view({ B, o.size(1), 1, 1 });
        o = ctx.ablateMean ? o * keep + (1 - keep) * o.mean(2, true) : o * keep;
    }
    return o.transpose(1, 2).reshape({ B, N, -1 });
}

StandardAttention::StandardAttention(const ModelConfig& c)
    : m_heads(c.numHeads)
    , m_scale(1.0 / std::sqrt(double(c.headDim())))
{
    qkv = register_module("qkv", makeLinear(c.width, 3 * c.attnWidth(), c.qkvBias));
    if (c.attnNorm)
        norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({ int64_t(c.attnWidth()) }).eps(c.layerNormEps)));
    proj = register_module("proj", makeLinear(c.attnWidth(), c.width, c.projBias));
    if (c.relativePositionBias) {
        const int64_t gh = c.gridHeight(), gw = c.gridWidth(), distances = (2 * gh - 1) * (2 * gw - 1);
        relative_position_bias_table = register_parameter("relative_position_bias_table", at::zeros({ distances + 3, c.numHeads }));
        // Patch i = (ri, ci) attending to j = (rj, cj): row (ri - rj + gh - 1)(2 gw - 1) + (ci - cj + gw - 1); the CLS
        // token's row to the patches, the patches' column to it, and CLS to itself take the last three rows.
        const auto rows = at::arange(gh, at::kLong).repeat_interleave(gw), cols = at::arange(gw, at::kLong).repeat({ gh });
        const auto patches = (rows.unsqueeze(1) - rows.unsqueeze(0) + gh - 1) * (2 * gw - 1) + (cols.unsqueeze(1) - cols.unsqueeze(0) + gw - 1);
        auto index = at::empty({ gh * gw + 1, gh * gw + 1 }, at::kLong);
        index.slice(0, 1).slice(1, 1).copy_(patches);
        index.select(0, 0).fill_(distances);
        index.select(1, 0).fill_(distances + 1);
        index[0][0] = distances + 2;
        m_relativeIndex = index.flatten();
    }
}

at::Tensor StandardAttention::relativeBias(int64_t tokens) const
{
    if (!relative_position_bias_table.defined())
        return {};
    TORCH_CHECK(tokens * tokens == m_relativeIndex.numel(), "a relative position bias is for its trained grid only");
    const auto& table = relative_position_bias_table;
    return table.index_select(0, m_relativeIndex.to(table.device())).view({ tokens, tokens, -1 }).permute({ 2, 0, 1 });
}

at::Tensor StandardAttention::forward(const at::Tensor& x, AttentionContext& ctx)
{
    // x [B, N, D] -> q, k, v [B, N, H d] -> [B, H, N, d]; rows of qkv.weight are q|k|v, head-major in each. H d is the
    // model's width D but where the model says otherwise (ModelConfig::attentionWidth).
    const int64_t B = x.size(0), N = x.size(1), D = qkv->weight.size(0) / 3;
    // With the oneDNN products, q, k and v each contiguous (AttentionProducts.h); otherwise views of one projection.
    const auto parts = ctx.linears && ctx.products && AttentionProducts::enabled() ? ctx.linears->forwardSplit(qkv, x, 3)
                                                                                    : applyLinear(qkv, x, ctx.linears).chunk(3, -1);
    const auto heads = [&](const at::Tensor& t) { return t.view({ B, N, m_heads, D / m_heads }).transpose(1, 2); };
    auto q = heads(parts[0]), k = heads(parts[1]);
    const auto v = heads(parts[2]);
    if (ctx.rope.defined()) { // the patch tokens' queries and keys rotated (Rope.h)
        q = rotate(q, ctx.rope);
        k = rotate(k, ctx.rope);
    }
    // Explicit softmax(QK^T / sqrt(d)): the map is recorded by construction, never hidden in a fused kernel.
    auto logits = attentionScores(q, k, m_scale, ctx.products);
    if (relative_position_bias_table.defined())
        logits = logits + relativeBias(N).to(logits.scalar_type()); // inside the softmax, as BEiT's forward adds it
    const auto mixed = mix(logits, v, ctx);
    return applyLinear(proj, norm ? norm->forward(mixed) : mixed, ctx.linears);
}

BilateralAttention::BilateralAttention(const ModelConfig& c)
    : StandardAttention(c)
{
    log_hy = register_parameter("log_hy", at::zeros({ c.numHeads }));
    log_hp = register_parameter("log_hp", at::zeros({ c.numHeads }));
}

at::Tensor BilateralAttention::forward(const at::Tensor& x, AttentionContext& ctx)
{
    // x [B, N, D] (tokens without positions), ctx.positions [1, N, D]
    const int64_t B = x.size(0), N = x.size(1), D = x.size(2), d = D / m_heads;
    auto qkvOut = applyLinear(qkv, x, ctx.linears).reshape({ B, N, 3, m_heads, d }).permute({ 2, 0, 3, 1, 4 });
    auto q = qkvOut[0], k = qkvOut[1], v = qkvOut[2];
    // W_Q p and W_K p: the first two row blocks of qkv.weight, no bias.
    const auto& w = qkv->weight;
    auto pq = at::linear(ctx.positions, w.slice(0, 0, D)).reshape({ 1, N, m_heads, d }).transpose(1, 2);
    auto pk = at::linear(ctx.positions, w.slice(0, D, 2 * D)).reshape({ 1, N, m_heads, d }).transpose(1, 2);
    const auto hy = (at::exp(log_hy) * std::sqrt(double(d))).view({ 1, -1, 1, 1 });
    const auto hp = (at::exp(log_hp) * std::sqrt(double(d))).view({ 1, -1, 1, 1 });
    auto logits = at::matmul(q, k.transpose(-2, -1)) / hy + at::matmul(pq, pk.transpose(-2, -1)) / hp;
    return applyLinear(proj, mix(logits, v, ctx), ctx.linears);
}

QuadraticAttention::QuadraticAttention(const ModelConfig& c)
    : m_heads(c.numHeads)
{
    v = register_module("v", makeLinear(c.width, c.width, c.qkvBias));
    proj = register_module("proj", makeLinear(c.width, c.width, c.projBias));
    centre = register_parameter("centre", at::zeros({ c.numHeads, 2 }));
    alpha = register_parameter("alpha", at::ones({ c.numHeads }));
}

at::Tensor QuadraticAttention::forward(const at::Tensor& x, AttentionContext& ctx)
{
    // x [B, N, D], N = gh*gw patches in row-major order
    const int64_t B = x.size(0), N = x.size(1), D = x.size(2);
    auto rows = at::arange(ctx.gridH, x.options()).repeat_interleave(ctx.gridW);
    auto cols = at::arange(ctx.gridW, x.options()).repeat({ ctx.gridH });
    auto pos = at::stack({ rows, cols }, 1);                        // [N, 2] (row, col)
    auto delta = pos.unsqueeze(0) - pos.unsqueeze(1);               // [N(q), N(k), 2] = pos_k - pos_q
    auto c = centre.view({ m_heads, 1, 1, 2 });
    auto dist = (delta.unsqueeze(0) - c).pow(2).sum(-1);            // [H, N, N] |delta - Delta_h|^2
    auto logits = -alpha.view({ m_heads, 1, 1 }) * (dist - c.pow(2).sum(-1)); // [H, N, N]
    auto values = applyLinear(v, x, ctx.linears).reshape({ B, N, m_heads, D / m_heads }).transpose(1, 2);
    return applyLinear(proj, mix(logits.unsqueeze(0).expand({ B, -1, -1, -1 }), values, ctx), ctx.linears);
}

std::shared_ptr<AttentionBase> makeAttention(const ModelConfig& c)
{
    switch (c.attention) {
    case AttentionKind::Bilateral:
        return std::make_shared<BilateralAttention>(c);
    case AttentionKind::Quadratic:
        return std::make_shared<QuadraticAttention>(c);
    case AttentionKind::Standard:
        break;
    }
    return std::make_shared<StandardAttention>(c);
}

} // namespace attnscope
