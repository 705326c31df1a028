// Benchmarks (never tests): forward passes of ViT shapes with and without recording, the click path, model
// load, and the machine's sgemm peak in the same run. Random weights: speed does not depend on their values.
#include "ModelWriter.h"
#include "SafeTensors.h"
#include "TensorImpl.h"
#include "VisionTransformer.h"

#include <attnscope/Analyses.h>
#include <attnscope/Model.h>

#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>

using namespace attnscope;
namespace fs = std::filesystem;

namespace {

struct Shape {
    const char* name;
    int width, depth, heads;
};
const Shape kShapes[] = { { "deit_tiny", 192, 12, 3 }, { "vit_small", 384, 12, 6 }, { "vit_base", 768, 12, 12 } };

// A timm-named ViT folder with random weights, made once per shape.
std::string modelFolder(const Shape& s)
{
    const std::string dir = (fs::temp_directory_path() / ("attnscope-bench-" + std::string(s.name))).string();
    if (fs::exists(dir + "/model.safetensors"))
        return dir;
    ModelConfig c;
    c.width = s.width;
    c.depth = s.depth;
    c.numHeads = s.heads;
    c.mlpHidden = 4 * s.width;
    c.numClasses = 1000;
    VisionTransformer net(c);
    {
        torch::NoGradGuard g;
        for (auto& p : net->parameters())
            p.normal_(0, 0.02);
    }
    PreprocessConfig p;
    writeModelFolder(dir, *net, p, {}, nlohmann::json::object());
    return dir;
}

std::shared_ptr<const Model> load(const Shape& s)
{
    static std::map<std::string, std::shared_ptr<const Model>> cache;
    auto& m = cache[s.name];
    if (!m)
        m = *Model::load(modelFolder(s));
    return m;
}

void setFlops(benchmark::State& state, const Shape& s)
{
    // 2 * params-in-blocks * tokens + attention: 2 * (12 D^2) * N * L + 4 * N^2 * D * L
    const double n = 197, d = s.width, l = s.depth;
    const double flops = 2 * 12 * d * d * n * l + 4 * n * n * d * l;
    state.counters["GFLOP/s"] = benchmark::Counter(flops * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void BM_Forward(benchmark::State& state)
{
    const Shape& s = kShapes[state.range(0)];
    const bool record = state.range(1) != 0;
    auto model = load(s);
    const Tensor input = wrap(at::randn({ 3, 224, 224 }));
    RunOptions options;
    if (record)
        options.record = RecordSpec::everything();
    for (auto _ : state)
        benchmark::DoNotOptimize(model->run(input, options));
    setFlops(state, s);
    state.SetLabel(std::string(s.name) + (record ? " recording every tap" : " logits only"));
}
BENCHMARK(BM_Forward)->ArgsProduct({ { 0, 1, 2 }, { 0, 1 } })->Unit(benchmark::kMillisecond)->UseRealTime();

// A click: new query from a kept Trace to the attention map of every layer and head (what the GUI redraws).
void BM_ClickPath(benchmark::State& state)
{
    const Shape& s = kShapes[2];
    auto model = load(s);
    RunOptions options;
    options.record.attention = true;
    const Trace trace = *model->run(wrap(at::randn({ 3, 224, 224 })), options);
    int query = 1;
    for (auto _ : state) {
        for (int l = 1; l <= trace.depth; ++l)
            for (int h = -1; h < trace.numHeads; ++h)
                benchmark::DoNotOptimize(attentionMap(trace, l, h, query));
        query = query % 196 + 1;
    }
    state.SetLabel("vit_base, 12 layers x (12 heads + mean)");
}
BENCHMARK(BM_ClickPath)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LoadModel(benchmark::State& state)
{
    const std::string dir = modelFolder(kShapes[2]);
    for (auto _ : state)
        benchmark::DoNotOptimize(Model::load(dir));
    state.SetLabel("vit_base safetensors (" + std::to_string(fs::file_size(dir + "/model.safetensors") >> 20) + " MB), memory-mapped");
}
BENCHMARK(BM_LoadModel)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SgemmPeak(benchmark::State& state)
{
    const int64_t n = 1024;
    const at::Tensor a = at::randn({ n, n }), b = at::randn({ n, n });
    for (auto _ : state)
        benchmark::DoNotOptimize(at::mm(a, b));
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * n * n * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SgemmPeak)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
