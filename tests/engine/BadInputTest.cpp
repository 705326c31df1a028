// The bad-input corpus (tests/data/bad, made by make_bad_inputs.py): every broken model and image gives one
// line naming the file and the cause; unusual but valid files decode to what expected.json says; nothing crashes.
#include "TestSupport.h"

#include <attnscope/Image.h>
#include <attnscope/Model.h>

#include "image/ImageHeader.h"

#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <set>

using namespace attnscope;
using namespace attnscope::test;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kCorpus = fs::path(ATTNSCOPE_TEST_SOURCE_DIR) / "data" / "bad";

std::string slurp(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

json expectations()
{
    std::ifstream in(kCorpus / "expected.json");
    return json::parse(in)["cases"];
}

// One line, naming the case's file (or folder) and containing the expected cause.
::testing::AssertionResult saysWhy(const std::string& message, const json& c)
{
    const std::string file = c["file"], cause = c["error"];
    if (message.find('\n') != std::string::npos)
        return ::testing::AssertionFailure() << "more than one line: " << message;
    if (message.find(file) == std::string::npos)
        return ::testing::AssertionFailure() << "does not name " << file << ": " << message;
    if (message.find(cause) == std::string::npos)
        return ::testing::AssertionFailure() << "lacks \"" << cause << "\": " << message;
    return ::testing::AssertionSuccess();
}

TEST(BadInput, CorpusIsLargeEnoughAndEveryFileHasAnExpectation)
{
    const json cases = expectations();
    std::set<std::string> listed;
    int models = 0, images = 0, failures = 0;
    for (const auto& c : cases) {
        EXPECT_TRUE(listed.insert(c["file"].get<std::string>()).second) << "listed twice: " << c["file"];
        EXPECT_TRUE(fs::exists(kCorpus / c["file"].get<std::string>())) << c["file"];
        EXPECT_NE(c.contains("error"), c.contains("ok")) << c["file"] << ": give either an error or a decoded result";
        (c["kind"] == "model" ? models : images)++;
        failures += c.contains("error");
    }
    EXPECT_GE(failures, 30);
    EXPECT_GE(models, 15);
    EXPECT_GE(images, 15);
    for (const auto& entry : fs::directory_iterator(kCorpus)) {
        const std::string name = entry.path().filename().string();
        if (name != "expected.json" && name != "make_bad_inputs.py" && name != "__pycache__")
            EXPECT_TRUE(listed.count(name)) << name << " is in the corpus but not in expected.json";
        if (entry.is_regular_file())
            EXPECT_LT(entry.file_size(), 100u * 1024) << name;
    }
}

TEST(BadInput, EveryModelCaseGivesItsOneLineCause)
{
    int checked = 0;
    for (const auto& c : expectations()) {
        if (c["kind"] != "model")
            continue;
        SCOPED_TRACE(c["file"].get<std::string>() + " (" + c["covers"].get<std::string>() + ")");
        const std::string path = (kCorpus / c["file"].get<std::string>()).string();
        auto model = Model::load(path);
        ++checked;
        if (c.contains("error")) {
            ASSERT_FALSE(model.ok()) << "loaded although it is broken";
            EXPECT_TRUE(saysWhy(model.message(), c));
            continue;
        }
        ASSERT_TRUE(model.ok()) << model.message();
        // A valid case must also run: the corpus model is not broken in some way the loader misses.
        Image grey { 8, 8, 3, std::vector<uint8_t>(8 * 8 * 3, 128) };
        auto prepared = (*model)->prepare(grey);
        ASSERT_TRUE(prepared.ok()) << prepared.message();
        RunOptions options;
        options.record.attention = true;
        auto trace = (*model)->run(prepared->input, options);
        ASSERT_TRUE(trace.ok()) << trace.message();
        EXPECT_EQ(trace->logits.numel(), 3);
        ASSERT_EQ(trace->attention.size(), 2u);
        EXPECT_EQ(trace->attention[1].shape(), (std::vector<int64_t> { 2, 5, 5 }));
    }
    EXPECT_GE(checked, 15);
}

TEST(BadInput, EveryImageCaseDecodesOrGivesItsOneLineCause)
{
    int checked = 0;
    for (const auto& c : expectations()) {
        if (c["kind"] != "image")
            continue;
        SCOPED_TRACE(c["file"].get<std::string>() + " (" + c["covers"].get<std::string>() + ")");
        auto image = decodeImage((kCorpus / c["file"].get<std::string>()).string());
        ++checked;
        if (c.contains("error")) {
            ASSERT_FALSE(image.ok()) << "decoded although it is broken: " << image->width << "x" << image->height;
            EXPECT_TRUE(saysWhy(image.message(), c));
            continue;
        }
        ASSERT_TRUE(image.ok()) << image.message();
        const json& ok = c["ok"];
        EXPECT_EQ(image->width, ok["width"].get<int>());
        EXPECT_EQ(image->height, ok["height"].get<int>());
        ASSERT_EQ(image->channels, ok["channels"].get<int>());
        ASSERT_EQ(image->pixels.size(), size_t(image->width) * size_t(image->height) * size_t(image->channels));
        if (ok.contains("pixel")) {
            // The first pixel: exact for lossless files; the CMYK JPEG allows `tolerance` (8 of 255) for its
            // lossy compression (quality 95) and OpenCV's CMYK -> BGR conversion.
            const int tolerance = ok.value("tolerance", 0);
            const auto& pixel = ok["pixel"];
            ASSERT_EQ(pixel.size(), size_t(image->channels));
            for (size_t k = 0; k < pixel.size(); ++k)
                EXPECT_NEAR(int(image->pixels[k]), pixel[k].get<int>(), tolerance) << "channel " << k;
        }
    }
    EXPECT_GE(checked, 15);
}

TEST(BadInput, PixelBudgetIsAnOption)
{
    DecodeOptions small;
    small.maxPixels = 1000;
    auto refused = decodeImage((kCorpus / "image_ok.png").string(), small);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.message().find("declares 64x48 pixels, more than the budget of 1000 pixels"), std::string::npos)
        << refused.message();
    auto enormous = decodeImage((kCorpus / "image_enormous.png").string());
    ASSERT_FALSE(enormous.ok());
    EXPECT_NE(enormous.message().find("PNG image declares 30000x30000 pixels, more than the budget of 100 megapixels; not decoded"),
              std::string::npos)
        << enormous.message();
    EXPECT_TRUE(decodeImage((kCorpus / "image_ok.png").string()).ok());
    EXPECT_EQ(kMaxImagePixels, 100'000'000);
}

// In a child whose address space is capped at its current size + 512 MB, so that decoding the 30000 x 30000
// declared images (2.7 GB of pixels) would fail with an allocation error instead of the budget message: the
// refusal must come from the header, before any pixel buffer exists.
TEST(BadInput, EnormousDeclaredImagesAreRefusedWithoutAllocating)
{
    for (const char* name : { "image_enormous.png", "image_enormous.jpg", "image_enormous.bmp", "image_enormous.webp" }) {
        const std::string path = (kCorpus / name).string();
        const pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            long pages = 0;
            std::ifstream("/proc/self/statm") >> pages;
            const rlim_t cap = rlim_t(pages) * rlim_t(sysconf(_SC_PAGESIZE)) + (rlim_t(512) << 20);
            const rlimit limit { cap, cap };
            if (setrlimit(RLIMIT_AS, &limit) != 0)
                _exit(3);
            auto image = decodeImage(path);
            _exit(!image.ok() && image.message().find("more than the budget") != std::string::npos ? 0 : 1);
        }
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status)) << name << ": the child died (signal " << WTERMSIG(status) << ")";
        EXPECT_EQ(WEXITSTATUS(status), 0) << name << ": not refused by its declared size";
    }
}

// Every image of the corpus cut at every length: the header reader (bounds-checked by construction; under the
// asan preset this also proves it) never reports a size other than the whole file's, and decodeImage, on 48
// cuts of each, either decodes the image at its full size or says why in one line naming the file.
TEST(BadInput, EveryTruncationOfEveryImageIsRefusedOrWhole)
{
    const fs::path dir = scratchDir("truncations");
    int decoded = 0, refused = 0;
    for (const auto& c : expectations()) {
        if (c["kind"] != "image")
            continue;
        const std::string name = c["file"];
        const std::string bytes = slurp(kCorpus / name);
        const auto whole = readImageHeader(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
        for (size_t n = 0; n <= bytes.size(); ++n) {
            const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + std::ptrdiff_t(n)); // exact-size heap block
            const auto h = readImageHeader(cut.data(), cut.size());
            if (h.hasSize())
                EXPECT_TRUE(h.width == whole.width && h.height == whole.height) << name << " cut at " << n;
        }
        const size_t step = std::max<size_t>(1, bytes.size() / 48);
        for (size_t n = 0; n < bytes.size(); n += step) {
            const fs::path cutPath = dir / ("cut-" + std::to_string(n) + "-" + name);
            std::ofstream(cutPath, std::ios::binary).write(bytes.data(), std::streamsize(n));
            auto image = decodeImage(cutPath.string());
            if (image.ok()) {
                ++decoded; // a cut after the last byte a decoder needs (e.g. past IEND's CRC): must be the whole image
                ASSERT_TRUE(c.contains("ok")) << name << " cut at " << n << " decoded although the whole file is broken";
                EXPECT_EQ(image->width, c["ok"]["width"].get<int>()) << name << " cut at " << n;
                EXPECT_EQ(image->height, c["ok"]["height"].get<int>()) << name << " cut at " << n;
            } else {
                ++refused;
                EXPECT_EQ(image.message().find('\n'), std::string::npos) << image.message();
                EXPECT_NE(image.message().find(cutPath.filename().string()), std::string::npos) << image.message();
            }
        }
    }
    fs::remove_all(dir);
    EXPECT_GT(refused, 500);
    std::printf("[ measured ] image truncations: %d refused, %d decoded whole\n", refused, decoded);
}

} // namespace
