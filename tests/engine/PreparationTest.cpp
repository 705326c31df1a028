// What the window says about an image and a model: the line that names what preprocessing did to the image
// (Model::describePreparation), checked against what prepare() really made of it, and the top classes
// (topClasses), checked against LibTorch's own softmax and sort.
#include "TestSupport.h"

#include <attnscope/Image.h>
#include <attnscope/Model.h>

#include <ATen/ATen.h>

#include <regex>

using namespace attnscope;
using namespace attnscope::test;

namespace {

Image solid(int width, int height, int channels)
{
    Image image;
    image.width = width;
    image.height = height;
    image.channels = channels;
    image.pixels.assign(size_t(width) * height * channels, 100);
    return image;
}

std::shared_ptr<const Model> load(const std::string& path)
{
    auto model = Model::load(path);
    EXPECT_TRUE(model.ok()) << model.message();
    return model.ok() ? *model : nullptr;
}

} // namespace

// The line's sizes are the sizes prepare() gives: the resize's result and the crop the model sees, for every kind of
// resize the fixtures carry (timm's shortest edge and centre crop; an exact resize; a grey model).
TEST(Preparation, TheLineNamesWhatPrepareDid)
{
    for (const std::string fixture : { "tv_timm", "timm_gray", "hf_vit_eps5", "tv_torchvision", "timm_size_vit" }) {
        SCOPED_TRACE(fixture);
        const auto model = load(goldenDir() + "/" + fixture);
        ASSERT_TRUE(model);
        const int channels = model->config().channels;
        for (const Image& image : { solid(600, 400, 3), solid(40, 90, 1), solid(model->config().imageWidth, model->config().imageHeight, channels) }) {
            const std::string line = model->describePreparation(image.width, image.height, image.channels);
            auto prepared = model->prepare(image);
            ASSERT_TRUE(prepared.ok()) << prepared.message();
            SCOPED_TRACE(line);
            // The last size the line names is what the model sees.
            const std::regex sizes("(\\d+)\u00d7(\\d+)");
            std::string lastW, lastH;
            for (auto it = std::sregex_iterator(line.begin(), line.end(), sizes); it != std::sregex_iterator(); ++it) {
                lastW = (*it)[1];
                lastH = (*it)[2];
            }
            const bool sameSize = image.width == prepared->shown.width && image.height == prepared->shown.height;
            if (line.empty()) { // nothing said: nothing done
                EXPECT_TRUE(sameSize && image.channels == channels);
                continue;
            }
            EXPECT_EQ(line.find("converted to grey") != std::string::npos, image.channels == 3 && channels == 1);
            EXPECT_EQ(line.find("grey copied to 3 channels") != std::string::npos, image.channels == 1 && channels == 3);
            // A size named: the last one is what the model sees (an image at the input size may still be resized up and
            // cropped back, as timm's crop_pct does).
            EXPECT_EQ(lastW.empty(), sameSize && line.find("resized") == std::string::npos);
            if (!lastW.empty()) {
                ASSERT_FALSE(lastW.empty());
                EXPECT_EQ(std::stoi(lastW), prepared->shown.width);
                EXPECT_EQ(std::stoi(lastH), prepared->shown.height);
                EXPECT_NE(line.find(std::to_string(image.width) + "\u00d7" + std::to_string(image.height)), std::string::npos);
            }
        }
    }
}

// The example, word for word: a colour photo into a 1x28x28 grey model (timm's crop_pct 1.0: resize the short
// side to 28, then the centre crop).
TEST(Preparation, ColourPhotoIntoAGreyModel)
{
    const auto model = load(goldenDir() + "/timm_gray");
    ASSERT_TRUE(model);
    EXPECT_EQ(model->describePreparation(512, 512, 3), "converted to grey, resized 512\u00d7512 \u2192 28\u00d728");
    EXPECT_EQ(model->describePreparation(600, 400, 3), "converted to grey, resized 600\u00d7400 \u2192 42\u00d728, centre 28\u00d728 cropped");
    EXPECT_EQ(model->describePreparation(28, 28, 1), "");
}

// The probabilities and the order of LibTorch's softmax (float64) and stable descending sort, to 1e-12.
TEST(Preparation, TopClassesAreSoftmaxsLargest)
{
    const std::vector<float> values { 0.5f, 3.0f, -1.0f, 3.0f, 2.0f, 10.0f, -7.5f, 0.0f };
    const Tensor logits = Tensor::fromVector({ int64_t(values.size()) }, values);
    const at::Tensor z = at::tensor(std::vector<double>(values.begin(), values.end()), at::kDouble);
    const at::Tensor p = at::softmax(z, 0);
    const at::Tensor order = std::get<1>(at::sort(p, /*stable=*/true, 0, /*descending=*/true));
    for (int k : { 1, 5, 8, 20 }) {
        const auto top = topClasses(logits, k);
        ASSERT_EQ(top.size(), size_t(std::min<int>(k, int(values.size()))));
        for (size_t r = 0; r < top.size(); ++r) {
            EXPECT_EQ(top[r].index, order[int64_t(r)].item<int64_t>()) << "rank " << r;
            EXPECT_NEAR(top[r].probability, p[top[r].index].item<double>(), 1e-12);
        }
    }
    EXPECT_EQ(topClasses(logits, 3)[1].index, 1); // 3.0 twice: the lower index first
    EXPECT_TRUE(topClasses(Tensor(), 5).empty());
    // Large logits do not overflow: the softmax is taken relative to the largest.
    const auto big = topClasses(Tensor::fromVector({ 2 }, { 1000.0f, 999.0f }), 2);
    EXPECT_NEAR(big[0].probability, 1.0 / (1.0 + std::exp(-1.0)), 1e-12);
}
