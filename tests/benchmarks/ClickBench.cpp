// The click path of the GUI (MainWindow::refreshMap): a new query on a kept Trace of ViT-B/16 (197 tokens,
// 12 layers x 12 heads) to (a) the main view's overlay (attentionMap + renderAttentionOverlay at the shown size)
// and (b) the layers x heads tile grid (AttentionTileGrid::setTrace: 12 x 13 maps, then painting the widget).
// Each iteration is one click on another patch; p50 and p95 per click are counters. QT_QPA_PLATFORM=offscreen.
#include "BenchModels.h"

#include <plots/AttentionOverlay.h>
#include <view/AttentionTileGrid.h>

#include <attnscope/Analyses.h>

#include <QApplication>
#include <QImage>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>

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

void percentiles(benchmark::State& state, std::vector<double> ms)
{
    std::sort(ms.begin(), ms.end());
    if (ms.empty())
        return;
    state.counters["p50_ms"] = ms[ms.size() / 2];
    state.counters["p95_ms"] = ms[std::min(ms.size() - 1, size_t(double(ms.size()) * 0.95))];
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

} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
