// The embedded model zoo (resources/models): every model loads as builtin:NAME; the Fashion-MNIST models
// classify the 10,000 test images as their cards say (to 0.5%), the baselines at least 85%. The default,
// fmnist-vit, and its variants are 12 layers deep; the first zoo's 4-layer models are the -d4 ones.
#include "TestSupport.h"

#include <attnscope/Datasets.h>
#include <attnscope/Image.h>
#include <attnscope/Model.h>

#include <fstream>
#include <regex>

using namespace attnscope;
using namespace attnscope::test;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kDeep { "fmnist-vit", "fmnist-neutreno", "fmnist-boost", "fmnist-bilateral" };
const std::vector<std::string> kZoo { "fmnist-vit", "fmnist-neutreno", "fmnist-boost", "fmnist-bilateral",
                                      "fmnist-vit-d4", "fmnist-neutreno-d4", "fmnist-boost-d4", "fmnist-bilateral-d4",
                                      "fmnist-quadratic", "conv3x3-as-attention" };

double cardAccuracy(const std::string& name)
{
    std::ifstream in(builtinModelDir() + "/" + name + "/MODEL_CARD.md");
    const std::string card((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::smatch m;
    if (!std::regex_search(card, m, std::regex("\\| test accuracy \\| ([0-9.]+) \\|")))
        return -1;
    return std::stod(m[1]);
}

double accuracy(const Model& model, const LabelledImages& data)
{
    int correct = 0;
    for (size_t i = 0; i < data.images.size(); ++i) {
        auto prepared = model.prepare(data.images[i]);
        if (!prepared)
            return -1;
        auto trace = model.run(prepared->input);
        if (!trace)
            return -1;
        const float* z = trace->logits.data();
        correct += int(std::max_element(z, z + trace->logits.numel()) - z) == data.labels[i];
    }
    return double(correct) / double(data.images.size());
}

bool zooPresent()
{
    return fs::exists(builtinModelDir() + "/fmnist-vit/model.safetensors");
}

TEST(Zoo, EveryModelLoadsAsBuiltin)
{
    if (!zooPresent())
        GTEST_SKIP() << "no embedded models in " << builtinModelDir() << " (scripts/train-zoo.sh makes them)";
    const auto names = builtinModelNames();
    for (const auto& name : kZoo) {
        EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name << " is not in " << builtinModelDir();
        auto model = Model::load("builtin:" + name);
        ASSERT_TRUE(model.ok()) << model.message();
        EXPECT_LT(fs::file_size(builtinModelDir() + "/" + name + "/model.safetensors"), 2u << 20) << name;
    }
    for (const auto& name : kZoo) {
        if (name.rfind("fmnist-", 0) != 0)
            continue;
        auto model = Model::load("builtin:" + name);
        ASSERT_TRUE(model.ok()) << model.message();
        EXPECT_EQ((*model)->info().labels.size(), 10u) << name;
        EXPECT_EQ((*model)->config().channels, 1) << name;
        const bool deep = std::find(kDeep.begin(), kDeep.end(), name) != kDeep.end();
        EXPECT_EQ((*model)->config().depth, deep ? 12 : 4) << name;
    }
    for (const char* name : { "builtin:fmnist-neutreno", "builtin:fmnist-neutreno-d4" }) {
        auto neutreno = Model::load(name);
        ASSERT_TRUE(neutreno.ok());
        EXPECT_DOUBLE_EQ((*neutreno)->config().neutrenoLambda, 0.6) << name; // trained with it, runs with it by default
    }
    for (const char* name : { "builtin:fmnist-boost", "builtin:fmnist-boost-d4" }) {
        auto boost = Model::load(name);
        ASSERT_TRUE(boost.ok());
        EXPECT_DOUBLE_EQ((*boost)->config().boostT, 0.3) << name;
    }
    auto quadratic = Model::load("builtin:fmnist-quadratic");
    ASSERT_TRUE(quadratic.ok());
    EXPECT_EQ((*quadratic)->config().attention, AttentionKind::Quadratic);
    auto bilateral = Model::load("builtin:fmnist-bilateral");
    ASSERT_TRUE(bilateral.ok());
    EXPECT_EQ((*bilateral)->config().attention, AttentionKind::Bilateral);
}

class ZooAccuracy : public ::testing::TestWithParam<std::string> { };

TEST_P(ZooAccuracy, ReproducesItsModelCardOnTheFashionMnistTestSet)
{
    if (!zooPresent())
        GTEST_SKIP() << "no embedded models in " << builtinModelDir();
    auto test = readFashionMnist(kFashionMnistDir, "test");
    if (!test)
        GTEST_SKIP() << "dataset-fashion-mnist is not installed (" << test.message() << ")";
    auto model = Model::load("builtin:" + GetParam());
    ASSERT_TRUE(model.ok()) << model.message();
    const double card = cardAccuracy(GetParam());
    ASSERT_GT(card, 0) << "no test accuracy in the model card";
    const double measured = accuracy(**model, *test);
    EXPECT_NEAR(measured, card, 0.005);
    // Issue 18's bar for the default, 12-layer baseline; the first zoo's 4-layer one was held to 0.85.
    if (GetParam() == "fmnist-vit")
        EXPECT_GE(measured, 0.90);
    if (GetParam() == "fmnist-vit-d4")
        EXPECT_GE(measured, 0.85);
}

INSTANTIATE_TEST_SUITE_P(Models, ZooAccuracy,
                         ::testing::Values("fmnist-vit", "fmnist-neutreno", "fmnist-boost", "fmnist-bilateral", "fmnist-vit-d4",
                                           "fmnist-neutreno-d4", "fmnist-boost-d4", "fmnist-bilateral-d4", "fmnist-quadratic"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                             std::string name = p.param;
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

TEST(Zoo, ConvolutionModelHeadsSitOnTheNineShifts)
{
    if (!zooPresent())
        GTEST_SKIP() << "no embedded models in " << builtinModelDir();
    auto model = Model::load("builtin:conv3x3-as-attention");
    ASSERT_TRUE(model.ok()) << model.message();
    ASSERT_EQ((*model)->config().numHeads, 9);
    auto image = decodeImage(ATTNSCOPE_TEST_SOURCE_DIR "/../resources/samples/fashion-mnist/test-0000-ankle-boot.png");
    ASSERT_TRUE(image.ok());
    auto prepared = (*model)->prepare(*image);
    ASSERT_TRUE(prepared.ok());
    RunOptions options;
    options.record.attention = true;
    auto trace = (*model)->run(prepared->input, options);
    ASSERT_TRUE(trace.ok());
    const int w = trace->gridWidth;
    const Tensor& a = trace->attention[1];
    const int64_t n = a.size(1);
    const int q = 14 * w + 14; // an interior pixel
    for (int h = 0; h < 9; ++h) {
        const float* row = a.data() + (int64_t(h) * n + q) * n;
        const int64_t peak = std::max_element(row, row + n) - row;
        EXPECT_EQ(peak, q + (h / 3 - 1) * w + (h % 3 - 1)) << "head " << h;
    }
}

} // namespace
