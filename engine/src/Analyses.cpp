// ANALYSES.md sections 1-4 over a Trace. Reductions run in float64 so that the results match a float64 reference
// to well below the 1e-4 the tests ask.
#include "attnscope/Analyses.h"

#include "TensorImpl.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace attnscope {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

at::Tensor d64(const Tensor& t) { return unwrap(t).to(at::kDouble); }

// sum over i in [0, n) of f(i), in float64 with four independent partial sums: the additions pipeline instead of
// each waiting for the last (a single running sum is bound by the adder's latency, four times slower).
template <class F>
double sum4(int64_t n, F&& f)
{
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        a0 += f(i);
        a1 += f(i + 1);
        a2 += f(i + 2);
        a3 += f(i + 3);
    }
    for (; i < n; ++i)
        a0 += f(i);
    return (a0 + a1) + (a2 + a3);
}

// Column means of an [n, d] tap (zeros when not centring).
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
    const int64_t m = tokens.size(0), d = tokens.numel() / std::max<int64_t>(1, m);
    if (m < 2)
        return kNaN;
    // cs(Z) = (|sum_i z^_i|^2 - M) / (M (M - 1)): the mean off-diagonal cosine in O(M D), not O(M^2 D).
    std::vector<double> sum(size_t(d), 0.0);
    for (int64_t i = 0; i < m; ++i) {
        const float* z = tokens.data() + i * d;
        const double n2 = sum4(d, [z](int64_t j) { return double(z[j]) * z[j]; });
        const double inv = 1.0 / std::max(std::sqrt(n2), 1e-12);
        for (int64_t j = 0; j < d; ++j)
            sum[size_t(j)] += z[j] * inv;
    }
    double s = 0;
    for (double v : sum)
        s += v * v;
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
    // A plain loop over the query's row(s) of A_l: the GUI asks for 156 maps a click (docs/performance.md).
    const Tensor& a = trace.attention.at(size_t(layer)); // [H, N, N]
    const int64_t H = a.size(0), N = a.size(1);
    if (head >= H || query < 0 || query >= N || a.numel() != H * N * N
        || N - trace.numPrefixTokens != int64_t(trace.gridHeight) * trace.gridWidth)
        throw std::out_of_range("attentionMap: head " + std::to_string(head) + " or query " + std::to_string(query)
                                + " outside the layer's " + std::to_string(H) + " heads and " + std::to_string(N) + " tokens");
    std::vector<double> row(size_t(N), 0.0);
    for (int64_t h = head < 0 ? 0 : head; h < (head < 0 ? H : head + 1); ++h) {
        const float* r = a.data() + (h * N + query) * N;
        for (int64_t k = 0; k < N; ++k)
            row[size_t(k)] += r[k];
    }
    if (head < 0)
        for (double& v : row)
            v /= double(H);
    AttentionMap map;
    const int P = trace.numPrefixTokens;
    double patchSum = 0;
    for (int64_t k = 0; k < N; ++k)
        (k < P ? map.prefixMass : patchSum) += row[size_t(k)];
    const double scale = renormalise ? 1.0 / std::max(patchSum, 1e-300) : 1.0;
    std::vector<float> patches;
    patches.reserve(size_t(N - P));
    for (int64_t k = P; k < N; ++k)
        patches.push_back(float(row[size_t(k)] * scale));
    map.patches = Tensor::fromVector({ trace.gridHeight, trace.gridWidth }, std::move(patches));
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
    // Plain float64 loops over the float32 maps, a few passes over [H, N, N] per layer and no temporaries (an ATen
    // version in float64 spent its time converting and allocating; docs/performance.md).
    const auto headMean = [](const Tensor& a) {
        const int64_t H = a.size(0), nn = a.numel() / H;
        std::vector<double> mean(size_t(nn), 0.0);
        const float* data = a.data();
        for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < nn; ++i)
                mean[size_t(i)] += data[h * nn + i];
        for (double& v : mean)
            v /= double(H);
        return mean;
    };
    std::vector<AttentionSimilarityPoint> out;
    std::vector<double> mean, next;
    for (int l = 1; l <= trace.depth; ++l) {
        const Tensor& a = trace.attention.at(size_t(l));
        if (a.empty())
            continue;
        AttentionSimilarityPoint p { l, kNaN, kNaN };
        const int64_t H = a.size(0), nn = a.numel() / H;
        if (l < trace.depth && !trace.attention.at(size_t(l + 1)).empty()) {
            mean = next.size() == size_t(nn) ? std::move(next) : headMean(a); // next: layer l's mean when l - 1 had one
            next = headMean(trace.attention[size_t(l + 1)]);
            const double* x = mean.data();
            const double* y = next.data();
            const double dot = sum4(nn, [x, y](int64_t i) { return x[i] * y[i]; });
            const double n1 = sum4(nn, [x](int64_t i) { return x[i] * x[i]; });
            const double n2 = sum4(nn, [y](int64_t i) { return y[i] * y[i]; });
            p.successiveCos = dot / std::max(std::sqrt(n1) * std::sqrt(n2), 1e-300);
        } else {
            next.clear();
        }
        if (H > 1) {
            // Mean off-diagonal entry of the Gram matrix of the unit-normalised flattened heads: the Gram matrix of
            // the raw heads is one float64 matrix product (BLAS), normalised afterwards.
            const at::Tensor flat = unwrap(a).reshape({ H, -1 }).to(at::kDouble);
            const at::Tensor gram = at::mm(flat, flat.t()).contiguous();
            const double* g = gram.data_ptr<double>();
            double off = 0;
            for (int64_t i = 0; i < H; ++i)
                for (int64_t j = 0; j < H; ++j)
                    if (i != j)
                        off += g[i * H + j] / (std::max(std::sqrt(g[i * H + i]), 1e-300) * std::max(std::sqrt(g[j * H + j]), 1e-300));
            p.headRedundancy = off / double(H * (H - 1));
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
    const int side = 2 * radius + 1, cells = side * side;
    // Interior queries (whole window inside the grid) and, for each, the key index of every window cell.
    std::vector<int> interior, cellKeys;
    for (int r = radius; r < gh - radius; ++r)
        for (int c = radius; c < gw - radius; ++c) {
            interior.push_back(r * gw + c);
            for (int dy = -radius; dy <= radius; ++dy)
                for (int dx = -radius; dx <= radius; ++dx)
                    cellKeys.push_back((r + dy) * gw + (c + dx));
        }
    // |pos_k - pos_q| for every query and key patch.
    std::vector<double> distance(size_t(np) * size_t(np));
    for (int q = 0; q < np; ++q)
        for (int k = 0; k < np; ++k)
            distance[size_t(q) * size_t(np) + size_t(k)] = std::hypot(double(k / gw - q / gw), double(k % gw - q % gw));
    std::vector<double> aq(static_cast<size_t>(np)), rowOf(static_cast<size_t>(np)), colOf(static_cast<size_t>(np));
    for (int k = 0; k < np; ++k) {
        rowOf[size_t(k)] = double(k / gw);
        colOf[size_t(k)] = double(k % gw);
    }

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
                double pre = 0, total = 0;
                for (int k = 0; k < P; ++k)
                    pre += row[k];
                for (int k = 0; k < np; ++k)
                    total += row[P + k];
                const double inv = 1.0 / std::max(total, 1e-300);
                double sy = 0, sx = 0, sd = 0;
                const double* dq = distance.data() + size_t(q) * size_t(np);
                for (int k = 0; k < np; ++k) {
                    const double w = row[P + k] * inv; // a_q(k)
                    aq[size_t(k)] = w;
                    sy += w * rowOf[size_t(k)];
                    sx += w * colOf[size_t(k)];
                    sd += w * dq[k];
                }
                // sum_k a_q(k) (pos_k - pos_q) = sum_k a_q(k) pos_k - pos_q, the weights summing to 1 (or all 0).
                const double weight = total > 0 ? total * inv : 0.0;
                cy += sy - weight * rowOf[size_t(q)];
                cx += sx - weight * colOf[size_t(q)];
                dist += sd;
                prefix += pre;
                if (nextInterior < interior.size() && interior[nextInterior] == q) {
                    const int* keys = cellKeys.data() + nextInterior * size_t(cells);
                    for (int c = 0; c < cells; ++c)
                        m[size_t(c)] += aq[size_t(keys[c])];
                    ++nextInterior;
                }
            }
            hc.centreDy = cy / np;
            hc.centreDx = cx / np;
            hc.meanDistancePx = patchSize * dist / np;
            hc.prefixMass = P > 0 ? prefix / np : 0.0;
            if (interior.empty()) {
                hc.peakDy = hc.peakDx = hc.bandwidth = hc.windowMass = hc.contour50 = hc.contour90 = kNaN;
                hc.offsetMap = Tensor::fromVector({ side, side }, std::vector<float>(size_t(cells), std::nanf("")));
                out.push_back(std::move(hc));
                continue;
            }
            // M(delta) = mean over interior q of a_q(q + delta)
            double mass = 0;
            for (double& v : m) {
                v /= double(interior.size());
                mass += v;
            }
            std::vector<float> map(m.begin(), m.end());
            hc.offsetMap = Tensor::fromVector({ side, side }, std::move(map));
            const int peak = int(std::max_element(m.begin(), m.end()) - m.begin());
            hc.peakDy = double(peak / side - radius);
            hc.peakDx = double(peak % side - radius);
            hc.windowMass = mass;
            // Bandwidth: spread of the offset map around its own centroid (kernel-regression view, seed 004).
            double my = 0, mx = 0;
            for (int c = 0; c < cells; ++c) {
                my += m[size_t(c)] * (c / side - radius);
                mx += m[size_t(c)] * (c % side - radius);
            }
            my /= mass;
            mx /= mass;
            double spread = 0;
            for (int c = 0; c < cells; ++c)
                spread += m[size_t(c)] * (std::pow(c / side - radius - my, 2) + std::pow(c % side - radius - mx, 2));
            hc.bandwidth = std::sqrt(spread / mass);
            // Contour levels: the value of the cell at which the descending cumulative mass reaches the share
            // (Cordonnier et al., Fig. 4/6 draw the 50% and 90% regions).
            std::vector<double> sorted = m;
            std::sort(sorted.rbegin(), sorted.rend());
            for (auto [share, level] : { std::pair<double, double*> { 0.5, &hc.contour50 }, { 0.9, &hc.contour90 } }) {
                int64_t below = 0;
                double cum = 0;
                for (double v : sorted) {
                    cum += v;
                    below += cum < share * mass;
                }
                *level = sorted[size_t(std::min<int64_t>(below, int64_t(sorted.size()) - 1))];
            }
            out.push_back(std::move(hc));
        }
    }
    return out;
}

// ---- 4

SnrResult signalToNoise(const Trace& clean, const Trace& noisy, bool centre)
{
    // Plain float64 loops over the [N, D] taps, row by row (no temporaries; see attentionSimilarity).
    const auto centredNorm = [](const Tensor& t, const std::vector<double>& mean) {
        const int64_t d = int64_t(mean.size()), n = t.numel() / d;
        double s = 0;
        for (int64_t i = 0; i < n; ++i) {
            const float* row = t.data() + i * d;
            const double* m = mean.data();
            s += sum4(d, [row, m](int64_t j) { const double v = row[j] - m[j]; return v * v; });
        }
        return std::sqrt(s);
    };
    const auto differenceNorm = [](const Tensor& a, const Tensor& b) {
        const float* x = a.data();
        const float* y = b.data();
        return std::sqrt(sum4(a.numel(), [x, y](int64_t i) { const double v = double(x[i]) - y[i]; return v * v; }));
    };
    SnrResult out;
    for (Tap tap : { Tap::Block, Tap::Attn, Tap::Residual }) {
        const auto& c = tapOf(clean, tap);
        const auto& n = tapOf(noisy, tap);
        for (size_t l = 0; l < c.size() && l < n.size(); ++l) {
            if (c[l].empty() || n[l].empty())
                continue;
            const double signal = centredNorm(c[l], columnMeans(c[l], centre));
            const double noise = differenceNorm(n[l], c[l]);
            out.snr.push_back({ int(l), tap, 20.0 * std::log10(signal / std::max(noise, 1e-300)) });
        }
    }
    if (clean.blocks.empty() || clean.blocks[0].empty() || noisy.blocks.empty() || noisy.blocks[0].empty())
        return out;
    const double eta0 = differenceNorm(noisy.blocks[0], clean.blocks[0]);
    for (int l = 1; l <= clean.depth; ++l) {
        if (clean.attnBranch.at(size_t(l)).empty() || clean.blocks.at(size_t(l - 1)).empty())
            continue;
        const Tensor &x = clean.blocks[size_t(l - 1)], &xn = noisy.blocks[size_t(l - 1)];
        const Tensor &u = clean.attnBranch[size_t(l)], &un = noisy.attnBranch[size_t(l)];
        // Proposition 3.1 of the filtering paper, with u = centred X_{l-1}, û = centred U_l, η and η̂ the changes.
        const std::vector<double> mx = columnMeans(x, centre), mu = columnMeans(u, centre);
        const int64_t d = int64_t(mx.size()), rows = x.numel() / d;
        double ss = 0, shsh = 0, ssh = 0, ee = 0, eheh = 0, sum2 = 0, err2 = 0;
        for (int64_t i = 0; i < rows; ++i) {
            const float *px = x.data() + i * d, *pu = u.data() + i * d, *pxn = xn.data() + i * d, *pun = un.data() + i * d;
            for (int64_t j = 0; j < d; ++j) {
                const double s = px[j] - mx[size_t(j)], sh = pu[j] - mu[size_t(j)];
                const double e = double(pxn[j]) - px[j], eh = double(pun[j]) - pu[j];
                ss += s * s;
                shsh += sh * sh;
                ssh += s * sh;
                ee += e * e;
                eheh += eh * eh;
                sum2 += (s + sh) * (s + sh);
                err2 += (e + eh) * (e + eh);
            }
        }
        SnrDiagnostics diag;
        diag.layer = l;
        const double ns = std::sqrt(ss), ne = std::sqrt(ee), nsh = std::sqrt(shsh);
        diag.alpha = nsh / ns;
        diag.beta = ssh / std::max(ns * nsh, 1e-300);
        diag.gamma = std::sqrt(eheh) / ne;
        diag.gain = (std::sqrt(sum2) / std::sqrt(err2)) / (ns / ne);
        diag.bound = std::sqrt(1 + 2 * diag.alpha * diag.beta + diag.alpha * diag.alpha) / (1 + diag.gamma);
        diag.conditionHolds = std::min(diag.alpha, diag.beta) > diag.gamma;
        diag.sensitivity = differenceNorm(noisy.blocks.at(size_t(l)), clean.blocks.at(size_t(l))) / eta0;
        out.diagnostics.push_back(diag);
    }
    return out;
}

} // namespace attnscope
