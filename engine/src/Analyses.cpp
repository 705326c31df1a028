// ANALYSES.md sections 1-4 over a Trace. Reductions run in float64 so that the results match a float64 reference
// to well below the 1e-4 the tests ask.
#include "attnscope/Analyses.h"

#include "TensorImpl.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

namespace attnscope {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

at::Tensor d64(const Tensor& t) { return unwrap(t).to(at::kDouble); }

double cosine(const at::Tensor& a, const at::Tensor& b)
{
    const double na = a.norm().item<double>(), nb = b.norm().item<double>();
    return (a * b).sum().item<double>() / std::max(na * nb, 1e-300);
}

// (row, col) of every patch, row-major [gh*gw, 2].
at::Tensor patchPositions(int gh, int gw)
{
    auto rows = at::arange(gh, at::kDouble).repeat_interleave(gw);
    auto cols = at::arange(gw, at::kDouble).repeat({ gh });
    return at::stack({ rows, cols }, 1);
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

double tokenCosineSimilarity(const Tensor& tokens)
{
    const at::Tensor z = d64(tokens);
    const int64_t m = z.size(0);
    if (m < 2)
        return kNaN;
    const auto unit = z / z.norm(2, 1, true).clamp_min(1e-12);
    // cs(Z) = (|sum_i z^_i|^2 - M) / (M (M - 1)): the mean off-diagonal cosine in O(M D), not O(M^2 D).
    const double s = unit.sum(0).pow(2).sum().item<double>();
    return (s - double(m)) / (double(m) * double(m - 1));
}

Tensor tokenCosineMatrix(const Tensor& tokens)
{
    const at::Tensor z = d64(tokens);
    const auto unit = z / z.norm(2, 1, true).clamp_min(1e-12);
    return wrap(at::matmul(unit, unit.t()));
}

std::vector<TokenSimilarityPoint> tokenSimilarity(const Trace& trace)
{
    std::vector<TokenSimilarityPoint> out;
    for (Tap tap : { Tap::Block, Tap::Attn, Tap::Residual }) {
        const auto& taps = tapOf(trace, tap);
        for (size_t l = 0; l < taps.size(); ++l) {
            if (taps[l].empty())
                continue;
            out.push_back({ int(l), tap, TokenSet::All, tokenCosineSimilarity(taps[l]) });
            const at::Tensor patches = unwrap(taps[l]).slice(0, trace.numPrefixTokens);
            out.push_back({ int(l), tap, TokenSet::Patches, tokenCosineSimilarity(wrap(patches)) });
        }
    }
    return out;
}

// ---- 2

AttentionMap attentionMap(const Trace& trace, int layer, int head, int query, bool renormalise)
{
    const at::Tensor a = d64(trace.attention.at(size_t(layer))); // [H, N, N]
    const at::Tensor row = head < 0 ? a.select(1, query).mean(0) : a[head][query];
    AttentionMap map;
    const int P = trace.numPrefixTokens;
    map.prefixMass = row.slice(0, 0, P).sum().item<double>();
    at::Tensor patches = row.slice(0, P);
    if (renormalise)
        patches = patches / patches.sum().clamp_min(1e-300);
    map.patches = wrap(patches.reshape({ trace.gridHeight, trace.gridWidth }));
    return map;
}

Tensor attentionRollout(const Trace& trace)
{
    at::Tensor r;
    for (int l = 1; l <= trace.depth; ++l) {
        const at::Tensor a = d64(trace.attention.at(size_t(l))).mean(0);
        at::Tensor ah = 0.5 * a + 0.5 * at::eye(a.size(0), at::kDouble);
        ah = ah / ah.sum(1, true);
        r = r.defined() ? at::matmul(ah, r) : ah; // R = Â_L ... Â_1
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

std::vector<AttentionSimilarityPoint> attentionSimilarity(const Trace& trace)
{
    std::vector<AttentionSimilarityPoint> out;
    for (int l = 1; l <= trace.depth; ++l) {
        const at::Tensor a = d64(trace.attention.at(size_t(l)));
        AttentionSimilarityPoint p { l, kNaN, kNaN };
        if (l < trace.depth && !trace.attention.at(size_t(l + 1)).empty())
            p.successiveCos = cosine(a.mean(0).flatten(), d64(trace.attention[size_t(l + 1)]).mean(0).flatten());
        const int64_t H = a.size(0);
        if (H > 1) {
            const auto flat = a.reshape({ H, -1 });
            const auto unit = flat / flat.norm(2, 1, true).clamp_min(1e-300);
            const auto g = at::matmul(unit, unit.t());
            p.headRedundancy = (g.sum().item<double>() - g.trace().item<double>()) / double(H * (H - 1));
        }
        out.push_back(p);
    }
    return out;
}

// ---- 3

std::vector<HeadCentre> headCentres(const Trace& trace, int patchSize, int radius)
{
    std::vector<HeadCentre> out;
    const int gh = trace.gridHeight, gw = trace.gridWidth, P = trace.numPrefixTokens, np = gh * gw;
    const at::Tensor pos = patchPositions(gh, gw);          // [np, 2]
    const at::Tensor offsets = pos.unsqueeze(0) - pos.unsqueeze(1); // [q, k, 2] = pos_k - pos_q
    const at::Tensor distance = offsets.pow(2).sum(-1).sqrt();     // [q, k]
    const int side = 2 * radius + 1;
    // Interior queries (whole window inside the grid) and, for each, the key index of every window cell.
    std::vector<int64_t> interior, cellKeys;
    for (int r = radius; r < gh - radius; ++r)
        for (int c = radius; c < gw - radius; ++c) {
            interior.push_back(r * gw + c);
            for (int dy = -radius; dy <= radius; ++dy)
                for (int dx = -radius; dx <= radius; ++dx)
                    cellKeys.push_back((r + dy) * gw + (c + dx));
        }
    const auto interiorIdx = at::tensor(interior, at::kLong);
    const auto keyIdx = at::tensor(cellKeys, at::kLong).reshape({ int64_t(interior.size()), side * side });
    at::Tensor cellOffsets = at::empty({ side * side, 2 }, at::kDouble);
    for (int i = 0; i < side * side; ++i) {
        cellOffsets[i][0] = double(i / side - radius);
        cellOffsets[i][1] = double(i % side - radius);
    }

    for (int l = 1; l <= trace.depth; ++l) {
        if (trace.attention.at(size_t(l)).empty())
            continue;
        const at::Tensor a = d64(trace.attention[size_t(l)]); // [H, N, N]
        const int64_t H = a.size(0);
        for (int64_t h = 0; h < H; ++h) {
            const at::Tensor rows = a[h].slice(0, P);                   // patch queries [np, N]
            const at::Tensor patchPart = rows.slice(1, P);              // [np, np]
            const at::Tensor aq = patchPart / patchPart.sum(1, true).clamp_min(1e-300);
            HeadCentre hc;
            hc.layer = l;
            hc.head = int(h);
            const auto centre = (aq.unsqueeze(-1) * offsets).sum(1).mean(0); // [2]
            hc.centreDy = centre[0].item<double>();
            hc.centreDx = centre[1].item<double>();
            hc.meanDistancePx = patchSize * (aq * distance).sum(1).mean().item<double>();
            hc.prefixMass = P > 0 ? rows.slice(1, 0, P).sum(1).mean().item<double>() : 0.0;
            if (interior.empty()) {
                hc.peakDy = hc.peakDx = hc.bandwidth = hc.windowMass = hc.contour50 = hc.contour90 = kNaN;
                hc.offsetMap = wrap(at::full({ side, side }, kNaN, at::kDouble));
            } else {
                // M(delta) = mean over interior q of a_q(q + delta)
                const at::Tensor m = aq.index_select(0, interiorIdx).gather(1, keyIdx).mean(0); // [side*side]
                hc.offsetMap = wrap(m.reshape({ side, side }));
                const int64_t peak = m.argmax().item<int64_t>();
                hc.peakDy = double(peak / side - radius);
                hc.peakDx = double(peak % side - radius);
                const double mass = m.sum().item<double>();
                hc.windowMass = mass;
                // Bandwidth: spread of the offset map around its own centroid (kernel-regression view, seed 004).
                const auto centroid = (m.unsqueeze(1) * cellOffsets).sum(0) / mass;
                hc.bandwidth = std::sqrt(((cellOffsets - centroid).pow(2).sum(1) * m).sum().item<double>() / mass);
                // Contour levels: the value of the cell at which the descending cumulative mass reaches the share
                // (Cordonnier et al., Fig. 4/6 draw the 50% and 90% regions).
                const auto sorted = std::get<0>(m.sort(0, true));
                const auto cum = sorted.cumsum(0);
                for (auto [share, level] : { std::pair<double, double*> { 0.5, &hc.contour50 }, { 0.9, &hc.contour90 } }) {
                    const int64_t idx = (cum < share * mass).sum().item<int64_t>();
                    *level = sorted[std::min<int64_t>(idx, sorted.size(0) - 1)].item<double>();
                }
            }
            out.push_back(std::move(hc));
        }
    }
    return out;
}

// ---- 4

SnrResult signalToNoise(const Trace& clean, const Trace& noisy, bool centre)
{
    SnrResult out;
    const auto centred = [centre](const at::Tensor& t) { return centre ? t - t.mean(0, true) : t; };
    for (Tap tap : { Tap::Block, Tap::Attn, Tap::Residual }) {
        const auto& c = tapOf(clean, tap);
        const auto& n = tapOf(noisy, tap);
        for (size_t l = 0; l < c.size() && l < n.size(); ++l) {
            if (c[l].empty() || n[l].empty())
                continue;
            const at::Tensor x = d64(c[l]), xn = d64(n[l]);
            const double signal = centred(x).norm().item<double>();
            const double noise = (xn - x).norm().item<double>();
            out.snr.push_back({ int(l), tap, 20.0 * std::log10(signal / std::max(noise, 1e-300)) });
        }
    }
    if (clean.blocks.empty() || clean.blocks[0].empty() || noisy.blocks.empty() || noisy.blocks[0].empty())
        return out;
    const double eta0 = (d64(noisy.blocks[0]) - d64(clean.blocks[0])).norm().item<double>();
    for (int l = 1; l <= clean.depth; ++l) {
        if (clean.attnBranch.at(size_t(l)).empty() || clean.blocks.at(size_t(l - 1)).empty())
            continue;
        const at::Tensor x = d64(clean.blocks[size_t(l - 1)]), xn = d64(noisy.blocks[size_t(l - 1)]);
        const at::Tensor u = d64(clean.attnBranch[size_t(l)]), un = d64(noisy.attnBranch[size_t(l)]);
        // Proposition 3.1 of the filtering paper, with u = centred X_{l-1}, û = centred U_l, η and η̂ the changes.
        const at::Tensor s = centred(x), sh = centred(u), e = xn - x, eh = un - u;
        SnrDiagnostics d;
        d.layer = l;
        const double ns = s.norm().item<double>(), ne = e.norm().item<double>();
        d.alpha = sh.norm().item<double>() / ns;
        d.beta = cosine(s, sh);
        d.gamma = eh.norm().item<double>() / ne;
        d.gain = ((s + sh).norm().item<double>() / (e + eh).norm().item<double>()) / (ns / ne);
        d.bound = std::sqrt(1 + 2 * d.alpha * d.beta + d.alpha * d.alpha) / (1 + d.gamma);
        d.conditionHolds = std::min(d.alpha, d.beta) > d.gamma;
        d.sensitivity = (d64(noisy.blocks.at(size_t(l))) - d64(clean.blocks.at(size_t(l)))).norm().item<double>() / eta0;
        out.diagnostics.push_back(d);
    }
    return out;
}

} // namespace attnscope
