// Class relevance (Analyses.h, section 10): Chefer et al.'s generic attention explainability and Grad-CAM on the token
// grid, from one forward with autograd on and one backward of the target class's logit.
#include "attnscope/Analyses.h"

#include "vit/ModelImpl.h"
#include "io/TensorImpl.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <torch/csrc/autograd/autograd.h>

namespace attnscope {

namespace {

// The rows of R whose mix the head reads: the token it pools, or the mean of the rows it pools, or (an attention-pool
// head) the patch rows weighted by the pool's attention, its heads averaged (`pool` [H, P]).
at::Tensor pooledRow(const at::Tensor& r, const ModelConfig& c, const at::Tensor& pool)
{
    const int64_t prefix = c.numPrefixTokens();
    switch (c.pooling) {
    case Pooling::Token:
        return r[0];
    case Pooling::Distilled:
        return (r[0] + r[1]) / 2;
    case Pooling::PatchMean:
        return r.slice(0, prefix).mean(0);
    case Pooling::TokenAndPatchMean:
        return (r[0] + r.slice(0, prefix).mean(0)) / 2;
    case Pooling::AllTokensMean:
        return r.mean(0);
    case Pooling::AttentionPool:
        return at::matmul(pool.to(r.scalar_type()).mean(0), r.slice(0, prefix));
    }
    return r[0];
}

} // namespace

Result<Relevance> classRelevance(const Model& model, const Tensor& input, const RelevanceOptions& options)
{
    const ModelConfig& c = model.config();
    if (c.numClasses <= 0 || c.headIsProjection)
        return Error { "class relevance needs a classifier head (this model's head gives features, not classes)" };
    if (c.hierarchical())
        return Error { "class relevance (GAE, Grad-CAM) is not of a Swin: GAE carries relevance through one token set "
                       "across the layers, and a Swin's tokens change at every patch merge" };
    if (options.targetClass >= c.numClasses || options.targetClass < -1)
        return Error { "class " + std::to_string(options.targetClass) + " is outside the model's 0.." + std::to_string(c.numClasses - 1) };
    const int layer = options.gradCamLayer < 0 ? std::max(0, c.depth - 1) : options.gradCamLayer;
    if (layer > c.depth)
        return Error { "Grad-CAM layer " + std::to_string(layer) + " is outside the model's 0.." + std::to_string(c.depth) };
    try {
        const auto& impl = implOf(model);
        auto& net = *impl.net.ptr();
        // The input is an inference tensor (prepared under InferenceMode); autograd needs a normal copy, and this one
        // forward runs with autograd on, on the plain LibTorch path (no packed linears or oneDNN products).
        c10::InferenceMode autograd(false);
        torch::AutoGradMode gradients(true);
        at::Tensor x = unwrap(input).clone().to(impl.device);
        if (x.dim() == 3)
            x = x.unsqueeze(0);
        x.requires_grad_(true); // the model's weights are constants: the graph starts at the input
        ForwardState state;
        state.spec.attention = true;
        state.spec.blocks = true;
        state.neutrenoLambda = c.neutrenoLambda;
        state.boostT = c.boostT;
        state.reset(c.depth);
        const at::Tensor logits = net.forward(x, state)[0];
        Relevance out;
        out.targetClass = options.targetClass >= 0 ? options.targetClass : int(logits.argmax().item<int64_t>());
        out.logit = logits[out.targetClass].item<double>();
        out.probability = at::softmax(logits.to(at::kDouble), 0)[out.targetClass].item<double>();
        out.gradCamLayer = layer;
        out.gridHeight = state.gridH;
        out.gridWidth = state.gridW;
        out.numPrefixTokens = c.numPrefixTokens();

        std::vector<at::Tensor> wrt;
        for (int l = 1; l <= c.depth; ++l)
            wrt.push_back(state.attention[size_t(l)]);
        wrt.push_back(state.blocks[size_t(layer)]);
        const auto grads = torch::autograd::grad({ logits[out.targetClass] }, wrt, {}, false, false, true);

        const int64_t n = wrt.front().size(-1), prefix = out.numPrefixTokens;
        at::Tensor r = at::eye(n, at::TensorOptions().dtype(at::kDouble));
        for (int l = 0; l < c.depth; ++l) {
            const at::Tensor a = wrt[size_t(l)][0].detach().to(at::kCPU, at::kDouble); // [H, N, N]
            const at::Tensor g = grads[size_t(l)].defined() ? grads[size_t(l)][0].to(at::kCPU, at::kDouble) : at::zeros_like(a);
            r = r + at::matmul((g * a).clamp_min(0).mean(0), r);
        }
        const at::Tensor row = pooledRow(r, c, state.poolAttention.defined() ? state.poolAttention[0].detach().to(at::kCPU) : at::Tensor());
        out.gaeTokens = wrap(row.to(at::kFloat));
        out.gae = wrap(row.slice(0, prefix).reshape({ out.gridHeight, out.gridWidth }).to(at::kFloat));

        const at::Tensor xl = wrt.back()[0].detach().to(at::kCPU, at::kDouble).slice(0, prefix); // [gh*gw, D]
        const at::Tensor gl = grads.back().defined() ? grads.back()[0].to(at::kCPU, at::kDouble).slice(0, prefix) : at::zeros_like(xl);
        const at::Tensor cam = (xl * gl.mean(0)).sum(1).clamp_min(0);
        out.gradCam = wrap(cam.reshape({ out.gridHeight, out.gridWidth }).to(at::kFloat));
        return out;
    } catch (const c10::Error& e) {
        return Error { std::string("class relevance failed: ") + e.what_without_backtrace() };
    }
}

} // namespace attnscope
