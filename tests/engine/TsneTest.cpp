// Exact t-SNE (analyses/Tsne.h): the invariants, not coordinates (those depend on libm's exp and log): the calibration
// of the conditionals, bitwise reproducibility across runs and thread counts, a centred output, separated clusters
// kept apart, a KL that the descent lowers, and the one-line errors.

#include "analyses/Tsne.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace attnscope;

namespace {

// Test data from a fixed integer generator, so every platform sees the same rows.
struct Normal {
    uint64_t state;
    double uniform()
    {
        uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return double(((z ^ (z >> 31)) >> 11) + 1) / 9007199254740992.0;
    }
    double next() { return std::sqrt(-2 * std::log(uniform())) * std::cos(6.283185307179586 * uniform()); }
};

std::vector<double> randomRows(int64_t n, int64_t d, uint64_t seed)
{
    Normal g { seed };
    std::vector<double> rows(size_t(n * d));
    for (double& v : rows)
        v = g.next();
    return rows;
}

// `clusters` unit Gaussians in d dimensions, `size` points each, their centres 20 apart on distinct axes.
std::vector<double> clusteredRows(int clusters, int64_t size, int64_t d)
{
    std::vector<double> rows = randomRows(clusters * size, d, 7);
    for (int c = 0; c < clusters; ++c)
        for (int64_t i = c * size; i < (c + 1) * size; ++i)
            rows[size_t(i * d + c)] += 20;
    return rows;
}

TsneOptions quick(int iterations = 300)
{
    TsneOptions o;
    o.perplexity = 15;
    o.iterations = iterations;
    o.seed = 42;
    return o;
}

} // namespace

TEST(Tsne, ConditionalsAreCalibratedToThePerplexity)
{
    const int64_t n = 150, d = 6;
    const auto rows = randomRows(n, d, 1);
    for (double perplexity : { 5.0, 30.0 }) {
        SCOPED_TRACE("perplexity " + std::to_string(perplexity));
        const auto p = tsneConditionals(rows, n, d, perplexity);
        ASSERT_EQ(p.size(), size_t(n * n));
        for (int64_t i = 0; i < n; ++i) {
            EXPECT_EQ(p[size_t(i * n + i)], 0);
            double sum = 0, entropy = 0;
            for (int64_t j = 0; j < n; ++j) {
                const double v = p[size_t(i * n + j)];
                ASSERT_GE(v, 0);
                sum += v;
                if (v > 0)
                    entropy -= v * std::log(v);
            }
            EXPECT_NEAR(sum, 1, 1e-12) << "row " << i;
            EXPECT_NEAR(entropy, std::log(perplexity), 1e-4) << "row " << i;
        }
    }
}

TEST(Tsne, SameSeedGivesTheSameBitsWhateverTheThreads)
{
    const int64_t n = 200, d = 8;
    const auto rows = randomRows(n, d, 2);
    TsneOptions o = quick();
    o.threads = 1;
    const TsneResult one = tsne(rows, n, d, o);
    ASSERT_TRUE(one.error.empty()) << one.error;
    ASSERT_EQ(one.xy.size(), size_t(2 * n));
    EXPECT_EQ(tsne(rows, n, d, o).xy, one.xy);
    for (int threads : { 0, 2, 3 }) { // 0: the hardware's count
        o.threads = threads;
        const TsneResult many = tsne(rows, n, d, o);
        EXPECT_EQ(many.xy, one.xy) << threads << " threads";
        EXPECT_EQ(many.kl, one.kl) << threads << " threads";
    }
    o.seed = 43;
    EXPECT_NE(tsne(rows, n, d, o).xy, one.xy);
}

TEST(Tsne, OutputIsCentred)
{
    const int64_t n = 150, d = 4;
    const TsneResult r = tsne(randomRows(n, d, 3), n, d, quick());
    ASSERT_TRUE(r.error.empty()) << r.error;
    double scale = 0, mean[2] = { 0, 0 };
    for (int64_t i = 0; i < n; ++i)
        for (int c = 0; c < 2; ++c) {
            mean[c] += r.xy[size_t(2 * i + c)] / double(n);
            scale = std::max(scale, std::abs(r.xy[size_t(2 * i + c)]));
        }
    ASSERT_GT(scale, 0);
    EXPECT_LT(std::abs(mean[0]), 1e-9 * scale);
    EXPECT_LT(std::abs(mean[1]), 1e-9 * scale);
}

TEST(Tsne, SeparatedClustersStaySeparated)
{
    const int clusters = 3;
    const int64_t size = 60, n = clusters * size, d = 10, k = 5;
    TsneOptions o;
    o.seed = 5;
    const TsneResult r = tsne(clusteredRows(clusters, size, d), n, d, o);
    ASSERT_TRUE(r.error.empty()) << r.error;
    auto dist2 = [&](int64_t i, int64_t j) {
        const double dx = r.xy[size_t(2 * i)] - r.xy[size_t(2 * j)], dy = r.xy[size_t(2 * i + 1)] - r.xy[size_t(2 * j + 1)];
        return dx * dx + dy * dy;
    };
    // Each point's k nearest neighbours in the embedding: how many share its cluster.
    int64_t same = 0;
    for (int64_t i = 0; i < n; ++i) {
        std::vector<int64_t> others;
        for (int64_t j = 0; j < n; ++j)
            if (j != i)
                others.push_back(j);
        std::partial_sort(others.begin(), others.begin() + k, others.end(),
            [&](int64_t a, int64_t b) { return dist2(i, a) < dist2(i, b); });
        for (int64_t m = 0; m < k; ++m)
            same += others[size_t(m)] / size == i / size;
    }
    EXPECT_GE(double(same), 0.95 * double(n * k));
    // Centroids further apart than twice the largest RMS radius of a cluster about its centroid.
    double cx[clusters] = {}, cy[clusters] = {}, spread = 0;
    for (int64_t i = 0; i < n; ++i) {
        cx[i / size] += r.xy[size_t(2 * i)] / double(size);
        cy[i / size] += r.xy[size_t(2 * i + 1)] / double(size);
    }
    for (int c = 0; c < clusters; ++c) {
        double s = 0;
        for (int64_t i = c * size; i < (c + 1) * size; ++i)
            s += (std::pow(r.xy[size_t(2 * i)] - cx[c], 2) + std::pow(r.xy[size_t(2 * i + 1)] - cy[c], 2)) / double(size);
        spread = std::max(spread, std::sqrt(s));
    }
    for (int a = 0; a < clusters; ++a)
        for (int b = a + 1; b < clusters; ++b)
            EXPECT_GT(std::hypot(cx[a] - cx[b], cy[a] - cy[b]), 2 * spread) << "clusters " << a << ", " << b;
}

TEST(Tsne, DescentLowersTheDivergence)
{
    const int64_t n = 180, d = 10;
    const auto rows = clusteredRows(3, 60, d);
    TsneOptions o;
    o.seed = 9;
    o.iterations = 0; // the initial embedding's KL
    const TsneResult initial = tsne(rows, n, d, o);
    o.iterations = 260;
    const TsneResult early = tsne(rows, n, d, o);
    o.iterations = 1000;
    const TsneResult full = tsne(rows, n, d, o);
    for (const TsneResult* r : { &initial, &early, &full })
        ASSERT_TRUE(r->error.empty()) << r->error;
    EXPECT_TRUE(std::isfinite(full.kl));
    EXPECT_GT(full.kl, 0);
    EXPECT_LT(full.kl, initial.kl);
    EXPECT_LT(full.kl, early.kl);
}

TEST(Tsne, BadInputIsAnErrorAndNoEmbedding)
{
    const int64_t n = 100, d = 3;
    const auto rows = randomRows(n, d, 4);
    auto expectError = [](const TsneResult& r, const std::string& containing) {
        EXPECT_NE(r.error.find(containing), std::string::npos) << r.error;
        EXPECT_EQ(r.error.find('\n'), std::string::npos) << r.error;
        EXPECT_TRUE(r.xy.empty());
    };
    TsneOptions o = quick(10);
    o.maxPoints = 99;
    expectError(tsne(rows, n, d, o), "at most 99 points: got 100");
    o = quick(10);
    o.perplexity = 40;
    expectError(tsne(rows, n, d, o), "more points than 3 x perplexity (120): got 100");
    expectError(tsne(rows, n, d + 1, quick(10)), "values for 100 x 4");
    expectError(tsne(rows, n, 0, quick(10)), "dimension");
    auto bad = rows;
    bad[17] = std::numeric_limits<double>::quiet_NaN();
    expectError(tsne(bad, n, d, quick(10)), "non-finite");
    bad[17] = std::numeric_limits<double>::infinity();
    expectError(tsne(bad, n, d, quick(10)), "non-finite");
    EXPECT_TRUE(tsneConditionals(bad, n, d, 15).empty());
    // The boundary: n - 1 = 3 x perplexity is enough.
    o = quick(10);
    o.perplexity = 33;
    EXPECT_TRUE(tsne(rows, n, d, o).error.empty());
}
