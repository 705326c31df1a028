// `analyze --analyses norms` (Analyses.h section 7; the numbers are pinned by TokenNormsGolden): the dataset CSV
// token_norms.csv (per layer, over the images), the High-norm tokens figure, and per image a CSV of every token, an
// .npy [L+1, N] and the figure; the per-image files agree with each other and with the dataset means; a bad
// --outlier-ratio is a usage error.
#include "CliSupport.h"

#include <attnscope/Npy.h>

#include <nlohmann/json.hpp>

#include <map>

using namespace attnscope;
using namespace attnscope::test;
namespace fs = std::filesystem;

namespace {

const std::string kSamples = ATTNSCOPE_SOURCE_DIR "/resources/samples/fashion-mnist";

TEST_F(Cli, NormsWriteTheDatasetTableAndEveryImagesTokens)
{
    const fs::path out = m_dir / "out";
    // Every sample gets its per-image files, so the dataset means can be recomputed from them.
    auto r = cli("analyze --model builtin:fmnist-vit-d4 --images " + kSamples + " --analyses norms --grid-images 10 --outlier-ratio 1.5 --out "
                 + out.string());
    ASSERT_EQ(r.status, 0) << r.err;
    const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
    EXPECT_EQ(manifest["options"]["outlier_ratio"], 1.5);
    ASSERT_EQ(manifest["token_norms"].size(), 10u);
    std::map<int, double> outlierSum;
    for (const auto& entry : manifest["token_norms"]) {
        const std::string name = entry["figure"];
        const auto rows = readCsv(out / "figures" / (name + ".csv"));
        ASSERT_EQ(rows.size(), 5u * 50u) << name; // fmnist-vit-d4: X_0..X_4, CLS and 7 x 7 patches
        EXPECT_EQ(rows.front().at("kind"), "cls");
        EXPECT_EQ(rows.front().at("row"), "-1");
        EXPECT_EQ(rows[1].at("kind"), "patch");
        std::map<int, int> outliers;
        for (const auto& row : rows) {
            const int layer = std::stoi(row.at("layer"));
            if (row.at("outlier") == "1") {
                ++outliers[layer];
                EXPECT_EQ(row.at("kind"), "patch");
                EXPECT_GT(std::stod(row.at("ratio")), 1.5);
            } else if (row.at("kind") == "patch") {
                EXPECT_LE(std::stod(row.at("ratio")), 1.5);
            }
            EXPECT_EQ(row.at("attention_received") == "nan", layer == 4) << "X_4 is read by no later attention";
        }
        for (int l = 0; l <= 4; ++l) {
            EXPECT_EQ(entry["outliers_per_layer"][size_t(l)].get<int>(), outliers[l]) << name << " X_" << l;
            outlierSum[l] += outliers[l];
        }
        auto npy = readNpy((out / "figures" / (name + ".npy")).string());
        ASSERT_TRUE(npy) << npy.message();
        EXPECT_EQ(npy->shape(), (std::vector<int64_t> { 5, 50 }));
        EXPECT_NEAR(npy->data()[51], std::stod(rows[51].at("norm")), 1e-5 * std::stod(rows[51].at("norm"))); // X_1, CLS
        EXPECT_EQ(fs::exists(out / "figures" / (name + ".png")), kCliDrawsFigures) << name;
    }
    const auto table = readCsv(out / "token_norms.csv");
    ASSERT_EQ(table.size(), 5u);
    for (const auto& row : table) {
        const int l = std::stoi(row.at("layer"));
        EXPECT_EQ(row.at("n"), "10");
        EXPECT_NEAR(std::stod(row.at("outliers_mean")), outlierSum[l] / 10.0, 1e-12) << "X_" << l;
        EXPECT_GT(std::stod(row.at("patch_median")), 0.0);
        EXPECT_GE(std::stod(row.at("max_ratio")), 1.0);
        EXPECT_EQ(row.at("register_ratio"), "nan"); // no registers
        EXPECT_EQ(row.at("outlier_attention") == "nan", l == 4);
    }
    double total = 0;
    for (const auto& [l, s] : outlierSum)
        total += s;
    EXPECT_GT(total, 0.0) << "a ratio of 1.5 flags nothing on fmnist-vit-d4: the outlier checks above test nothing";
    EXPECT_EQ(readCsv(out / "figures" / "high_norm_tokens.csv").size(), 5u);
    EXPECT_EQ(fs::exists(out / "figures" / "high_norm_tokens.png"), kCliDrawsFigures);
}

TEST_F(Cli, BadOutlierRatiosAreUsageErrors)
{
    const std::string base = "analyze --model builtin:fmnist-vit-d4 --images " + kSamples + " --analyses norms --formats none --out "
        + (m_dir / "out").string();
    auto r = cli(base + " --outlier-ratio 1");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(countLines(r.err, "--outlier-ratio 1: expected a number above 1"), 1) << r.err;
    r = cli(base + " --outlier-ratio nan");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(countLines(r.err, "expected a number above 1"), 1) << r.err;
}

} // namespace
