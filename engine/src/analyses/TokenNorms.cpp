// Token norms, high-norm outliers and attention sinks (Analyses.h, section 7), in float64 loops over one image's
// trace. BatchedAnalyses.cpp computes the same per batch on the device; this is the reference it is tested against.
#include "attnscope/Analyses.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace attnscope {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The median of `v` (the mean of the middle two for an even count); NaN when empty.
double median(std::vector<double> v)
{
    if (v.empty())
        return kNaN;
    const size_t mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(mid), v.end());
    if (v.size() % 2)
        return v[mid];
    const double upper = v[mid];
    const double lower = *std::max_element(v.begin(), v.begin() + std::ptrdiff_t(mid));
    return 0.5 * (lower + upper);
}

} // namespace

TokenNorms tokenNorms(const Trace& trace, const ModelConfig& config, double outlierRatio)
{
    if (trace.hierarchical())
        throw std::invalid_argument("token norms: not of a hierarchical (Swin) model yet (docs/analyses.md, \"Hierarchical models\")");
    TokenNorms out;
    out.outlierRatio = outlierRatio;
    out.gridHeight = trace.gridHeight;
    out.gridWidth = trace.gridWidth;
    out.numPrefixTokens = trace.numPrefixTokens;
    const int P = trace.numPrefixTokens;
    const int registers = std::min(config.numRegisters, P);
    for (size_t l = 0; l < trace.blocks.size(); ++l) {
        const Tensor& x = trace.blocks[l];
        if (x.empty())
            continue;
        const int64_t n = x.size(0), d = x.size(1);
        TokenNormLayer row;
        row.layer = int(l);
        row.norms.resize(size_t(n));
        for (int64_t i = 0; i < n; ++i) {
            const float* z = x.data() + i * d;
            double s = 0;
            for (int64_t j = 0; j < d; ++j)
                s += double(z[j]) * double(z[j]);
            row.norms[size_t(i)] = std::sqrt(s);
        }
        const std::vector<double> patches(row.norms.begin() + std::min<int64_t>(P, n), row.norms.end());
        row.patchMedian = median(patches);
        row.maxRatio = patches.empty() ? kNaN : *std::max_element(patches.begin(), patches.end()) / row.patchMedian;
        row.clsRatio = config.classToken && P > 0 ? row.norms[0] / row.patchMedian : kNaN;
        row.registerRatio = kNaN;
        if (registers > 0) {
            double s = 0;
            for (int i = P - registers; i < P; ++i)
                s += row.norms[size_t(i)];
            row.registerRatio = s / registers / row.patchMedian;
        }
        for (int64_t i = P; i < n; ++i)
            if (row.norms[size_t(i)] > outlierRatio * row.patchMedian)
                row.outliers.push_back(int(i));

        row.outlierAttention = row.prefixAttention = kNaN;
        const size_t next = l + 1;
        if (next < trace.attention.size() && !trace.attention[next].empty() && int(next) <= trace.depth) {
            const Tensor& a = trace.attention[next]; // [H, N, N]
            const int64_t H = a.size(0), rows = H * n;
            row.attentionReceived.assign(size_t(n), 0.0);
            for (int64_t r = 0; r < rows; ++r) {
                const float* arow = a.data() + r * n;
                for (int64_t k = 0; k < n; ++k)
                    row.attentionReceived[size_t(k)] += arow[k];
            }
            for (double& v : row.attentionReceived)
                v /= double(rows);
            row.outlierAttention = 0;
            for (int i : row.outliers)
                row.outlierAttention += row.attentionReceived[size_t(i)];
            row.prefixAttention = 0;
            for (int i = 0; i < P && i < n; ++i)
                row.prefixAttention += row.attentionReceived[size_t(i)];
            if (P == 0)
                row.prefixAttention = kNaN;
        }
        out.layers.push_back(std::move(row));
    }
    return out;
}

} // namespace attnscope
