// Swin and Swin v2's forward (docs/models.md, "Swin"), in timm's order of operations, so that its numbers are timm's
// (and transformers', whose arithmetic is the same) to float rounding: tests/engine/SwinTest.cpp.
#include "vit/SwinTransformer.h"

#include "vit/PackedLinear.h"
#include "vit/TeamThreads.h"
#include "vit/Threads.h"

#include "vit/VisionTransformer.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <cmath>
#include <stdexcept>

namespace attnscope {

namespace {

at::Tensor param(torch::nn::Module& m, const std::string& name, at::IntArrayRef shape)
{
    return m.register_parameter(name, at::empty(shape), /*requires_grad=*/false);
}

torch::nn::Module& child(torch::nn::Module& parent, const std::string& name)
{
    return *parent.register_module(name, std::make_shared<torch::nn::Module>());
}

// x W^T + b for x [..., in]. Where the engine keeps OpenBLAS on one thread (the ViT's linear layers run on oneDNN,
// PackedLinears, and BLAS would only contend with them) at::linear would run a Swin's products on one thread whatever
// the thread count: its rows are cut into one block per thread, each an OpenBLAS product of its own on a team thread
// (as PackedLinears cuts its rows). Autograd (FGSM through a Swin), another device, few rows or one thread: at::linear.
at::Tensor teamLinear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b = {})
{
    constexpr int64_t kRowsPerBlock = 64;
    const int64_t rows = x.numel() / std::max<int64_t>(x.size(-1), 1);
    const int64_t blocks = std::min<int64_t>(ompThreadsHere(), rows / kRowsPerBlock);
    if (blocks < 2 || PackedLinears::kernelHere().empty() || !x.device().is_cpu() || x.scalar_type() != at::kFloat
        || (at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad())))
        return at::linear(x, w, b);
    const at::Tensor in = x.reshape({ rows, x.size(-1) }).contiguous();
    const at::Tensor wt = w.t();
    at::Tensor out = at::empty({ rows, w.size(0) }, in.options());
    const bool split = runOnTeam(blocks, [&](int64_t i) {
        const int64_t begin = rows * i / blocks, end = rows * (i + 1) / blocks;
        at::Tensor part = out.narrow(0, begin, end - begin);
        if (b.defined())
            at::addmm_out(part, b, in.narrow(0, begin, end - begin), wt);
        else
            at::mm_out(part, in.narrow(0, begin, end - begin), wt);
    });
    if (!split)
        return at::linear(x, w, b);
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape.back() = w.size(0);
    return out.view(shape);
}

// Row-major windows of [B, H, W, C] (H, W multiples of the window) -> [B * nW, wh * ww, C].
at::Tensor partition(const at::Tensor& x, int wh, int ww)
{
    const int64_t b = x.size(0), h = x.size(1), w = x.size(2), c = x.size(3);
    return x.view({ b, h / wh, wh, w / ww, ww, c })
        .permute({ 0, 1, 3, 2, 4, 5 })
        .reshape({ -1, int64_t(wh) * ww, c });
}

// The inverse of partition, for a batch of `b`.
at::Tensor unpartition(const at::Tensor& windows, int64_t b, int64_t h, int64_t w, int wh, int ww)
{
    const int64_t c = windows.size(-1);
    return windows.view({ b, h / wh, w / ww, wh, ww, c }).permute({ 0, 1, 3, 2, 4, 5 }).reshape({ b, h, w, c });
}

// The relative position index of a wh x ww window [N, N] (timm's: (dy + wh - 1) * (2 ww - 1) + dx + ww - 1).
at::Tensor relativeIndex(int wh, int ww)
{
    const int64_t n = int64_t(wh) * ww;
    at::Tensor index = at::empty({ n, n }, at::kLong);
    auto a = index.accessor<int64_t, 2>();
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
            const int64_t dy = i / ww - j / ww, dx = i % ww - j % ww;
            a[i][j] = (dy + wh - 1) * (2 * ww - 1) + dx + ww - 1;
        }
    return index;
}

// The shifted windows' mask [nW, N, N]: 0 between tokens of one region of the rolled grid, -100 across regions
// (timm's get_attn_mask over the padded grid hp x wp).
at::Tensor shiftMask(const WindowBlock& g)
{
    const int hp = g.windowsDown() * g.windowH, wp = g.windowsAcross() * g.windowW;
    at::Tensor regions = at::zeros({ 1, hp, wp, 1 }, at::kFloat);
    const int hs[4] = { 0, hp - g.windowH, hp - g.shiftH, hp };
    const int ws[4] = { 0, wp - g.windowW, wp - g.shiftW, wp };
    float label = 0;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            regions.slice(1, hs[i], hs[i + 1]).slice(2, ws[j], ws[j + 1]).fill_(label);
            label += 1;
        }
    const at::Tensor m = partition(regions, g.windowH, g.windowW).squeeze(-1); // [nW, N]
    const at::Tensor diff = m.unsqueeze(1) - m.unsqueeze(2);
    return at::where(diff != 0, at::full({}, -100.0f), at::zeros({}, at::kFloat));
}

} // namespace

SwinTransformerImpl::SwinTransformerImpl(const ModelConfig& c)
    : m_config(c)
    , m_blocks(windowBlocks(c))
{
    if (c.stages.empty())
        throw std::invalid_argument("a hierarchical model needs its stages");
    const bool v2 = c.hierarchy == Hierarchy::SwinV2;
    const int c0 = c.stages.front().width;
    Stem& stem = m_stem;
    auto& pe = *register_module("patch_embed", std::make_shared<torch::nn::Module>());
    stem.projW = param(child(pe, "proj"), "weight", { c0, c.channels, c.patchSize, c.patchSize });
    stem.projB = param(*pe.named_children()["proj"], "bias", { c0 });
    stem.normW = param(child(pe, "norm"), "weight", { c0 });
    stem.normB = param(*pe.named_children()["norm"], "bias", { c0 });
    auto& layers = child(*this, "layers");
    size_t l = 0;
    for (size_t s = 0; s < c.stages.size(); ++s) {
        const SwinStage& st = c.stages[s];
        auto& stage = child(layers, std::to_string(s));
        Merge merge;
        if (s > 0) {
            const int in = c.stages[s - 1].width;
            auto& ds = child(stage, "downsample");
            const int normWidth = v2 ? st.width : 4 * in; // v2 normalises after the reduction
            merge.normW = param(child(ds, "norm"), "weight", { normWidth });
            merge.normB = param(*ds.named_children()["norm"], "bias", { normWidth });
            merge.reductionW = param(child(ds, "reduction"), "weight", { st.width, 4 * in });
        }
        m_merges.push_back(merge);
        auto& blocks = child(stage, "blocks");
        for (int b = 0; b < st.depth; ++b, ++l) {
            Block w;
            auto& blk = child(blocks, std::to_string(b));
            const int d = st.width;
            w.n1w = param(child(blk, "norm1"), "weight", { d });
            w.n1b = param(*blk.named_children()["norm1"], "bias", { d });
            auto& attn = child(blk, "attn");
            w.qkvW = param(child(attn, "qkv"), "weight", { 3 * d, d });
            if (c.qkvBias)
                w.qkvB = param(*attn.named_children()["qkv"], "bias", { 3 * d });
            w.projW = param(child(attn, "proj"), "weight", { d, d });
            w.projB = param(*attn.named_children()["proj"], "bias", { d });
            if (v2) {
                w.logitScale = param(attn, "logit_scale", { st.heads, 1, 1 });
                auto& cpb = child(attn, "cpb_mlp");
                w.cpb0W = param(child(cpb, "0"), "weight", { 512, 2 });
                w.cpb0B = param(*cpb.named_children()["0"], "bias", { 512 });
                w.cpb2W = param(child(cpb, "2"), "weight", { st.heads, 512 });
            } else {
                const WindowBlock& g = m_blocks[l];
                w.table = param(attn, "relative_position_bias_table",
                    { int64_t(2 * g.windowH - 1) * (2 * g.windowW - 1), st.heads });
            }
            w.n2w = param(child(blk, "norm2"), "weight", { d });
            w.n2b = param(*blk.named_children()["norm2"], "bias", { d });
            auto& mlp = child(blk, "mlp");
            w.fc1W = param(child(mlp, "fc1"), "weight", { st.mlpHidden, d });
            w.fc1B = param(*mlp.named_children()["fc1"], "bias", { st.mlpHidden });
            w.fc2W = param(child(mlp, "fc2"), "weight", { d, st.mlpHidden });
            w.fc2B = param(*mlp.named_children()["fc2"], "bias", { d });
            m_weights.push_back(w);
        }
    }
    const int last = c.stages.back().width;
    m_normW = param(child(*this, "norm"), "weight", { last });
    m_normB = param(*named_children()["norm"], "bias", { last });
    if (c.numClasses > 0) {
        m_headW = param(child(*this, "head"), "weight", { c.numClasses, last });
        m_headB = param(*named_children()["head"], "bias", { c.numClasses });
    }
}

void SwinTransformerImpl::makeBlockTables(const at::Device& device)
{
    m_bias.clear();
    m_mask.clear();
    const bool v2 = m_config.hierarchy == Hierarchy::SwinV2;
    for (size_t l = 0; l < m_blocks.size(); ++l) {
        const WindowBlock& g = m_blocks[l];
        const Block& w = m_weights[l];
        const int64_t n = g.windowArea();
        const at::Tensor index = relativeIndex(g.windowH, g.windowW).view(-1);
        at::Tensor table; // [(2 wh - 1)(2 ww - 1), H]
        if (v2) {
            // timm's continuous position bias: log-spaced relative coordinates, scaled to the pretraining window
            const int pw = m_config.stages[size_t(g.stage)].pretrainedWindow;
            const double sh = std::max((pw > 0 ? pw : g.windowH) - 1, 1),
                         sw = std::max((pw > 0 ? pw : g.windowW) - 1, 1);
            const at::Tensor dy = at::arange(-(g.windowH - 1), g.windowH, at::kFloat) / float(sh);
            const at::Tensor dx = at::arange(-(g.windowW - 1), g.windowW, at::kFloat) / float(sw);
            auto grids = at::meshgrid({ dy, dx }, "ij");
            at::Tensor coords = at::stack({ grids[0], grids[1] }, -1) * 8.0f; // [2wh-1, 2ww-1, 2]
            coords = at::sign(coords) * at::log2(at::abs(coords) + 1.0f) / float(std::log2(8.0));
            const at::Tensor hidden = at::relu(at::linear(coords.to(w.cpb0W.device()), w.cpb0W, w.cpb0B));
            table = at::linear(hidden, w.cpb2W).view({ -1, g.heads });
        } else {
            table = w.table;
        }
        at::Tensor bias
            = table.index_select(0, index.to(table.device())).view({ n, n, g.heads }).permute({ 2, 0, 1 }).contiguous();
        if (v2)
            bias = 16 * at::sigmoid(bias);
        m_bias.push_back(bias.to(device));
        m_mask.push_back(g.shiftH || g.shiftW ? shiftMask(g).to(device) : at::Tensor());
    }
}

at::Tensor SwinTransformerImpl::windowAttention(const at::Tensor& x, int l, ForwardState& state)
{
    const WindowBlock& g = m_blocks[size_t(l - 1)];
    const Block& w = m_weights[size_t(l - 1)];
    const int64_t b = x.size(0), h = x.size(1), wd = x.size(2), c = x.size(3);
    at::Tensor shifted = g.shiftH || g.shiftW ? at::roll(x, { -g.shiftH, -g.shiftW }, { 1, 2 }) : x;
    const int64_t padH = (g.windowH - h % g.windowH) % g.windowH, padW = (g.windowW - wd % g.windowW) % g.windowW;
    if (padH || padW)
        shifted = at::constant_pad_nd(shifted, { 0, 0, 0, padW, 0, padH });
    const int64_t hp = h + padH, wp = wd + padW;
    const at::Tensor windows = partition(shifted, g.windowH, g.windowW); // [B nW, N, C]
    const int64_t bw = windows.size(0), n = windows.size(1), heads = g.heads, d = c / heads;
    const at::Tensor qkv
        = teamLinear(windows, w.qkvW, w.qkvB).reshape({ bw, n, 3, heads, d }).permute({ 2, 0, 3, 1, 4 });
    const at::Tensor q = qkv[0], k = qkv[1], v = qkv[2];
    at::Tensor logits;
    if (m_config.hierarchy == Hierarchy::SwinV2) {
        const auto unit = [](const at::Tensor& t) { return t / t.norm(2, -1, true).clamp_min(1e-12); }; // F.normalize
        logits = at::matmul(unit(q), unit(k).transpose(-2, -1)) * at::clamp_max(w.logitScale, std::log(100.0)).exp();
    } else {
        logits = at::matmul(q * (1.0 / std::sqrt(double(d))), k.transpose(-2, -1));
    }
    logits = logits + m_bias[size_t(l - 1)].unsqueeze(0);
    const int64_t nw = g.numWindows();
    if (m_mask[size_t(l - 1)].defined())
        logits = (logits.view({ b, nw, heads, n, n }) + m_mask[size_t(l - 1)].unsqueeze(1).unsqueeze(0))
                     .view({ bw, heads, n, n });
    const at::Tensor attn = at::softmax(logits, -1);
    if (state.spec.attention && state.wants(l))
        state.attention[size_t(l)] = attn.view({ b, nw, heads, n, n });
    at::Tensor out = at::matmul(attn, v).transpose(1, 2).reshape({ bw, n, c });
    out = unpartition(out, b, hp, wp, g.windowH, g.windowW);
    if (padH || padW)
        out = out.slice(1, 0, h).slice(2, 0, wd);
    if (g.shiftH || g.shiftW)
        out = at::roll(out, { g.shiftH, g.shiftW }, { 1, 2 });
    if (state.headMask.defined()) {
        // Head ablation (docs/analyses.md section 8): O_l[h], before the projection (a per-token map, so after the
        // windows are put back), zeroed or replaced by its mean over the image's tokens where the mask is 0.
        const at::Tensor keep = state.headMask[l].slice(1, 0, heads).to(out.scalar_type()).view({ b, 1, 1, heads, 1 });
        const at::Tensor o = out.reshape({ b, h, wd, heads, d });
        out = (state.ablateMean ? o * keep + (1 - keep) * o.mean({ 1, 2 }, true) : o * keep).reshape({ b, h, wd, c });
    }
    return teamLinear(out, w.projW, w.projB).contiguous();
}

at::Tensor SwinTransformerImpl::block(const at::Tensor& x, int l, ForwardState& state)
{
    const Block& w = m_weights[size_t(l - 1)];
    const WindowBlock& g = m_blocks[size_t(l - 1)];
    const int64_t b = x.size(0), c = x.size(3);
    const double eps = m_config.layerNormEps;
    const bool v2 = m_config.hierarchy == Hierarchy::SwinV2;
    // v1: x + attn(norm1(x)), then x + mlp(norm2(x)); v2 (res-post-norm): x + norm1(attn(x)), then x + norm2(mlp(x))
    const at::Tensor u = v2 ? at::layer_norm(windowAttention(x, l, state), { c }, w.n1w, w.n1b, eps)
                            : windowAttention(at::layer_norm(x, { c }, w.n1w, w.n1b, eps), l, state);
    const at::Tensor r = x + u;
    const auto mlp
        = [&](const at::Tensor& t) { return teamLinear(at::gelu(teamLinear(t, w.fc1W, w.fc1B)), w.fc2W, w.fc2B); };
    const at::Tensor out = v2 ? r + at::layer_norm(mlp(r), { c }, w.n2w, w.n2b, eps)
                              : r + mlp(at::layer_norm(r, { c }, w.n2w, w.n2b, eps));
    const auto flat = [&](const at::Tensor& t) { return t.reshape({ b, int64_t(g.gridH) * g.gridW, c }); };
    if (state.wants(l)) {
        if (state.spec.attnBranch)
            state.attnBranch[size_t(l)] = flat(u);
        if (state.spec.residual)
            state.residual[size_t(l)] = flat(r);
        if (state.spec.blocks)
            state.blocks[size_t(l)] = flat(out);
    }
    return out;
}

at::Tensor SwinTransformerImpl::merge(const at::Tensor& input, size_t s) const
{
    // 2 x 2 neighbours concatenated (timm's order: (0,0), (1,0), (0,1), (1,1)), then reduced
    const Merge& m = m_merges[s];
    const double eps = m_config.layerNormEps;
    at::Tensor x = input;
    const int64_t b = x.size(0), h = x.size(1), w = x.size(2), ch = x.size(3);
    if (h % 2 || w % 2)
        x = at::constant_pad_nd(x, { 0, 0, 0, w % 2, 0, h % 2 });
    x = x.reshape({ b, (h + 1) / 2, 2, (w + 1) / 2, 2, ch }).permute({ 0, 1, 3, 4, 2, 5 }).flatten(3);
    if (m_config.hierarchy == Hierarchy::SwinV2)
        return at::layer_norm(teamLinear(x, m.reductionW), { m.normW.size(0) }, m.normW, m.normB, eps);
    return teamLinear(at::layer_norm(x, { 4 * ch }, m.normW, m.normB, eps), m.reductionW);
}

std::pair<at::Tensor, at::Tensor> SwinTransformerImpl::queriesAndKeys(const at::Tensor& previous, int l) const
{
    const WindowBlock& g = m_blocks[size_t(l - 1)];
    const Block& w = m_weights[size_t(l - 1)];
    const at::Device device = w.qkvW.device();
    at::Tensor x = previous.to(device, w.qkvW.scalar_type());
    if (l > 1 && m_blocks[size_t(l - 2)].stage != g.stage) { // a stage's first block reads the merged tokens
        const WindowBlock& before = m_blocks[size_t(l - 2)];
        x = merge(x.reshape({ x.size(0), before.gridH, before.gridW, x.size(-1) }), size_t(g.stage));
    }
    x = x.reshape({ x.size(0), int64_t(g.gridH) * g.gridW, x.size(-1) });
    if (m_config.hierarchy != Hierarchy::SwinV2) // v1 attends to norm1(x); v2 to x itself (its norm1 is after)
        x = at::layer_norm(x, { x.size(-1) }, w.n1w, w.n1b, m_config.layerNormEps);
    const at::Tensor qkv = at::linear(x.to(at::kCPU, at::kDouble), w.qkvW.to(at::kCPU, at::kDouble),
                                      w.qkvB.defined() ? w.qkvB.to(at::kCPU, at::kDouble) : at::Tensor());
    const int64_t c = qkv.size(-1) / 3;
    return { qkv.slice(-1, 0, c), qkv.slice(-1, c, 2 * c) };
}

at::Tensor SwinTransformerImpl::forward(const at::Tensor& input, ForwardState& state)
{
    if (state.stackTaps || state.neutrenoLambda != 0 || state.boostT != 0)
        throw std::invalid_argument("a hierarchical (Swin) model runs without the NeuTRENO and Boost variants or stacked taps");
    const ModelConfig& c = m_config;
    if (input.size(2) != c.imageHeight || input.size(3) != c.imageWidth)
        throw std::invalid_argument("a Swin model runs at its input size " + std::to_string(c.imageHeight) + "x"
            + std::to_string(c.imageWidth) + ", not " + std::to_string(input.size(2)) + "x"
            + std::to_string(input.size(3)));
    const double eps = c.layerNormEps;
    const Stem& stem = m_stem;
    at::Tensor x
        = at::conv2d(input.to(stem.projW.dtype()), stem.projW, stem.projB, c.patchSize).permute({ 0, 2, 3, 1 });
    x = at::layer_norm(x, { x.size(3) }, stem.normW, stem.normB, eps);
    if (state.spec.blocks && state.wants(0))
        state.blocks[0] = x.reshape({ x.size(0), -1, x.size(3) });
    int l = 0;
    for (size_t s = 0; s < c.stages.size(); ++s) {
        if (s > 0)
            x = merge(x, s);
        for (int b = 0; b < c.stages[s].depth; ++b) {
            if (state.isCancelled && state.isCancelled())
                throw RunCancelled {};
            x = block(x, ++l, state);
        }
    }
    x = at::layer_norm(x, { x.size(3) }, m_normW, m_normB, eps);
    const at::Tensor pooled = x.mean({ 1, 2 });
    return c.numClasses > 0 ? at::linear(pooled, m_headW, m_headB) : pooled;
}

} // namespace attnscope
