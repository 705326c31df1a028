// attnscope-cli on files of the bad-input corpus (tests/data/bad): exit code 1 and one line on stderr that names
// the file and the cause (images with --strict; without it a bad image is skipped, SkippedImages below).
#include "CliSupport.h"

#include <nlohmann/json.hpp>

using namespace attnscope::test;
namespace fs = std::filesystem;

namespace {

const std::string kCorpus = ATTNSCOPE_SOURCE_DIR "/tests/data/bad/";

void expectOneLineNaming(const CliResult& r, const std::string& file, const std::string& cause)
{
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(cause), std::string::npos) << r.err;
}

TEST_F(Cli, InfoOnBrokenModelsFailsWithOneLine)
{
    const std::pair<const char*, const char*> cases[] = {
        { "model_empty.safetensors", "shorter than the 8-byte header length" },
        { "model_huge_header_length.safetensors", "exceeds the limit" },
        { "model_nan_weight.safetensors", "blocks.0.norm2.weight holds NaN or Inf" },
        { "model_heads_not_dividing_width", "3 heads do not divide width 16" },
        { "model_no_model_folder", "no model in this folder" },
        { "model_pickle_runs_code.pt", "no code is run" },
    };
    for (const auto& [file, cause] : cases) {
        SCOPED_TRACE(file);
        expectOneLineNaming(cli("info " + kCorpus + file), file, cause);
    }
    EXPECT_EQ(cli("info " + kCorpus + "model_ok.safetensors").status, 0);
}

TEST_F(Cli, AnalyzeOnBrokenInputsFailsWithOneLine)
{
    const std::string out = " --out " + (m_dir / "out").string() + " --analyses similarity --formats png --strict";
    expectOneLineNaming(cli("analyze --model " + kCorpus + "model_truncated_data.safetensors --images " + kCorpus + "image_ok.png" + out),
                        "model_truncated_data.safetensors", "truncated file?");
    const std::pair<const char*, const char*> images[] = {
        { "image_truncated.png", "corrupt or truncated PNG image" },
        { "image_truncated.jpg", "truncated JPEG" },
        { "image_enormous.png", "more than the budget" },
        { "image_text.png", "not an image" },
        { "image_animated.gif", "GIF images are not supported" },
    };
    for (const auto& [file, cause] : images) {
        SCOPED_TRACE(file);
        expectOneLineNaming(cli("analyze --model builtin:fmnist-vit-d4 --images " + kCorpus + file + out), file, cause);
    }
    // Unusual but valid images are analysed.
    auto ok = cli("analyze --model builtin:fmnist-vit-d4 --images " + kCorpus + "image_cmyk.jpg " + kCorpus + "image_16bit_rgb.png "
                  + kCorpus + "image_rgba.png" + out);
    EXPECT_EQ(ok.status, 0) << ok.err;
}

// Without --strict, images that cannot be read are skipped: one line each naming the file and the cause, the others
// analysed, the skipped listed with their causes in the manifest, a summary line, and exit status 3.
TEST_F(Cli, SkippedImagesAreListedAndTheRunFinishes)
{
    const fs::path images = m_dir / "images";
    fs::create_directories(images);
    for (const auto& e : fs::directory_iterator(ATTNSCOPE_SOURCE_DIR "/resources/samples/fashion-mnist"))
        fs::copy_file(e.path(), images / e.path().filename());
    const char* broken[] = { "image_truncated.png", "image_truncated.jpg", "image_text.png", "image_empty.png" };
    for (const char* file : broken)
        fs::copy_file(kCorpus + file, images / file);
    std::ofstream(images / "notes.jpg") << "{\"a JSON file\": \"named .jpg\"}";
    auto r = cli("analyze --model builtin:fmnist-vit-d4 --images " + images.string() + " --analyses similarity --formats none --batch 3 --out "
                 + (m_dir / "out").string());
    EXPECT_EQ(r.status, 3) << r.err;
    EXPECT_EQ(countLines(r.err, "^attnscope-cli: skipped "), 5) << r.err;
    for (const char* file : broken)
        EXPECT_EQ(countLines(r.err, std::string("skipped .*") + file + ": "), 1) << file << "\n" << r.err;
    EXPECT_EQ(countLines(r.err, "^attnscope-cli: 10 images analysed, 5 skipped"), 1) << r.err;
    const auto manifest = nlohmann::json::parse(slurp(m_dir / "out" / "manifest.json"));
    EXPECT_EQ(manifest["images"].size(), 10u);
    ASSERT_EQ(manifest["skipped"].size(), 5u);
    for (const auto& s : manifest["skipped"])
        EXPECT_NE(s["cause"].get<std::string>().find(s["path"].get<std::string>()), std::string::npos) << s;
    EXPECT_EQ(readCsv(m_dir / "out" / "token_similarity.csv").front().at("n"), "10");
}

} // namespace

// The case at its size: the 1,000 CIFAR-10 test images with 10 of them replaced by broken files (truncated,
// corrupt, empty, not images, over the pixel budget), with the third-party CIFAR-10 ViT: 990 analysed, 10 skipped.
TEST_F(Cli, AThousandImagesWithTenBrokenOnesGiveNineHundredNinetyAnalysed)
{
    const std::string data = sharedDir() + "/data/cifar10-test-1000", pt = sharedDir() + "/models/cifar10-vit-tintn/model_final.pt";
    if (!fs::exists(data) || !fs::exists(pt))
        GTEST_SKIP() << data << " or " << pt << " is absent";
    std::vector<fs::path> images;
    for (const auto& e : fs::recursive_directory_iterator(data))
        if (e.is_regular_file())
            images.push_back(e.path());
    std::sort(images.begin(), images.end());
    ASSERT_EQ(images.size(), 1000u);
    const char* broken[] = { "image_truncated.png", "image_truncated.jpg", "image_text.png", "image_empty.png", "image_bad_crc.png",
                             "image_enormous.jpg", "image_enormous.bmp", "image_random_bytes.jpg", "image_zero_size.png",
                             "image_truncated_header.png" };
    const fs::path folder = m_dir / "images";
    for (size_t i = 0; i < images.size(); ++i) {
        const fs::path place = folder / images[i].parent_path().filename() / images[i].filename();
        fs::create_directories(place.parent_path());
        if (i % 100 == 50) // every hundredth image, from the 51st, replaced by a broken file under its name
            fs::copy_file(kCorpus + broken[i / 100], place.parent_path() / (std::string("broken-") + broken[i / 100]));
        else
            fs::create_symlink(images[i], place);
    }
    auto r = cli("analyze --model " + pt + " --description docs/examples/cifar10-vit-tintn.json --images " + folder.string()
                 + " --formats none --out " + (m_dir / "out").string());
    EXPECT_EQ(r.status, 3) << r.err;
    EXPECT_EQ(countLines(r.err, "^attnscope-cli: skipped "), 10) << r.err;
    EXPECT_EQ(countLines(r.err, "^attnscope-cli: 990 images analysed, 10 skipped"), 1) << r.err;
    const auto manifest = nlohmann::json::parse(slurp(m_dir / "out" / "manifest.json"));
    EXPECT_EQ(manifest["images"].size(), 990u);
    EXPECT_EQ(manifest["skipped"].size(), 10u);
    EXPECT_TRUE(manifest["complete"].get<bool>());
}
