// Regression tests of the bugs the fuzz harnesses (tests/fuzz, docs/fuzzing.md) found: each input that crashed,
// threw the wrong exception or hit undefined behaviour now ends in a clean one-line Error. The raw inputs are
// also in tests/fuzz/corpus/<harness>/crash-*, replayed by the fuzz_replay_* tests.
#include "checkpoint/SafeTensors.h"
#include "TestSupport.h"

#include <attnscope/Image.h>
#include <attnscope/Model.h>
#include <attnscope/Npy.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>

namespace attnscope::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void writeBytes(const fs::path& path, const std::string& bytes)
{
    std::ofstream(path, std::ios::binary) << bytes;
}

// A .npy v2 file (4-byte header length) with the given header dictionary text.
std::string npyV2(const std::string& dict, const std::string& data)
{
    std::string header = dict + "\n";
    const uint32_t n = uint32_t(header.size());
    std::string out = std::string("\x93NUMPY\x02\x00", 8);
    for (int i = 0; i < 4; ++i)
        out += char((n >> (8 * i)) & 0xff);
    return out + header + data;
}

// Writes `bytes` as dir/name and reads it back with readNpy.
Result<Tensor> npyFrom(const fs::path& dir, const std::string& name, const std::string& bytes)
{
    writeBytes(dir / name, bytes);
    return readNpy((dir / name).string());
}

TEST(FuzzRegression, EmptyTensorRoundTripsThroughNpy)
{
    // fuzz_npy: memcpy from a null pointer (an empty vector's data) in Tensor::fromVector and readNpy.
    const auto dir = scratchDir("fuzz-npy-empty");
    const auto tensor = Tensor::fromVector({ 2, 0, 5 }, {});
    ASSERT_TRUE(writeNpy((dir / "e.npy").string(), tensor).ok());
    const auto read = readNpy((dir / "e.npy").string());
    ASSERT_TRUE(read.ok()) << read.message();
    EXPECT_EQ(read->shape(), (std::vector<int64_t> { 2, 0, 5 }));
    EXPECT_EQ(read->numel(), 0);
}

TEST(FuzzRegression, NpyShapeThatIsNotANumberIsAnError)
{
    // fuzz_npy: std::stoll threw std::invalid_argument out of readNpy, which returns Result.
    const auto dir = scratchDir("fuzz-npy-shape");
    const auto read = npyFrom(dir, "s.npy", npyV2("{'descr': '<f4', 'fortran_order': False, 'shape': (} ), }", std::string(4, '\0')));
    ASSERT_FALSE(read.ok());
    EXPECT_NE(read.message().find("is not a list of integers"), std::string::npos) << read.message();
    EXPECT_FALSE(npyFrom(dir, "big.npy", npyV2("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", "")).ok());
}

TEST(FuzzRegression, LongNpyHeaderDoesNotOverflowTheStack)
{
    // fuzz_npy: std::regex recursed once per header character; a 60 KB descr overflowed the stack under ASan,
    // a few MB overflow it in any build.
    const auto dir = scratchDir("fuzz-npy-long");
    auto read = npyFrom(dir, "d.npy", npyV2("{'descr': '" + std::string(4 << 20, 'x') + "', 'shape': (1,), }", std::string(4, '\0')));
    ASSERT_FALSE(read.ok());
    EXPECT_NE(read.message().find("is not float32 or float64"), std::string::npos);
    std::string dims;
    for (int i = 0; i < (1 << 17); ++i)
        dims += "1, ";
    // 131072 dimensions of 1: read or refused, no crash
    read = npyFrom(dir, "s.npy", npyV2("{'descr': '<f4', 'shape': (" + dims + "), }", std::string(4, '\0')));
    if (read.ok())
        EXPECT_EQ(read->numel(), 1);
    // Python 2's long suffix and other whitespace still read.
    read = npyFrom(dir, "l.npy", npyV2("{'descr': '<f4', 'fortran_order': False, 'shape':\t(2L,\n 1L), }", std::string(8, '\0')));
    ASSERT_TRUE(read.ok()) << read.message();
    EXPECT_EQ(read->shape(), (std::vector<int64_t> { 2, 1 }));
}

// The zoo's fmnist-vit-d4 with one config file edited: Model::load must fail cleanly, naming the problem.
class ConfigRegression : public ::testing::Test {
protected:
    fs::path model(const std::string& name)
    {
        const fs::path dir = scratchDir("fuzz-config-" + name);
        const fs::path zoo = fs::path(ATTNSCOPE_TEST_SOURCE_DIR) / "../resources/models/fmnist-vit-d4";
        fs::copy_file(zoo / "model.safetensors", dir / "model.safetensors");
        std::ifstream in(zoo / "config.json");
        config = json::parse(in);
        return dir;
    }
    void expectError(const fs::path& dir, const std::string& fragment)
    {
        writeBytes(dir / "config.json", config.dump());
        const auto loaded = Model::load(dir.string());
        ASSERT_FALSE(loaded.ok());
        EXPECT_NE(loaded.message().find(fragment), std::string::npos) << loaded.message();
    }
    json config;
};

TEST_F(ConfigRegression, CropPctZero)
{
    // fuzz_config: floor(28 / 0.0) = inf converted to int (undefined behaviour).
    const auto dir = model("crop-pct");
    config["pretrained_cfg"]["crop_pct"] = 0.0;
    expectError(dir, "crop_pct");
}

TEST_F(ConfigRegression, ShortInputSize)
{
    // pretrained_cfg.input_size [1] was indexed at [1] and [2] before its length was checked: heap overflow.
    const auto dir = model("input-size");
    config["model_args"].erase("img_size"); // so that the image size is read from input_size
    config["pretrained_cfg"]["input_size"] = json::array({ 1 });
    expectError(dir, "input_size must be [C, H, W]");
}

TEST_F(ConfigRegression, HugeFloatHeads)
{
    // get<int>() of 1e300 is a float-to-int overflow (undefined behaviour) inside nlohmann::json.
    const auto dir = model("heads");
    config["model_args"]["num_heads"] = 1e300;
    expectError(dir, "num_heads 1e+300 is not an integer");
}

TEST_F(ConfigRegression, NonPositiveImageSize)
{
    // A description's image size 0 (or negative) was accepted without a position table to contradict it.
    const auto dir = model("image-size");
    writeBytes(dir / "attnscope.json", R"({"architecture": {"image_size": 0}})");
    expectError(dir, "image_size 0 is not a size");
}

TEST_F(ConfigRegression, HugeFloatResize)
{
    // preprocessor_config.json size.height 1e300: the same float-to-int overflow.
    const auto dir = model("resize");
    config.erase("pretrained_cfg");
    writeBytes(dir / "preprocessor_config.json", R"({"size": {"height": 1e300, "width": 28}})");
    expectError(dir, "size.height 1e+300 is not an integer");
}

TEST_F(ConfigRegression, NegativeLayerNormEps)
{
    const auto dir = model("eps");
    writeBytes(dir / "attnscope.json", R"({"architecture": {"layer_norm_eps": -1}})");
    expectError(dir, "layer_norm_eps must not be negative");
}

TEST_F(ConfigRegression, HugeRegexBackReference)
{
    // fuzz_config: libstdc++'s regex compiler overflowed a long parsing the back-reference "\\666...6" (UB).
    const auto dir = model("regex");
    writeBytes(dir / "attnscope.json", R"j({"rename": [["^blocks\\.(\\66666666666666666666666)", "x"]]})j");
    expectError(dir, "is too complex for a tensor name");
}

TEST(FuzzRegression, EmptyPatchKernelIsAnError)
{
    // A patch_embed.proj.weight with a zero dimension made the patch size 0: image size % 0 (SIGFPE).
    const fs::path dir = scratchDir("fuzz-patch-zero");
    const fs::path zoo = fs::path(ATTNSCOPE_TEST_SOURCE_DIR) / "../resources/models/fmnist-vit-d4";
    auto tensors = readSafetensors((zoo / "model.safetensors").string()).tensors;
    tensors["patch_embed.proj.weight"] = at::zeros({ 64, 1, 0, 0 });
    writeSafetensors((dir / "model.safetensors").string(), tensors);
    fs::copy_file(zoo / "config.json", dir / "config.json");
    const auto loaded = Model::load(dir.string());
    ASSERT_FALSE(loaded.ok());
    EXPECT_NE(loaded.message().find("expected [D, C, P, P]"), std::string::npos) << loaded.message();
}

TEST(FuzzRegression, ImageHeaderReadsTheSizeOpenCVReads)
{
    // fuzz_image: readImageHeader read a smaller size than OpenCV's decoder, so a file declaring 20000x20000 to
    // OpenCV passed the pixel budget as 2x2 (or 4x4, 1x1) and OpenCV allocated 400 megapixels before failing on
    // the missing data. Each now reads OpenCV's size and is refused before decoding.
    const fs::path corpus = fs::path(ATTNSCOPE_TEST_SOURCE_DIR) / "fuzz/corpus/image";
    for (const char* name : {
             "crash-tiff-duplicate-size-tags", // ImageWidth/ImageLength 20000 then 2: libtiff keeps the first
             "crash-pnm-comment-ends-at-cr", // "P5\n#c\r20000 20000\n2 2": OpenCV ends a comment at CR
             "crash-jp2-ihdr-inside-another-box", // an "xml " box holding "ihdr" 4x4 before the real 20000x20000
             "crash-radiance-127-byte-header-line", // a 127-byte line: OpenCV's fgets pieces end the header earlier
         }) {
        const auto image = decodeImage((corpus / name).string());
        ASSERT_FALSE(image.ok()) << name;
        EXPECT_NE(image.message().find("declares 20000x20000 pixels, more than the budget"), std::string::npos)
            << image.message();
    }
    // FF 00 where a marker must be: libjpeg skips it and read the 20000x20000 frame inside what this reader took
    // for a segment, then decoded it (1.2 GB); refused as a corrupt header now.
    const auto jpeg = decodeImage((corpus / "crash-jpeg-stuffed-zero-hides-frame").string());
    ASSERT_FALSE(jpeg.ok());
    EXPECT_NE(jpeg.message().find("corrupt JPEG header (no image size)"), std::string::npos) << jpeg.message();
    // JPEG 2000 codestreams whose size fits the budget but whose tiles and components made OpenJPEG allocate
    // 84 MB (15617 tiles of 4 columns) and 2.2 GB (1000 components, 2000 tiles) while reading the header.
    const auto tiles = decodeImage((corpus / "crash-jpeg2000-15617-tiles").string());
    ASSERT_FALSE(tiles.ok());
    EXPECT_NE(tiles.message().find("JPEG 2000 image of 15617x1 tiles (at most 4096 are decoded)"), std::string::npos)
        << tiles.message();
    const auto components = decodeImage((corpus / "crash-jpeg2000-1000-components").string());
    ASSERT_FALSE(components.ok());
    EXPECT_NE(components.message().find("JPEG 2000 image of 1000 components (at most 4 are decoded)"), std::string::npos)
        << components.message();
    // "-Y -5 +X 3": the header reported a height of -5 (ImageHeader: -1 or >= 0).
    const auto negative = decodeImage((corpus / "crash-radiance-negative-height").string());
    ASSERT_FALSE(negative.ok());
    EXPECT_NE(negative.message().find("corrupt Radiance HDR header (no image size)"), std::string::npos)
        << negative.message();
}

} // namespace
} // namespace attnscope::test
