// Token norms, high-norm outliers and attention sinks (Analyses.h, section 7) against tests/golden/token_norms
// (make_token_norms.py, written from the definitions): on tv_grid16, over make_analyses.py's float64 forward, and on
// timm_dinov2_reg (CLS and 4 registers), over timm's own block outputs and attention. The engine's forward is float32:
// norms and medians within 1e-5 relative, attention shares within 1e-6, the outlier lists exactly (the script keeps
// every patch norm 1e-4 of the cut away from it). Each fixture is cut at a ratio that flags a few tokens.
#include "TestSupport.h"
#include "io/TensorImpl.h"

#include <ATen/ATen.h>

#include <attnscope/Analyses.h>
#include <attnscope/Npy.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

using namespace attnscope;
using namespace attnscope::test;

namespace {

const std::string kNorms = ATTNSCOPE_TEST_SOURCE_DIR "/golden/token_norms/";

TokenNorms normsOf(const Model& model, const std::string& fixture, double ratio)
{
    const Tensor input = loadNpy(goldenDir() + "/" + fixture + "/input.npy");
    RunOptions run;
    run.record.blocks = run.record.attention = true;
    auto trace = model.run(input, run);
    EXPECT_TRUE(trace) << trace.message();
    return trace ? tokenNorms(*trace, model.config(), ratio) : TokenNorms {};
}

void expectRelative(double got, const nlohmann::json& ref, double tolerance, const std::string& what)
{
    if (ref.is_null()) {
        EXPECT_TRUE(std::isnan(got)) << what << ": " << got << ", expected none";
        return;
    }
    const double r = ref.get<double>();
    EXPECT_NEAR(got, r, tolerance * std::abs(r)) << what;
}

class TokenNormsGolden : public ::testing::TestWithParam<std::string> { };

TEST_P(TokenNormsGolden, NormsOutliersAndSharesMatchTheReference)
{
    const std::string fixture = GetParam();
    std::ifstream summaryFile(kNorms + fixture + "/summary.json");
    ASSERT_TRUE(summaryFile) << kNorms + fixture + "/summary.json";
    const auto summary = nlohmann::json::parse(summaryFile);
    auto model = Model::load(goldenDir() + "/" + fixture);
    ASSERT_TRUE(model) << model.message();
    const TokenNorms t = normsOf(**model, fixture, summary["ratio"].get<double>());
    const at::Tensor norms = unwrap(loadNpy(kNorms + fixture + "/norms.npy")).to(at::kDouble);
    const at::Tensor received = unwrap(loadNpy(kNorms + fixture + "/received.npy")).to(at::kDouble);
    const auto& layers = summary["layers"];
    ASSERT_EQ(t.layers.size(), layers.size());
    EXPECT_EQ(t.numPrefixTokens, summary["prefix"].get<int>());
    size_t flagged = 0;
    for (size_t l = 0; l < layers.size(); ++l) {
        SCOPED_TRACE("X_" + std::to_string(l));
        const TokenNormLayer& got = t.layers[l];
        const auto& ref = layers[l];
        EXPECT_EQ(got.layer, int(l));
        ASSERT_EQ(int64_t(got.norms.size()), norms.size(1));
        for (size_t i = 0; i < got.norms.size(); ++i)
            EXPECT_NEAR(got.norms[i], norms[int64_t(l)][int64_t(i)].item<double>(), 1e-5 * norms[int64_t(l)].max().item<double>()) << "token " << i;
        expectRelative(got.patchMedian, ref["median"], 1e-5, "patch median");
        expectRelative(got.maxRatio, ref["max_ratio"], 1e-5, "largest ratio");
        expectRelative(got.clsRatio, ref["cls_ratio"], 1e-5, "CLS ratio");
        expectRelative(got.registerRatio, ref["register_ratio"], 1e-5, "register ratio");
        EXPECT_EQ(got.outliers, ref["outliers"].get<std::vector<int>>());
        flagged += got.outliers.size();
        if (ref.contains("outlier_attention")) {
            ASSERT_EQ(int64_t(got.attentionReceived.size()), received.size(1));
            for (size_t i = 0; i < got.attentionReceived.size(); ++i)
                EXPECT_NEAR(got.attentionReceived[i], received[int64_t(l)][int64_t(i)].item<double>(), 1e-6) << "token " << i;
            EXPECT_NEAR(got.outlierAttention, ref["outlier_attention"].get<double>(), 1e-6);
            EXPECT_NEAR(got.prefixAttention, ref["prefix_attention"].get<double>(), 1e-6);
        } else {
            EXPECT_TRUE(got.attentionReceived.empty()) << "X_L is read by no later attention";
            EXPECT_TRUE(std::isnan(got.outlierAttention));
        }
    }
    EXPECT_GT(flagged, 0u) << "the fixture's cut flags nothing: the outlier lists are not tested";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TokenNormsGolden, ::testing::Values("tv_grid16", "timm_dinov2_reg"));

TEST(TokenNorms, TheCutFollowsTheRatio)
{
    auto model = Model::load(goldenDir() + "/tv_grid16");
    ASSERT_TRUE(model) << model.message();
    const TokenNorms loose = normsOf(**model, "tv_grid16", 1.05), strict = normsOf(**model, "tv_grid16", 1e6);
    ASSERT_EQ(loose.layers.size(), strict.layers.size());
    size_t looseCount = 0;
    for (size_t l = 0; l < loose.layers.size(); ++l) {
        looseCount += loose.layers[l].outliers.size();
        EXPECT_TRUE(strict.layers[l].outliers.empty());
        if (l + 1 < strict.layers.size())
            EXPECT_EQ(strict.layers[l].outlierAttention, 0.0); // no outliers absorb nothing
        else
            EXPECT_TRUE(std::isnan(strict.layers[l].outlierAttention)); // X_L is read by no later attention
        for (int i : loose.layers[l].outliers) {
            EXPECT_GE(i, loose.numPrefixTokens) << "a prefix token flagged";
            EXPECT_GT(loose.layers[l].norms[size_t(i)], 1.05 * loose.layers[l].patchMedian);
        }
    }
    EXPECT_GT(looseCount, 0u);
}

} // namespace
