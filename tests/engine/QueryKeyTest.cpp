// The query-key joint embedding (QueryKey.h, docs/analyses.md section 9) against tests/golden/qkmap (make_qkmap.py: the
// definition in numpy over an independent float64 forward's queries and keys), on tv_timm and timm_dinov2_reg with
// two images (the input and its mirror): every head's scale, plane (coordinates to 1e-4 of the largest, signs by the
// documented rule) and agreement; and the invariances the normalisation rests on.

#include "TestSupport.h"

#include <attnscope/QueryKey.h>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

using namespace attnscope;
using namespace attnscope::test;

namespace {

const std::string kQkMap = ATTNSCOPE_TEST_SOURCE_DIR "/golden/qkmap/";

// [1, C, H, W] -> the same mirrored left to right, [C, H, W]
Tensor mirrored(const Tensor& x)
{
    const int64_t c = x.size(-3), h = x.size(-2), w = x.size(-1);
    std::vector<float> out(size_t(c * h * w));
    for (int64_t i = 0; i < c * h; ++i)
        for (int64_t j = 0; j < w; ++j)
            out[size_t(i * w + j)] = x.data()[i * w + (w - 1 - j)];
    return Tensor::fromVector({ c, h, w }, std::move(out));
}

class QueryKeyGolden : public ::testing::TestWithParam<std::string> { };

} // namespace

TEST_P(QueryKeyGolden, EveryHeadMatchesTheDefinition)
{
    const std::string name = GetParam();
    auto model = Model::load(goldenDir() + "/" + name);
    ASSERT_TRUE(model) << model.message();
    const Tensor input = loadNpy(goldenDir() + "/" + name + "/input.npy");
    const std::vector<Tensor> inputs { Tensor::fromData({ input.size(1), input.size(2), input.size(3) }, input.data()), mirrored(input) };
    std::ifstream file(kQkMap + name + ".json");
    ASSERT_TRUE(file);
    const auto golden = nlohmann::json::parse(file);
    ASSERT_FALSE(golden["heads"].empty());
    for (const auto& ref : golden["heads"]) {
        const int layer = ref["layer"], head = ref["head"];
        SCOPED_TRACE("L" + std::to_string(layer) + "H" + std::to_string(head));
        auto map = queryKeyMap(**model, inputs, layer, head);
        ASSERT_TRUE(map) << map.message();
        EXPECT_NEAR(map->scale, ref["scale"].get<double>(), 1e-5 * ref["scale"].get<double>());
        EXPECT_NEAR(map->agreement, ref["agreement"].get<double>(), 1e-3);
        const auto xs = ref["x"].get<std::vector<double>>(), ys = ref["y"].get<std::vector<double>>();
        ASSERT_EQ(map->points.size(), xs.size());
        double largest = 0;
        for (size_t i = 0; i < xs.size(); ++i)
            largest = std::max({ largest, std::fabs(xs[i]), std::fabs(ys[i]) });
        for (size_t i = 0; i < xs.size(); ++i) {
            EXPECT_NEAR(map->points[i].x, xs[i], 1e-4 * largest) << "point " << i;
            EXPECT_NEAR(map->points[i].y, ys[i], 1e-4 * largest) << "point " << i;
        }
        const int n = map->tokens;
        EXPECT_EQ(map->images, 2);
        EXPECT_FALSE(map->points[size_t(n) - 1].key);
        EXPECT_TRUE(map->points[size_t(2 * n)].key);
        EXPECT_EQ(map->points[size_t(n + 1)].image, 1);
        EXPECT_EQ(map->points.front().row, -1); // the CLS token
        EXPECT_EQ(map->points.back().row, 3);   // both fixtures: a 4 x 4 grid, the last patch last
        EXPECT_EQ(map->points.back().col, 3);
    }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, QueryKeyGolden, ::testing::Values("tv_timm", "timm_dinov2_reg"));

// The rows are the attention's: softmax(q . k / sqrt(d)) over them is the recorded A_l[h].
TEST(QueryKey, TheRowsGiveTheRecordedAttention)
{
    auto model = Model::load(goldenDir() + "/timm_dinov2_reg");
    ASSERT_TRUE(model) << model.message();
    const Tensor input = loadNpy(goldenDir() + "/timm_dinov2_reg/input.npy");
    auto rows = queryKeyRows(**model, { input }, 2, 1);
    ASSERT_TRUE(rows) << rows.message();
    RunOptions run;
    run.record.attention = true;
    auto trace = (*model)->run(input, run);
    ASSERT_TRUE(trace);
    const Tensor& q = rows->queries[0];
    const Tensor& k = rows->keys[0];
    const int64_t n = q.size(0), d = q.size(1);
    const float* a = trace->attention[2].data() + 1 * n * n;
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
        std::vector<double> logits(static_cast<size_t>(n));
        double top = -1e300, sum = 0;
        for (int64_t j = 0; j < n; ++j) {
            double dot = 0;
            for (int64_t e = 0; e < d; ++e)
                dot += double(q.data()[i * d + e]) * double(k.data()[j * d + e]);
            logits[size_t(j)] = dot / std::sqrt(double(d));
            top = std::max(top, logits[size_t(j)]);
        }
        for (double& l : logits)
            sum += (l = std::exp(l - top));
        for (int64_t j = 0; j < n; ++j)
            worst = std::max(worst, std::fabs(logits[size_t(j)] / sum - double(a[i * n + j])));
    }
    EXPECT_LT(worst, 1e-5);
    EXPECT_FALSE(queryKeyRows(**model, { input }, 3, 0));
    EXPECT_FALSE(queryKeyRows(**model, { input }, 1, 3));
    auto quadratic = Model::load("builtin:fmnist-quadratic");
    ASSERT_TRUE(quadratic) << quadratic.message();
    auto none = queryKeyMap(**quadratic, fashionSamples(**quadratic, 1).size() ? std::vector<Tensor> { fashionSamples(**quadratic, 1)[0].input } : std::vector<Tensor> {}, 1, 0);
    ASSERT_FALSE(none);
    EXPECT_NE(none.message().find("quadratic attention has no queries and keys"), std::string::npos) << none.message();
}

// Every head of a model from one forward (the global view) is each head's own map exactly.
TEST(QueryKey, ManyHeadsFromOneForwardAreEachHeadsMap)
{
    auto model = Model::load("builtin:fmnist-vit-d4");
    ASSERT_TRUE(model) << model.message();
    std::vector<Tensor> inputs;
    for (const auto& s : fashionSamples(**model, 3))
        inputs.push_back(s.input);
    ASSERT_EQ(inputs.size(), 3u);
    const std::vector<HeadRef> heads { { 1, 0 }, { 3, 2 }, { 3, 1 }, { 4, 3 } };
    auto maps = queryKeyMaps(**model, inputs, heads);
    ASSERT_TRUE(maps) << maps.message();
    ASSERT_EQ(maps->size(), heads.size());
    for (size_t i = 0; i < heads.size(); ++i) {
        auto one = queryKeyMap(**model, inputs, heads[i].layer, heads[i].head);
        ASSERT_TRUE(one) << one.message();
        const QueryKeyMap& m = (*maps)[i];
        EXPECT_EQ(m.layer, heads[i].layer);
        EXPECT_EQ(m.head, heads[i].head);
        EXPECT_EQ(m.agreement, one->agreement);
        ASSERT_EQ(m.points.size(), one->points.size());
        for (size_t p = 0; p < m.points.size(); ++p)
            ASSERT_EQ(m.points[p].x, one->points[p].x) << p;
    }
    auto bad = queryKeyMaps(**model, inputs, { { 1, 0 }, { 5, 0 } });
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.message().find("query-key map: layer 5 is outside the model's layers 1..4"), std::string::npos) << bad.message();
}

// t-SNE through the map (Tsne.h has its own invariants): seeded, every point placed, and its plane keeps more of each
// query's attention order than chance; the PCA plane's components are not given for it.
TEST(QueryKey, TsneMapIsSeededAndKeepsTheAttentionOrder)
{
    auto model = Model::load("builtin:fmnist-vit-d4");
    ASSERT_TRUE(model) << model.message();
    std::vector<Tensor> inputs;
    for (const auto& s : fashionSamples(**model, 2))
        inputs.push_back(s.input);
    QueryKeyOptions options;
    options.method = QueryKeyMethod::Tsne;
    options.seed = 7;
    options.iterations = 400;
    auto a = queryKeyMap(**model, inputs, 2, 1, options);
    auto b = queryKeyMap(**model, inputs, 2, 1, options);
    ASSERT_TRUE(a) << a.message();
    ASSERT_TRUE(b) << b.message();
    EXPECT_EQ(a->method, QueryKeyMethod::Tsne);
    EXPECT_TRUE(a->components.empty());
    ASSERT_EQ(a->points.size(), size_t(2 * 2 * a->tokens));
    for (size_t i = 0; i < a->points.size(); ++i) {
        ASSERT_EQ(a->points[i].x, b->points[i].x);
        ASSERT_TRUE(std::isfinite(a->points[i].x) && std::isfinite(a->points[i].y));
    }
    EXPECT_GT(a->tsneKl, 0);
    EXPECT_GT(a->agreement, 0.05);
    options.seed = 8;
    auto c = queryKeyMap(**model, inputs, 2, 1, options);
    ASSERT_TRUE(c);
    EXPECT_NE(c->points.front().x, a->points.front().x);
    EXPECT_EQ(std::string(toString(QueryKeyMethod::Tsne)), "tsne");
    EXPECT_FALSE(parseQueryKeyMethod("umap"));
}
