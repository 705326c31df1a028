// Swin from the command line (docs/models.md, "Swin"): `info` prints its stages; `analyze`, which reads traces as a
// ViT's, refuses it in one line and writes nothing.
#include "CliSupport.h"

#include <algorithm>

using namespace attnscope::test;
namespace fs = std::filesystem;

namespace {

TEST_F(Cli, InfoPrintsASwinsStagesAndAnalyzeRefusesIt)
{
const CliResult info = cli("info tests/golden/swin/timm_swin");
ASSERT_EQ(info.status, 0) << info.err;
EXPECT_NE(info.out.find("family       swin, timm naming"), std::string::npos) << info.out;
EXPECT_NE(info.out.find("stages       3 (swin, blocks 6)"), std::string::npos) << info.out;
EXPECT_NE(info.out.find("  stage 1    2 blocks, 2 heads, width 16 (MLP 64), grid 16x16, window 4x4 (16 windows, "
                        "odd blocks shifted by 2)"),
    std::string::npos)
    << info.out;
EXPECT_NE(info.out.find(
              "  stage 3    2 blocks, 8 heads, width 64 (MLP 256), grid 4x4, window 4x4 (1 windows, not shifted)"),
    std::string::npos)
    << info.out;
const CliResult json = cli("info --json tests/golden/swin/hf_swinv2");
ASSERT_EQ(json.status, 0) << json.err;
EXPECT_NE(json.out.find("\"hierarchy\": \"swinv2\""), std::string::npos) << json.out;
EXPECT_NE(json.out.find("\"pretrained_window\": 3"), std::string::npos) << json.out;

const fs::path out = m_dir / "out";
const CliResult analyze
    = cli("analyze --model tests/golden/swin/timm_swin --images resources/samples/fashion-mnist "
          "--analyses similarity --out "
        + out.string());
EXPECT_EQ(analyze.status, 1);
EXPECT_NE(
    analyze.err.find(
        "a Swin (hierarchical windowed attention): attnscope-cli info shows it and the engine runs it exactly"),
    std::string::npos)
    << analyze.err;
EXPECT_EQ(std::count(analyze.err.begin(), analyze.err.end(), '\n'), 1) << analyze.err;
EXPECT_FALSE(fs::exists(out));
}

} // namespace
