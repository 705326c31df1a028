// Image decoding as docs/design.md section 4 asks: grey, alpha (composited on white), 16-bit; bad files give one-line
// errors.
#include "TestSupport.h"

#include <attnscope/Image.h>
#include <attnscope/Model.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

using namespace attnscope;
using namespace attnscope::test;
namespace fs = std::filesystem;

namespace {

class ImageDecode : public ::testing::Test {
protected:
    void SetUp() override { m_dir = scratchDir(::testing::UnitTest::GetInstance()->current_test_info()->name()); }
    void TearDown() override { fs::remove_all(m_dir); }
    std::string path(const std::string& name) const { return (m_dir / name).string(); }
    fs::path m_dir;
};

TEST_F(ImageDecode, GreyStaysGrey)
{
    cv::Mat m(4, 6, CV_8UC1, cv::Scalar(77));
    ASSERT_TRUE(cv::imwrite(path("grey.png"), m));
    auto img = decodeImage(path("grey.png"));
    ASSERT_TRUE(img.ok()) << img.message();
    EXPECT_EQ(img->channels, 1);
    EXPECT_EQ(img->width, 6);
    EXPECT_EQ(img->height, 4);
    EXPECT_EQ(img->pixels[0], 77);
}

TEST_F(ImageDecode, ColourComesBackAsRgb)
{
    cv::Mat m(2, 2, CV_8UC3, cv::Scalar(10, 20, 30)); // OpenCV order: B, G, R
    ASSERT_TRUE(cv::imwrite(path("bgr.png"), m));
    auto img = decodeImage(path("bgr.png"));
    ASSERT_TRUE(img.ok());
    ASSERT_EQ(img->channels, 3);
    EXPECT_EQ(img->pixels[0], 30);
    EXPECT_EQ(img->pixels[1], 20);
    EXPECT_EQ(img->pixels[2], 10);
}

TEST_F(ImageDecode, AlphaIsCompositedOnWhite)
{
    cv::Mat m(1, 2, CV_8UC4);
    m.at<cv::Vec4b>(0, 0) = { 0, 0, 0, 0 };     // transparent black -> white
    m.at<cv::Vec4b>(0, 1) = { 0, 0, 200, 255 }; // opaque red stays
    ASSERT_TRUE(cv::imwrite(path("alpha.png"), m));
    auto img = decodeImage(path("alpha.png"));
    ASSERT_TRUE(img.ok());
    ASSERT_EQ(img->channels, 3);
    EXPECT_EQ(img->pixels[0], 255);
    EXPECT_EQ(img->pixels[1], 255);
    EXPECT_EQ(img->pixels[3], 200);
    EXPECT_EQ(img->pixels[4], 0);
}

TEST_F(ImageDecode, SixteenBitIsScaledTo8Bit)
{
    cv::Mat m(1, 2, CV_16UC1);
    m.at<uint16_t>(0, 0) = 65535;
    m.at<uint16_t>(0, 1) = 257 * 100;
    ASSERT_TRUE(cv::imwrite(path("deep.png"), m));
    auto img = decodeImage(path("deep.png"));
    ASSERT_TRUE(img.ok());
    EXPECT_EQ(img->pixels[0], 255);
    EXPECT_EQ(img->pixels[1], 100);
}

TEST_F(ImageDecode, GreyImageFeedsAnRgbModelAndRgbAGreyModel)
{
    cv::Mat m(40, 40, CV_8UC1, cv::Scalar(128));
    ASSERT_TRUE(cv::imwrite(path("grey.png"), m));
    auto img = decodeImage(path("grey.png"));
    ASSERT_TRUE(img.ok());
    auto rgbModel = Model::load(goldenDir() + "/tv_timm");
    ASSERT_TRUE(rgbModel.ok());
    auto p = (*rgbModel)->prepare(*img);
    ASSERT_TRUE(p.ok()) << p.message();
    EXPECT_EQ(p->input.shape(), (std::vector<int64_t> { 3, 32, 32 }));
    auto greyModel = Model::load(goldenDir() + "/timm_gray");
    ASSERT_TRUE(greyModel.ok());
    auto colour = decodeImage(ATTNSCOPE_TEST_SOURCE_DIR "/../resources/samples/photos/coffee.png");
    ASSERT_TRUE(colour.ok());
    auto q = (*greyModel)->prepare(*colour);
    ASSERT_TRUE(q.ok());
    EXPECT_EQ(q->input.shape(), (std::vector<int64_t> { 1, 28, 28 }));
}

TEST_F(ImageDecode, BadFilesSayWhy)
{
    std::ofstream(path("empty.png")).close();
    std::ofstream(path("text.png")) << "this is not an image";
    cv::Mat m(64, 64, CV_8UC3, cv::Scalar(1, 2, 3));
    std::vector<uchar> buf;
    cv::imencode(".png", m, buf);
    std::ofstream(path("truncated.png"), std::ios::binary).write(reinterpret_cast<const char*>(buf.data()), std::streamsize(buf.size() / 3));
    for (const char* name : { "empty.png", "text.png", "truncated.png", "missing.png" }) {
        auto img = decodeImage(path(name));
        ASSERT_FALSE(img.ok()) << name;
        EXPECT_NE(img.message().find(name), std::string::npos) << img.message();
        EXPECT_EQ(img.message().find('\n'), std::string::npos);
    }
}

// The format by content, whatever the name says: how the window tells a photo without a suffix from a model.
TEST_F(ImageDecode, FormatOfAFileIsReadFromItsFirstBytes)
{
    const std::string bad = ATTNSCOPE_TEST_SOURCE_DIR "/data/bad/";
    EXPECT_EQ(imageFormatOf(ATTNSCOPE_TEST_SOURCE_DIR "/../resources/samples/photos/chelsea.png"), "PNG");
    EXPECT_EQ(imageFormatOf(ATTNSCOPE_TEST_SOURCE_DIR "/../resources/samples/photos/rocket.jpg"), "JPEG");
    EXPECT_EQ(imageFormatOf(bad + "image_ok.webp"), "WebP");
    EXPECT_EQ(imageFormatOf(bad + "image_png_named.jpg"), "PNG");
    EXPECT_EQ(imageFormatOf(bad + "image_animated.gif"), "GIF"); // recognised, though decodeImage refuses it
    EXPECT_EQ(imageFormatOf(bad + "image_truncated_header.png"), "PNG");
    for (const std::string other : { bad + "image_text.png", bad + "image_empty.png", bad + "model_ok.safetensors",
                                     goldenDir() + "/tv_grid16/config.json", path("missing.png"), m_dir.string() })
        EXPECT_EQ(imageFormatOf(other), "") << other;
}

} // namespace

// decodeImage borrows fd 2 while OpenCV decodes, to catch libpng's complaint. Another thread writing to stderr
// meanwhile holds stderrLock(): its lines reach stderr and never end up inside the decoder's message, which is what
// the CLI's skip notes did before (seen as "... (64x64 declared; attnscope-cli: skipped ...)" under load).
TEST_F(ImageDecode, AnotherThreadsStderrLinesStayOutOfTheDecodersMessage)
{
    const std::string truncated = ATTNSCOPE_TEST_SOURCE_DIR "/data/bad/image_truncated.png";
    // The other thread's lines go to /dev/null (fd 2 pointed there for the test), the decoder's to its capture.
    std::fflush(stderr);
    const int savedStderr = ::dup(2);
    const int null = ::open("/dev/null", O_WRONLY);
    ASSERT_GE(null, 0);
    ::dup2(null, 2);
    ::close(null);
    std::atomic<bool> done { false };
    std::thread writer([&] {
        while (!done) {
            std::lock_guard<std::mutex> lock(stderrLock());
            std::fprintf(stderr, "a line from another thread\n");
        }
    });
    int decodes = 0;
    std::string worst;
    for (; decodes < 200; ++decodes) {
        auto image = decodeImage(truncated);
        ASSERT_FALSE(image);
        if (image.message().find("another thread") != std::string::npos)
            worst = image.message();
    }
    done = true;
    writer.join();
    std::fflush(stderr);
    ::dup2(savedStderr, 2);
    ::close(savedStderr);
    EXPECT_TRUE(worst.empty()) << "after " << decodes << " decodes: " << worst;
}
