// Swin from the command line (docs/models.md, "Swin"; docs/analyses.md, "Hierarchical models"): `info` prints its
// stages; `analyze` takes its similarity and attention, per stage, and refuses the other analyses in one line.
#include "CliSupport.h"

#include <attnscope/Image.h>
#include <attnscope/Npy.h>
#include <attnscope/QueryKey.h>

#include <algorithm>

using namespace attnscope::test;
namespace fs = std::filesystem;

namespace {

TEST_F(Cli, InfoPrintsASwinsStagesAndAnalyzeRefusesWhatItCannotRead)
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
// the analyses that read a ViT's one token set are refused in one line, and nothing is written
const CliResult refused
    = cli("analyze --model tests/golden/swin/timm_swin --images resources/samples/fashion-mnist "
          "--analyses similarity,norms,ablation --out "
        + out.string());
EXPECT_EQ(refused.status, 1);
EXPECT_NE(refused.err.find("timm_swin: a Swin (hierarchical windowed attention) takes the analyses "
                           "similarity, attention, centres, snr, ablation and qkmap so far, not norms"),
    std::string::npos)
    << refused.err;
EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
EXPECT_FALSE(fs::exists(out));
}

// `analyze` of a Swin with its default analyses (similarity, attention, centres, snr): the CSVs say each block's stage,
// the attention grid is per block at its stage's grid (the query's window only), with no rollout.
TEST_F(Cli, AnalyzeGivesASwinsSimilarityAndAttentionPerStage)
{
const fs::path out = m_dir / "out";
const CliResult analyze
    = cli("analyze --model tests/golden/swin/timm_swin --images resources/samples/fashion-mnist --formats png "
          "--query 5,6 --noise gaussian:sigma=8 --out "
        + out.string());
ASSERT_EQ(analyze.status, 0) << analyze.err;
const std::string similarity = slurp(out / "token_similarity.csv");
EXPECT_EQ(similarity.substr(0, similarity.find('\n')), "layer,stage,tap,tokens,mean,sd,ci95,n");
EXPECT_NE(similarity.find("\n0,1,block,all,"), std::string::npos) << "the embeddings: stage 1";
EXPECT_NE(similarity.find("\n5,3,block,all,"), std::string::npos) << "block 5 is stage 3's first";
const std::string attention = slurp(out / "attention_similarity.csv");
EXPECT_EQ(attention.substr(0, attention.find('\n')), "layer,stage,successive_cos,head_redundancy,n");
EXPECT_NE(attention.find("\n2,1,nan,"), std::string::npos) << "no successive cosine across a merge:\n" << attention;
const std::string centres = slurp(out / "head_centres.csv");
EXPECT_EQ(centres.substr(0, centres.find('\n')),
    "layer,stage,head,centre_dy,centre_dx,peak_dy,peak_dx,mean_distance_px,bandwidth,prefix_mass,window_mass,n");
EXPECT_NE(centres.find("\n6,3,7,"), std::string::npos) << "block 6 (stage 3) has 8 heads";
const std::string snr = slurp(out / "snr.csv");
EXPECT_EQ(snr.substr(0, snr.find('\n')), "layer,stage,tap,snr_db_mean,snr_db_sd,n");
EXPECT_NE(snr.find("\n6,3,block,"), std::string::npos) << snr;
// the diagnostics need the block's input, which after a merge no tap records: none for blocks 3 and 5
const std::string diagnostics = slurp(out / "snr_diagnostics.csv");
EXPECT_NE(diagnostics.find("\n4,2,"), std::string::npos) << diagnostics;
EXPECT_EQ(diagnostics.find("\n3,2,"), std::string::npos) << diagnostics;
EXPECT_EQ(diagnostics.find("\n5,3,"), std::string::npos) << diagnostics;
// the grid of the first image, for patch (5, 6): at stage 2 (an 8x8 grid) its token is (2, 3)
fs::path grid;
for (const auto& e : fs::directory_iterator(out / "figures"))
    if (e.path().filename().string().rfind("attention_grid", 0) == 0 && e.path().extension() == ".csv")
        grid = e.path();
ASSERT_FALSE(grid.empty());
const std::string csv = slurp(grid);
EXPECT_EQ(csv.substr(0, csv.find('\n')), "layer,stage,block,shifted,head,row,col,attention");
EXPECT_NE(csv.find("\n3,2,1,0,mean,2,3,"), std::string::npos) << "block 3: stage 2's first, the query's token";
EXPECT_TRUE(fs::exists(fs::path(grid).replace_extension(".png")) || analyze.err.find("figures need the Qt build") != std::string::npos)
    << analyze.err;
// head ablation: each block's own heads, with its stage
const fs::path ablationOut = m_dir / "ablation";
const CliResult ablation = cli("analyze --model tests/golden/swin/timm_swin --images resources/samples/fashion-mnist "
                               "--analyses ablation --formats png --out "
    + ablationOut.string());
ASSERT_EQ(ablation.status, 0) << ablation.err;
const std::string heads = slurp(ablationOut / "ablation.csv");
EXPECT_EQ(heads.substr(0, heads.find(',', heads.find(',') + 1)), "layer,stage");
EXPECT_NE(heads.find("\n1,1,1,"), std::string::npos) << heads;
EXPECT_EQ(heads.find("\n1,1,2,"), std::string::npos) << "stage 1 has 2 heads";
EXPECT_NE(heads.find("\n6,3,7,"), std::string::npos) << heads;
}

// The query-key map of every block's heads (docs/analyses.md, "Hierarchical models"): the engine's maps over the first
// images, each at its stage's grid, the CSVs with the stage, qkmap.npy's later stages NaN past their tokens; a head
// is checked against its layer's.
TEST_F(Cli, QueryKeyMapsOfASwinAreEachStagesTokens)
{
    const fs::path out = m_dir / "qk";
    const std::string swin = ATTNSCOPE_SOURCE_DIR "/tests/golden/swin/timm_swin";
    const CliResult r = cli("analyze --model " + swin + " --images resources/samples/fashion-mnist --analyses qkmap --qk-images 2 --formats png --out "
        + out.string());
    ASSERT_EQ(r.status, 0) << r.err;
    attnscope::LoadOptions options;
    options.acceptHierarchical = true;
    auto model = attnscope::Model::load(swin, options);
    ASSERT_TRUE(model) << model.message();
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(ATTNSCOPE_SOURCE_DIR "/resources/samples/fashion-mnist"))
        files.push_back(e.path());
    std::sort(files.begin(), files.end());
    std::vector<attnscope::Tensor> inputs;
    for (size_t i = 0; i < 2; ++i)
        inputs.push_back((*model)->prepare(*attnscope::decodeImage(files[i].string()))->input);
    std::vector<attnscope::HeadRef> heads;
    for (int l = 1; l <= 6; ++l)
        for (int h = 0; h < (*model)->config().headsAt(l); ++h)
            heads.push_back({ l, h });
    auto maps = attnscope::queryKeyMaps(**model, inputs, heads);
    ASSERT_TRUE(maps) << maps.message();

    const auto perHead = readCsv(out / "qkmap_heads.csv");
    ASSERT_EQ(perHead.size(), 28u);
    EXPECT_EQ(perHead.back().at("stage"), "3");
    EXPECT_EQ(perHead.back().at("tokens"), "16");
    const auto rows = readCsv(out / "qkmap.csv");
    ASSERT_EQ(rows.size(), 4u * (2 * 2 * 256 + 2 * 4 * 64 + 2 * 8 * 16));
    const auto npy = attnscope::readNpy((out / "qkmap.npy").string());
    ASSERT_TRUE(npy) << npy.message();
    EXPECT_EQ(npy->shape(), (std::vector<int64_t> { 28, 2, 2, 256, 2 }));
    size_t at = 0;
    for (size_t m = 0; m < maps->size(); ++m) {
        const auto& map = (*maps)[m];
        for (const auto& p : map.points) {
            ASSERT_EQ(rows[at].at("stage"), std::to_string(map.stage + 1));
            ASSERT_EQ(rows[at].at("col"), std::to_string(p.col));
            ASSERT_NEAR(std::stod(rows[at].at("y")), p.y, 1e-9 * std::max(1.0, std::fabs(p.y))) << at;
            const int64_t cell = ((int64_t(m) * 2 + (p.key ? 1 : 0)) * 2 + p.image) * 256 + p.token;
            ASSERT_NEAR(npy->data()[2 * cell], p.x, 1e-5 * std::max(1.0, std::fabs(p.x))) << at;
            ++at;
        }
        EXPECT_EQ(std::isnan(npy->data()[2 * (int64_t(m) * 4 * 256 + 255)]), map.tokens < 256) << "map " << m;
    }
    const std::string grid = slurp(out / "figures" / "qkmap_grid.csv");
    EXPECT_EQ(grid.substr(0, grid.find('\n')), "layer,stage,head,method,scale,agreement");
    EXPECT_EQ(fs::exists(out / "figures" / "qkmap_grid.png"), kCliDrawsFigures);

    const CliResult bad = cli("analyze --model " + swin + " --images resources/samples/fashion-mnist --analyses qkmap --qk-layer 1 --qk-head 2 --out "
        + (m_dir / "bad").string());
    EXPECT_EQ(bad.status, 2) << bad.err;
    EXPECT_NE(bad.err.find("--qk-head 2: layer 1 has heads 0..1 (-1: every head)"), std::string::npos) << bad.err;
    EXPECT_FALSE(fs::exists(m_dir / "bad" / "manifest.json"));
}

} // namespace
