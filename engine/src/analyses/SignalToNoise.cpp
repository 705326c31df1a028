// The signal-to-noise ratio per layer and tap, and Proposition 3.1's diagnostics (docs/analyses.md section 4).
#include "analyses/AnalysisLoops.h"
#include "io/TensorImpl.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

namespace attnscope {

using namespace loops;

namespace {

// |S|^2 and |E|^2 of one tap and layer: the signal S = T(x) - 1 mean(T(x)), the noise E = T(x~) - T(x).
struct TapNorms {
    double signal2 = 0, noise2 = 0;
    bool known = false;
};

// |a - b|^2 over every element.
ATTNSCOPE_VECTOR_CLONES
double squaredDifference(const Tensor& a, const Tensor& b)
{
    const float* x = a.data();
    const float* y = b.data();
    return laneSum(a.numel(), [x, y](int64_t i) { const double v = double(x[i]) - y[i]; return v * v; });
}

ATTNSCOPE_VECTOR_CLONES
TapNorms tapNorms(const Tensor& clean, const Tensor& noisy, const std::vector<double>& mean)
{
    // Column-wise sums over the rows (element-wise loops), reduced at the end.
    const int64_t d = int64_t(mean.size()), rows = clean.numel() / std::max<int64_t>(1, d);
    std::vector<double> s2(size_t(d), 0.0), e2(size_t(d), 0.0);
    const double* m = mean.data();
    for (int64_t i = 0; i < rows; ++i) {
        const float *x = clean.data() + i * d, *xn = noisy.data() + i * d;
        for (int64_t j = 0; j < d; ++j) {
            const double s = x[j] - m[j], e = double(xn[j]) - x[j];
            s2[size_t(j)] += s * s;
            e2[size_t(j)] += e * e;
        }
    }
    return { sum(s2.data(), d), sum(e2.data(), d), true };
}

enum DiagnosticsSum { SS, ShSh, SSh, EE, EhEh, Sum2, Err2, Sums };

// One row of Proposition 3.1's sums, column by column (s = x - mx, ŝ = u - mu, e = xn - x, ê = un - u). The
// accumulators are distinct arrays: __restrict lets the compiler vectorise without checking that at run time.
ATTNSCOPE_VECTOR_CLONES
void addDiagnosticsRow(int64_t d, const float* x, const float* u, const float* xn, const float* un, const double* mx,
                       const double* mu, double* __restrict ss, double* __restrict shsh, double* __restrict ssh,
                       double* __restrict ee, double* __restrict eheh, double* __restrict sum2, double* __restrict err2)
{
    for (int64_t j = 0; j < d; ++j) {
        const double s = x[j] - mx[j], sh = u[j] - mu[j];
        const double e = double(xn[j]) - x[j], eh = double(un[j]) - u[j];
        ss[j] += s * s;
        shsh[j] += sh * sh;
        ssh[j] += s * sh;
        ee[j] += e * e;
        eheh[j] += eh * eh;
        sum2[j] += (s + sh) * (s + sh);
        err2[j] += (e + eh) * (e + eh);
    }
}

} // namespace

ATTNSCOPE_VECTOR_CLONES
SnrResult signalToNoise(const Trace& clean, const Trace& noisy, bool centre)
{
    // Plain float64 loops over the [N, D] taps, row by row, no temporaries. Each clean tap's column means are taken
    // once; the pass of the diagnostics over X_{l-1}, U_l and their noisy copies also gives the signal and noise
    // norms of those two taps (and the sensitivity's), so most taps are read twice in all: means, then norms.
    constexpr Tap kTaps[] = { Tap::Block, Tap::Attn, Tap::Residual };
    std::vector<std::vector<std::vector<double>>> means(3);
    std::vector<std::vector<TapNorms>> norms(3);
    for (int t = 0; t < 3; ++t) {
        means[size_t(t)].resize(tapOf(clean, kTaps[t]).size());
        norms[size_t(t)].resize(tapOf(clean, kTaps[t]).size());
    }
    const auto meanOf = [&](int t, size_t l) -> const std::vector<double>& {
        auto& m = means[size_t(t)][l];
        if (m.empty())
            m = columnMeans(tapOf(clean, kTaps[t])[l], centre);
        return m;
    };
    const auto normsOf = [&](int t, size_t l) -> const TapNorms& {
        TapNorms& n = norms[size_t(t)][l];
        if (!n.known)
            n = tapNorms(tapOf(clean, kTaps[t])[l], tapOf(noisy, kTaps[t])[l], meanOf(t, l));
        return n;
    };

    SnrResult out;
    std::vector<double> acc;
    const bool diagnostics = !(clean.blocks.empty() || clean.blocks[0].empty() || noisy.blocks.empty() || noisy.blocks[0].empty());
    for (int l = 1; diagnostics && l <= clean.depth; ++l) {
        if (clean.attnBranch.at(size_t(l)).empty() || clean.blocks.at(size_t(l - 1)).empty())
            continue;
        const Tensor &x = clean.blocks[size_t(l - 1)], &xn = noisy.blocks[size_t(l - 1)];
        const Tensor &u = clean.attnBranch[size_t(l)], &un = noisy.attnBranch[size_t(l)];
        if (x.numel() != u.numel()) // a Swin stage's first block: its input is the merged tokens, which no tap records
            continue;
        // Proposition 3.1 of the filtering paper, with u = centred X_{l-1}, û = centred U_l, η and η̂ the changes.
        const std::vector<double>&mx = meanOf(0, size_t(l - 1)), &mu = meanOf(1, size_t(l));
        const int64_t d = int64_t(mx.size()), rows = x.numel() / d;
        acc.assign(size_t(Sums * d), 0.0);
        double* col[Sums];
        for (int k = 0; k < Sums; ++k)
            col[k] = acc.data() + k * d;
        for (int64_t i = 0; i < rows; ++i)
            addDiagnosticsRow(d, x.data() + i * d, u.data() + i * d, xn.data() + i * d, un.data() + i * d, mx.data(),
                              mu.data(), col[SS], col[ShSh], col[SSh], col[EE], col[EhEh], col[Sum2], col[Err2]);
        double total[Sums];
        for (int k = 0; k < Sums; ++k)
            total[k] = sum(col[k], d);
        const double ss2 = total[SS], sh2 = total[ShSh], ee2 = total[EE], ehh2 = total[EhEh];
        SnrDiagnostics diag;
        diag.layer = l;
        const double ns = std::sqrt(ss2), ne = std::sqrt(ee2), nsh = std::sqrt(sh2);
        diag.alpha = nsh / ns;
        diag.beta = total[SSh] / std::max(ns * nsh, 1e-300);
        diag.gamma = std::sqrt(ehh2) / ne;
        diag.gain = (std::sqrt(total[Sum2]) / std::sqrt(total[Err2])) / (ns / ne);
        diag.bound = std::sqrt(1 + 2 * diag.alpha * diag.beta + diag.alpha * diag.alpha) / (1 + diag.gamma);
        diag.conditionHolds = std::min(diag.alpha, diag.beta) > diag.gamma;
        out.diagnostics.push_back(diag);
    }
    if (diagnostics) {
        // Sensitivity K_l = |X_l(x~) - X_l(x)| / |X_0(x~) - X_0(x)|: the noise norms of the block outputs.
        const auto noise2 = [&](size_t l) {
            // X_L is no X_{l-1} of the diagnostics: its norms are taken here, once, for its SNR as well.
            if (norms[0].at(l).known || (!clean.blocks[l].empty() && l < noisy.blocks.size() && !noisy.blocks[l].empty()))
                return normsOf(0, l).noise2;
            return squaredDifference(noisy.blocks.at(l), clean.blocks[l]);
        };
        const double eta0 = std::sqrt(noise2(0));
        for (auto& diag : out.diagnostics)
            diag.sensitivity = std::sqrt(noise2(size_t(diag.layer))) / eta0;
    }
    for (int t = 0; t < 3; ++t) {
        const auto& c = tapOf(clean, kTaps[t]);
        const auto& n = tapOf(noisy, kTaps[t]);
        for (size_t l = 0; l < c.size() && l < n.size(); ++l) {
            if (c[l].empty() || n[l].empty())
                continue;
            const TapNorms& tn = normsOf(t, l);
            out.snr.push_back({ int(l), kTaps[t], 20.0 * std::log10(std::sqrt(tn.signal2) / std::max(std::sqrt(tn.noise2), 1e-300)) });
        }
    }
    return out;
}

} // namespace attnscope
