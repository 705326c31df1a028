// The query-key map within a Swin stage (QueryKey.h; docs/analyses.md, "Hierarchical models"): every block's queries
// and keys over its stage's grid against timm's own (tests/golden/make_swin_qk.py: timm in float64 computes each
// block's qkv from the windowed tokens it is given and puts the rows back on the grid), Swin v2's normalised per head
// as its cosine logits take them; the map's points at the stage's grid and its agreement ranked within each query's
// window (timm's windows: make_swin_windows.py); heads per stage checked.
#include "TestSupport.h"

#include <attnscope/Model.h>
#include <attnscope/QueryKey.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace attnscope;
using namespace attnscope::test;

namespace {

Tensor firstInput(const std::string& dir)
{
    const Tensor x = loadNpy(dir + "/input.npy");
    return Tensor::fromData({ x.size(1), x.size(2), x.size(3) }, x.data());
}

// Mean ranks (1-based, ties averaged), as a Spearman correlation takes them.
std::vector<double> ranked(const std::vector<double>& v)
{
    std::vector<size_t> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
    std::vector<double> r(v.size());
    for (size_t i = 0, j; i < order.size(); i = j) {
        for (j = i; j < order.size() && v[order[j]] == v[order[i]]; ++j) { }
        for (size_t k = i; k < j; ++k)
            r[order[k]] = double(i + j + 1) / 2;
    }
    return r;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b)
{
    const std::vector<double> ra = ranked(a), rb = ranked(b);
    const double n = double(a.size()), mean = (n + 1) / 2;
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < ra.size(); ++i) {
        ab += (ra[i] - mean) * (rb[i] - mean);
        aa += (ra[i] - mean) * (ra[i] - mean);
        bb += (rb[i] - mean) * (rb[i] - mean);
    }
    return ab / std::sqrt(aa * bb);
}

} // namespace

TEST(SwinQueryKey, EveryBlocksRowsAreTimmsAtItsStagesGrid)
{
    for (const std::string folder : { "timm_swin", "timm_swin_pad", "timm_swinv2" }) {
        const std::string dir = swinDir(folder);
        auto model = loadSwin(dir);
        ASSERT_TRUE(model);
        const ModelConfig& c = model->config();
        const bool v2 = c.hierarchy == Hierarchy::SwinV2;
        const Tensor input = firstInput(dir);
        for (int l = 1; l <= c.depth; ++l) {
            const Tensor golden = loadNpy(dir + "/qk_L" + std::to_string(l) + ".npy"); // [2, N, C]
            const int64_t n = golden.size(1), width = golden.size(2), heads = c.headsAt(l), d = width / heads;
            double largest = 0;
            for (int64_t i = 0; i < golden.numel(); ++i)
                largest = std::max(largest, double(std::fabs(golden.data()[i])));
            for (int h = 0; h < heads; ++h) {
                SCOPED_TRACE(folder + " L" + std::to_string(l) + " H" + std::to_string(h));
                auto rows = queryKeyRows(*model, { input }, l, h);
                ASSERT_TRUE(rows) << rows.message();
                for (int kind = 0; kind < 2; ++kind) {
                    const Tensor& ours = kind == 0 ? rows->queries[0] : rows->keys[0];
                    ASSERT_EQ(ours.shape(), (std::vector<int64_t> { n, d }));
                    double worst = 0;
                    for (int64_t t = 0; t < n; ++t) {
                        const float* g = golden.data() + (kind * n + t) * width + h * d;
                        double norm = 0;
                        for (int64_t e = 0; e < d; ++e)
                            norm += double(g[e]) * double(g[e]);
                        // Swin v2 attends with cosines: timm's rows made unit per head (F.normalize), compared to 1e-4
                        const double scale = v2 ? 1 / std::max(std::sqrt(norm), 1e-12) : 1;
                        for (int64_t e = 0; e < d; ++e)
                            worst = std::max(worst, std::fabs(double(ours.data()[t * d + e]) - double(g[e]) * scale));
                    }
                    EXPECT_LT(worst, v2 ? 1e-4 : 1e-4 * largest) << (kind ? "keys" : "queries");
                }
            }
        }
    }
}

TEST(SwinQueryKey, AMapIsAtTheStagesGridAndRanksEachQueryWithinItsWindow)
{
    const std::string dir = swinDir("timm_swin");
    auto model = loadSwin(dir);
    ASSERT_TRUE(model);
    const Tensor input = firstInput(dir);
    // Block 3 is stage 2's first: its rows are of the merged tokens (8 x 8), its windows unshifted.
    auto map = queryKeyMap(*model, { input }, 3, 1);
    ASSERT_TRUE(map) << map.message();
    EXPECT_EQ(map->stage, 1);
    EXPECT_EQ(map->gridHeight, 8);
    EXPECT_EQ(map->gridWidth, 8);
    EXPECT_FALSE(map->cosine);
    ASSERT_EQ(map->tokens, 64);
    ASSERT_EQ(map->points.size(), 128u);
    EXPECT_EQ(map->points[9].row, 1);
    EXPECT_EQ(map->points[9].col, 1);
    EXPECT_EQ(map->points.back().row, 7);
    EXPECT_TRUE(map->points.back().key);

    // The agreement: each query's Spearman over the keys of its window in timm's partition of the block, averaged.
    auto rows = queryKeyRows(*model, { input }, 3, 1);
    ASSERT_TRUE(rows) << rows.message();
    const Tensor windows = loadNpy(dir + "/window_tokens_L3.npy"); // [nW, 16]
    const Tensor& q = rows->queries[0];
    const Tensor& k = rows->keys[0];
    const int64_t d = q.size(1);
    double sum = 0;
    for (int64_t w = 0; w < windows.size(0); ++w)
        for (int64_t i = 0; i < windows.size(1); ++i) {
            const int query = int(windows.data()[w * windows.size(1) + i]);
            std::vector<double> score, closeness;
            for (int64_t j = 0; j < windows.size(1); ++j) {
                const int key = int(windows.data()[w * windows.size(1) + j]);
                double dot = 0;
                for (int64_t e = 0; e < d; ++e)
                    dot += double(q.data()[query * d + e]) * double(k.data()[key * d + e]);
                score.push_back(dot);
                const QueryKeyPoint& a = map->points[size_t(query)];
                const QueryKeyPoint& b = map->points[size_t(64 + key)];
                closeness.push_back(-std::hypot(a.x - b.x, a.y - b.y));
            }
            sum += spearman(score, closeness);
        }
    EXPECT_NEAR(map->agreement, sum / 64, 1e-9);
}

TEST(SwinQueryKey, Swinv2MapsUnitRowsAndHeadsAreEachStages)
{
    const std::string dir = swinDir("timm_swinv2");
    auto model = loadSwin(dir);
    ASSERT_TRUE(model);
    const Tensor input = firstInput(dir);
    // Every head of every block from one forward: stage 1's two heads, stage 2's four, stage 3's eight.
    std::vector<HeadRef> heads;
    for (int l = 1; l <= 6; ++l)
        for (int h = 0; h < model->config().headsAt(l); ++h)
            heads.push_back({ l, h });
    ASSERT_EQ(heads.size(), 28u);
    auto maps = queryKeyMaps(*model, { input }, heads);
    ASSERT_TRUE(maps) << maps.message();
    for (const QueryKeyMap& m : *maps) {
        EXPECT_TRUE(m.cosine);
        EXPECT_EQ(m.stage, (m.layer - 1) / 2);
        EXPECT_EQ(m.tokens, 256 >> (2 * m.stage));
        EXPECT_TRUE(std::isfinite(m.agreement)) << m.layer << " " << m.head;
    }
    auto one = queryKeyMap(*model, { input }, 6, 7);
    ASSERT_TRUE(one) << one.message();
    EXPECT_EQ(one->points.back().x, maps->back().points.back().x); // the same rows, one forward or many

    auto outside = queryKeyMap(*model, { input }, 1, 2);
    ASSERT_FALSE(outside);
    EXPECT_NE(outside.message().find("head 2 is outside layer 1's heads 0..1"), std::string::npos) << outside.message();
    EXPECT_FALSE(queryKeyMap(*model, { input }, 7, 0));

    // transformers' Swin v2, renamed to timm's names at load: every head maps.
    auto hf = loadSwin(swinDir("hf_swinv2"));
    ASSERT_TRUE(hf);
    auto hfMaps = queryKeyMaps(*hf, { firstInput(swinDir("hf_swinv2")) }, heads);
    ASSERT_TRUE(hfMaps) << hfMaps.message();
    EXPECT_EQ(hfMaps->size(), 28u);
}
