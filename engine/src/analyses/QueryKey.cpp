// The query-key joint embedding (docs/analyses.md section 9): the rows from the recorded X_{l-1} through the block's
// own norm and projection, their normalisation, the joint PCA with its sign rule and the rank agreement.

#include "attnscope/QueryKey.h"

#include "io/TensorImpl.h"
#include "vit/Attention.h"
#include "vit/ModelImpl.h"
#include "vit/Rope.h"
#include "vit/VisionTransformer.h"
#include "analyses/Tsne.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attnscope {

namespace {

// Ranks 1..n of `v`, ties given their mean rank.
std::vector<double> ranks(const std::vector<double>& v)
{
    std::vector<size_t> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < order.size();) {
        size_t j = i;
        while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]])
            ++j;
        const double mean = (double(i) + double(j)) / 2 + 1;
        for (size_t k = i; k <= j; ++k)
            r[order[k]] = mean;
        i = j + 1;
    }
    return r;
}

double pearson(const std::vector<double>& a, const std::vector<double>& b)
{
    const double n = double(a.size());
    const double ma = std::accumulate(a.begin(), a.end(), 0.0) / n, mb = std::accumulate(b.begin(), b.end(), 0.0) / n;
    double sab = 0, saa = 0, sbb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        sab += (a[i] - ma) * (b[i] - mb);
        saa += (a[i] - ma) * (a[i] - ma);
        sbb += (b[i] - mb) * (b[i] - mb);
    }
    return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : std::nan("");
}

// Q and K of every head of `layer` for each trace, [N, D] in float64 each, from the recorded X_{l-1} through the
// block's own norm1 and qkv.
struct LayerRows {
    std::vector<at::Tensor> q, k;
};

Status checkHead(const ModelConfig& c, int layer, int head)
{
    if (layer < 1 || layer > c.depth)
        return Error { "query-key map: layer " + std::to_string(layer) + " is outside the model's layers 1.." + std::to_string(c.depth) };
    if (head < 0 || head >= c.headsAt(layer)) // a Swin block has its stage's heads
        return Error { "query-key map: head " + std::to_string(head) + " is outside " + (c.hierarchical() ? "layer " + std::to_string(layer) + "'s" : std::string("the model's"))
                       + " heads 0.." + std::to_string(c.headsAt(layer) - 1) };
    if (c.attention == AttentionKind::Quadratic)
        return Error { "query-key map: quadratic attention has no queries and keys (its logits come from relative positions alone)" };
    return Done {};
}

// A Swin block's rows over its stage's grid (SwinTransformerImpl::queriesAndKeys); Swin v2's normalised per head, as its
// logits are their cosines (times a learnt scale, which the embedding's own scale takes out).
LayerRows swinRows(const Model& model, const std::vector<Trace>& traces, int layer)
{
    const ModelConfig& c = model.config();
    const int heads = c.headsAt(layer);
    LayerRows rows;
    for (const Trace& t : traces) {
        auto [q, k] = implOf(model).swin->queriesAndKeys(unwrap(t.blocks[size_t(layer - 1)]).unsqueeze(0), layer);
        if (c.hierarchy == Hierarchy::SwinV2) {
            const auto unit = [&](const at::Tensor& r) {
                const at::Tensor h = r.reshape({ r.size(0), r.size(1), heads, -1 });
                return (h / h.norm(2, -1, true).clamp_min(1e-12)).reshape(r.sizes());
            };
            q = unit(q);
            k = unit(k);
        }
        rows.q.push_back(q[0]);
        rows.k.push_back(k[0]);
    }
    return rows;
}

Result<LayerRows> layerRows(const Model& model, const std::vector<Trace>& traces, int layer)
{
    if (model.config().hierarchical())
        return swinRows(model, traces, layer);
    const auto net = implOf(model).net.ptr();
    auto& block = *net->blocks->ptr<BlockImpl>(size_t(layer - 1));
    const auto* attention = dynamic_cast<const StandardAttention*>(block.attn.get());
    if (!attention)
        return Error { "query-key map: this attention kind has no queries and keys" };
    const at::Tensor w = attention->qkv->weight.to(at::kCPU, at::kDouble);
    const at::Tensor b = attention->qkv->bias.defined() ? attention->qkv->bias.to(at::kCPU, at::kDouble) : at::Tensor();
    const int64_t D = model.config().attnWidth(); // the width of q and k
    LayerRows rows;
    const ModelConfig& c = model.config();
    RopeAngles angles; // the layer's rotary angles on the CPU, made again only when a trace's grid differs
    int angleGridH = -1, angleGridW = -1;
    for (const Trace& t : traces) {
        at::Tensor x = unwrap(t.blocks[size_t(layer - 1)]);
        // What the attention reads: norm1(X_{l-1}) in a pre-norm block, X_{l-1} itself otherwise.
        if (block.kind == BlockKind::Standard && block.placement == BlockNorm::Pre)
            x = block.norm1->forward(x.to(block.norm1->weight.device())).to(at::kCPU);
        const at::Tensor qkv = at::linear(x.to(at::kDouble), w, b); // [N, 3D]
        at::Tensor q = qkv.slice(1, 0, D), k = qkv.slice(1, D, 2 * D);
        if (c.rope != ModelConfig::Rope::None) {
            // The queries and keys the logits are made of: rotated by their patch's position (docs/analyses.md).
            if (t.gridHeight != angleGridH || t.gridWidth != angleGridW) {
                const RopeAngles a = layerAngles(ropeAngles(c, t.gridHeight, t.gridWidth, net->ropeFreqs, at::kCPU), layer);
                angles = { a.sin.to(at::kCPU), a.cos.to(at::kCPU), a.half }; // Mixed's frequencies live on the model's device
                angleGridH = t.gridHeight;
                angleGridW = t.gridWidth;
            }
            const auto heads = [&](const at::Tensor& r) { return r.reshape({ r.size(0), c.numHeads, -1 }).transpose(0, 1); };
            const auto rotated = [&](const at::Tensor& r) {
                return rotate(heads(r), angles).transpose(0, 1).reshape({ r.size(0), D });
            };
            q = rotated(q);
            k = rotated(k);
        }
        rows.q.push_back(q);
        rows.k.push_back(k);
    }
    return rows;
}

// The forward of `inputs` with the block inputs of `layers` (1-based) recorded.
Result<std::vector<Trace>> recordBlocks(const Model& model, const std::vector<Tensor>& inputs, std::vector<int> layers)
{
    RunOptions run;
    run.record.blocks = true;
    for (int& l : layers)
        l -= 1;
    run.record.layers = std::move(layers);
    return model.runBatch(inputs, run);
}

// Where the points of one head sit: the grid of its tokens' rows and columns (a Swin block's stage grid) and, for a Swin,
// each token's window in the block (the keys its query's attention ranges over); empty: every token of the image.
struct TokenGrid {
    int stage = -1, height = 0, width = 0;
    std::vector<int> windowOf;
};

TokenGrid tokenGrid(const ModelConfig& c, const std::vector<Tensor>& inputs, int layer)
{
    TokenGrid grid;
    if (!c.hierarchical()) {
        grid.height = int(unwrap(inputs.front()).size(-2) / c.patchSize);
        grid.width = int(unwrap(inputs.front()).size(-1) / c.patchSize);
        return grid;
    }
    const WindowBlock g = windowBlocks(c)[size_t(layer - 1)];
    grid = { g.stage, g.gridH, g.gridW, {} };
    for (int y = 0; y < g.gridH; ++y)
        for (int x = 0; x < g.gridW; ++x)
            grid.windowOf.push_back(g.place(y, x).window);
    return grid;
}

// The embedding of one head from its rows, [M N, d] in float64 each.
Result<QueryKeyMap> embed(const Model& model, const at::Tensor& q, const at::Tensor& k, int64_t m, const TokenGrid& grid, int layer,
                          int head, const QueryKeyOptions& options)
{
    // Translation and scale that leave every attention row as it is (AttentionViz).
    const at::Tensor kShifted = k - k.mean(0, true) + q.mean(0, true);
    const double a = std::sqrt(kShifted.norm(2, 1).mean().item<double>() / q.norm(2, 1).mean().item<double>());
    const at::Tensor joint = at::cat({ q * a, kShifted / a });
    const at::Tensor centred = joint - joint.mean(0, true);
    QueryKeyMap out;
    out.layer = layer;
    out.head = head;
    out.method = options.method;
    out.rotated = model.config().rope != ModelConfig::Rope::None;
    out.cosine = model.config().hierarchy == Hierarchy::SwinV2;
    out.stage = grid.stage;
    out.gridHeight = grid.height;
    out.gridWidth = grid.width;
    out.scale = a;
    at::Tensor xy;
    if (options.method == QueryKeyMethod::Pca) {
        // Principal directions: the eigenvectors of the covariance with the two largest eigenvalues.
        const auto [values, vectors] = at::linalg_eigh(centred.t().mm(centred));
        at::Tensor top = vectors.index_select(1, at::tensor({ vectors.size(1) - 1, vectors.size(1) - 2 }, at::kLong)).t().contiguous(); // [2, d]
        for (int64_t r = 0; r < 2; ++r) {
            const at::Tensor row = top[r];
            const int64_t largest = row.abs().argmax().item<int64_t>();
            if (row[largest].item<double>() < 0)
                top[r].neg_();
        }
        xy = centred.mm(top.t()).contiguous(); // [2 M N, 2]
        out.components.assign(top.data_ptr<double>(), top.data_ptr<double>() + top.numel());
    } else {
        const at::Tensor rows = centred.contiguous();
        TsneOptions t;
        t.seed = options.seed;
        t.iterations = options.iterations;
        TsneResult r = tsne(std::vector<double>(rows.data_ptr<double>(), rows.data_ptr<double>() + rows.numel()), rows.size(0), rows.size(1), t);
        if (!r.error.empty())
            return Error { "query-key map of layer " + std::to_string(layer) + " head " + std::to_string(head) + ": " + r.error };
        xy = at::from_blob(r.xy.data(), { rows.size(0), 2 }, at::kDouble).clone();
        out.tsneKl = r.kl;
    }
    const int64_t n = q.size(0) / m;
    const int prefix = model.config().numPrefixTokens();
    out.images = int(m);
    out.tokens = int(n);
    const double* p = xy.data_ptr<double>();
    for (int kind = 0; kind < 2; ++kind)
        for (int64_t image = 0; image < m; ++image)
            for (int64_t token = 0; token < n; ++token, p += 2) {
                QueryKeyPoint point;
                point.image = int(image);
                point.token = int(token);
                point.key = kind == 1;
                if (token >= prefix) {
                    point.row = int(token - prefix) / grid.width;
                    point.col = int(token - prefix) % grid.width;
                }
                point.x = p[0];
                point.y = p[1];
                out.points.push_back(point);
            }
    // The plane's agreement with the attention order of each query over its image's keys (a Swin's: over its window's).
    const at::Tensor scores = q.view({ m, n, -1 }).bmm(k.view({ m, n, -1 }).transpose(1, 2)).contiguous(); // [M, N, N]
    const double* s = scores.data_ptr<double>();
    double sum = 0;
    int64_t counted = 0;
    for (int64_t image = 0; image < m; ++image)
        for (int64_t i = 0; i < n; ++i) {
            const QueryKeyPoint& query = out.points[size_t(image * n + i)];
            std::vector<double> score, closeness;
            for (int64_t j = 0; j < n; ++j) {
                if (!grid.windowOf.empty() && grid.windowOf[size_t(j)] != grid.windowOf[size_t(i)])
                    continue;
                const QueryKeyPoint& key = out.points[size_t(m * n + image * n + j)];
                score.push_back(s[(image * n + i) * n + j]);
                closeness.push_back(-std::hypot(query.x - key.x, query.y - key.y));
            }
            const double rho = pearson(ranks(score), ranks(closeness));
            if (std::isfinite(rho)) {
                sum += rho;
                ++counted;
            }
        }
    out.agreement = counted ? sum / double(counted) : std::nan("");
    return out;
}

} // namespace

const char* toString(QueryKeyMethod method) { return method == QueryKeyMethod::Tsne ? "tsne" : "pca"; }

Result<QueryKeyMethod> parseQueryKeyMethod(const std::string& name)
{
    if (name == "pca")
        return QueryKeyMethod::Pca;
    if (name == "tsne")
        return QueryKeyMethod::Tsne;
    return Error { "unknown query-key method \"" + name + "\" (pca, tsne)" };
}

Result<QueryKeyRows> queryKeyRows(const Model& model, const std::vector<Tensor>& inputs, int layer, int head)
{
    if (auto checked = checkHead(model.config(), layer, head); !checked)
        return checked.error();
    auto traces = recordBlocks(model, inputs, { layer });
    if (!traces)
        return traces.error();
    try {
        c10::InferenceMode guard;
        auto rows = layerRows(model, *traces, layer);
        if (!rows)
            return rows.error();
        const int64_t d = rows->q.front().size(1) / model.config().headsAt(layer);
        QueryKeyRows out;
        for (size_t i = 0; i < rows->q.size(); ++i) {
            out.queries.push_back(wrap(rows->q[i].slice(1, head * d, (head + 1) * d).to(at::kFloat).contiguous()));
            out.keys.push_back(wrap(rows->k[i].slice(1, head * d, (head + 1) * d).to(at::kFloat).contiguous()));
        }
        return out;
    } catch (const c10::Error& e) {
        return Error { std::string("query-key map failed: ") + e.what_without_backtrace() };
    }
}

Result<std::vector<QueryKeyMap>> queryKeyMaps(const Model& model, const std::vector<Tensor>& inputs, const std::vector<HeadRef>& heads,
                                              const QueryKeyOptions& options)
{
    const ModelConfig& c = model.config();
    std::vector<int> layers;
    for (const HeadRef& h : heads) {
        if (auto checked = checkHead(c, h.layer, h.head); !checked)
            return checked.error();
        if (std::find(layers.begin(), layers.end(), h.layer) == layers.end())
            layers.push_back(h.layer);
    }
    if (inputs.empty())
        return Error { "query-key map: no images" };
    auto traces = recordBlocks(model, inputs, layers);
    if (!traces)
        return traces.error();
    try {
        c10::InferenceMode guard;
        const int64_t m = int64_t(inputs.size());
        std::vector<QueryKeyMap> out;
        int rowsLayer = 0;
        LayerRows rows;
        for (const HeadRef& h : heads) {
            if (h.layer != rowsLayer) {
                auto r = layerRows(model, *traces, h.layer);
                if (!r)
                    return r.error();
                rows = std::move(*r);
                rowsLayer = h.layer;
            }
            const int64_t d = rows.q.front().size(1) / c.headsAt(h.layer);
            std::vector<at::Tensor> qs, ks;
            for (size_t i = 0; i < rows.q.size(); ++i) {
                // Through float32, as queryKeyRows gives them: the rows the attention itself multiplies.
                qs.push_back(rows.q[i].slice(1, h.head * d, (h.head + 1) * d).to(at::kFloat).to(at::kDouble));
                ks.push_back(rows.k[i].slice(1, h.head * d, (h.head + 1) * d).to(at::kFloat).to(at::kDouble));
            }
            auto map = embed(model, at::cat(qs), at::cat(ks), m, tokenGrid(c, inputs, h.layer), h.layer, h.head, options);
            if (!map)
                return map.error();
            out.push_back(std::move(*map));
        }
        return out;
    } catch (const c10::Error& e) {
        return Error { std::string("query-key map failed: ") + e.what_without_backtrace() };
    }
}

Result<QueryKeyMap> queryKeyMap(const Model& model, const std::vector<Tensor>& inputs, int layer, int head, const QueryKeyOptions& options)
{
    auto maps = queryKeyMaps(model, inputs, { HeadRef { layer, head } }, options);
    if (!maps)
        return maps.error();
    return std::move(maps->front());
}

} // namespace attnscope
