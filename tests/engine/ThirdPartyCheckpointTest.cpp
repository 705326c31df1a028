// A real third-party checkpoint: tintn-style CIFAR-10 ViT saved by torch.save from a GPU, naming of its own,
// tanh GELU, no final norm. Reference: its authors' PyTorch code classifies 736 of the 1000 images correctly
// (../shared/models/README.md); the engine must reproduce the count exactly.
#include "TestSupport.h"

#include <attnscope/Image.h>
#include <attnscope/Model.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

using namespace attnscope;
using namespace attnscope::test;
namespace fs = std::filesystem;

namespace {

const std::string kCheckpoint = "/models/cifar10-vit-tintn/model_final.pt";
const std::string kImages = "/data/cifar10-test-1000";
std::string description() { return ATTNSCOPE_TEST_SOURCE_DIR "/../docs/examples/cifar10-vit-tintn.json"; }

TEST(ThirdPartyCheckpoint, CifarTintnLoadsWithItsDescription)
{
    if (!fs::exists(sharedDir() + kCheckpoint))
        GTEST_SKIP() << sharedDir() + kCheckpoint << " is absent (tests read third-party models from ../shared)";
    LoadOptions options;
    options.descriptionPath = description();
    auto model = Model::load(sharedDir() + kCheckpoint, options);
    ASSERT_TRUE(model.ok()) << model.message();
    const auto& info = (*model)->info();
    EXPECT_EQ(info.parameterCount, 119098);
    EXPECT_EQ(info.format, "pytorch");
    EXPECT_EQ(info.config.depth, 4);
    EXPECT_EQ(info.config.numHeads, 4);
    EXPECT_EQ(info.config.width, 48);
    EXPECT_EQ(info.config.finalNorm, FinalNorm::None);
    EXPECT_EQ(info.config.activation, Activation::GeluTanh);
    EXPECT_EQ(info.labels.size(), 10u);
}

TEST(ThirdPartyCheckpoint, CifarTintnWithoutDescriptionSaysWhy)
{
    if (!fs::exists(sharedDir() + kCheckpoint))
        GTEST_SKIP() << sharedDir() + kCheckpoint << " is absent";
    auto model = Model::load(sharedDir() + kCheckpoint);
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.message().find("no known ViT convention"), std::string::npos) << model.message();
    EXPECT_NE(model.message().find("model_final.pt"), std::string::npos) << model.message();
    EXPECT_EQ(model.error().missing, Error::Missing::Description); // the window asks for one
    // The shipped description alone names no weights: the window asks for the checkpoint.
    auto described = Model::load(description());
    ASSERT_FALSE(described.ok());
    EXPECT_EQ(described.error().missing, Error::Missing::Weights) << described.message();
}

// Its own config.json (hidden_size, num_attention_heads, ...) is neither Hugging Face's nor timm's: none of it is read,
// and every key is listed as ignored.
TEST(ThirdPartyCheckpoint, CifarTintnConfigKeysAreListedAsIgnored)
{
    if (!fs::exists(sharedDir() + kCheckpoint))
        GTEST_SKIP() << sharedDir() + kCheckpoint << " is absent";
    LoadOptions options;
    options.descriptionPath = description();
    auto model = Model::load(sharedDir() + kCheckpoint, options);
    ASSERT_TRUE(model.ok()) << model.message();
    const auto& ignored = (*model)->info().ignoredConfigKeys;
    ASSERT_EQ(ignored.count("config.json"), 1u);
    const auto& keys = ignored.at("config.json");
    EXPECT_EQ(keys.size(), 13u);
    EXPECT_NE(std::find(keys.begin(), keys.end(), "num_attention_heads"), keys.end());
    EXPECT_NE(std::find(keys.begin(), keys.end(), "hidden_dropout_prob"), keys.end());
}

// Its description without the rule for the fused q/k/v projections: the error names those tensors, as the checkpoint
// names them and as the remaining rules left them, once for the four blocks.
TEST(ThirdPartyCheckpoint, CifarTintnDescriptionWithoutTheQkvRuleNamesTheTensors)
{
    if (!fs::exists(sharedDir() + kCheckpoint))
        GTEST_SKIP() << sharedDir() + kCheckpoint << " is absent";
    std::ifstream in(description());
    auto d = nlohmann::json::parse(in);
    auto& rules = d["rename"];
    rules.erase(std::remove_if(rules.begin(), rules.end(),
                               [](const nlohmann::json& r) { return r[0].get<std::string>().find("qkv") != std::string::npos; }),
                rules.end());
    const fs::path broken = scratchDir("tintn_without_qkv_rule") / "description.json";
    std::ofstream(broken) << d.dump();
    LoadOptions options;
    options.descriptionPath = broken.string();
    auto model = Model::load(sharedDir() + kCheckpoint, options);
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.message().find(broken.string() + ": after its rename rules, 8 tensors of " + sharedDir() + kCheckpoint),
              std::string::npos)
        << model.message();
    EXPECT_NE(model.message().find("encoder.blocks.{0..3}.attention.qkv_projection.weight (renamed to "
                                   "blocks.{0..3}.attention.qkv_projection.weight)"),
              std::string::npos)
        << model.message();
}

TEST(ThirdPartyCheckpoint, CifarTintnClassifies736Of1000)
{
    if (!fs::exists(sharedDir() + kCheckpoint) || !fs::exists(sharedDir() + kImages))
        GTEST_SKIP() << "../shared models or data are absent";
    LoadOptions options;
    options.descriptionPath = description();
    auto model = Model::load(sharedDir() + kCheckpoint, options);
    ASSERT_TRUE(model.ok()) << model.message();
    const auto& labels = (*model)->info().labels;
    int correct = 0, total = 0;
    for (size_t cls = 0; cls < labels.size(); ++cls) {
        std::vector<fs::path> files;
        for (const auto& e : fs::directory_iterator(sharedDir() + kImages + "/" + labels[cls]))
            files.push_back(e.path());
        std::sort(files.begin(), files.end());
        for (const auto& f : files) {
            auto image = decodeImage(f.string());
            ASSERT_TRUE(image.ok()) << image.message();
            auto prepared = (*model)->prepare(*image);
            ASSERT_TRUE(prepared.ok());
            auto trace = (*model)->run(prepared->input);
            ASSERT_TRUE(trace.ok()) << trace.message();
            const float* z = trace->logits.data();
            const auto best = size_t(std::max_element(z, z + trace->logits.numel()) - z);
            correct += best == cls;
            ++total;
        }
    }
    EXPECT_EQ(total, 1000);
    EXPECT_EQ(correct, 736);
}

} // namespace
