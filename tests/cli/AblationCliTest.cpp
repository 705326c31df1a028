// `analyze --analyses ablation` (Analyses.h section 8; the per-image numbers are pinned by HeadAblationGolden):
// ablation.csv per run, one row per layer and head, whose means are those of the engine's headAblation over the
// same images; the mode in the manifest; a bad --ablation is a usage error.
#include "CliSupport.h"

#include <attnscope/Analyses.h>
#include <attnscope/Datasets.h>
#include <attnscope/Image.h>

#include <nlohmann/json.hpp>

#include <map>

using namespace attnscope;
using namespace attnscope::test;
namespace fs = std::filesystem;

namespace {

const std::string kSamples = ATTNSCOPE_SOURCE_DIR "/resources/samples/fashion-mnist";

TEST_F(Cli, AblationWritesEveryHeadsMeanEffect)
{
    const fs::path out = m_dir / "out";
    auto r = cli("analyze --model builtin:fmnist-vit-d4 --images " + kSamples + " --analyses ablation --ablation mean --out " + out.string());
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(slurp(out / "manifest.json"))["options"]["ablation"], "mean");
    const auto rows = readCsv(out / "ablation.csv");
    ASSERT_EQ(rows.size(), 4u * 4u); // fmnist-vit-d4: 4 layers x 4 heads

    // The same means from the engine, image by image.
    auto model = Model::load("builtin:fmnist-vit-d4");
    ASSERT_TRUE(model) << model.message();
    std::map<std::pair<int, int>, double> kl, flips;
    int images = 0;
    for (const auto& e : fs::directory_iterator(kSamples)) {
        auto image = decodeImage(e.path().string());
        ASSERT_TRUE(image) << image.message();
        auto prepared = (*model)->prepare(*image);
        ASSERT_TRUE(prepared);
        auto a = headAblation(**model, prepared->input, AblationMode::Mean);
        ASSERT_TRUE(a) << a.message();
        for (const auto& h : a->heads) {
            kl[{ h.layer, h.head }] += h.kl;
            flips[{ h.layer, h.head }] += h.flip;
        }
        ++images;
    }
    for (const auto& row : rows) {
        const std::pair<int, int> at { std::stoi(row.at("layer")), std::stoi(row.at("head")) };
        EXPECT_EQ(row.at("n"), std::to_string(images));
        EXPECT_NEAR(std::stod(row.at("kl_mean")), kl[at] / images, 1e-6 * std::max(1.0, kl[at] / images)) << row.at("layer") << "/" << row.at("head");
        EXPECT_NEAR(std::stod(row.at("flip_share")), flips[at] / images, 1e-9);
        EXPECT_GE(std::stod(row.at("kl_mean")), 0.0);
    }
    auto bad = cli("analyze --model builtin:fmnist-vit-d4 --images " + kSamples + " --analyses ablation --ablation half --out " + (m_dir / "bad").string());
    EXPECT_EQ(bad.status, 2);
    EXPECT_NE(bad.err.find("--ablation: unknown ablation \"half\" (zero, mean)"), std::string::npos) << bad.err;
}

// Images in class folders: ablation.csv gives each head's accuracy change over the images whose folder names a class
// ("t-shirt" names none of Fashion-MNIST's: its class is "T-shirt/top"), and the head_ablation figure and its CSV.
TEST_F(Cli, AblationAccuracyChangeCountsTheImagesOfKnownClass)
{
    auto model = Model::load("builtin:fmnist-vit-d4");
    ASSERT_TRUE(model) << model.message();
    const auto& labels = (*model)->info().labels;
    const fs::path set = m_dir / "set";
    std::map<std::pair<int, int>, double> change;
    int labelled = 0;
    for (const auto& e : fs::directory_iterator(kSamples)) {
        const std::string stem = e.path().stem().string(); // test-0000-ankle-boot
        const fs::path folder = set / stem.substr(10);
        fs::create_directories(folder);
        fs::copy_file(e.path(), folder / e.path().filename());
        const int truth = classOfFolder((folder / e.path().filename()).string(), labels);
        EXPECT_EQ(truth < 0, stem.substr(10) == "t-shirt") << stem;
        if (truth < 0)
            continue;
        auto image = decodeImage(e.path().string());
        ASSERT_TRUE(image) << image.message();
        auto prepared = (*model)->prepare(*image);
        ASSERT_TRUE(prepared);
        auto a = headAblation(**model, prepared->input);
        ASSERT_TRUE(a) << a.message();
        for (const auto& h : a->heads)
            change[{ h.layer, h.head }] += double(h.predicted == truth) - double(a->predicted == truth);
        ++labelled;
    }
    ASSERT_EQ(labelled, 9);
    const fs::path out = m_dir / "out";
    auto r = cli("analyze --model builtin:fmnist-vit-d4 --images " + set.string() + " --analyses ablation --formats png,svg --out " + out.string());
    ASSERT_EQ(r.status, 0) << r.err;
    const auto rows = readCsv(out / "ablation.csv");
    ASSERT_EQ(rows.size(), 16u);
    bool anyChange = false;
    for (const auto& row : rows) {
        const std::pair<int, int> at { std::stoi(row.at("layer")), std::stoi(row.at("head")) };
        EXPECT_EQ(row.at("n"), "10");
        EXPECT_EQ(row.at("labelled"), "9");
        EXPECT_NEAR(std::stod(row.at("acc_change")), change[at] / labelled, 1e-9) << row.at("layer") << "/" << row.at("head");
        anyChange = anyChange || change[at] != 0;
    }
    EXPECT_TRUE(anyChange) << "no head changes the accuracy: the test cannot tell a wrong sign";
    const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
    EXPECT_EQ(manifest["runs"][0]["options"]["labelled_images"], 9);
    const auto figure = readCsv(out / "figures" / "head_ablation.csv");
    EXPECT_EQ(figure.size(), 16u);
    for (const auto& row : figure)
        EXPECT_EQ(row.at("labelled"), "9");
    EXPECT_EQ(fs::exists(out / "figures" / "head_ablation.png"), kCliDrawsFigures);
    if (kCliDrawsFigures) {
        auto png = decodeImage((out / "figures" / "head_ablation.png").string());
        ASSERT_TRUE(png) << png.message();
        EXPECT_GT(png->width, 600);
        EXPECT_TRUE(fs::exists(out / "figures" / "head_ablation.svg"));
    }
}

} // namespace
