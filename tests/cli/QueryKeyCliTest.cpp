// `analyze --analyses qkmap` (docs/analyses.md section 9; the maps themselves are pinned by QueryKeyGolden): qkmap.csv,
// qkmap.npy and qkmap_heads.csv are the engine's queryKeyMaps over the first images, the one-head figure and the
// global view with their CSVs, the options checked with one-line errors.
#include "CliSupport.h"

#include <attnscope/Image.h>
#include <attnscope/Npy.h>
#include <attnscope/QueryKey.h>

#include <nlohmann/json.hpp>

using namespace attnscope;
using namespace attnscope::test;
namespace fs = std::filesystem;

namespace {

const std::string kSamples = ATTNSCOPE_SOURCE_DIR "/resources/samples/fashion-mnist";

TEST_F(Cli, QueryKeyMapsOfEveryHeadAreTheEnginesOverTheFirstImages)
{
    const fs::path out = m_dir / "out";
    auto r = cli("analyze --model builtin:fmnist-vit-d4 --images " + kSamples + " --analyses qkmap --qk-images 3 --formats png --out " + out.string());
    ASSERT_EQ(r.status, 0) << r.err;
    auto model = Model::load("builtin:fmnist-vit-d4");
    ASSERT_TRUE(model) << model.message();
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(kSamples))
        files.push_back(e.path());
    std::sort(files.begin(), files.end());
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < 3; ++i) {
        auto image = decodeImage(files[i].string());
        ASSERT_TRUE(image);
        inputs.push_back((*model)->prepare(*image)->input);
    }
    std::vector<HeadRef> heads;
    for (int l = 1; l <= 4; ++l)
        for (int h = 0; h < 4; ++h)
            heads.push_back({ l, h });
    auto maps = queryKeyMaps(**model, inputs, heads);
    ASSERT_TRUE(maps) << maps.message();
    const int n = maps->front().tokens;

    const auto rows = readCsv(out / "qkmap.csv");
    ASSERT_EQ(rows.size(), 16u * 2 * 3 * size_t(n));
    const auto npy = readNpy((out / "qkmap.npy").string());
    ASSERT_TRUE(npy) << npy.message();
    EXPECT_EQ(npy->shape(), (std::vector<int64_t> { 16, 2, 3, n, 2 }));
    size_t at = 0;
    for (const auto& map : *maps)
        for (const auto& p : map.points) {
            const auto& row = rows[at];
            ASSERT_EQ(row.at("layer"), std::to_string(map.layer));
            ASSERT_EQ(row.at("head"), std::to_string(map.head));
            ASSERT_EQ(row.at("image"), files[size_t(p.image)].stem().string());
            ASSERT_EQ(row.at("kind"), p.key ? "key" : "query");
            ASSERT_EQ(row.at("row"), std::to_string(p.row));
            ASSERT_NEAR(std::stod(row.at("x")), p.x, 1e-9 * std::max(1.0, std::fabs(p.x))) << at;
            ASSERT_NEAR(npy->data()[2 * at + 1], p.y, 1e-5 * std::max(1.0, std::fabs(p.y))) << at;
            ++at;
        }
    const auto perHead = readCsv(out / "qkmap_heads.csv");
    ASSERT_EQ(perHead.size(), 16u);
    for (size_t i = 0; i < perHead.size(); ++i) {
        EXPECT_EQ(perHead[i].at("method"), "pca");
        EXPECT_NEAR(std::stod(perHead[i].at("agreement")), (*maps)[i].agreement, 1e-9);
    }
    const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
    EXPECT_EQ(manifest["query_key"]["heads"], 16);
    EXPECT_EQ(manifest["query_key"]["images"].size(), 3u);
    // The figure's head: the best agreement.
    size_t best = 0;
    for (size_t i = 1; i < maps->size(); ++i)
        if ((*maps)[i].agreement > (*maps)[best].agreement)
            best = i;
    EXPECT_EQ(manifest["query_key"]["figure_head"], (nlohmann::json { (*maps)[best].layer, (*maps)[best].head }));
    EXPECT_EQ(readCsv(out / "figures" / "qkmap.csv").size(), 2u * 3 * size_t(n));
    EXPECT_EQ(readCsv(out / "figures" / "qkmap_grid.csv").size(), 16u);
    EXPECT_EQ(fs::exists(out / "figures" / "qkmap.png"), kCliDrawsFigures);
    EXPECT_EQ(fs::exists(out / "figures" / "qkmap_grid.png"), kCliDrawsFigures);
}

TEST_F(Cli, QueryKeyMapOfOneHeadByTsne)
{
    const fs::path out = m_dir / "out";
    auto r = cli("analyze --model builtin:fmnist-vit-d4 --images " + kSamples + " --analyses qkmap --qk-layer 2 --qk-head 1 --qk-images 2"
                 " --qk-method tsne --seed 3 --formats png,pdf --out " + out.string());
    ASSERT_EQ(r.status, 0) << r.err;
    const auto perHead = readCsv(out / "qkmap_heads.csv");
    ASSERT_EQ(perHead.size(), 1u);
    EXPECT_EQ(perHead[0].at("method"), "tsne");
    EXPECT_EQ(perHead[0].at("layer"), "2");
    EXPECT_GT(std::stod(perHead[0].at("tsne_kl")), 0);
    EXPECT_FALSE(fs::exists(out / "figures" / "qkmap_grid.csv")); // one head: no global view
    if (kCliDrawsFigures) {
        auto png = decodeImage((out / "figures" / "qkmap.png").string());
        ASSERT_TRUE(png) << png.message();
        EXPECT_GT(png->width, 1000);
        EXPECT_TRUE(fs::exists(out / "figures" / "qkmap.pdf"));
    }
}

TEST_F(Cli, QueryKeyOptionsAreChecked)
{
    const std::string base = "analyze --model builtin:fmnist-vit-d4 --images " + kSamples + " --out " + (m_dir / "bad").string();
    const std::pair<std::string, std::string> cases[] = {
        { " --analyses qkmap --qk-layer 9", "--qk-layer 9: the model has layers 1..4 (0: every layer)" },
        { " --analyses qkmap --qk-head 4", "--qk-head 4: the model has heads 0..3 (-1: every head)" },
        { " --analyses qkmap --qk-method umap", "--qk-method: unknown query-key method \"umap\" (pca, tsne)" },
        { " --analyses qkmap --qk-images 0", "--qk-images 0: expected 1 or more" },
        { " --analyses similarity --qk-head 1", "are options of the qkmap analysis, which the analyses do not include" },
    };
    for (const auto& [args, message] : cases) {
        auto r = cli(base + args);
        EXPECT_EQ(r.status, 2) << args << "\n" << r.err;
        EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
        EXPECT_EQ(countLines(r.err, "qk"), 1) << r.err;
    }
    EXPECT_FALSE(fs::exists(m_dir / "bad" / "manifest.json"));
}

} // namespace
