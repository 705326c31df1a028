// The logit decomposition of layer 1 (docs/analyses.md section 5, Analyses.h): it needs the model's weights, not only
// its trace.
#include "attnscope/Analyses.h"

#include "vit/ModelImpl.h"
#include "io/TensorImpl.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <cmath>

namespace attnscope {

Result<LogitDecomposition> decomposeLogits(const Model& model, const Tensor& input)
{
    const auto& impl = implOf(model);
    const ModelConfig& c = model.config();
    if (c.hierarchical())
        return Error { "the logit decomposition splits additive absolute position terms off the first layer's logits; a "
                       "Swin has none (its positions are a relative bias inside each window)" };
    if (!c.posEmbed || c.attention != AttentionKind::Standard || c.blockNorm != BlockNorm::Pre || c.preNorm
        || c.block != BlockKind::Standard)
        return Error { "the logit decomposition needs additive absolute position embeddings, standard attention and "
                       "a pre-norm first block without a pre-transformer norm" };
    if (c.rope != ModelConfig::Rope::None || c.relativePositionBias)
        return Error { std::string("the logit decomposition splits additive position terms off the logits; this model's "
                                   "positions also enter as a ")
                       + (c.rope != ModelConfig::Rope::None ? "rotation of its queries and keys" : "relative position bias")
                       + ", which no such term describes" };
    try {
        c10::InferenceMode guard;
        at::Tensor x = unwrap(input).to(impl.device);
        if (x.dim() == 3)
            x = x.unsqueeze(0);
        auto& net = *impl.net.ptr();
        const int gh = int(x.size(2) / c.patchSize), gw = int(x.size(3) / c.patchSize);
        const at::Tensor e = net.tokens(x)[0].to(at::kDouble);                  // E   [N, D]
        const bool known = impl.positions.defined() && gh == c.gridHeight() && gw == c.gridWidth(); // made at load
        const at::Tensor p = (known ? impl.positions : net.tokenPositions(gh, gw))[0].to(at::kDouble); // Pe [N, D]
        const at::Tensor x0 = e + p;
        auto block = net.blocks->ptr<BlockImpl>(0);
        const at::Tensor g = block->norm1->weight.to(at::kDouble), b = block->norm1->bias.to(at::kDouble);
        // LayerNorm's centring is linear and its scale per token: with s_i = sqrt(var(X_0[i]) + eps), the
        // normalised row splits into a token part and a position part (which takes the bias).
        const at::Tensor s = (x0.var(1, false, true) + c.layerNormEps).sqrt();
        const at::Tensor eh = g * (e - e.mean(1, true)) / s;
        const at::Tensor ph = g * (p - p.mean(1, true)) / s + b;
        auto& attn = dynamic_cast<StandardAttention&>(*block->attn);
        // D: the width of q and k (the model's width but where ModelConfig::attentionWidth says otherwise).
        const int64_t D = c.attnWidth(), H = c.numHeads, d = D / H, N = e.size(0);
        const at::Tensor w = attn.qkv->weight.to(at::kDouble);
        const at::Tensor bias = attn.qkv->bias.defined() ? attn.qkv->bias.to(at::kDouble) : at::zeros({ 3 * D }, at::kDouble);
        const auto heads = [&](const at::Tensor& t) { return t.reshape({ N, H, d }).transpose(0, 1); }; // [H, N, d]
        const at::Tensor wq = w.slice(0, 0, D), wk = w.slice(0, D, 2 * D);
        const at::Tensor qe = heads(at::linear(eh, wq)), qp = heads(at::linear(ph, wq, bias.slice(0, 0, D)));
        const at::Tensor ke = heads(at::linear(eh, wk)), kp = heads(at::linear(ph, wk, bias.slice(0, D, 2 * D)));
        const double scale = 1.0 / std::sqrt(double(d));
        LogitDecomposition out;
        out.tt = wrap(at::matmul(qe, ke.transpose(1, 2)) * scale);
        out.tp = wrap(at::matmul(qe, kp.transpose(1, 2)) * scale);
        out.pt = wrap(at::matmul(qp, ke.transpose(1, 2)) * scale);
        out.pp = wrap(at::matmul(qp, kp.transpose(1, 2)) * scale);
        const at::Tensor qkv = at::linear(at::layer_norm(x0, { c.width }, g, b, c.layerNormEps), w, bias);
        out.logits = wrap(at::matmul(heads(qkv.slice(1, 0, D)), heads(qkv.slice(1, D, 2 * D)).transpose(1, 2)) * scale);
        return out;
    } catch (const c10::Error& e) {
        return Error { std::string("decomposition failed: ") + e.what_without_backtrace() };
    }
}

} // namespace attnscope
