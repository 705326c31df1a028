// The analyses over the remote link (docs/remote.md, "The analyses' options"): options, statistics, the class
// relevance and the token norms round-trip exactly through MessagePack, and a wrong key or value is refused by name.
#include <RemoteAnalyses.h>
#include <RemoteWire.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace attnscope;
using namespace attnscope::remote;
using json = nlohmann::json;

namespace {

// Through the wire's own encoding, as a message body crosses.
json acrossTheWire(const json& value)
{
    auto decoded = decodeMessage(encodeMessage(response(1, { { "v", value } })));
    EXPECT_TRUE(decoded) << decoded.message();
    return decoded ? (*decoded)["result"]["v"] : json();
}

} // namespace

TEST(RemoteAnalyses, OptionsComeBackAsTheyWere)
{
    AnalysisOptions o;
    o.similarity = false;
    o.decomposition = true;
    o.norms = true;
    o.perturbations = { *Perturbation::parse("gaussian:sigma=8"), *Perturbation::parse("gaussian:sigma=2") };
    o.draws = 3;
    o.seed = 1234567890123ull;
    o.radius = 5;
    o.centreSignal = false;
    o.outlierRatio = 2.5;
    o.neutrenoLambda = 0.6;
    o.precision = Precision::Bf16;
    auto back = decodeAnalysisOptions(acrossTheWire(encodeAnalysisOptions(o)));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(encodeAnalysisOptions(*back), encodeAnalysisOptions(o));
    EXPECT_FALSE(back->similarity);
    EXPECT_TRUE(back->decomposition);
    ASSERT_EQ(back->perturbations.size(), 2u);
    EXPECT_EQ(back->perturbations[1].spec(), o.perturbations[1].spec());
    EXPECT_EQ(back->seed, o.seed);
    EXPECT_EQ(back->neutrenoLambda, 0.6);
    EXPECT_FALSE(back->boostT);
    EXPECT_EQ(back->precision, Precision::Bf16);
}

TEST(RemoteAnalyses, AWrongOptionIsRefusedByName)
{
    const json good = encodeAnalysisOptions({});
    const std::pair<json, std::string> bad[] = {
        { { { "similarity", 1 } }, "\"similarity\"" },
        { { { "draws", 0 } }, "\"draws\"" },
        { { { "radius", 1000 } }, "\"radius\"" },
        { { { "seed", -1 } }, "\"seed\"" },
        { { { "perturbations", { "blur:sigma=x" } } }, "perturbations" },
        { { { "precision", "fp8" } }, "\"precision\"" },
        { { { "run_this", "rm -rf" } }, "no analysis option \"run_this\"" },
    };
    for (const auto& [patch, expected] : bad) {
        json options = good;
        options.update(patch);
        auto decoded = decodeAnalysisOptions(options);
        ASSERT_FALSE(decoded) << patch.dump();
        EXPECT_NE(decoded.message().find(expected), std::string::npos) << decoded.message();
    }
    EXPECT_FALSE(decodeAnalysisOptions(json::array()));
}

TEST(RemoteAnalyses, StatisticsCrossToTheBit)
{
    StatsTable stats;
    for (int i = 0; i < 7; ++i) {
        stats["token_similarity/3/block/all"].add(0.1 * i + 1e-17 * i);
        stats["snr/1/attn"].add(std::sqrt(double(i) + 0.3));
    }
    stats["one"].add(42.0);
    auto back = decodeStats(acrossTheWire(encodeStats(stats)));
    ASSERT_TRUE(back) << back.message();
    ASSERT_EQ(back->size(), stats.size());
    for (const auto& [key, s] : stats) {
        const RunningStats& b = back->at(key);
        EXPECT_EQ(b.count(), s.count()) << key;
        EXPECT_EQ(b.mean(), s.mean()) << key; // exact: float64 both ways
        EXPECT_EQ(b.m2(), s.m2()) << key;
        EXPECT_EQ(b.sd(), s.sd()) << key;
    }
    EXPECT_FALSE(decodeStats(json { { "x", { 1, 2 } } }));
    EXPECT_FALSE(decodeStats(json { { "x", { -1, 2.0, 3.0 } } }));
}

TEST(RemoteAnalyses, RelevanceAndTokenNormsComeBack)
{
    Relevance r;
    r.targetClass = 7;
    r.logit = 3.25;
    r.probability = 0.875;
    r.gradCamLayer = 11;
    r.gridHeight = 2;
    r.gridWidth = 3;
    r.numPrefixTokens = 1;
    r.gae = Tensor::fromVector({ 2, 3 }, { 0.f, 1.f, 2.f, 3.f, 4.f, 5.f });
    r.gaeTokens = Tensor::fromVector({ 7 }, { 9.f, 0.f, 1.f, 2.f, 3.f, 4.f, 5.f });
    r.gradCam = Tensor::fromVector({ 2, 3 }, { 5.f, 4.f, 3.f, 2.f, 1.f, 0.f });
    auto back = decodeRelevance(acrossTheWire(encodeRelevance(r)));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->targetClass, 7);
    EXPECT_EQ(back->probability, 0.875);
    EXPECT_EQ(back->gradCamLayer, 11);
    ASSERT_EQ(back->gradCam.numel(), 6);
    EXPECT_EQ(back->gradCam.data()[0], 5.f);
    EXPECT_EQ(back->gaeTokens.data()[0], 9.f);
    json wrongGrid = encodeRelevance(r);
    wrongGrid["grid"] = { 3, 3 };
    EXPECT_FALSE(decodeRelevance(wrongGrid));

    TokenNorms n;
    n.outlierRatio = 2.0;
    n.gridHeight = 2;
    n.gridWidth = 2;
    n.numPrefixTokens = 1;
    TokenNormLayer l;
    l.layer = 4;
    l.norms = { 10.0, 1.0, 2.0, 9.0, 1.5 };
    l.patchMedian = 1.75;
    l.clsRatio = 10.0 / 1.75;
    l.registerRatio = std::numeric_limits<double>::quiet_NaN();
    l.outliers = { 3 };
    l.attentionReceived = { 0.5, 0.1, 0.1, 0.2, 0.1 };
    l.outlierAttention = 0.2;
    n.layers = { l, l };
    auto norms = decodeTokenNorms(acrossTheWire(encodeTokenNorms(n)));
    ASSERT_TRUE(norms) << norms.message();
    ASSERT_EQ(norms->layers.size(), 2u);
    EXPECT_EQ(norms->layers[1].norms, l.norms);
    EXPECT_EQ(norms->layers[1].outliers, l.outliers);
    EXPECT_TRUE(std::isnan(norms->layers[1].registerRatio)); // NaN crosses as NaN
    EXPECT_EQ(norms->layers[1].clsRatio, l.clsRatio);
    json broken = encodeTokenNorms(n);
    broken["layers"][0]["outliers"] = "many";
    auto refused = decodeTokenNorms(broken);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.message().find("token norms"), std::string::npos);
}
