#include "vit/VisionTransformer.h"

#include "vit/PackedLinear.h"

#include <ATen/ATen.h>

#include <cmath>

namespace attnscope {

namespace {

torch::nn::LayerNorm layerNorm(const ModelConfig& c, int64_t width = 0)
{
    return torch::nn::LayerNorm(torch::nn::LayerNormOptions({ width > 0 ? width : int64_t(c.width) }).eps(c.layerNormEps));
}

} // namespace

void ForwardState::reset(int depth)
{
    attention.assign(size_t(depth + 1), {});
    attnBranch.assign(size_t(depth + 1), {});
    residual.assign(size_t(depth + 1), {});
    blocks.assign(size_t(depth + 1), {});
    poolAttention = at::Tensor();
    attentionStack = attnBranchStack = residualStack = blocksStack = TapStack();
}

at::Tensor ForwardState::row(std::vector<at::Tensor>& taps, TapStack& stack, int layer, at::IntArrayRef sizes, const at::TensorOptions& options)
{
    if (!stackTaps)
        return {};
    if (!stack.rows.defined()) {
        std::vector<int64_t> shape { int64_t(taps.size()) - layer };
        shape.insert(shape.end(), sizes.begin(), sizes.end());
        stack.rows = at::empty(shape, options);
        stack.first = layer;
    }
    TORCH_INTERNAL_ASSERT(layer >= stack.first && stack.rows.sizes().slice(1).equals(sizes), "a tap unlike its stack's");
    return stack.rows.select(0, layer - stack.first);
}

void ForwardState::keep(std::vector<at::Tensor>& taps, TapStack& stack, int layer, const at::Tensor& t)
{
    taps[size_t(layer)] = t;
    if (!stackTaps)
        return;
    // Written straight into its row (the op that made it was given row()): nothing to copy. Otherwise (a map that
    // autocast made apart, U, X_0) copied there.
    const at::Tensor& rows = stack.rows;
    if (rows.defined() && layer >= stack.first && t.is_contiguous() && t.scalar_type() == rows.scalar_type()
        && t.sizes().equals(rows.sizes().slice(1))
        && t.data_ptr() == static_cast<char*>(rows.data_ptr()) + (layer - stack.first) * rows.stride(0) * rows.element_size())
        return;
    taps[size_t(layer)] = row(taps, stack, layer, t.sizes(), t.options()).copy_(t);
}

const ForwardState::TapStack& ForwardState::stackOf(const std::vector<at::Tensor>& taps) const
{
    static const TapStack none;
    return &taps == &attention ? attentionStack : &taps == &attnBranch ? attnBranchStack : &taps == &residual ? residualStack
                                                                                     : &taps == &blocks ? blocksStack : none;
}

PatchEmbedImpl::PatchEmbedImpl(const ModelConfig& c)
    : kind(c.patchEmbedding)
    , patchSize(c.patchSize)
{
    const int64_t patchPixels = int64_t(c.patchSize) * c.patchSize * c.channels;
    if (kind == PatchEmbedding::Convolution) {
        proj = register_module("proj", torch::nn::Conv2d(torch::nn::Conv2dOptions(c.channels, c.width, c.patchSize)
                                                             .stride(c.patchSize)
                                                             .bias(c.patchBias)));
    } else {
        if (c.patchNormIn)
            norm_in = register_module("norm_in", torch::nn::LayerNorm(torch::nn::LayerNormOptions({ patchPixels }).eps(c.layerNormEps)));
        linear = register_module("linear", makeLinear(patchPixels, c.width, c.patchBias));
    }
    if (c.patchNormOut)
        norm = register_module("norm", layerNorm(c));
}

at::Tensor PatchEmbedImpl::forward(const at::Tensor& x)
{
    // [B, C, H, W] -> [B, gh*gw, D], patches in row-major order
    at::Tensor tokens;
    if (kind == PatchEmbedding::Convolution) {
        tokens = proj->forward(x).flatten(2).transpose(1, 2); // [B, D, gh, gw] -> [B, gh*gw, D]
    } else {
        // [B, C, gh, P, gw, P] -> [B, gh, gw, P, P, C] (p1 p2 c) or [B, gh, gw, C, P, P] (c p1 p2), flattened per patch
        const int64_t B = x.size(0), C = x.size(1), gh = x.size(2) / patchSize, gw = x.size(3) / patchSize;
        const auto grid = x.view({ B, C, gh, patchSize, gw, patchSize });
        const auto patches = (kind == PatchEmbedding::LinearChannelsLast ? grid.permute({ 0, 2, 4, 3, 5, 1 })
                                                                          : grid.permute({ 0, 2, 4, 1, 3, 5 }))
                                 .reshape({ B, gh * gw, -1 });
        tokens = linear->forward(norm_in ? norm_in->forward(patches) : patches);
    }
    return norm ? norm->forward(tokens) : tokens;
}

const at::Tensor& PatchEmbedImpl::weight() const { return proj ? proj->weight : linear->weight; }

MlpImpl::MlpImpl(const ModelConfig& c)
    : activation(c.activation)
    , gated(c.mlpGated)
{
    fc1 = register_module("fc1", makeLinear(c.width, gated ? 2 * c.mlpHidden : c.mlpHidden));
    if (c.mlpNorm)
        norm = register_module("norm", layerNorm(c, c.mlpHidden));
    fc2 = register_module("fc2", makeLinear(c.mlpHidden, c.width));
}

at::Tensor MlpImpl::forward(const at::Tensor& x, PackedLinears* linears)
{
    // [B, N, D] -> [B, N, M] -> [B, N, D]
    at::Tensor hidden;
    if (gated) { // [B, N, 2M]: the gate's activation times the value (timm's GluMlp, gate first)
        const auto parts = applyLinear(fc1, x, linears).chunk(2, -1);
        hidden = applyActivation(parts[0], activation) * parts[1];
    } else {
        hidden = linears ? linears->forward(fc1, x, activation) : applyActivation(fc1->forward(x), activation);
    }
    if (norm)
        hidden = norm->forward(hidden);
    return applyLinear(fc2, hidden, linears);
}

AttentionPoolImpl::AttentionPoolImpl(const ModelConfig& c)
    : heads(c.numHeads)
{
    const int64_t D = c.width;
    latent = register_parameter("latent", at::zeros({ 1, 1, D }));
    q = register_module("q", makeLinear(D, D));
    kv = register_module("kv", makeLinear(D, 2 * D));
    proj = register_module("proj", makeLinear(D, D));
    norm = register_module("norm", layerNorm(c));
    ModelConfig plain = c; // a plain MLP of its own width, with the model's activation
    plain.mlpHidden = c.poolMlpHidden;
    plain.mlpGated = plain.mlpNorm = false;
    mlp = register_module("mlp", Mlp(plain));
}

at::Tensor AttentionPoolImpl::forward(const at::Tensor& x, at::Tensor* attnOut)
{
    // x [B, P, D]; the query [B, H, 1, d], keys and values [B, H, P, d]
    const int64_t B = x.size(0), P = x.size(1), D = x.size(2), d = D / heads;
    const auto query = q->forward(latent.expand({ B, -1, -1 })).view({ B, 1, heads, d }).transpose(1, 2);
    const auto keysValues = kv->forward(x).view({ B, P, 2, heads, d }).permute({ 2, 0, 3, 1, 4 });
    const auto attn = at::softmax(at::matmul(query * (1.0 / std::sqrt(double(d))), keysValues[0].transpose(-2, -1)), -1);
    if (attnOut)
        *attnOut = attn.squeeze(2).to(at::kFloat); // [B, H, P]
    auto o = proj->forward(at::matmul(attn, keysValues[1]).transpose(1, 2).reshape({ B, D }));
    return o + mlp->forward(norm->forward(o), nullptr);
}

LayerScaleImpl::LayerScaleImpl(int width, bool enabled)
{
    if (enabled)
        gamma = register_parameter("gamma", at::ones({ width }));
}

at::Tensor LayerScaleImpl::forward(const at::Tensor& x) { return gamma.defined() ? x * gamma : x; }

BlockImpl::BlockImpl(const ModelConfig& c)
    : placement(c.blockNorm)
    , kind(c.block)
    , numHeads(c.numHeads)
{
    if (kind == BlockKind::Standard)
        norm1 = register_module("norm1", layerNorm(c));
    attn = register_module("attn", makeAttention(c));
    ls1 = register_module("ls1", LayerScale(c.width, c.layerScale));
    if (kind == BlockKind::Standard) {
        norm2 = register_module("norm2", layerNorm(c));
        mlp = register_module("mlp", Mlp(c));
        ls2 = register_module("ls2", LayerScale(c.width, c.layerScale));
    }
}

at::Tensor BlockImpl::forward(const at::Tensor& x, int layer, ForwardState& state)
{
    // [B, N, D] -> [B, N, D]
    const bool keep = state.wants(layer);
    AttentionContext ctx;
    ctx.attnOut = keep && state.spec.attention ? &state.attention[size_t(layer)] : nullptr;
    ctx.neutrenoLambda = state.neutrenoLambda;
    ctx.firstValues = state.neutrenoLambda != 0.0 ? &state.firstValues : nullptr;
    ctx.isFirstLayer = layer == 1;
    ctx.positions = state.positions;
    ctx.gridH = state.gridH;
    ctx.gridW = state.gridW;
    ctx.rope = layerAngles(state.rope, layer);
    ctx.linears = state.linears;
    ctx.products = state.products;
    if (state.headMask.defined()) {
        ctx.headMask = state.headMask[layer];
        ctx.ablateMean = state.ablateMean;
    }
    // With stacked taps the attention's softmax writes the map straight into its row (float32, as softmax leaves it
    // under autocast too).
    if (ctx.attnOut && state.stackTaps)
        ctx.attnInto = state.row(state.attention, state.attentionStack, layer, { x.size(0), numHeads, x.size(1), x.size(1) },
                                 x.options().dtype(at::kFloat));
    const auto record = [&](const at::Tensor& u, const at::Tensor& r) {
        if (ctx.attnOut && state.stackTaps) // the map the attention left there (its row, or copied into it)
            state.keep(state.attention, state.attentionStack, layer, *ctx.attnOut);
        if (keep && state.spec.attnBranch)
            state.keep(state.attnBranch, state.attnBranchStack, layer, u);
        if (keep && state.spec.residual)
            state.keep(state.residual, state.residualStack, layer, r);
    };
    // The residual the attention branch is added to: X_{l-1}, or with Boost (filtering paper, Eq. 31)
    // t X_0 + (1 - t) X_{l-1}.
    const auto skip = [&](const at::Tensor& prev) {
        return state.boostT != 0.0 ? state.boostT * state.x0 + (1.0 - state.boostT) * prev : prev;
    };
    // a + b, written into the row of `taps`' stack for this layer when it is kept there (R_l and X_l).
    const auto sum = [&](const at::Tensor& a, const at::Tensor& b, std::vector<at::Tensor>& taps, ForwardState::TapStack& stack,
                         bool kept) {
        at::Tensor into = kept ? state.row(taps, stack, layer, a.sizes(), a.options().dtype(c10::promoteTypes(a.scalar_type(), b.scalar_type()))) : at::Tensor();
        return into.defined() && b.sizes().equals(a.sizes()) ? at::add_out(into, a, b) : a + b;
    };

    if (kind == BlockKind::AttentionOnly) { // X_l = U_l (Cordonnier et al., Lemma 1)
        auto u = ls1->forward(attn->forward(x, ctx));
        record(u, u);
        return u;
    }
    const bool keepR = keep && state.spec.residual;
    if (placement == BlockNorm::Pre) {
        auto u = ls1->forward(attn->forward(norm1->forward(x), ctx)); // U_l
        auto r = sum(skip(x), u, state.residual, state.residualStack, keepR); // R_l
        record(u, r);
        return sum(r, ls2->forward(mlp->forward(norm2->forward(r), state.linears)), state.blocks, state.blocksStack,
                   state.spec.blocks && keep);
    }
    // Post-norm (nn.TransformerEncoderLayer's default): the taps sit at the same places, before each norm.
    auto u = ls1->forward(attn->forward(x, ctx));
    auto r = sum(skip(x), u, state.residual, state.residualStack, keepR);
    record(u, r);
    auto h = norm1->forward(r);
    return norm2->forward(h + ls2->forward(mlp->forward(h, state.linears)));
}

VisionTransformerImpl::VisionTransformerImpl(const ModelConfig& c)
    : config(c)
{
    const int64_t D = c.width;
    patch_embed = register_module("patch_embed", PatchEmbed(c));
    if (c.classToken)
        cls_token = register_parameter("cls_token", at::zeros({ 1, 1, D }));
    if (c.distToken)
        dist_token = register_parameter("dist_token", at::zeros({ 1, 1, D }));
    if (c.numRegisters > 0)
        reg_token = register_parameter("reg_token", at::zeros({ 1, c.numRegisters, D }));
    if (c.posEmbed)
        pos_embed = register_parameter("pos_embed", at::zeros({ 1, c.numPatches() + (c.posEmbedHasPrefix ? c.numPrefixTokens() : 0), D }));
    if (c.preNorm)
        norm_pre = register_module("norm_pre", layerNorm(c));
    blocks = register_module("blocks", torch::nn::ModuleList());
    for (int i = 0; i < c.depth; ++i)
        blocks->push_back(Block(c));
    if (c.finalNorm == FinalNorm::AllTokens)
        norm = register_module("norm", layerNorm(c));
    if (c.finalNorm == FinalNorm::Pooled)
        fc_norm = register_module("fc_norm", layerNorm(c));
    if (c.pooling == Pooling::AttentionPool)
        attn_pool = register_module("attn_pool", AttentionPool(c));
    if (c.numClasses > 0) {
        const int in = c.pooling == Pooling::TokenAndPatchMean ? 2 * c.width : c.width;
        // CLIP's projection has no bias; the loader registers what the checkpoint has.
        head = register_module("head", makeLinear(in, c.numClasses, !c.headIsProjection));
        if (c.pooling == Pooling::Distilled)
            head_dist = register_module("head_dist", makeLinear(c.width, c.numClasses));
    }
    if (c.rope == ModelConfig::Rope::Mixed) {
        rope = register_module("rope", std::make_shared<torch::nn::Module>());
        ropeFreqs = rope->register_parameter("freqs", at::zeros({ 2, c.depth, c.numHeads, c.headDim() / 2 }));
    }
}

at::Tensor sinCosPositions(int gridH, int gridW, int width)
{
    // vit-pytorch's posemb_sincos_2d (temperature 10000), in float32 as it computes it: per patch (y, x), the rows
    // [sin(x w), cos(x w), sin(y w), cos(y w)] with w_i = 10000^(-i / (D/4 - 1)), i < D/4.
    const auto f = at::TensorOptions().dtype(at::kFloat);
    const int64_t quarter = width / 4;
    const auto omega = 1.0 / at::pow(10000.0, at::arange(quarter, f) / double(std::max<int64_t>(quarter - 1, 1)));
    const auto y = at::arange(gridH, f).repeat_interleave(gridW).unsqueeze(1) * omega.unsqueeze(0);
    const auto x = at::arange(gridW, f).repeat({ gridH }).unsqueeze(1) * omega.unsqueeze(0);
    return at::cat({ x.sin(), x.cos(), y.sin(), y.cos() }, 1).unsqueeze(0);
}

at::Tensor VisionTransformerImpl::positionEmbedding(int gridH, int gridW) const
{
    const int trainedH = config.gridHeight(), trainedW = config.gridWidth();
    if (gridH == trainedH && gridW == trainedW)
        return pos_embed;
    if (config.posFixedSinCos) // a fixed table is made for the grid, not resampled
        return sinCosPositions(gridH, gridW, config.width).to(pos_embed.device());
    // Resample the patch part as timm's resample_abs_pos_embed does (timm 1.0.9, timm/layers/pos_embed.py:
    // F.interpolate(mode='bicubic', align_corners=False, antialias=True) on [1, D, gh, gw], in float32), keeping the
    // prefix rows as they are. With antialias the kernel is PIL's bicubic (a = -0.5, taps outside the grid dropped and
    // the rest renormalised) and, when a side shrinks, widened by the scale factor, so that a smaller grid averages
    // the rows it replaces instead of sampling them.
    const int64_t prefix = config.posEmbedHasPrefix ? config.numPrefixTokens() : 0;
    auto prefixRows = pos_embed.slice(1, 0, prefix);
    auto grid = pos_embed.slice(1, prefix).reshape({ 1, trainedH, trainedW, -1 }).permute({ 0, 3, 1, 2 });
    auto resized = at::_upsample_bicubic2d_aa(grid, { gridH, gridW }, false);
    resized = resized.permute({ 0, 2, 3, 1 }).reshape({ 1, int64_t(gridH) * gridW, -1 });
    return at::cat({ prefixRows, resized }, 1);
}

at::Tensor VisionTransformerImpl::tokens(const at::Tensor& input)
{
    // input [B, C, H, W] -> [B, N, D], N = prefix + gh*gw, prefix order [CLS, dist, registers]
    const int64_t B = input.size(0);
    auto x = patch_embed->forward(input);
    std::vector<at::Tensor> parts;
    for (const auto* t : { &cls_token, &dist_token, &reg_token })
        if (t->defined())
            parts.push_back(t->expand({ B, -1, -1 }));
    if (parts.empty())
        return x;
    parts.push_back(x);
    return at::cat(parts, 1);
}

at::Tensor VisionTransformerImpl::tokenPositions(int gridH, int gridW) const
{
    const int64_t prefix = config.numPrefixTokens();
    if (!config.posEmbed)
        return at::zeros({ 1, prefix + int64_t(gridH) * gridW, config.width }, patch_embed->weight().options());
    auto pos = positionEmbedding(gridH, gridW);
    if (config.posEmbedHasPrefix)
        return pos;
    // timm's no_embed_class: the prefix tokens (and registers) get no position.
    return at::cat({ at::zeros({ 1, prefix, config.width }, pos.options()), pos }, 1);
}

at::Tensor VisionTransformerImpl::forward(const at::Tensor& input, ForwardState& state)
{
    // input [B, C, H, W] -> logits [B, K]
    const int gridH = int(input.size(2) / config.patchSize), gridW = int(input.size(3) / config.patchSize);
    auto x = tokens(input);
    // At the model's input size the position rows and rotary angles made at load serve (Model::Impl).
    const bool knownGrid = gridH == state.knownGridH && gridW == state.knownGridW;
    if (config.posEmbed) {
        const bool known = knownGrid && state.knownPositions.defined();
        const at::Tensor positions = known ? state.knownPositions : tokenPositions(gridH, gridW);
        // Bilateral attention keeps positions apart from the token stream and hands them to every layer.
        if (config.attention == AttentionKind::Bilateral)
            state.positions = positions;
        else
            x = x + positions;
    }
    if (norm_pre)
        x = norm_pre->forward(x);
    state.gridH = gridH;
    state.gridW = gridW;
    state.rope = knownGrid && !state.knownRope.empty() ? state.knownRope : ropeAngles(config, gridH, gridW, ropeFreqs, x.device());
    state.x0 = x;

    if (state.spec.blocks && state.wants(0))
        state.keep(state.blocks, state.blocksStack, 0, x);
    for (int l = 1; l <= config.depth; ++l) {
        if (state.isCancelled && state.isCancelled())
            throw RunCancelled {};
        x = blocks->ptr<BlockImpl>(size_t(l - 1))->forward(x, l, state);
        if (state.spec.blocks && state.wants(l))
            state.keep(state.blocks, state.blocksStack, l, x);
    }

    if (norm)
        x = norm->forward(x);
    const int64_t P = config.numPrefixTokens();
    if (config.pooling == Pooling::Distilled && head)
        return (head->forward(x.select(1, 0)) + head_dist->forward(x.select(1, 1))) / 2; // DeiT: average the logits
    at::Tensor pooled;
    switch (config.pooling) {
    case Pooling::Token:
    case Pooling::Distilled:
        pooled = x.select(1, 0);
        break;
    case Pooling::PatchMean:
        pooled = x.slice(1, P).mean(1);
        break;
    case Pooling::TokenAndPatchMean:
        pooled = at::cat({ x.select(1, 0), x.slice(1, P).mean(1) }, -1);
        break;
    case Pooling::AllTokensMean:
        pooled = x.mean(1);
        break;
    case Pooling::AttentionPool: // over the patch tokens, as timm's pool() without pool_include_prefix
        pooled = attn_pool->forward(x.slice(1, P), state.spec.attention ? &state.poolAttention : nullptr);
        break;
    }
    if (fc_norm)
        pooled = fc_norm->forward(pooled);
    return head ? head->forward(pooled) : pooled;
}

} // namespace attnscope
