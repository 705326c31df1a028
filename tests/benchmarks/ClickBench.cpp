// The click path of the GUI (MainWindow::refreshMap): a new query on a kept Trace of ViT-B/16 (197 tokens,
// 12 layers x 12 heads) to (a) the main view's overlay (attentionMap + renderAttentionOverlay at the shown size)
// and (b) the layers x heads tile grid (AttentionTileGrid::setTrace: 12 x 13 maps, then painting the widget).
// Each iteration is one click on another patch; p50 and p95 per click are counters. QT_QPA_PLATFORM=offscreen.
#include "BenchModels.h"

#include <plots/AttentionOverlay.h>
#include <view/AttentionTileGrid.h>

#include <attnscope/Analyses.h>

#include <RemoteClient.h>

#include <QApplication>
#include <QImage>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

using namespace attnscope;
using namespace attnscope::bench;

namespace {

struct Kept {
    Trace trace;
    Image shown;
};

const Kept& kept()
{
    static const Kept k = [] {
        auto model = loadShape(kShapes[2]);
        auto prepared = *model->prepare(sampleImage());
        RunOptions options;
        options.record.attention = true;
        return Kept { *model->run(prepared.input, options), prepared.shown };
    }();
    return k;
}

void percentiles(benchmark::State& state, std::vector<double> ms, const std::string& prefix = "")
{
    std::sort(ms.begin(), ms.end());
    if (ms.empty())
        return;
    state.counters[prefix + "p50_ms"] = ms[ms.size() / 2];
    state.counters[prefix + "p95_ms"] = ms[std::min(ms.size() - 1, size_t(double(ms.size()) * 0.95))];
}

// part: 0 the single overlay, 1 the tile grid, 2 both (a whole click)
void BM_Click(benchmark::State& state)
{
    const int part = int(state.range(0));
    const Kept& k = kept();
    const Trace& t = k.trace;
    AttentionTileGrid grid;
    grid.setRows(queryRows(t, 0), k.shown);
    grid.resize(grid.sizeHint());
    // Painted at the widget's own device pixel ratio, as on screen (the tiles are rendered for that ratio).
    const double dpr = grid.devicePixelRatioF();
    QImage canvas(grid.size() * dpr, QImage::Format_ARGB32_Premultiplied);
    canvas.setDevicePixelRatio(dpr);
    int query = 1, layer = 6, head = 3;
    std::vector<double> ms;
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        if (part != 1) {
            const AttentionMap map = attentionMap(t, layer, head, query);
            benchmark::DoNotOptimize(renderAttentionOverlay(k.shown, map, t.gridHeight, t.gridWidth, 0.6, Colormap::Viridis,
                                                            queryPatchOf(query, t.numPrefixTokens, t.gridWidth)));
        }
        if (part != 0) {
            grid.setRows(queryRows(t, query), k.shown); // the rows a click asks, as the window
            grid.render(&canvas);
        }
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        query = (query * 37) % 196 + 1; // another patch each click
    }
    percentiles(state, ms);
    const char* names[] = { "single overlay (224 px)", "tile grid 12 x 13 (rows + setRows + paint)", "whole click" };
    state.SetLabel(std::string("vit_base ") + names[part]);
}
BENCHMARK(BM_Click)->DenseRange(0, 2)->Iterations(200)->Unit(benchmark::kMillisecond)->UseRealTime();

// A click on the remote engine (docs/remote.md): the window's click path when the trace stays on a host reached over a
// link of 50 ms round trip and 100 Mbit/s each way (tests/remote/slow-link.py, in ssh's place): one attention_rows
// request for the new query (ViT-B/16: 12 x 12 x 197 floats), its rows decoded, then the main view's overlay and the
// tile grid drawn from them as for a local trace. Counters: p50/p95 per click (tiles drawn), view_p50/p95 (the main
// view's overlay drawn, before the tiles), the bytes that crossed per click, and, once, the bytes of the image sent.
void BM_RemoteClick(benchmark::State& state)
{
    using json = nlohmann::json;
    ::setenv("ATTNSCOPE_SSH", ATTNSCOPE_SLOW_LINK, 1);
    // A host that has never seen the image: the files it receives go to a cache of this run's own.
    char cache[] = "/tmp/attnscope-remote-bench-XXXXXX";
    if (!::mkdtemp(cache)) {
        state.SkipWithError("no temporary folder");
        return;
    }
    ::setenv("XDG_CACHE_HOME", cache, 1);
    auto connection = remote::Connection::open(remote::Endpoint { "bench-host", ATTNSCOPE_CLI });
    if (!connection) {
        state.SkipWithError(connection.message().c_str());
        return;
    }
    remote::Connection& link = **connection;
    const int64_t beforeImage = link.bytesSent();
    auto image = link.sendFile(ATTNSCOPE_SAMPLE);
    auto model = image ? link.call("load_model", { { "path", modelFolder(kShapes[2]) } }) : Result<json>(image.error());
    auto traced = model ? link.call("trace", { { "model", (*model)["model"] }, { "image", *image } }) : Result<json>(model.error());
    if (!traced) {
        state.SkipWithError(traced.message().c_str());
        return;
    }
    const double imageBytes = double(link.bytesSent() - beforeImage);
    const int64_t beforeAgain = link.bytesSent();
    if (auto again = link.sendFile(ATTNSCOPE_SAMPLE); !again) { // the same image opened again: has_file, nothing more
        state.SkipWithError(again.message().c_str());
        return;
    }
    state.counters["image_again_bytes_sent"] = double(link.bytesSent() - beforeAgain);
    auto shown = remote::decodeBytes((*traced)["shown"]["pixels"]);
    Image picture;
    picture.width = (*traced)["shown"]["width"];
    picture.height = (*traced)["shown"]["height"];
    picture.channels = (*traced)["shown"]["channels"];
    picture.pixels = *shown;
    QueryRows rows;
    rows.gridHeight = (*traced)["grid"][0];
    rows.gridWidth = (*traced)["grid"][1];
    rows.numPrefixTokens = (*traced)["prefix_tokens"];
    rows.depth = (*traced)["depth"];
    rows.numHeads = (*traced)["heads"];
    AttentionTileGrid grid;
    const double dpr = grid.devicePixelRatioF();
    int query = 1, layer = 6, head = 3;
    std::vector<double> ms, viewMs;
    const int64_t before = link.bytesSent() + link.bytesReceived();
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        auto answer = link.call("attention_rows", { { "trace", (*traced)["trace"] }, { "query", query } });
        auto decoded = answer ? remote::decodeTensor((*answer)["rows"]) : Result<Tensor>(answer.error());
        if (!decoded) {
            state.SkipWithError(decoded.message().c_str());
            return;
        }
        rows.query = query;
        rows.rows = std::move(*decoded);
        const AttentionMap map = attentionMap(rows, layer, head);
        benchmark::DoNotOptimize(renderAttentionOverlay(picture, map, rows.gridHeight, rows.gridWidth, 0.6, Colormap::Viridis,
                                                        queryPatchOf(query, rows.numPrefixTokens, rows.gridWidth)));
        viewMs.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        grid.setRows(rows, picture);
        if (grid.size() != grid.sizeHint())
            grid.resize(grid.sizeHint());
        QImage canvas(grid.size() * dpr, QImage::Format_ARGB32_Premultiplied);
        canvas.setDevicePixelRatio(dpr);
        grid.render(&canvas);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        query = (query * 37) % 196 + 1;
    }
    percentiles(state, ms);
    percentiles(state, viewMs, "view_");
    state.counters["bytes_per_click"] = double(link.bytesSent() + link.bytesReceived() - before) / double(ms.size());
    state.counters["image_bytes_sent"] = imageBytes;
    state.counters["rtt_ms"] = 50;
    state.SetLabel("vit_base over 50 ms / 100 Mbit/s (attention_rows + decode + overlay + tile grid)");
    std::filesystem::remove_all(cache);
}
BENCHMARK(BM_RemoteClick)->Iterations(60)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
