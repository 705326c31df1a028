#include "analyses/WindowMaps.h"

#include "analyses/OffsetWindow.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace attnscope {

const char* const kNoHierarchicalRollout = "no rollout of a hierarchical model: its tokens change at every patch merge, "
                                           "so no product of its maps spans the stages (docs/analyses.md, \"Hierarchical models\")";

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Block l's recorded maps, checked against its window geometry.
const Tensor& windowMaps(const Trace& trace, int layer)
{
    if (layer < 1 || layer > int(trace.windows.size()) || size_t(layer) >= trace.attention.size())
        throw std::out_of_range("attentionMap: block " + std::to_string(layer) + " outside the model's "
                                + std::to_string(trace.windows.size()) + " blocks");
    const WindowBlock& g = trace.windows[size_t(layer - 1)];
    const Tensor& a = trace.attention[size_t(layer)];
    if (a.dim() != 4 || a.size(0) != g.numWindows() || a.size(1) != g.heads || a.size(2) != g.windowArea()
        || a.size(3) != g.windowArea())
        throw std::invalid_argument("attentionMap: block " + std::to_string(layer)
                                    + "'s attention was not recorded as [windows, heads, window tokens, window tokens]");
    return a;
}

// The keys of every window of `g` as tokens of its grid (-1: padding), [nW][n].
std::vector<std::vector<int>> keyTokens(const WindowBlock& g)
{
    std::vector<std::vector<int>> keys(size_t(g.numWindows()), std::vector<int>(size_t(g.windowArea())));
    for (int w = 0; w < g.numWindows(); ++w)
        for (int k = 0; k < g.windowArea(); ++k)
            keys[size_t(w)][size_t(k)] = g.tokenOf(w, k);
    return keys;
}

// One block's maps as rows of the stage's tokens: token i's row is window(i)'s row place(i).row, its keys the tokens
// of keys[window(i)]. A token is in one window, and a key in one window too, so every (query, key) pair of tokens the
// block relates appears once: the map as an N x N matrix, zero outside the windows.
struct TokenRows {
    const Tensor* maps = nullptr; // [nW, H, n, n]
    std::vector<int> window, row; // per token
    std::vector<std::vector<int>> keys;
    int64_t heads = 0, n = 0;

    TokenRows(const Trace& trace, int layer)
        : maps(&windowMaps(trace, layer))
    {
        const WindowBlock& g = trace.windows[size_t(layer - 1)];
        heads = g.heads;
        n = g.windowArea();
        keys = keyTokens(g);
        for (int y = 0; y < g.gridH; ++y)
            for (int x = 0; x < g.gridW; ++x) {
                const WindowBlock::Place p = g.place(y, x);
                window.push_back(p.window);
                row.push_back(p.row);
            }
    }
    size_t tokens() const { return window.size(); }
    // Head h's weights of token i's row over the window's keys.
    const float* weights(size_t i, int64_t h) const
    {
        return maps->data() + ((int64_t(window[i]) * heads + h) * n + row[i]) * n;
    }
    const std::vector<int>& keysOf(size_t i) const { return keys[size_t(window[i])]; }
    // The head mean of token i's row into `out` [n].
    void meanRow(size_t i, std::vector<double>& out) const
    {
        out.assign(size_t(n), 0.0);
        for (int64_t h = 0; h < heads; ++h) {
            const float* w = weights(i, h);
            for (int64_t k = 0; k < n; ++k)
                out[size_t(k)] += w[k];
        }
        for (double& v : out)
            v /= double(heads);
    }
};

// The map with the image's part of its row (the window's cells, not the padding) scaled to sum 1.
AttentionMap renormalised(AttentionMap map)
{
    const float* v = map.patches.data();
    double inside = 0;
    for (int64_t i = 0; i < map.patches.numel(); ++i)
        inside += std::isnan(v[i]) ? 0.0 : double(v[i]);
    std::vector<float> scaled(v, v + map.patches.numel());
    if (inside > 0)
        for (float& x : scaled)
            x = std::isnan(x) ? x : float(x / inside);
    map.patches = Tensor::fromVector({ map.patches.size(0), map.patches.size(1) }, std::move(scaled));
    return map;
}

} // namespace

std::string blockName(const WindowBlock& b)
{
    return "stage " + std::to_string(b.stage + 1) + ", block " + std::to_string(b.index + 1)
        + (b.shiftH || b.shiftW ? " (shifted)" : "");
}

std::string blockName(const Trace& trace, int layer)
{
    if (trace.hierarchical() && layer >= 1 && layer <= int(trace.windows.size()))
        return blockName(trace.windows[size_t(layer - 1)]);
    return "layer " + std::to_string(layer);
}

AttentionMap windowAttentionMap(const Trace& trace, int layer, int head, int query, bool renormalise)
{
    const Tensor& a = windowMaps(trace, layer);
    const WindowBlock& g = trace.windows[size_t(layer - 1)];
    const int patches = trace.gridHeight * trace.gridWidth;
    if (head >= g.heads || query < 0 || query >= patches)
        throw std::out_of_range("attentionMap: head " + std::to_string(head) + " or patch " + std::to_string(query)
                                + " outside block " + std::to_string(layer) + "'s " + std::to_string(g.heads)
                                + " heads and the " + std::to_string(patches) + " patches");
    // The query patch's token at this stage: each merge halves the grid (an odd side padded by one first).
    const int y = (query / trace.gridWidth) >> g.stage, x = (query % trace.gridWidth) >> g.stage;
    const WindowBlock::Place p = g.place(y, x);
    const int64_t H = g.heads, n = g.windowArea();
    std::vector<float> values(size_t(g.gridH) * size_t(g.gridW), std::numeric_limits<float>::quiet_NaN());
    AttentionMap map;
    for (int k = 0; k < n; ++k) {
        double v = 0;
        if (head >= 0) {
            v = a.data()[((int64_t(p.window) * H + head) * n + p.row) * n + k];
        } else {
            for (int64_t h = 0; h < H; ++h)
                v += a.data()[((int64_t(p.window) * H + h) * n + p.row) * n + k];
            v /= double(H);
        }
        const int token = g.tokenOf(p.window, k);
        if (token < 0)
            map.paddingMass += v;
        else
            values[size_t(token)] = float(v);
    }
    map.patches = Tensor::fromVector({ g.gridH, g.gridW }, std::move(values));
    return renormalise ? renormalised(std::move(map)) : map;
}

void addWindowRows(const Trace& trace, QueryRows& out)
{
    const int query = out.query;
    out.windows = trace.windows;
    out.numHeads = 0;
    for (int l = 1; l <= trace.depth; ++l) {
        const WindowBlock& g = trace.windows.at(size_t(l - 1));
        out.numHeads = std::max(out.numHeads, g.heads);
        std::vector<AttentionMap> maps;
        for (int h = 0; h < g.heads; ++h)
            maps.push_back(windowAttentionMap(trace, l, h, query, false));
        maps.push_back(windowAttentionMap(trace, l, -1, query, false));
        out.windowMaps.push_back(std::move(maps));
    }
}

AttentionMap windowAttentionMap(const QueryRows& rows, int layer, int head, bool renormalise)
{
    if (layer < 1 || size_t(layer) > rows.windowMaps.size() || head < -1
        || head + 1 >= int(rows.windowMaps[size_t(layer - 1)].size()))
        throw std::out_of_range("attentionMap: block " + std::to_string(layer) + " head " + std::to_string(head)
                                + " outside the rows' blocks and their heads");
    const auto& maps = rows.windowMaps[size_t(layer - 1)];
    const AttentionMap& map = head < 0 ? maps.back() : maps[size_t(head)];
    return renormalise ? renormalised(map) : map;
}

std::vector<HeadCentre> windowHeadCentres(const Trace& trace, int patchSize, int radius)
{
    std::vector<HeadCentre> out;
    const int side = 2 * radius + 1;
    for (int l = 1; l <= int(trace.windows.size()); ++l) {
        if (size_t(l) >= trace.attention.size() || trace.attention[size_t(l)].empty())
            continue;
        const TokenRows rows(trace, l);
        const WindowBlock& g = trace.windows[size_t(l - 1)];
        const double tokenPx = double(patchSize) * double(1 << g.stage);
        const size_t N = rows.tokens();
        for (int64_t h = 0; h < rows.heads; ++h) {
            HeadCentre hc;
            hc.layer = l;
            hc.head = int(h);
            double cy = 0, cx = 0, dist = 0;
            std::vector<double> m(size_t(side * side), 0.0);
            size_t interior = 0;
            for (size_t i = 0; i < N; ++i) {
                const int y = int(i) / g.gridW, x = int(i) % g.gridW;
                const float* w = rows.weights(i, h);
                const auto& keys = rows.keysOf(i);
                double total = 0;
                for (int64_t k = 0; k < rows.n; ++k)
                    total += keys[size_t(k)] >= 0 ? double(w[k]) : 0.0;
                const double inv = 1.0 / std::max(total, 1e-300);
                // a query whose (2R+1)^2 offsets all lie on the grid, as for a ViT
                const bool inside = y >= radius && y < g.gridH - radius && x >= radius && x < g.gridW - radius;
                interior += inside;
                for (int64_t k = 0; k < rows.n; ++k) {
                    const int j = keys[size_t(k)];
                    if (j < 0)
                        continue;
                    const double a = w[k] * inv;
                    const int dy = j / g.gridW - y, dx = j % g.gridW - x;
                    cy += a * dy;
                    cx += a * dx;
                    dist += a * std::hypot(double(dy), double(dx));
                    if (inside && std::abs(dy) <= radius && std::abs(dx) <= radius)
                        m[size_t((dy + radius) * side + dx + radius)] += a;
                }
            }
            hc.centreDy = cy / double(N);
            hc.centreDx = cx / double(N);
            hc.meanDistancePx = tokenPx * dist / double(N);
            summariseOffsetMap(hc, std::move(m), interior, radius);
            out.push_back(std::move(hc));
        }
    }
    return out;
}

std::vector<AttentionSimilarityPoint> windowAttentionSimilarity(const Trace& trace)
{
    // Each block's maps as N x N matrices of its stage's tokens (TokenRows): successive blocks of a stage relate the same
    // tokens, through differently placed windows; across a merge the tokens are others (NaN).
    std::vector<AttentionSimilarityPoint> out;
    const int depth = int(trace.windows.size());
    std::vector<double> row, next, scratch;
    for (int l = 1; l <= depth; ++l) {
        if (size_t(l) >= trace.attention.size() || trace.attention[size_t(l)].empty())
            continue;
        const TokenRows rows(trace, l);
        const size_t N = rows.tokens();
        const int64_t H = rows.heads, n = rows.n;
        // Head redundancy: the mean pairwise cosine of the heads' matrices, (|s|^2 - H) / (H (H - 1)) with s the sum of
        // the unit-normalised heads.
        std::vector<double> norm2(size_t(H), 0.0);
        for (size_t i = 0; i < N; ++i)
            for (int64_t h = 0; h < H; ++h) {
                const float* w = rows.weights(i, h);
                for (int64_t k = 0; k < n; ++k)
                    if (rows.keysOf(i)[size_t(k)] >= 0)
                        norm2[size_t(h)] += double(w[k]) * w[k];
            }
        double s2 = 0;
        for (size_t i = 0; i < N; ++i)
            for (int64_t k = 0; k < n; ++k) {
                if (rows.keysOf(i)[size_t(k)] < 0)
                    continue;
                double s = 0;
                for (int64_t h = 0; h < H; ++h)
                    s += rows.weights(i, h)[k] / std::sqrt(std::max(norm2[size_t(h)], 1e-300));
                s2 += s * s;
            }
        AttentionSimilarityPoint p { l, kNaN, H > 1 ? (s2 - double(H)) / (double(H) * double(H - 1)) : kNaN };
        // Successive cosine with the next block of the same stage, of the head means.
        const bool sameStage = l < depth && trace.windows[size_t(l)].stage == trace.windows[size_t(l - 1)].stage
            && size_t(l + 1) < trace.attention.size() && !trace.attention[size_t(l + 1)].empty();
        if (sameStage) {
            const TokenRows following(trace, l + 1);
            scratch.assign(N, 0.0);
            double dot = 0, self = 0, other = 0;
            for (size_t i = 0; i < N; ++i) {
                rows.meanRow(i, row);
                following.meanRow(i, next);
                const auto& keys = rows.keysOf(i);
                const auto& nextKeys = following.keysOf(i);
                for (int64_t k = 0; k < n; ++k)
                    if (keys[size_t(k)] >= 0) {
                        scratch[size_t(keys[size_t(k)])] = row[size_t(k)];
                        self += row[size_t(k)] * row[size_t(k)];
                    }
                for (int64_t k = 0; k < following.n; ++k)
                    if (nextKeys[size_t(k)] >= 0) {
                        dot += scratch[size_t(nextKeys[size_t(k)])] * next[size_t(k)];
                        other += next[size_t(k)] * next[size_t(k)];
                    }
                for (int64_t k = 0; k < n; ++k)
                    if (keys[size_t(k)] >= 0)
                        scratch[size_t(keys[size_t(k)])] = 0.0;
            }
            p.successiveCos = dot / std::sqrt(std::max(self * other, 1e-300));
        }
        out.push_back(p);
    }
    return out;
}

} // namespace attnscope
