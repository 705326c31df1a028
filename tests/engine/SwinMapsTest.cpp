// A Swin's attention on the image (docs/analyses.md, "Hierarchical models"): which token each window key is, the
// clicked patch's row placed on its stage's grid, the attention grid, and the attention similarity per block. The
// reference is timm: its own roll, padding and window_partition of an index grid (tests/golden/make_swin_windows.py)
// and its maps per window (make_swin.py's attn_L*.npy).
#include "TestSupport.h"

#include <attnscope/Analyses.h>
#include <attnscope/FigureData.h>
#include <attnscope/Model.h>
#include <attnscope/Perturbation.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace attnscope;
using namespace attnscope::test;

namespace {

Trace mapsOf(const Model& model, const std::string& dir)
{
    RunOptions options;
    options.record.attention = true;
    auto trace = model.run(loadNpy(dir + "/input.npy"), options);
    EXPECT_TRUE(trace.ok()) << trace.message();
    return trace.ok() ? std::move(*trace) : Trace {};
}

// timm's window of every token of block l: keys[w][k] is a token or -1.
std::vector<std::vector<int>> timmWindows(const std::string& dir, int l)
{
    const Tensor t = loadNpy(dir + "/window_tokens_L" + std::to_string(l) + ".npy");
    std::vector<std::vector<int>> keys(size_t(t.size(0)), std::vector<int>(size_t(t.size(1))));
    for (int64_t w = 0; w < t.size(0); ++w)
        for (int64_t k = 0; k < t.size(1); ++k)
            keys[size_t(w)][size_t(k)] = int(t.data()[w * t.size(1) + k]);
    return keys;
}

const char* const kFolders[] = { "timm_swin", "timm_swin_pad" };

} // namespace

TEST(SwinMaps, EveryTokenIsInTheWindowTimmPutsItIn)
{
    for (const char* folder : kFolders) {
        auto model = loadSwin(swinDir(folder));
        ASSERT_TRUE(model);
        const auto blocks = windowBlocks(model->config());
        for (size_t l = 1; l <= blocks.size(); ++l) {
            const WindowBlock& g = blocks[l - 1];
            const auto keys = timmWindows(swinDir(folder), int(l));
            ASSERT_EQ(int(keys.size()), g.numWindows()) << folder << " block " << l;
            for (int w = 0; w < g.numWindows(); ++w)
                for (int k = 0; k < g.windowArea(); ++k) {
                    ASSERT_EQ(g.tokenOf(w, k), keys[size_t(w)][size_t(k)]) << folder << " block " << l << " window " << w << " key " << k;
                    if (keys[size_t(w)][size_t(k)] >= 0) {
                        const int token = keys[size_t(w)][size_t(k)];
                        const WindowBlock::Place p = g.place(token / g.gridW, token % g.gridW);
                        EXPECT_EQ(p.window, w);
                        EXPECT_EQ(p.row, k);
                    }
                }
        }
    }
}

TEST(SwinMaps, AClickedPatchSeesItsWindowsRowOnItsStagesGrid)
{
    for (const char* folder : kFolders) {
        const std::string dir = swinDir(folder);
        auto model = loadSwin(dir);
        ASSERT_TRUE(model);
        const Trace trace = mapsOf(*model, dir);
        ASSERT_TRUE(trace.hierarchical());
        const int gw = trace.gridWidth;
        for (int query : { 0, gw + 3, trace.gridHeight * gw - 1, (trace.gridHeight / 2) * gw + gw / 2 }) {
            for (int l = 1; l <= trace.depth; ++l) {
                const WindowBlock& g = trace.windows[size_t(l - 1)];
                const Tensor golden = loadNpy(dir + "/attn_L" + std::to_string(l) + ".npy"); // timm's [nW, H, n, n]
                const auto keys = timmWindows(dir, l);
                // the query's token at this stage, and where timm put it
                const int token = ((query / gw) >> g.stage) * g.gridW + ((query % gw) >> g.stage);
                int window = -1, row = -1;
                for (size_t w = 0; w < keys.size(); ++w)
                    for (size_t k = 0; k < keys[w].size(); ++k)
                        if (keys[w][k] == token)
                            window = int(w), row = int(k);
                ASSERT_GE(window, 0);
                const int64_t H = g.heads, n = g.windowArea();
                for (int head = -1; head < H; ++head) {
                    const AttentionMap map = attentionMap(trace, l, head, query);
                    ASSERT_EQ(map.patches.size(0), g.gridH);
                    ASSERT_EQ(map.patches.size(1), g.gridW);
                    std::vector<double> expected(size_t(g.gridH * g.gridW), std::nan(""));
                    double padding = 0;
                    for (int64_t k = 0; k < n; ++k) {
                        double v = 0;
                        for (int64_t h = head < 0 ? 0 : head; h < (head < 0 ? H : head + 1); ++h)
                            v += golden.data()[((window * H + h) * n + row) * n + k];
                        v /= head < 0 ? double(H) : 1.0;
                        if (keys[size_t(window)][size_t(k)] < 0)
                            padding += v;
                        else
                            expected[size_t(keys[size_t(window)][size_t(k)])] = v;
                    }
                    double total = map.paddingMass;
                    for (size_t i = 0; i < expected.size(); ++i) {
                        const float got = map.patches.data()[i];
                        if (std::isnan(expected[i])) {
                            EXPECT_TRUE(std::isnan(got)) << folder << " block " << l << " cell " << i << " is outside the window";
                        } else {
                            EXPECT_NEAR(got, expected[i], 1e-4) << folder << " block " << l << " head " << head << " cell " << i;
                            total += got;
                        }
                    }
                    EXPECT_NEAR(map.paddingMass, padding, 1e-4) << folder << " block " << l;
                    EXPECT_NEAR(total, 1.0, 1e-5) << "a row is the window's softmax";
                    // renormalised: the image's part of the row sums to 1
                    const AttentionMap renormalised = attentionMap(trace, l, head, query, true);
                    double inside = 0;
                    for (int64_t i = 0; i < renormalised.patches.numel(); ++i)
                        if (!std::isnan(renormalised.patches.data()[i]))
                            inside += renormalised.patches.data()[i];
                    EXPECT_NEAR(inside, 1.0, 1e-5);
                }
            }
        }
        // the padded model has keys in the padding somewhere
        if (std::string(folder) == "timm_swin_pad")
            EXPECT_GT(attentionMap(trace, 3, -1, trace.gridHeight * gw - 1).paddingMass, 0.0);
        EXPECT_THROW(attentionMap(trace, 1, trace.windows[0].heads, 0), std::out_of_range);
        EXPECT_THROW(attentionMap(trace, 1, 0, trace.gridHeight * gw), std::out_of_range);
        // the rows of a query (what the window draws, the tiles) give the trace's maps, bit for bit
        const QueryRows rows = queryRows(trace, gw + 3);
        ASSERT_TRUE(rows.hierarchical());
        EXPECT_EQ(rows.numHeads, trace.windows.back().heads);
        for (int l = 1; l <= trace.depth; ++l)
            for (int head = -1; head < trace.windows[size_t(l - 1)].heads; ++head)
                for (bool renormalise : { false, true }) {
                    const AttentionMap a = attentionMap(rows, l, head, renormalise);
                    const AttentionMap b = attentionMap(trace, l, head, gw + 3, renormalise);
                    ASSERT_EQ(a.patches.numel(), b.patches.numel());
                    EXPECT_EQ(0, std::memcmp(a.patches.data(), b.patches.data(), size_t(a.patches.numel()) * sizeof(float)))
                        << "block " << l << " head " << head;
                    EXPECT_EQ(a.paddingMass, b.paddingMass);
                }
        EXPECT_THROW(attentionMap(rows, 1, trace.windows[0].heads, false), std::out_of_range);
    }
}

TEST(SwinMaps, TheGridHasABlocksHeadsPerRowAndNoRollout)
{
    const std::string dir = swinDir("timm_swin");
    auto model = loadSwin(dir);
    ASSERT_TRUE(model);
    const Trace trace = mapsOf(*model, dir);
    const AttentionGrid grid = attentionGrid(trace);
    EXPECT_EQ(grid.query, (trace.gridHeight / 2) * trace.gridWidth + trace.gridWidth / 2) << "the centre patch";
    ASSERT_EQ(int(grid.maps.size()), trace.depth);
    for (int l = 1; l <= trace.depth; ++l)
        EXPECT_EQ(int(grid.maps[size_t(l - 1)].size()), trace.windows[size_t(l - 1)].heads + 1) << "heads, then their mean";
    EXPECT_EQ(blockName(trace, 2), "stage 1, block 2 (shifted)");
    EXPECT_EQ(blockName(trace, 6), "stage 3, block 2") << "a grid of one window is not shifted";
    EXPECT_TRUE(grid.rollout.patches.empty());
    EXPECT_EQ(grid.rolloutRefused, kNoHierarchicalRollout);
    EXPECT_THROW(attentionRollout(trace), std::invalid_argument);
    // the CSV: stage and block of each row, the window's cells only (a 4x4 window: 16 cells per map, no padding here)
    const std::string csv = figureCsv(grid);
    EXPECT_EQ(csv.substr(0, csv.find('\n')), "layer,stage,block,shifted,head,row,col,attention");
    size_t lines = 0;
    for (char c : csv)
        lines += c == '\n';
    size_t maps = 0;
    for (const auto& row : grid.maps)
        maps += row.size();
    EXPECT_EQ(lines, 1 + maps * 16);
    EXPECT_NE(csv.find("\n2,1,2,1,mean,"), std::string::npos) << "block 2: stage 1, block 2, shifted";
}

// The attention similarity of a hierarchical trace against its definition on dense N x N matrices built from timm's
// maps and windows: successive blocks of a stage (the head means' cosine), and the heads' mean pairwise cosine.
TEST(SwinMaps, AttentionSimilarityIsThatOfTheTokenByTokenMatrices)
{
    const std::string dir = swinDir("timm_swin_pad");
    auto model = loadSwin(dir);
    ASSERT_TRUE(model);
    const Trace trace = mapsOf(*model, dir);
    // dense[h][i * N + j] of block l, from timm's files
    const auto dense = [&](int l) {
        const WindowBlock& g = trace.windows[size_t(l - 1)];
        const Tensor golden = loadNpy(dir + "/attn_L" + std::to_string(l) + ".npy");
        const auto keys = timmWindows(dir, l);
        const size_t N = size_t(g.gridH * g.gridW);
        const int64_t H = g.heads, n = g.windowArea();
        std::vector<std::vector<double>> m(size_t(H), std::vector<double>(N * N, 0.0));
        for (size_t w = 0; w < keys.size(); ++w)
            for (int64_t r = 0; r < n; ++r)
                for (int64_t k = 0; k < n; ++k)
                    if (keys[w][size_t(r)] >= 0 && keys[w][size_t(k)] >= 0)
                        for (int64_t h = 0; h < H; ++h)
                            m[size_t(h)][size_t(keys[w][size_t(r)]) * N + size_t(keys[w][size_t(k)])]
                                = golden.data()[((int64_t(w) * H + h) * n + r) * n + k];
        return m;
    };
    const auto cosine = [](const std::vector<double>& a, const std::vector<double>& b) {
        double ab = 0, aa = 0, bb = 0;
        for (size_t i = 0; i < a.size(); ++i)
            ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i];
        return ab / std::sqrt(aa * bb);
    };
    const auto mean = [](const std::vector<std::vector<double>>& heads) {
        std::vector<double> m(heads[0].size(), 0.0);
        for (const auto& h : heads)
            for (size_t i = 0; i < m.size(); ++i)
                m[i] += h[i] / double(heads.size());
        return m;
    };
    const auto points = attentionSimilarity(trace);
    ASSERT_EQ(int(points.size()), trace.depth);
    for (int l = 1; l <= trace.depth; ++l) {
        const auto heads = dense(l);
        double pairs = 0;
        int count = 0;
        for (size_t a = 0; a < heads.size(); ++a)
            for (size_t b = a + 1; b < heads.size(); ++b)
                pairs += cosine(heads[a], heads[b]), ++count;
        const auto& p = points[size_t(l - 1)];
        EXPECT_EQ(p.layer, l);
        EXPECT_NEAR(p.headRedundancy, pairs / count, 1e-5) << "block " << l;
        const bool lastOfStage = l == trace.depth || trace.windows[size_t(l)].stage != trace.windows[size_t(l - 1)].stage;
        if (lastOfStage)
            EXPECT_TRUE(std::isnan(p.successiveCos)) << "block " << l << ": the next block's tokens are others";
        else
            EXPECT_NEAR(p.successiveCos, cosine(mean(heads), mean(dense(l + 1))), 1e-5) << "block " << l;
    }
}

// Head centres of a hierarchical trace against the ViT's own computation on a one-layer trace whose [H, N, N] map is
// the block's windows spread over its stage's tokens by timm's placement (a ViT's grid the stage's, no prefix tokens):
// offsets in the stage's tokens, distances in pixels of a stage token (patch size x 2^stage).
TEST(SwinMaps, HeadCentresAreThoseOfTheTokenByTokenMaps)
{
    const std::string dir = swinDir("timm_swin_pad");
    auto model = loadSwin(dir);
    ASSERT_TRUE(model);
    const Trace trace = mapsOf(*model, dir);
    const int radius = 1;
    const auto centres = headCentres(trace, model->config().patchSize, radius);
    size_t next = 0;
    for (int l = 1; l <= trace.depth; ++l) {
        const WindowBlock& g = trace.windows[size_t(l - 1)];
        const Tensor golden = loadNpy(dir + "/attn_L" + std::to_string(l) + ".npy");
        const auto keys = timmWindows(dir, l);
        const int64_t N = g.gridH * g.gridW, H = g.heads, n = g.windowArea();
        std::vector<float> dense(size_t(H * N * N), 0.0f);
        for (size_t w = 0; w < keys.size(); ++w)
            for (int64_t r = 0; r < n; ++r)
                for (int64_t k = 0; k < n; ++k)
                    if (keys[w][size_t(r)] >= 0 && keys[w][size_t(k)] >= 0)
                        for (int64_t h = 0; h < H; ++h)
                            dense[size_t((h * N + keys[w][size_t(r)]) * N + keys[w][size_t(k)])]
                                = golden.data()[((int64_t(w) * H + h) * n + r) * n + k];
        Trace flat;
        flat.gridHeight = g.gridH;
        flat.gridWidth = g.gridW;
        flat.numHeads = g.heads;
        flat.depth = 1;
        flat.attention = { Tensor(), Tensor::fromVector({ H, N, N }, std::move(dense)) };
        const auto expected = headCentres(flat, model->config().patchSize << g.stage, radius);
        ASSERT_EQ(int64_t(expected.size()), H);
        for (const auto& e : expected) {
            ASSERT_LT(next, centres.size());
            const HeadCentre& c = centres[next++];
            EXPECT_EQ(c.layer, l);
            EXPECT_EQ(c.head, e.head);
            const std::string where = "block " + std::to_string(l) + " head " + std::to_string(e.head);
            EXPECT_NEAR(c.centreDy, e.centreDy, 1e-4) << where;
            EXPECT_NEAR(c.centreDx, e.centreDx, 1e-4) << where;
            EXPECT_NEAR(c.meanDistancePx, e.meanDistancePx, 1e-3) << where;
            if (std::isnan(e.windowMass)) {
                EXPECT_TRUE(std::isnan(c.windowMass)) << where << ": no interior query";
            } else {
                EXPECT_NEAR(c.windowMass, e.windowMass, 1e-4) << where;
                EXPECT_NEAR(c.bandwidth, e.bandwidth, 1e-4) << where;
                EXPECT_EQ(c.peakDy, e.peakDy) << where;
                EXPECT_EQ(c.peakDx, e.peakDx) << where;
            }
            EXPECT_EQ(c.prefixMass, 0.0);
        }
    }
    EXPECT_EQ(next, centres.size());
}

// The SNR of a Swin, block by block, for a Gaussian and an FGSM perturbation (its gradient through the windows and
// merges): each tap's SNR from its own tokens; the diagnostics, which need the block's input, for every block but a
// stage's first after a merge.
TEST(SwinMaps, SnrPerBlockAndTheAdversarialPerturbationsRun)
{
    const std::string dir = swinDir("timm_swin");
    auto model = loadSwin(dir);
    ASSERT_TRUE(model);
    Image image;
    image.width = image.height = 64;
    image.channels = 3;
    image.pixels.resize(64 * 64 * 3);
    for (size_t i = 0; i < image.pixels.size(); ++i)
        image.pixels[i] = uint8_t((i * 37) % 251);
    auto prepared = model->prepare(image);
    ASSERT_TRUE(prepared.ok()) << prepared.message();
    RunOptions options;
    options.record = RecordSpec::everything();
    auto clean = model->run(prepared->input, options);
    ASSERT_TRUE(clean.ok()) << clean.message();
    for (const char* spec : { "gaussian:sigma=8", "fgsm:eps=2" }) {
        auto perturbation = Perturbation::parse(spec);
        ASSERT_TRUE(perturbation.ok());
        auto input = perturbInput(*model, *prepared, *perturbation, 7);
        ASSERT_TRUE(input.ok()) << spec << ": " << input.message();
        auto noisy = model->run(*input, options);
        ASSERT_TRUE(noisy.ok()) << noisy.message();
        const SnrResult r = signalToNoise(*clean, *noisy);
        // the block outputs' SNR, here from its definition: |X - mean X| / |X~ - X| in dB, per block's own tokens
        for (const auto& p : r.snr) {
            if (p.tap != Tap::Block)
                continue;
            const Tensor &x = clean->blocks[size_t(p.layer)], &xn = noisy->blocks[size_t(p.layer)];
            const int64_t rows = x.size(0), d = x.size(1);
            double signal = 0, noise = 0;
            for (int64_t j = 0; j < d; ++j) {
                double mean = 0;
                for (int64_t i = 0; i < rows; ++i)
                    mean += x.data()[i * d + j] / double(rows);
                for (int64_t i = 0; i < rows; ++i) {
                    const double s = x.data()[i * d + j] - mean, e = double(xn.data()[i * d + j]) - x.data()[i * d + j];
                    signal += s * s;
                    noise += e * e;
                }
            }
            EXPECT_NEAR(p.snrDb, 10.0 * std::log10(signal / noise), 1e-6) << spec << " block " << p.layer;
        }
        std::vector<int> diagnosed;
        for (const auto& d : r.diagnostics)
            diagnosed.push_back(d.layer);
        EXPECT_EQ(diagnosed, (std::vector<int> { 1, 2, 4, 6 })) << spec << ": blocks 3 and 5 follow a merge";
    }
}
