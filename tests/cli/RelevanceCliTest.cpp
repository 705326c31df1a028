// `analyze --analyses relevance` (Analyses.h section 10; the numbers are pinned by RelevanceGolden): per image a CSV of
// both maps, an .npy [2, gh, gw] and the figure; the predicted class by default, --class to choose; bad values are
// usage errors.
#include "CliSupport.h"

#include <attnscope/Npy.h>

#include <nlohmann/json.hpp>

using namespace attnscope;
using namespace attnscope::test;
namespace fs = std::filesystem;

namespace {

const std::string kSamples = ATTNSCOPE_SOURCE_DIR "/resources/samples/fashion-mnist";

TEST_F(Cli, RelevanceWritesBothMapsForThePredictedOrTheChosenClass)
{
    const fs::path out = m_dir / "out";
    auto r = cli("analyze --model builtin:fmnist-vit-d4 --images " + kSamples + " --analyses similarity,relevance --grid-images 2 --out "
                 + out.string());
    ASSERT_EQ(r.status, 0) << r.err;
    const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
    ASSERT_EQ(manifest["relevance"].size(), 2u);
    const auto predictions = readCsv(out / "predictions.csv");
    for (const auto& entry : manifest["relevance"]) {
        const std::string name = entry["figure"];
        const auto rows = readCsv(out / "figures" / (name + ".csv"));
        ASSERT_EQ(rows.size(), 7u * 7u) << name; // fmnist-vit-d4: 28 x 28 in patches of 4
        // The predicted class: the top-1 row of predictions.csv for that image.
        std::string top;
        for (const auto& p : predictions)
            if (p.at("rank") == "1" && p.at("image").find(entry["image"].get<std::string>()) != std::string::npos)
                top = p.at("class");
        EXPECT_EQ(rows.front().at("class"), top) << name;
        EXPECT_EQ(std::to_string(entry["class"].get<int>()), top);
        EXPECT_EQ(rows.front().at("gradcam_layer"), "3"); // X_{L-1} of the 4-layer model
        double gae = 0;
        for (const auto& row : rows) {
            gae += std::stod(row.at("gae"));
            EXPECT_GE(std::stod(row.at("gradcam")), 0.0);
        }
        EXPECT_GT(gae, 0.0);
        auto npy = readNpy((out / "figures" / (name + ".npy")).string());
        ASSERT_TRUE(npy) << npy.message();
        EXPECT_EQ(npy->shape(), (std::vector<int64_t> { 2, 7, 7 }));
        EXPECT_NEAR(npy->data()[0], std::stod(rows.front().at("gae")), 1e-6 * (1 + std::abs(npy->data()[0])));
        EXPECT_EQ(fs::exists(out / "figures" / (name + ".png")), kCliDrawsFigures) << name;
    }

    auto chosen = cli("analyze --model builtin:fmnist-vit-d4 --images " + kSamples + " --analyses relevance --grid-images 1 --class 3"
                      " --gradcam-layer 1 --formats none --out " + (m_dir / "three").string());
    ASSERT_EQ(chosen.status, 0) << chosen.err;
    const auto rows = readCsv(m_dir / "three" / "figures" / "relevance.csv");
    EXPECT_EQ(rows.front().at("class"), "3");
    EXPECT_EQ(rows.front().at("gradcam_layer"), "1");
}

TEST_F(Cli, RelevanceOptionsOutsideTheModelAreUsageErrors)
{
    const std::string base = "analyze --model builtin:fmnist-vit-d4 --images " + kSamples + " --analyses relevance --formats none --out "
        + (m_dir / "out").string();
    auto r = cli(base + " --class 10");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(countLines(r.err, "--class 10: the model has classes 0..9"), 1) << r.err;
    r = cli(base + " --gradcam-layer 5");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(countLines(r.err, "--gradcam-layer 5: the model's block outputs are 0..4"), 1) << r.err;
    r = cli("analyze --model builtin:fmnist-vit-d4 --images " + kSamples + " --analyses relevence --out " + (m_dir / "x").string());
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(countLines(r.err, "unknown analysis \"relevence\""), 1) << r.err;
}

} // namespace
