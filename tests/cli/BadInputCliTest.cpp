// attnscope-cli on files of the bad-input corpus (tests/data/bad): exit code 1 and one line on stderr that names
// the file and the cause.
#include "CliSupport.h"

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
    const std::string out = " --out " + (m_dir / "out").string() + " --analyses similarity --formats png";
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
        expectOneLineNaming(cli("analyze --model builtin:fmnist-vit --images " + kCorpus + file + out), file, cause);
    }
    // Unusual but valid images are analysed.
    auto ok = cli("analyze --model builtin:fmnist-vit --images " + kCorpus + "image_cmyk.jpg " + kCorpus + "image_16bit_rgb.png "
                  + kCorpus + "image_rgba.png" + out);
    EXPECT_EQ(ok.status, 0) << ok.err;
}

} // namespace
