// --input-size on `analyze` and `info`: the usage errors, and a run at another size whose grids, tensors and manifest
// follow the new patch grid (InputSizeTest.cpp checks the numbers against timm).
#include "CliSupport.h"

#include <attnscope/Npy.h>
#include <nlohmann/json.hpp>

using namespace attnscope;
using namespace attnscope::test;
namespace fs = std::filesystem;

namespace {

// Bad values: one line naming the value, exit status 2 (bad usage), nothing written. 30 and 6 are no multiples of
// fmnist-vit-d4's patch size 4, which only the loaded model can tell.
TEST_F(Cli, InputSizeUsageErrorsExitWithTwo)
{
    const std::string common
        = "analyze --model builtin:fmnist-vit-d4 --images resources/samples/fashion-mnist --analyses similarity --out "
        + (m_dir / "out").string();
    const std::pair<std::string, std::string> bad[] = {
        { "--input-size 0", "--input-size 0: expected H,W or N" },
        { "--input-size=-8", "--input-size -8: expected H,W or N" },
        { "--input-size 28,-4", "--input-size 28,-4: expected H,W or N" },
        { "--input-size abc", "--input-size abc: expected H,W or N" },
        { "--input-size 28,", "--input-size 28,: expected H,W or N" },
        { "--input-size 28,28,28", "--input-size 28,28,28: expected H,W or N" },
        { "--input-size 28.5", "--input-size 28.5: expected H,W or N" },
        { "--input-size 99999", "--input-size 99999: expected H,W or N" },
        { "--input-size 30,28", "--input-size 30,28: 30 is not a multiple of the patch size 4 of builtin:fmnist-vit-d4" },
        { "--input-size 6", "--input-size 6: 6 is not a multiple of the patch size 4 of builtin:fmnist-vit-d4" },
    };
    for (const auto& [args, message] : bad) {
        auto r = cli(common + " " + args);
        EXPECT_EQ(r.status, 2) << args << ": " << r.err;
        EXPECT_EQ(countLines(r.err, "."), 1) << r.err;
        EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(m_dir / "out")) << args;
        auto info = cli("info builtin:fmnist-vit-d4 " + args);
        EXPECT_EQ(info.status, 2) << args << ": " << info.err;
        EXPECT_NE(info.err.find(message), std::string::npos) << info.err;
    }
}

TEST_F(Cli, InfoShowsTheInputSizeAndTheTrainedOne)
{
    auto text = cli("info builtin:fmnist-vit-d4 --input-size 40,32");
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("input size   40x32 (trained at 28x28; position embedding resampled bicubically)"),
        std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("grid         10x8 = 80 patches"), std::string::npos) << text.out;
    auto json = cli("info builtin:fmnist-vit-d4 --input-size 36 --json");
    ASSERT_EQ(json.status, 0) << json.err;
    const auto j = nlohmann::json::parse(json.out);
    EXPECT_EQ(j["input_size"], nlohmann::json({ 36, 36 }));
    EXPECT_EQ(j["trained_input_size"], nlohmann::json({ 28, 28 }));
    EXPECT_EQ(j["grid"], nlohmann::json({ 9, 9 }));
    EXPECT_EQ(j["preprocessing"]["crop"], nlohmann::json({ 36, 36 }));
    auto plain = cli("info builtin:fmnist-vit-d4 --json");
    ASSERT_EQ(plain.status, 0) << plain.err;
    EXPECT_EQ(nlohmann::json::parse(plain.out)["input_size"], nlohmann::json({ 28, 28 }));
}

// At 40x32 the 4-pixel patches make a 10x8 grid: the attention grid's rows and columns, the dumped attention
// [heads, 1 + 80, 1 + 80] and the manifest follow it, for the compared model as well.
TEST_F(Cli, AnalyzeAtAnotherSizeWritesGridsOfTheNewShape)
{
    auto r = cli("analyze --model builtin:fmnist-vit-d4 --compare builtin:fmnist-quadratic --input-size 40,32 --images "
                 "resources/samples/fashion-mnist/test-0000-ankle-boot.png "
                 "resources/samples/fashion-mnist/test-0001-pullover.png "
                 "--analyses similarity,attention,centres --dump-tensors --formats png --out "
        + m_dir.string());
    ASSERT_EQ(r.status, 0) << r.err;
    const auto rows = readCsv(m_dir / "figures" / "attention_grid.csv");
    ASSERT_FALSE(rows.empty());
    int maxRow = -1, maxCol = -1;
    for (const auto& row : rows) {
        maxRow = std::max(maxRow, std::stoi(row.at("row")));
        maxCol = std::max(maxCol, std::stoi(row.at("col")));
    }
    EXPECT_EQ(maxRow, 9);
    EXPECT_EQ(maxCol, 7);
    auto attention = readNpy((m_dir / "tensors" / "test-0000-ankle-boot" / "attn_L1.npy").string());
    ASSERT_TRUE(attention.ok()) << attention.message();
    EXPECT_EQ(attention->shape(), (std::vector<int64_t> { 4, 81, 81 }));

    const auto manifest = nlohmann::json::parse(slurp(m_dir / "manifest.json"));
    EXPECT_EQ(manifest["options"]["input_size"], nlohmann::json({ 40, 32 }));
    EXPECT_EQ(manifest["model"]["input_size"], nlohmann::json({ 40, 32 }));
    EXPECT_EQ(manifest["model"]["trained_input_size"], nlohmann::json({ 28, 28 }));
    ASSERT_EQ(manifest["runs"].size(), 2u);
    EXPECT_EQ(manifest["runs"][1]["model"]["input_size"], nlohmann::json({ 40, 32 })) << manifest["runs"][1];

    // Without the option the manifest says so (null) and the grid is the trained 7x7.
    auto plain
        = cli("analyze --model builtin:fmnist-vit-d4 --images resources/samples/fashion-mnist/test-0000-ankle-boot.png "
              "--analyses similarity --formats png --out "
            + (m_dir / "plain").string());
    ASSERT_EQ(plain.status, 0) << plain.err;
    const auto plainManifest = nlohmann::json::parse(slurp(m_dir / "plain" / "manifest.json"));
    EXPECT_TRUE(plainManifest["options"]["input_size"].is_null());
    EXPECT_EQ(plainManifest["model"]["input_size"], nlohmann::json({ 28, 28 }));
}

} // namespace
