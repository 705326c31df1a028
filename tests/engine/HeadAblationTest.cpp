// Head ablation (Analyses.h section 8) against tests/golden/ablation (make_ablation.py: an independent float64
// PyTorch forward with each head's output replaced), on fixtures in two namings (tv_timm in timm's, tv_hf the same
// network in Hugging Face's) and of two make-ups (timm_dinov2_reg: registers, no_embed_class, layer scale). Tolerance
// 1e-4 of the largest value of each column; flips exactly.

#include "TestSupport.h"

#include <attnscope/Analyses.h>
#include <attnscope/AnalysisRun.h>
#include <attnscope/Summary.h>

#include <gtest/gtest.h>

#include <cmath>

using namespace attnscope;
using namespace attnscope::test;

namespace {

const std::string kAblation = ATTNSCOPE_TEST_SOURCE_DIR "/golden/ablation/";

struct Case {
    const char* fixture;
    const char* golden;
    AblationMode mode;
};

class HeadAblationGolden : public ::testing::TestWithParam<Case> { };

double columnScale(const std::vector<std::map<std::string, std::string>>& rows, const char* column)
{
    double m = 0;
    for (const auto& r : rows)
        m = std::max(m, std::fabs(csvNumber(r.at(column))));
    return m;
}

} // namespace

TEST_P(HeadAblationGolden, EveryHeadMatchesTheReference)
{
    const Case c = GetParam();
    auto model = Model::load(goldenDir() + "/" + c.fixture);
    ASSERT_TRUE(model) << model.message();
    const Tensor input = loadNpy(goldenDir() + "/" + c.fixture + "/input.npy");
    const auto rows = readCsv(kAblation + c.golden + "_" + toString(c.mode) + ".csv");
    for (int batch : { 0, 1, 3 }) {
        SCOPED_TRACE("batch " + std::to_string(batch));
        auto result = headAblation(**model, input, c.mode, {}, batch);
        ASSERT_TRUE(result) << result.message();
        ASSERT_EQ(result->heads.size(), rows.size());
        for (size_t i = 0; i < rows.size(); ++i) {
            const auto& e = result->heads[i];
            const auto& r = rows[i];
            const std::string at = "layer " + r.at("layer") + " head " + r.at("head");
            ASSERT_EQ(std::to_string(e.layer), r.at("layer"));
            ASSERT_EQ(std::to_string(e.head), r.at("head"));
            for (auto [value, column] : { std::pair<double, const char*> { e.dlogit, "dlogit" }, { e.dprob, "dprob" }, { e.kl, "kl" } })
                EXPECT_NEAR(value, csvNumber(r.at(column)), 1e-4 * columnScale(rows, column)) << at << " " << column;
            EXPECT_EQ(e.flip ? "1" : "0", r.at("flip")) << at;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HeadAblationGolden,
                         ::testing::Values(Case { "tv_timm", "tv_timm", AblationMode::Zero }, Case { "tv_timm", "tv_timm", AblationMode::Mean },
                                           Case { "tv_hf", "tv_timm", AblationMode::Zero }, Case { "tv_hf", "tv_timm", AblationMode::Mean },
                                           Case { "timm_dinov2_reg", "timm_dinov2_reg", AblationMode::Zero },
                                           Case { "timm_dinov2_reg", "timm_dinov2_reg", AblationMode::Mean }));

// The effect of a head from logits alone: against hand-computed values.
TEST(HeadAblation, EffectFromLogits)
{
    const Tensor clean = Tensor::fromVector({ 3 }, { 2.0f, 1.0f, 0.0f });
    const Tensor ablated = Tensor::fromVector({ 3 }, { 0.5f, 1.0f, 0.0f });
    const HeadAblationEffect e = ablationEffect(clean, ablated);
    const double z = std::exp(2.0) + std::exp(1.0) + 1.0, z2 = std::exp(0.5) + std::exp(1.0) + 1.0;
    EXPECT_NEAR(e.dlogit, -1.5, 1e-12);
    EXPECT_NEAR(e.dprob, std::exp(0.5) / z2 - std::exp(2.0) / z, 1e-12);
    double kl = 0;
    const double p[3] = { std::exp(2.0) / z, std::exp(1.0) / z, 1.0 / z }, q[3] = { std::exp(0.5) / z2, std::exp(1.0) / z2, 1.0 / z2 };
    for (int i = 0; i < 3; ++i)
        kl += p[i] * std::log(p[i] / q[i]);
    EXPECT_NEAR(e.kl, kl, 1e-12);
    EXPECT_TRUE(e.flip); // class 1 now wins
    EXPECT_FALSE(ablationEffect(clean, clean).flip);
    EXPECT_EQ(ablationEffect(clean, clean).kl, 0.0);
}

// An unablated input of an ablated batch is the plain forward; a runBatch names one head per input, in range.
TEST(HeadAblation, RunOptionsAreChecked)
{
    auto model = Model::load(goldenDir() + "/tv_timm");
    ASSERT_TRUE(model) << model.message();
    const Tensor input = loadNpy(goldenDir() + "/tv_timm/input.npy");
    RunOptions options;
    options.ablatedHeads = { HeadRef {}, HeadRef { 2, 1 } };
    auto both = (*model)->runBatch({ input, input }, options);
    ASSERT_TRUE(both) << both.message();
    auto plain = (*model)->run(input);
    ASSERT_TRUE(plain);
    EXPECT_LE(relativeError((*both)[0].logits, plain->logits), 1e-5);
    EXPECT_GT(relativeError((*both)[1].logits, plain->logits), 1e-3);
    options.ablatedHeads = { HeadRef { 3, 0 }, HeadRef {} };
    auto outside = (*model)->runBatch({ input, input }, options);
    ASSERT_FALSE(outside);
    EXPECT_NE(outside.message().find("outside the model's layers 1..2 and heads 0..3"), std::string::npos) << outside.message();
    options.ablatedHeads = { HeadRef { 1, 0 } };
    auto count = (*model)->runBatch({ input, input }, options);
    ASSERT_FALSE(count);
    EXPECT_NE(count.message().find("1 heads named for 2 inputs"), std::string::npos) << count.message();
    EXPECT_EQ(parseAblationMode("mean").value(), AblationMode::Mean);
    EXPECT_FALSE(parseAblationMode("half"));
}

// A dataset run's ablation statistics: the means of headAblation over the images, the same on the host and the
// device path (which on a CPU runs the same forwards), and nothing else recorded when nothing else is asked.
TEST(HeadAblation, DatasetStatisticsAreThePerImageMeans)
{
    auto model = Model::load("builtin:fmnist-vit-d4");
    ASSERT_TRUE(model) << model.message();
    const auto images = fashionSamples(**model, 3);
    ASSERT_EQ(images.size(), 3u);
    AnalysisOptions options;
    options.similarity = options.attention = options.centres = options.snr = false;
    options.ablation = true;
    options.ablationMode = AblationMode::Zero;
    std::vector<StatsTable> tables;
    for (bool onDevice : { false, true }) {
        options.analysesOnDevice = onDevice;
        AnalysisRun run(*model, options);
        ASSERT_TRUE(run.addImages({ &images[0], &images[1] }, { 0, 1 }));
        ASSERT_TRUE(run.addImage(images[2], 2));
        tables.push_back(run.statistics());
    }
    ASSERT_EQ(tables[0].size(), tables[1].size());
    for (const auto& [key, stats] : tables[0]) {
        EXPECT_EQ(key.rfind("ab/", 0), 0u) << key;
        EXPECT_NEAR(stats.mean(), tables[1].at(key).mean(), 1e-12 * std::max(1.0, std::fabs(stats.mean()))) << key;
    }
    const AnalysisSummary summary = summarise(tables[0], 3, 3);
    ASSERT_EQ(summary.ablation.size(), 16u);
    double kl[16] = {}, flips[16] = {};
    for (const auto& image : images) {
        auto a = headAblation(**model, image.input, AblationMode::Zero);
        ASSERT_TRUE(a) << a.message();
        for (size_t i = 0; i < a->heads.size(); ++i) {
            kl[i] += a->heads[i].kl / 3;
            flips[i] += a->heads[i].flip / 3.0;
        }
    }
    for (size_t i = 0; i < 16; ++i) {
        EXPECT_EQ(summary.ablation[i].kl.n, 3);
        EXPECT_NEAR(summary.ablation[i].kl.mean, kl[i], 1e-12 * std::max(1.0, kl[i]));
        EXPECT_NEAR(summary.ablation[i].flipShare, flips[i], 1e-12);
    }
    EXPECT_TRUE(summary.tokenSimilarity.empty() && summary.headCentres.empty());
}
