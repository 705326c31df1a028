// Golden parity: the engine against torchvision, timm and transformers (tests/golden/make_golden.py made the
// fixtures with each library's own forward). Reference: the library's float32 output; tolerance: relative 1e-4
// of each tensor's scale (the fixtures' float64 reruns differ from float32 by at most 2.4e-6).
#include "TestSupport.h"

#include <attnscope/Image.h>
#include <attnscope/Model.h>

#include <fstream>
#include <nlohmann/json.hpp>

using namespace attnscope;
using namespace attnscope::test;

namespace {

constexpr double kTolerance = 1e-4;

class GoldenParity : public ::testing::TestWithParam<std::string> {
protected:
    std::string dir() const { return goldenDir() + "/" + GetParam(); }
    nlohmann::json meta() const
    {
        std::ifstream in(dir() + "/meta.json");
        return nlohmann::json::parse(in);
    }
};

TEST_P(GoldenParity, LogitsAttentionAndBlocksMatchTheReference)
{
    auto model = Model::load(dir());
    ASSERT_TRUE(model.ok()) << model.message();
    const auto m = meta();
    const auto& c = (*model)->config();
    EXPECT_EQ(c.depth, m["num_layers"].get<int>());
    EXPECT_EQ(c.numHeads, m["num_heads"].get<int>());
    EXPECT_EQ(c.width, m["width"].get<int>());
    EXPECT_EQ(c.numPrefixTokens(), m["num_prefix_tokens"].get<int>());
    EXPECT_EQ(c.channels, m["channels"].get<int>());

    const Tensor input = loadNpy(dir() + "/input.npy");
    RunOptions options;
    options.record = RecordSpec::everything();
    auto trace = (*model)->run(input, options);
    ASSERT_TRUE(trace.ok()) << trace.message();

    EXPECT_TRUE(closeTo(trace->logits, loadNpy(dir() + "/logits.npy"), kTolerance)) << "logits";
    for (int l = 1; l <= c.depth; ++l)
        EXPECT_TRUE(closeTo(trace->attention[size_t(l)], loadNpy(dir() + "/attn_L" + std::to_string(l) + ".npy"), kTolerance))
            << "attention of layer " << l;
    for (int l = 0; l <= c.depth; ++l)
        EXPECT_TRUE(closeTo(trace->blocks[size_t(l)], loadNpy(dir() + "/block_L" + std::to_string(l) + ".npy"), kTolerance))
            << "block output of layer " << l;
}

TEST_P(GoldenParity, AttentionInvariants)
{
    auto model = Model::load(dir());
    ASSERT_TRUE(model.ok()) << model.message();
    RunOptions options;
    options.record = RecordSpec::everything();
    auto trace = (*model)->run(loadNpy(dir() + "/input.npy"), options);
    ASSERT_TRUE(trace.ok()) << trace.message();
    const int n = trace->numPrefixTokens + trace->gridHeight * trace->gridWidth;
    for (int l = 1; l <= trace->depth; ++l) {
        const Tensor& a = trace->attention[size_t(l)];
        ASSERT_EQ(a.shape(), (std::vector<int64_t> { trace->numHeads, n, n }));
        for (int64_t row = 0; row < a.numel() / n; ++row) {
            double sum = 0;
            for (int k = 0; k < n; ++k) {
                const float v = a.data()[row * n + k];
                ASSERT_TRUE(std::isfinite(v) && v >= 0);
                sum += v;
            }
            ASSERT_NEAR(sum, 1.0, 1e-5) << "layer " << l << " row " << row;
        }
        for (const auto* tap : { &trace->attnBranch, &trace->residual })
            EXPECT_EQ((*tap)[size_t(l)].shape(), (std::vector<int64_t> { n, (*model)->config().width }));
    }
}

// The preprocessing of each convention's config turns image.png into exactly the tensor the reference was fed
// (made from the same 8-bit pixels; tolerance 1e-5 absolute on normalised values of magnitude ~2).
TEST_P(GoldenParity, PreprocessingFromConfigMatchesTheReferenceInput)
{
    const std::string png = dir() + "/image.png";
    if (!std::filesystem::exists(png) || GetParam() == "tv_torchvision")
        GTEST_SKIP() << "fixture has no config-driven image (torchvision checkpoints carry no preprocessing config)";
    auto model = Model::load(dir());
    ASSERT_TRUE(model.ok()) << model.message();
    auto image = decodeImage(png);
    ASSERT_TRUE(image.ok()) << image.message();
    auto prepared = (*model)->prepare(*image);
    ASSERT_TRUE(prepared.ok()) << prepared.message();
    Tensor expected = loadNpy(dir() + "/input.npy");
    Tensor actual = prepared->input;
    ASSERT_EQ(int64_t(actual.numel()), expected.numel());
    double worst = 0;
    for (int64_t i = 0; i < expected.numel(); ++i)
        worst = std::max(worst, double(std::fabs(actual.data()[i] - expected.data()[i])));
    EXPECT_LT(worst, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenParity,
                         ::testing::Values("tv_timm", "tv_hf", "tv_torchvision", "timm_deit_distilled", "timm_dinov2_reg",
                                           "timm_clip_quickgelu", "timm_gray", "timm_interp", "hf_clip_vision",
                                           "hf_dinov2", "hf_vit_eps5"));

TEST(GoldenParity, SameModelInThreeNamingsGivesIdenticalOutputs)
{
    std::vector<Tensor> logits;
    for (const char* f : { "tv_timm", "tv_hf", "tv_torchvision" }) {
        auto model = Model::load(goldenDir() + "/" + f);
        ASSERT_TRUE(model.ok()) << model.message();
        auto trace = (*model)->run(loadNpy(goldenDir() + "/" + f + "/input.npy"));
        ASSERT_TRUE(trace.ok());
        logits.push_back(trace->logits);
    }
    EXPECT_TRUE(closeTo(logits[1], logits[0], 1e-6));
    EXPECT_TRUE(closeTo(logits[2], logits[0], 1e-6));
}

TEST(GoldenParity, NamingIsDetected)
{
    const std::map<std::string, std::string> expected { { "tv_timm", "timm" }, { "tv_hf", "huggingface" },
                                                        { "tv_torchvision", "torchvision" }, { "hf_clip_vision", "huggingface" } };
    for (const auto& [f, naming] : expected) {
        auto model = Model::load(goldenDir() + "/" + f);
        ASSERT_TRUE(model.ok()) << model.message();
        EXPECT_EQ((*model)->info().naming, naming) << f;
    }
}

TEST(GoldenParity, RecordsOnlyWhatIsAsked)
{
    auto model = Model::load(goldenDir() + "/tv_timm");
    ASSERT_TRUE(model.ok());
    RunOptions options;
    options.record.attention = true;
    options.record.layers = { 2 };
    auto trace = (*model)->run(loadNpy(goldenDir() + "/tv_timm/input.npy"), options);
    ASSERT_TRUE(trace.ok());
    EXPECT_TRUE(trace->attention[1].empty());
    EXPECT_FALSE(trace->attention[2].empty());
    for (const auto& b : trace->blocks)
        EXPECT_TRUE(b.empty());
}

TEST(GoldenParity, CancelledRunReportsCancelled)
{
    auto model = Model::load(goldenDir() + "/tv_timm");
    ASSERT_TRUE(model.ok());
    RunOptions options;
    options.isCancelled = [] { return true; };
    auto trace = (*model)->run(loadNpy(goldenDir() + "/tv_timm/input.npy"), options);
    ASSERT_FALSE(trace.ok());
    EXPECT_EQ(trace.message(), "cancelled");
    EXPECT_TRUE(trace.cancelled()) << "a cancel is told from a failure by the result alone";
}

} // namespace
