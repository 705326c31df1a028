// Head ablation (docs/analyses.md section 8): every head of every layer ablated in turn, its effect on the prediction.

#include "attnscope/Analyses.h"

#include <algorithm>
#include <cmath>

namespace attnscope {

namespace {

// log softmax of `z` in float64, stable.
std::vector<double> logSoftmax(const Tensor& z)
{
    const float* v = z.data();
    const int64_t k = z.numel();
    const double top = *std::max_element(v, v + k);
    double sum = 0;
    for (int64_t i = 0; i < k; ++i)
        sum += std::exp(double(v[i]) - top);
    std::vector<double> out(static_cast<size_t>(k));
    for (int64_t i = 0; i < k; ++i)
        out[size_t(i)] = double(v[i]) - top - std::log(sum);
    return out;
}

int argmax(const Tensor& z) { return int(std::max_element(z.data(), z.data() + z.numel()) - z.data()); }

} // namespace

HeadAblationEffect ablationEffect(const Tensor& clean, const Tensor& ablated)
{
    const int c = argmax(clean);
    const auto lp = logSoftmax(clean), lq = logSoftmax(ablated);
    HeadAblationEffect e;
    e.dlogit = double(ablated.data()[c]) - double(clean.data()[c]);
    e.dprob = std::exp(lq[size_t(c)]) - std::exp(lp[size_t(c)]);
    for (size_t i = 0; i < lp.size(); ++i)
        e.kl += std::exp(lp[i]) * (lp[i] - lq[i]);
    e.predicted = argmax(ablated);
    e.probability = std::exp(lq[size_t(e.predicted)]);
    e.flip = e.predicted != c;
    return e;
}

Result<HeadAblation> headAblation(const Model& model, const Tensor& input, AblationMode mode, const RunOptions& run, int batch,
                                  const std::vector<HeadRef>& only)
{
    const ModelConfig& c = model.config();
    if (c.numClasses <= 0 || c.headIsProjection)
        return Error { "head ablation needs a classification head: this model's output is pooled features" };
    RunOptions options = run;
    options.record = {};
    options.ablation = mode;
    std::vector<HeadRef> heads { HeadRef {} }; // the clean forward first
    for (const HeadRef& h : only) {
        if (h.layer < 1 || h.layer > c.depth || h.head < 0 || h.head >= c.headsAt(h.layer))
            return Error { "head ablation: layer " + std::to_string(h.layer) + " head " + std::to_string(h.head)
                           + " is outside the model's layers 1.." + std::to_string(c.depth) + " and heads 0.."
                           + std::to_string(c.headsAt(std::clamp(h.layer, 1, std::max(c.depth, 1))) - 1) };
        heads.push_back(h);
    }
    if (only.empty())
        for (int l = 1; l <= c.depth; ++l)
            for (int h = 0; h < c.headsAt(l); ++h)
                heads.push_back({ l, h });
    const size_t step = batch > 0 ? size_t(batch) : heads.size();
    std::vector<Tensor> logits;
    for (size_t first = 0; first < heads.size(); first += step) {
        const size_t count = std::min(step, heads.size() - first);
        options.ablatedHeads.assign(heads.begin() + long(first), heads.begin() + long(first + count));
        auto traces = model.runBatch(std::vector<Tensor>(count, input), options);
        if (!traces)
            return traces.error();
        for (const Trace& t : *traces)
            logits.push_back(t.logits);
    }
    HeadAblation out;
    out.mode = mode;
    out.predicted = argmax(logits.front());
    out.probability = std::exp(logSoftmax(logits.front())[size_t(out.predicted)]);
    for (size_t i = 1; i < heads.size(); ++i) {
        HeadAblationEffect e = ablationEffect(logits.front(), logits[i]);
        e.layer = heads[i].layer;
        e.head = heads[i].head;
        out.heads.push_back(e);
    }
    return out;
}

} // namespace attnscope
