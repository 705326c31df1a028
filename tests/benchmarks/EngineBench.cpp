// Benchmarks (never tests): forward passes of ViT shapes with and without recording, each analysis alone, the full
// one-image analysis, model load, and the machine's sgemm peak in the same run. Random weights: speed does not
// depend on their values. Thread counts come from the environment (OMP_NUM_THREADS, see docs/performance.md);
// tests/benchmarks/run_bench.py runs this at 1 and at 2 threads.
#include "BenchModels.h"
#include "io/TensorImpl.h"

#include <attnscope/AnalysisRun.h>
#include <attnscope/Analyses.h>
#include <attnscope/CpuKernels.h>
#include <attnscope/Model.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <dlfcn.h>
#include <filesystem>

#ifdef ATTNSCOPE_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

using namespace attnscope;
using namespace attnscope::bench;
namespace fs = std::filesystem;

namespace {

void setFlops(benchmark::State& state, const Shape& s, double images = 1)
{
    state.counters["GFLOP/s"] = benchmark::Counter(s.flops() * images * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

Tensor sampleInput(const Model& model)
{
    return model.prepare(sampleImage())->input;
}

// One image's forward, `record`ing every tap or the logits alone, timed; labelled `name`, FLOPs of `shape`.
void timeForward(benchmark::State& state, const Model& model, bool record, const Shape& shape, const std::string& name)
{
    const Tensor input = sampleInput(model);
    RunOptions options;
    if (record)
        options.record = RecordSpec::everything();
    benchmark::DoNotOptimize(model.run(input, options)); // warm-up: the first forward packs the weights, once
    for (auto _ : state)
        benchmark::DoNotOptimize(model.run(input, options));
    setFlops(state, shape);
    state.SetLabel(name + (record ? " recording every tap" : " logits only"));
}

void BM_Forward(benchmark::State& state)
{
    const Shape& s = kShapes[state.range(0)];
    timeForward(state, *loadShape(s), state.range(1) != 0, s, s.name);
}
BENCHMARK(BM_Forward)->ArgsProduct({ { 0, 1, 2 }, { 0, 1 } })->Unit(benchmark::kMillisecond)->UseRealTime();

#ifndef ATTNSCOPE_BENCH_BASELINE // the families came after the baseline engine
// The families whose positions enter the attention (BEiT's relative bias, DINOv3's, EVA-02's and RoPE-Mixed's rotations)
// or whose MLP is gated, at ViT-S size, beside vit_small (BM_Forward/1/...) in the same run: their cost over its.
void BM_FamilyForward(benchmark::State& state)
{
    const Family& f = kFamilies[state.range(0)];
    timeForward(state, *loadFamily(f), state.range(1) != 0, kShapes[1], f.name);
}
BENCHMARK(BM_FamilyForward)->ArgsProduct({ { 0, 1, 2, 3 }, { 0, 1 } })->Unit(benchmark::kMillisecond)->UseRealTime();

// Swin-T (timm's swin_tiny_patch4_window7_224, random weights): the logits alone and recording every block's maps per
// window and tokens; tests/benchmarks/swin_peer.py times timm's forward of the same folder (docs/performance.md, Swin).
void BM_SwinForward(benchmark::State& state)
{
    const Shape swinTiny { "swin_tiny", 0, 0, 0 }; // FLOPs not counted: the ViT formula does not fit it
    timeForward(state, *loadSwinTiny(), state.range(0) != 0, swinTiny, "swin_tiny");
    state.counters.erase("GFLOP/s");
}
BENCHMARK(BM_SwinForward)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

#ifndef ATTNSCOPE_BENCH_BASELINE // the engine before Model::runBatch (docs/performance.md, before/after)
// Several images in one forward (Model::runBatch), recording what the analyses need: per-image cost.
void BM_ForwardBatch(benchmark::State& state)
{
    const Shape& s = kShapes[state.range(0)];
    const int batch = int(state.range(1));
    auto model = loadShape(s);
    const std::vector<Tensor> inputs(size_t(batch), sampleInput(*model));
    RunOptions options;
    options.record = RecordSpec::everything();
    benchmark::DoNotOptimize(model->runBatch(inputs, options)); // warm-up, as in BM_Forward
    for (auto _ : state)
        benchmark::DoNotOptimize(model->runBatch(inputs, options));
    setFlops(state, s, batch);
    state.counters["ms/image"] = benchmark::Counter(double(batch) * double(state.iterations()) / 1e3,
                                                    benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.SetLabel(std::string(s.name) + " batch " + std::to_string(batch) + " recording every tap");
}
BENCHMARK(BM_ForwardBatch)->ArgsProduct({ { 0, 1 }, { 1, 2, 4 } })->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

// Each analysis alone on a recorded ViT-S/16 trace (a noisy second trace for the SNR).
const Trace& smallTrace(bool noisy)
{
    static const auto traces = [] {
        auto model = loadShape(kShapes[1]);
        const auto prepared = *model->prepare(sampleImage());
        RunOptions options;
        options.record = RecordSpec::everything();
        auto noisyInput = perturbInput(*model, prepared, *Perturbation::parse("gaussian:sigma=8"), 1);
        return std::make_pair(*model->run(prepared.input, options), *model->run(*noisyInput, options));
    }();
    return noisy ? traces.second : traces.first;
}

void BM_Analysis(benchmark::State& state)
{
    const Trace& clean = smallTrace(false);
    const Trace& noisy = smallTrace(true);
    const int which = int(state.range(0));
    for (auto _ : state) {
        switch (which) {
        case 0: benchmark::DoNotOptimize(tokenSimilarity(clean)); break;
        case 1: benchmark::DoNotOptimize(attentionSimilarity(clean)); break;
        case 2: benchmark::DoNotOptimize(headCentres(clean, 16, 3)); break;
        case 3: benchmark::DoNotOptimize(signalToNoise(clean, noisy, true)); break;
        case 4: benchmark::DoNotOptimize(attentionRollout(clean)); break;
        }
    }
    const char* names[] = { "token similarity (X, U, R; all, patches)", "attention similarity", "head centres (72 heads)",
                            "SNR + diagnostics", "attention rollout" };
    state.SetLabel(std::string("vit_small: ") + names[which]);
}
BENCHMARK(BM_Analysis)->DenseRange(0, 4)->Unit(benchmark::kMillisecond)->UseRealTime();

// The full one-image analysis, as `attnscope-cli analyze` and the GUI's image-set run do it: preprocessing, the clean
// forward with every tap, the Gaussian-noise forward (sigma 8), token and attention similarity, head centres, SNR.
void BM_FullAnalysis(benchmark::State& state)
{
    const Shape& s = kShapes[state.range(0)];
    auto model = loadShape(s);
    AnalysisOptions options;
    options.perturbations.push_back(*Perturbation::parse("gaussian:sigma=8"));
    AnalysisRun run(model, options);
    int64_t index = 0;
    benchmark::DoNotOptimize(run.addImage(*model->prepare(sampleImage()), index++)); // warm-up, as the peer does
    for (auto _ : state) {
        auto prepared = model->prepare(sampleImage());
        benchmark::DoNotOptimize(run.addImage(*prepared, index++));
    }
    setFlops(state, s, 2);
    state.SetLabel(std::string(s.name) + " one image: 2 forwards + all analyses");
}
BENCHMARK(BM_FullAnalysis)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LoadModel(benchmark::State& state)
{
    const std::string dir = modelFolder(kShapes[2]);
    for (auto _ : state)
        benchmark::DoNotOptimize(Model::load(dir));
    state.SetLabel("vit_base safetensors (" + std::to_string(fs::file_size(dir + "/model.safetensors") >> 20)
                   + " MB, page cache warm), memory-mapped");
}
BENCHMARK(BM_LoadModel)->Unit(benchmark::kMillisecond)->UseRealTime();

// The machine's sgemm at the run's thread count, the peak the forwards are compared to: LibTorch's at::mm (OpenBLAS
// with Debian's LibTorch, given as many threads as OpenMP has for the measurement, the engine otherwise keeps it at
// one; MKL inside LibTorch 2.x's wheel) and oneDNN's sgemm, which the forward's linear layers use when built with
// it. run_bench.py takes the higher.
void BM_SgemmPeak(benchmark::State& state)
{
    const int64_t n = state.range(0);
    const at::Tensor a = at::randn({ n, n }), b = at::randn({ n, n });
    at::Tensor c = at::empty({ n, n });
    using SetThreads = void (*)(int);
    using GetThreads = int (*)();
    const auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    const auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
    const int before = get ? get() : 0;
    if (set)
        set(at::get_num_threads());
    for (auto _ : state)
        at::mm_out(c, a, b);
    if (set && before > 0)
        set(before);
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * n * n * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
    state.SetLabel("at::mm sgemm " + std::to_string(n) + "^3, " + std::to_string(at::get_num_threads()) + " threads");
}
BENCHMARK(BM_SgemmPeak)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();

#ifdef ATTNSCOPE_HAVE_DNNL
void BM_SgemmPeakOneDnn(benchmark::State& state)
{
    const int64_t n = state.range(0);
    const at::Tensor a = at::randn({ n, n }), b = at::randn({ n, n });
    at::Tensor c = at::empty({ n, n });
    for (auto _ : state)
        dnnl_sgemm('N', 'N', n, n, n, 1.f, a.data_ptr<float>(), n, b.data_ptr<float>(), n, 0.f, c.data_ptr<float>(), n);
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * n * n * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
    state.SetLabel("oneDNN sgemm " + std::to_string(n) + "^3, " + std::to_string(at::get_num_threads()) + " threads");
}
BENCHMARK(BM_SgemmPeakOneDnn)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

} // namespace

// Google Benchmark's main, with the kernels this CPU runs in the JSON's context (run_bench.py prints them).
int main(int argc, char** argv)
{
    const CpuKernels cpu = cpuKernels();
    benchmark::AddCustomContext("attnscope_isa", cpu.isa);
    benchmark::AddCustomContext("attnscope_blas", cpu.blas);
    benchmark::AddCustomContext("attnscope_linear", cpu.linear);
    benchmark::AddCustomContext("attnscope_attention", cpu.attention);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
