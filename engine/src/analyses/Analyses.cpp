// docs/analyses.md sections 1-4 over a Trace. Reductions run in float64 so that the results match a float64 reference
// to well below the 1e-4 the tests ask.
#include "attnscope/Analyses.h"

#include "analyses/AnalysisLoops.h"
#include "analyses/OffsetWindow.h"
#include "analyses/WindowMaps.h"
#include "io/TensorImpl.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace attnscope {

using namespace loops;

namespace {
at::Tensor d64(const Tensor& t) { return unwrap(t).to(at::kDouble); }
} // namespace

namespace loops {

// Column means of an [n, d] tap (zeros when not centring).
ATTNSCOPE_VECTOR_CLONES
std::vector<double> columnMeans(const Tensor& t, bool centre)
{
    const int64_t n = t.size(0), d = t.size(1);
    std::vector<double> mean(size_t(d), 0.0);
    if (!centre)
        return mean;
    for (int64_t i = 0; i < n; ++i) {
        const float* row = t.data() + i * d;
        for (int64_t j = 0; j < d; ++j)
            mean[size_t(j)] += row[j];
    }
    for (double& v : mean)
        v /= double(n);
    return mean;
}

const std::vector<Tensor>& tapOf(const Trace& t, Tap tap)
{
    switch (tap) {
    case Tap::Attn:
        return t.attnBranch;
    case Tap::Residual:
        return t.residual;
    case Tap::Block:
        break;
    }
    return t.blocks;
}

} // namespace loops

namespace {

} // namespace

const char* toString(Tap t)
{
    switch (t) {
    case Tap::Block: return "block";
    case Tap::Attn: return "attn";
    case Tap::Residual: return "residual";
    }
    return "?";
}

const char* toString(TokenSet s) { return s == TokenSet::All ? "all" : "patches"; }

// ---- 1

namespace {

// Adds z_i / max(|z_i|, 1e-12) for the rows i in [begin, end) of the [M, d] `tokens` to `sum` [d].
ATTNSCOPE_VECTOR_CLONES
void addUnitRows(const float* tokens, int64_t d, int64_t begin, int64_t end, double* sum)
{
    for (int64_t i = begin; i < end; ++i) {
        const float* z = tokens + i * d;
        const double inv = 1.0 / std::max(std::sqrt(squaredNorm(z, d)), 1e-12);
        for (int64_t j = 0; j < d; ++j)
            sum[j] += z[j] * inv;
    }
}

// cs(Z) = (|s|^2 - M) / (M (M - 1)) for s = sum_i z^_i the sum of M unit rows: the mean off-diagonal cosine in
// O(M D), not O(M^2 D).
double cosineOfUnitSum(const std::vector<double>& s, int64_t m)
{
    if (m < 2)
        return kNaN;
    const double s2 = dot(s.data(), s.data(), int64_t(s.size()));
    return (s2 - double(m)) / (double(m) * double(m - 1));
}

} // namespace

ATTNSCOPE_VECTOR_CLONES
double tokenCosineSimilarity(const Tensor& tokens)
{
    const int64_t m = tokens.size(0), d = tokens.numel() / std::max<int64_t>(1, m);
    if (m < 2)
        return kNaN;
    std::vector<double> sum(size_t(d), 0.0);
    addUnitRows(tokens.data(), d, 0, m, sum.data());
    return cosineOfUnitSum(sum, m);
}

Tensor tokenCosineMatrix(const Tensor& tokens)
{
    const at::Tensor z = d64(tokens);
    const auto unit = z / z.norm(2, 1, true).clamp_min(1e-12);
    return wrap(at::matmul(unit, unit.t()));
}

ATTNSCOPE_VECTOR_CLONES
std::vector<TokenSimilarityPoint> tokenSimilarity(const Trace& trace)
{
    // One pass over each tap: the unit rows of the prefix tokens and of the patches are summed apart, the patch sum
    // gives cs(patches) and the two together cs(all).
    std::vector<TokenSimilarityPoint> out;
    std::vector<double> prefix, patches, all;
    for (Tap tap : { Tap::Block, Tap::Attn, Tap::Residual }) {
        const auto& taps = tapOf(trace, tap);
        for (size_t l = 0; l < taps.size(); ++l) {
            if (taps[l].empty())
                continue;
            const int64_t n = taps[l].size(0), d = taps[l].numel() / std::max<int64_t>(1, n);
            const int64_t p = std::clamp<int64_t>(trace.numPrefixTokens, 0, n);
            prefix.assign(size_t(d), 0.0);
            patches.assign(size_t(d), 0.0);
            addUnitRows(taps[l].data(), d, 0, p, prefix.data());
            addUnitRows(taps[l].data(), d, p, n, patches.data());
            all.resize(size_t(d));
            for (size_t j = 0; j < all.size(); ++j)
                all[j] = prefix[j] + patches[j];
            out.push_back({ int(l), tap, TokenSet::All, cosineOfUnitSum(all, n) });
            out.push_back({ int(l), tap, TokenSet::Patches, cosineOfUnitSum(patches, n - p) });
        }
    }
    return out;
}

// ---- 2

namespace {

// The attention-pool head's one query over the patches, a [H, gh * gw] tensor: its rows need no query and have no
// prefix part.
AttentionMap poolMap(const Tensor& a, int gridHeight, int gridWidth, int head)
{
    const int64_t H = a.size(0), P = a.size(1);
    if (head >= H || P != int64_t(gridHeight) * gridWidth)
        throw std::out_of_range("attentionMap: head " + std::to_string(head) + " outside the pool's " + std::to_string(H) + " heads");
    std::vector<float> patches(size_t(P), 0.0f);
    for (int64_t k = 0; k < P; ++k) {
        double v = 0;
        for (int64_t h = head < 0 ? 0 : head; h < (head < 0 ? H : head + 1); ++h)
            v += a.data()[h * P + k];
        patches[size_t(k)] = float(head < 0 ? v / double(H) : v);
    }
    AttentionMap map;
    map.patches = Tensor::fromVector({ gridHeight, gridWidth }, std::move(patches));
    return map;
}

// One query's row of `head` (-1: the mean over the H heads) from the heads' rows `rows`, head h's at rows + h * stride,
// N tokens each: a plain loop (the GUI asks for 156 maps a click; docs/performance.md).
AttentionMap mapOfRows(const float* rows, int64_t stride, int64_t H, int64_t N, int head, int prefix, int gridHeight,
                       int gridWidth, bool renormalise)
{
    std::vector<double> row(size_t(N), 0.0);
    for (int64_t h = head < 0 ? 0 : head; h < (head < 0 ? H : head + 1); ++h) {
        const float* r = rows + h * stride;
        for (int64_t k = 0; k < N; ++k)
            row[size_t(k)] += r[k];
    }
    if (head < 0)
        for (double& v : row)
            v /= double(H);
    AttentionMap map;
    double patchSum = 0;
    for (int64_t k = 0; k < N; ++k)
        (k < prefix ? map.prefixMass : patchSum) += row[size_t(k)];
    const double scale = renormalise ? 1.0 / std::max(patchSum, 1e-300) : 1.0;
    std::vector<float> patches;
    patches.reserve(size_t(N - prefix));
    for (int64_t k = prefix; k < N; ++k)
        patches.push_back(float(row[size_t(k)] * scale));
    map.patches = Tensor::fromVector({ gridHeight, gridWidth }, std::move(patches));
    return map;
}

std::out_of_range outsideTheLayer(int head, int query, int64_t H, int64_t N)
{
    return std::out_of_range("attentionMap: head " + std::to_string(head) + " or query " + std::to_string(query)
                             + " outside the layer's " + std::to_string(H) + " heads and " + std::to_string(N) + " tokens");
}

} // namespace

int lastMapLayer(const Trace& trace) { return trace.depth + (trace.poolAttention.numel() > 0 ? 1 : 0); }

std::string mapLayerName(const Trace& trace, int layer)
{
    return layer > trace.depth && trace.poolAttention.numel() > 0 ? "pool" : std::to_string(layer);
}

AttentionMap attentionMap(const Trace& trace, int layer, int head, int query, bool renormalise)
{
    if (trace.hierarchical())
        return windowAttentionMap(trace, layer, head, query, renormalise);
    if (layer == trace.depth + 1 && trace.poolAttention.numel() > 0) // sums to 1 over the patches: nothing to renormalise
        return poolMap(trace.poolAttention, trace.gridHeight, trace.gridWidth, head);
    const Tensor& a = trace.attention.at(size_t(layer)); // [H, N, N]
    const int64_t H = a.size(0), N = a.size(1);
    if (head >= H || query < 0 || query >= N || a.numel() != H * N * N
        || N - trace.numPrefixTokens != int64_t(trace.gridHeight) * trace.gridWidth)
        throw outsideTheLayer(head, query, H, N);
    return mapOfRows(a.data() + int64_t(query) * N, N * N, H, N, head, trace.numPrefixTokens, trace.gridHeight,
                     trace.gridWidth, renormalise);
}

QueryRows queryRows(const Trace& trace, int query)
{
    QueryRows out;
    out.query = query;
    out.gridHeight = trace.gridHeight;
    out.gridWidth = trace.gridWidth;
    out.numPrefixTokens = trace.numPrefixTokens;
    out.numHeads = trace.numHeads;
    out.depth = trace.depth;
    if (trace.hierarchical()) {
        addWindowRows(trace, out);
        return out;
    }
    const int64_t N = int64_t(trace.numPrefixTokens) + int64_t(trace.gridHeight) * trace.gridWidth;
    if (query < 0 || query >= N)
        throw outsideTheLayer(-1, query, trace.numHeads, N);
    std::vector<float> rows;
    rows.reserve(size_t(trace.depth) * size_t(trace.numHeads) * size_t(N));
    for (int l = 1; l <= trace.depth; ++l) {
        const Tensor& a = trace.attention.at(size_t(l)); // [H, N, N]
        if (a.dim() != 3 || a.size(0) != trace.numHeads || a.size(1) != N || a.size(2) != N)
            throw std::invalid_argument("queryRows: layer " + std::to_string(l) + "'s attention was not recorded as [heads, tokens, tokens]");
        for (int64_t h = 0; h < trace.numHeads; ++h) {
            const float* row = a.data() + (h * N + query) * N;
            rows.insert(rows.end(), row, row + N);
        }
    }
    out.rows = Tensor::fromVector({ trace.depth, trace.numHeads, N }, std::move(rows));
    out.pool = trace.poolAttention;
    return out;
}

int lastMapLayer(const QueryRows& rows) { return rows.depth + (rows.pool.numel() > 0 ? 1 : 0); }

std::string mapLayerName(const QueryRows& rows, int layer)
{
    return layer > rows.depth && rows.pool.numel() > 0 ? "pool" : std::to_string(layer);
}

AttentionMap attentionMap(const QueryRows& rows, int layer, int head, bool renormalise)
{
    if (rows.hierarchical())
        return windowAttentionMap(rows, layer, head, renormalise);
    if (layer == rows.depth + 1 && rows.pool.numel() > 0)
        return poolMap(rows.pool, rows.gridHeight, rows.gridWidth, head);
    const int64_t H = rows.numHeads, N = int64_t(rows.numPrefixTokens) + int64_t(rows.gridHeight) * rows.gridWidth;
    if (layer < 1 || layer > rows.depth || head >= H || rows.rows.numel() != int64_t(rows.depth) * H * N)
        throw std::out_of_range("attentionMap: layer " + std::to_string(layer) + " head " + std::to_string(head) + " outside the rows' "
                                + std::to_string(rows.depth) + " layers and " + std::to_string(H) + " heads");
    return mapOfRows(rows.rows.data() + (int64_t(layer) - 1) * H * N, N, H, N, head, rows.numPrefixTokens, rows.gridHeight,
                     rows.gridWidth, renormalise);
}

const char* toString(HeadFusion f) { return f == HeadFusion::Max ? "max" : f == HeadFusion::Min ? "min" : "mean"; }

Result<HeadFusion> parseHeadFusion(const std::string& name)
{
    for (HeadFusion f : { HeadFusion::Mean, HeadFusion::Max, HeadFusion::Min })
        if (name == toString(f))
            return f;
    return Error { "unknown head fusion \"" + name + "\" (mean, max, min)" };
}

namespace {

// F = fuse_h A[h] of one layer's [H, N, N] maps into `out` [N, N], row by row.
ATTNSCOPE_VECTOR_CLONES
void fuseHeads(const Tensor& a, HeadFusion fusion, double* out)
{
    const int64_t H = a.size(0), N = a.size(1);
    for (int64_t i = 0; i < N; ++i) {
        double* o = out + i * N;
        const float* first = a.data() + i * N;
        for (int64_t j = 0; j < N; ++j)
            o[j] = first[j];
        for (int64_t h = 1; h < H; ++h) {
            const float* src = a.data() + (h * N + i) * N;
            if (fusion == HeadFusion::Mean)
                for (int64_t j = 0; j < N; ++j)
                    o[j] += src[j];
            else if (fusion == HeadFusion::Max)
                for (int64_t j = 0; j < N; ++j)
                    o[j] = std::max(o[j], double(src[j]));
            else
                for (int64_t j = 0; j < N; ++j)
                    o[j] = std::min(o[j], double(src[j]));
        }
        if (fusion == HeadFusion::Mean)
            for (int64_t j = 0; j < N; ++j)
                o[j] /= double(H);
    }
}

// Zeroes the floor(share * N^2) smallest entries of the [N, N] map (ties in index order), entry 0 excepted.
void discardSmallest(double* map, int64_t n, double share)
{
    const int64_t count = int64_t(std::floor(share * double(n * n)));
    if (count <= 0)
        return;
    std::vector<int64_t> order(size_t(n * n - 1));
    for (size_t k = 0; k < order.size(); ++k)
        order[k] = int64_t(k) + 1;
    const int64_t kept = std::min<int64_t>(count, int64_t(order.size()));
    std::partial_sort(order.begin(), order.begin() + kept, order.end(),
                      [map](int64_t a, int64_t b) { return map[a] < map[b] || (map[a] == map[b] && a < b); });
    for (int64_t k = 0; k < kept; ++k)
        map[order[size_t(k)]] = 0.0;
}

} // namespace

ATTNSCOPE_VECTOR_CLONES
Tensor attentionRollout(const Trace& trace, const RolloutOptions& options)
{
    if (!(options.discard >= 0.0 && options.discard < 1.0))
        throw std::invalid_argument("attentionRollout: discard " + std::to_string(options.discard) + " is outside [0, 1)");
    if (trace.hierarchical())
        throw std::invalid_argument(kNoHierarchicalRollout);
    // Â_l in one pass over the float32 maps into a float64 matrix; the products are float64 BLAS (each N^3, where the
    // time goes).
    at::Tensor r;
    for (int l = 1; l <= trace.depth; ++l) {
        const Tensor& a = trace.attention.at(size_t(l)); // [H, N, N]
        const int64_t N = a.size(1);
        at::Tensor ah = at::empty({ N, N }, at::kDouble);
        double* out = ah.data_ptr<double>();
        fuseHeads(a, options.fusion, out);
        discardSmallest(out, N, options.discard);
        for (int64_t i = 0; i < N; ++i) {
            double* o = out + i * N;
            for (int64_t j = 0; j < N; ++j)
                o[j] *= 0.5;
            o[i] += 0.5;
            const double inv = 1.0 / sum(o, N);
            for (int64_t j = 0; j < N; ++j)
                o[j] *= inv;
        }
        r = r.defined() ? at::mm(ah, r) : ah; // R = Â_L ... Â_1
    }
    return wrap(r);
}

AttentionMap rolloutMap(const Trace& trace, const Tensor& rollout, int query)
{
    const at::Tensor row = d64(rollout)[query];
    AttentionMap map;
    map.prefixMass = row.slice(0, 0, trace.numPrefixTokens).sum().item<double>();
    map.patches = wrap(row.slice(0, trace.numPrefixTokens).reshape({ trace.gridHeight, trace.gridWidth }));
    return map;
}

AttentionGrid attentionGrid(const Trace& trace, int query, const RolloutOptions& rollout)
{
    AttentionGrid g;
    g.gridHeight = trace.gridHeight;
    g.gridWidth = trace.gridWidth;
    g.numPrefixTokens = trace.numPrefixTokens;
    g.query = query >= 0 ? query : trace.numPrefixTokens > 0 ? 0 : (trace.gridHeight / 2) * trace.gridWidth + trace.gridWidth / 2;
    g.windows = trace.windows;
    for (int l = 1; l <= trace.depth; ++l) {
        std::vector<AttentionMap> row;
        const int heads = trace.hierarchical() ? trace.windows[size_t(l - 1)].heads : trace.numHeads;
        for (int h = 0; h < heads; ++h)
            row.push_back(attentionMap(trace, l, h, g.query));
        row.push_back(attentionMap(trace, l, -1, g.query));
        g.maps.push_back(std::move(row));
    }
    if (trace.hierarchical())
        g.rolloutRefused = kNoHierarchicalRollout;
    else
        g.rollout = rolloutMap(trace, attentionRollout(trace, rollout), g.query);
    g.rolloutOptions = rollout;
    return g;
}

ATTNSCOPE_VECTOR_CLONES
std::vector<AttentionSimilarityPoint> attentionSimilarity(const Trace& trace)
{
    if (trace.hierarchical())
        return windowAttentionSimilarity(trace);
    // Two passes over each layer's float32 [H, N, N] maps, in blocks of positions. The first takes the head mean (kept
    // for the next layer's cosine), its dot products with itself and with the previous layer's mean, and each
    // head's norm; the second the sum of the unit-normalised heads s = sum_h A[h] / |A[h]|. The mean pairwise cosine
    // is then (|s|^2 - sum_h |A[h] / |A[h]||^2) / (H (H - 1)), as for tokens: no H x H Gram matrix.
    constexpr int64_t kBlock = 512;
    const size_t layers = size_t(std::max(trace.depth, 0)) + 2;
    std::vector<double> meanNorm2(layers, kNaN), successiveDot(layers, kNaN); // successiveDot[l] = <mean_l, mean_l+1>
    std::vector<AttentionSimilarityPoint> out;
    std::vector<double> mean, previous, unitSum(static_cast<size_t>(kBlock)), norm2, inv;
    int previousLayer = -1;
    for (int l = 1; l <= trace.depth; ++l) {
        const Tensor& a = trace.attention.at(size_t(l));
        if (a.empty())
            continue;
        const int64_t H = a.size(0), nn = a.numel() / H;
        const bool follows = previousLayer == l - 1 && previous.size() == size_t(nn);
        mean.resize(size_t(nn));
        norm2.assign(size_t(H), 0.0);
        double meanMean = 0, meanPrevious = 0;
        for (int64_t b = 0; b < nn; b += kBlock) {
            const int64_t len = std::min(kBlock, nn - b);
            double* m = mean.data() + b;
            const float* first = a.data() + b;
            for (int64_t i = 0; i < len; ++i)
                m[i] = first[i];
            norm2[0] += squaredNorm(first, len);
            for (int64_t h = 1; h < H; ++h) {
                const float* src = a.data() + h * nn + b;
                for (int64_t i = 0; i < len; ++i)
                    m[i] += src[i];
                norm2[size_t(h)] += squaredNorm(src, len);
            }
            for (int64_t i = 0; i < len; ++i)
                m[i] /= double(H);
            meanMean += dot(m, m, len);
            if (follows)
                meanPrevious += dot(m, previous.data() + b, len);
        }
        meanNorm2[size_t(l)] = meanMean;
        if (follows)
            successiveDot[size_t(l - 1)] = meanPrevious;
        AttentionSimilarityPoint p { l, kNaN, kNaN };
        if (H > 1) {
            inv.resize(size_t(H));
            double self = 0; // sum_h |A[h] / |A[h]||^2: H, less the all-zero heads
            for (int64_t h = 0; h < H; ++h) {
                inv[size_t(h)] = 1.0 / std::max(std::sqrt(norm2[size_t(h)]), 1e-300);
                self += norm2[size_t(h)] * inv[size_t(h)] * inv[size_t(h)];
            }
            double s2 = 0;
            double* u = unitSum.data();
            for (int64_t b = 0; b < nn; b += kBlock) {
                const int64_t len = std::min(kBlock, nn - b);
                const float* first = a.data() + b;
                for (int64_t i = 0; i < len; ++i)
                    u[i] = first[i] * inv[0];
                for (int64_t h = 1; h < H; ++h) {
                    const float* src = a.data() + h * nn + b;
                    const double w = inv[size_t(h)];
                    for (int64_t i = 0; i < len; ++i)
                        u[i] += src[i] * w;
                }
                s2 += dot(u, u, len);
            }
            p.headRedundancy = (s2 - self) / double(H * (H - 1));
        }
        out.push_back(p);
        std::swap(mean, previous);
        previousLayer = l;
    }
    for (auto& p : out) {
        const size_t l = size_t(p.layer);
        if (p.layer < trace.depth && !std::isnan(successiveDot[l]))
            p.successiveCos = successiveDot[l] / std::max(std::sqrt(meanNorm2[l]) * std::sqrt(meanNorm2[l + 1]), 1e-300);
    }
    return out;
}

// ---- 3

ATTNSCOPE_VECTOR_CLONES
std::vector<HeadCentre> headCentres(const Trace& trace, int patchSize, int radius)
{
    if (trace.hierarchical())
        return windowHeadCentres(trace, patchSize, radius);
    std::vector<HeadCentre> out;
    const int gh = trace.gridHeight, gw = trace.gridWidth, P = trace.numPrefixTokens, np = gh * gw;
    const int side = 2 * radius + 1, cells = side * side;
    // Interior queries (whole window inside the grid) and, for each, the key index of every window cell.
    const OffsetWindow window = offsetWindow(gh, gw, radius);
    const std::vector<int64_t>& interior = window.interior;
    const std::vector<int64_t>& cellKeys = window.cellKeys;
    // |pos_k - pos_q| for every query and key patch, from the (|dy|, |dx|) table; pos_k - pos_q per query row (dy)
    // and per query column (dx).
    std::vector<double> hypotenuse(size_t(gh) * size_t(gw)), distance(size_t(np) * size_t(np));
    for (int dy = 0; dy < gh; ++dy)
        for (int dx = 0; dx < gw; ++dx)
            hypotenuse[size_t(dy * gw + dx)] = std::hypot(double(dy), double(dx));
    for (int q = 0; q < np; ++q)
        for (int k = 0; k < np; ++k)
            distance[size_t(q) * size_t(np) + size_t(k)] = hypotenuse[size_t(std::abs(k / gw - q / gw) * gw + std::abs(k % gw - q % gw))];
    std::vector<double> offsetY(size_t(gh) * size_t(np)), offsetX(size_t(gw) * size_t(np));
    for (int k = 0; k < np; ++k) {
        for (int r = 0; r < gh; ++r)
            offsetY[size_t(r) * size_t(np) + size_t(k)] = double(k / gw - r);
        for (int c = 0; c < gw; ++c)
            offsetX[size_t(c) * size_t(np) + size_t(k)] = double(k % gw - c);
    }
    std::vector<double> w(static_cast<size_t>(np));

    for (int l = 1; l <= trace.depth; ++l) {
        const Tensor& a = trace.attention.at(size_t(l)); // [H, N, N]
        if (a.empty())
            continue;
        const int64_t H = a.size(0), N = a.size(1);
        for (int64_t h = 0; h < H; ++h) {
            HeadCentre hc;
            hc.layer = l;
            hc.head = int(h);
            double cy = 0, cx = 0, dist = 0, prefix = 0;
            std::vector<double> m(size_t(cells), 0.0);
            size_t nextInterior = 0;
            for (int q = 0; q < np; ++q) {
                const float* row = a.data() + (h * N + P + q) * N; // patch query q, all keys
                double pre = 0;
                for (int k = 0; k < P; ++k)
                    pre += row[k];
                // The unnormalised weights A(k) of the patch keys, their total, the attention-weighted offsets
                // sum_k A(k) (pos_k - pos_q) and distance sum_k A(k) |pos_k - pos_q|; a_q(k) = A(k) / total.
                for (int k = 0; k < np; ++k)
                    w[size_t(k)] = row[P + k];
                const double total = sum(w.data(), np);
                const double inv = 1.0 / std::max(total, 1e-300);
                cy += dot(w.data(), offsetY.data() + size_t(q / gw) * size_t(np), np) * inv;
                cx += dot(w.data(), offsetX.data() + size_t(q % gw) * size_t(np), np) * inv;
                dist += dot(w.data(), distance.data() + size_t(q) * size_t(np), np) * inv;
                prefix += pre;
                if (nextInterior < interior.size() && interior[nextInterior] == q) {
                    const int64_t* keys = cellKeys.data() + nextInterior * size_t(cells);
                    for (int c = 0; c < cells; ++c)
                        m[size_t(c)] += w[size_t(keys[c])] * inv; // a_q(q + delta)
                    ++nextInterior;
                }
            }
            hc.centreDy = cy / np;
            hc.centreDx = cx / np;
            hc.meanDistancePx = patchSize * dist / np;
            hc.prefixMass = P > 0 ? prefix / np : 0.0;
            summariseOffsetMap(hc, std::move(m), interior.size(), radius);
            out.push_back(std::move(hc));
        }
    }
    return out;
}

// ---- 4

} // namespace attnscope
