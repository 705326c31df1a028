// Class relevance (Analyses.h, section 10) against tests/golden/relevance (make_relevance.py: GAE and Grad-CAM written
// from the papers over make_analyses.py's float64 forward with autograd), on tv_grid16 for its predicted class and for
// class 3. The engine's forward is float32 and accumulates the relevance in float64: 1e-4 of the largest reference
// value (GAE's R, Grad-CAM's map). A mutation check: the two classes' maps differ, and the predicted class is found.
#include "TestSupport.h"
#include "io/TensorImpl.h"

#include <ATen/ATen.h>

#include <attnscope/Analyses.h>
#include <attnscope/Npy.h>

#include <nlohmann/json.hpp>

#include <fstream>

using namespace attnscope;
using namespace attnscope::test;

namespace {

const std::string kRelevance = ATTNSCOPE_TEST_SOURCE_DIR "/golden/relevance/";

void expectClose(const at::Tensor& got, const at::Tensor& ref, const std::string& what)
{
    ASSERT_EQ(got.numel(), ref.numel()) << what;
    const double scale = ref.abs().max().item<double>();
    const double err = (got.to(at::kDouble).reshape(-1) - ref.to(at::kDouble).reshape(-1)).abs().max().item<double>();
    EXPECT_LE(err, 1e-4 * scale) << what << ": max |difference| " << err << " against the largest value " << scale;
}

TEST(RelevanceGolden, GaeAndGradCamMatchTheReference)
{
    auto model = Model::load(goldenDir() + "/tv_grid16");
    ASSERT_TRUE(model) << model.message();
    const Tensor input = loadNpy(goldenDir() + "/tv_grid16/input.npy");
    std::ifstream classesFile(kRelevance + "classes.json");
    const auto classes = nlohmann::json::parse(classesFile);
    const int predicted = classes["predicted"], other = classes["other"];
    at::Tensor gaeOf[2];
    for (int k = 0; k < 2; ++k) {
        const int cls = k == 0 ? predicted : other;
        SCOPED_TRACE("class " + std::to_string(cls));
        RelevanceOptions o;
        o.targetClass = k == 0 ? -1 : other;
        auto r = classRelevance(**model, input, o);
        ASSERT_TRUE(r) << r.message();
        EXPECT_EQ(r->targetClass, cls);
        EXPECT_EQ(r->gradCamLayer, 2); // X_{L-1} of the 3-layer fixture
        EXPECT_EQ(r->gridHeight, 16);
        EXPECT_EQ(r->gridWidth, 16);
        const at::Tensor gae = unwrap(loadNpy(kRelevance + "gae_" + std::to_string(cls) + ".npy"));
        expectClose(unwrap(r->gaeTokens), gae, "GAE's CLS row");
        expectClose(unwrap(r->gae), gae.slice(0, 1), "GAE's patch map");
        expectClose(unwrap(r->gradCam), unwrap(loadNpy(kRelevance + "gradcam_" + std::to_string(cls) + "_L2.npy")), "Grad-CAM at X_2");
        o.gradCamLayer = 1;
        auto first = classRelevance(**model, input, o);
        ASSERT_TRUE(first) << first.message();
        expectClose(unwrap(first->gradCam), unwrap(loadNpy(kRelevance + "gradcam_" + std::to_string(cls) + "_L1.npy")), "Grad-CAM at X_1");
        gaeOf[k] = unwrap(r->gae).clone();
    }
    EXPECT_GT((gaeOf[0] - gaeOf[1]).abs().max().item<double>(), 1e-3 * gaeOf[0].abs().max().item<double>()) << "the class changed nothing";
}

TEST(RelevanceGolden, RefusesWhatItCannotExplain)
{
    auto model = Model::load(goldenDir() + "/tv_grid16");
    ASSERT_TRUE(model) << model.message();
    const Tensor input = loadNpy(goldenDir() + "/tv_grid16/input.npy");
    RelevanceOptions o;
    o.targetClass = 10;
    auto r = classRelevance(**model, input, o);
    ASSERT_FALSE(r);
    EXPECT_NE(r.message().find("class 10 is outside the model's 0..9"), std::string::npos) << r.message();
    o.targetClass = -1;
    o.gradCamLayer = 4;
    r = classRelevance(**model, input, o);
    ASSERT_FALSE(r);
    EXPECT_NE(r.message().find("Grad-CAM layer 4 is outside the model's 0..3"), std::string::npos) << r.message();
}

} // namespace
