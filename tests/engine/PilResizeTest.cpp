// Preprocessing resizes as PIL does (tests/golden/make_pil_resize.py: PIL's Image.resize, checked equal to torchvision's
// Resize on a PIL image), enlarging and reducing, bilinear, bicubic and nearest: the same bytes, not one grey level off.
#include "TestSupport.h"

#include "image/PilResample.h"
#include "image/Preprocess.h"

#include <attnscope/Image.h>

#include <nlohmann/json.hpp>

#include <ATen/ATen.h>

#include <fstream>

using namespace attnscope;
using namespace attnscope::test;

namespace {

std::string pilDir() { return ATTNSCOPE_TEST_SOURCE_DIR "/golden/pil_resize"; }

Interpolation filterNamed(const std::string& name)
{
    return name == "bicubic" ? Interpolation::Bicubic : name == "bilinear" ? Interpolation::Bilinear : Interpolation::Nearest;
}

} // namespace

TEST(PilResize, EveryCaseGivesPilsBytes)
{
    std::ifstream in(pilDir() + "/cases.json");
    ASSERT_TRUE(in) << pilDir();
    const auto cases = nlohmann::json::parse(in);
    ASSERT_EQ(cases.size(), 8u);
    for (const auto& c : cases) {
        const std::string expectedFile = c["expected"].get<std::string>();
        SCOPED_TRACE(expectedFile);
        auto source = decodeImage(pilDir() + "/" + c["source"].get<std::string>());
        auto expected = decodeImage(pilDir() + "/" + expectedFile);
        ASSERT_TRUE(source.ok() && expected.ok());
        ASSERT_EQ(source->channels, 3);
        const int h = c["height"].get<int>(), w = c["width"].get<int>();
        ASSERT_EQ(expected->height, h);
        ASSERT_EQ(expected->width, w);
        std::vector<uint8_t> out(size_t(h) * size_t(w) * 3);
        pilResize(source->pixels.data(), source->height, source->width, 3, out.data(), h, w,
                  filterNamed(c["filter"].get<std::string>()));
        int differing = 0, largest = 0;
        for (size_t i = 0; i < out.size(); ++i) {
            const int d = std::abs(int(out[i]) - int(expected->pixels[i]));
            differing += d != 0;
            largest = std::max(largest, d);
        }
        EXPECT_EQ(differing, 0) << "values differing from PIL's; the largest difference " << largest << " grey levels";
    }
}

// Through the preprocessing: a 32x32 image with torchvision's Resize((224, 224)) (bicubic) shows the model PIL's image,
// byte for byte; a grey image goes through the same filter.
TEST(PilResize, ThePreprocessingShowsTheModelPilsResize)
{
    auto small = decodeImage(pilDir() + "/small.png");
    auto expected = decodeImage(pilDir() + "/small_bicubic_224x224.png");
    ASSERT_TRUE(small.ok() && expected.ok());
    PreprocessConfig resize224;
    resize224.resize = ResizeMode::Exact;
    resize224.resizeHeight = resize224.resizeWidth = 224;
    resize224.centerCrop = false;
    resize224.interpolation = Interpolation::Bicubic;
    Image shown;
    const at::Tensor input = preprocessImage(*small, resize224, 3, &shown);
    EXPECT_EQ(input.sizes().vec(), (std::vector<int64_t> { 3, 224, 224 }));
    EXPECT_EQ(shown.pixels, expected->pixels);

    Image grey;
    grey.height = grey.width = 32;
    grey.channels = 1;
    for (size_t i = 0; i < 32 * 32; ++i)
        grey.pixels.push_back(small->pixels[i * 3]);
    Image greyShown;
    preprocessImage(grey, resize224, 1, &greyShown);
    ASSERT_EQ(greyShown.pixels.size(), size_t(224 * 224));
    for (size_t i = 0; i < greyShown.pixels.size(); ++i)
        ASSERT_EQ(greyShown.pixels[i], expected->pixels[i * 3]) << i;
}
