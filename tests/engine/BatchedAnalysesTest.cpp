// The device path of the analyses (engine/src/analyses/BatchedAnalyses.cpp: the whole batch as float64 tensor operations where
// the forward ran) against the host path (Analyses.cpp, SignalToNoise.cpp: float64 loops over each image's Trace, the
// path the golden tests hold to PyTorch). On the CPU both see the same forward, so they must agree to float64
// rounding; the bar is 1e-5 relative. On a GPU the same comparison runs against the CPU's host path.
#include "TestSupport.h"

#include <attnscope/AnalysisRun.h>
#include <attnscope/Files.h>
#include <attnscope/Image.h>
#include <attnscope/Model.h>

#include <torch/cuda.h>

#include <cmath>
#include <filesystem>

using namespace attnscope;
using namespace attnscope::test;

namespace {


AnalysisOptions everyAnalysis()
{
    AnalysisOptions options;
    options.perturbations.push_back(*Perturbation::parse("gaussian:sigma=8"));
    options.perturbations.push_back(*Perturbation::parse("blur:sigma=1"));
    options.draws = 2;
    options.seed = 11;
    options.norms = true;
    options.outlierRatio = 1.2; // low enough that the small models have outliers to count and share attention
    return options;
}

// The images in batches of 3 and the rest, as a dataset run feeds them.
void addInBatches(AnalysisRun& run, const std::vector<Model::Prepared>& images, std::vector<Trace>* traces = nullptr)
{
    for (size_t begin = 0; begin < images.size(); begin += 3) {
        std::vector<const Model::Prepared*> batch;
        std::vector<int64_t> indices;
        for (size_t i = begin; i < std::min(images.size(), begin + 3); ++i) {
            batch.push_back(&images[i]);
            indices.push_back(int64_t(i));
        }
        auto added = run.addImages(batch, indices, {}, traces);
        ASSERT_TRUE(added) << added.message();
    }
}

// Every key of `expected` in `actual` with the same count and mean and sd within `relative` (plus `absolute`, for
// quantities whose mean is near zero); no key in one only.
void expectSameStatistics(const StatsTable& actual, const StatsTable& expected, double relative, double absolute)
{
    ASSERT_GT(expected.size(), 100u);
    for (const auto& [key, s] : expected) {
        const auto it = actual.find(key);
        ASSERT_NE(it, actual.end()) << key << " missing";
        EXPECT_EQ(it->second.count(), s.count()) << key;
        EXPECT_NEAR(it->second.mean(), s.mean(), relative * std::abs(s.mean()) + absolute) << key;
        EXPECT_NEAR(it->second.sd(), s.sd(), relative * std::abs(s.sd()) + absolute) << key;
    }
    for (const auto& entry : actual)
        EXPECT_TRUE(expected.count(entry.first)) << entry.first << " only on the device path";
}

void compareOnCpu(const std::string& path, const LoadOptions& load, const std::vector<Model::Prepared>& images)
{
    auto model = Model::load(path, load);
    ASSERT_TRUE(model) << model.message();
    AnalysisOptions host = everyAnalysis(), device = everyAnalysis();
    host.analysesOnDevice = false;
    device.analysesOnDevice = true;
    AnalysisRun onHost(*model, host), onDevice(*model, device);
    EXPECT_FALSE(onHost.analysesOnDevice());
    EXPECT_TRUE(onDevice.analysesOnDevice());
    addInBatches(onHost, images);
    addInBatches(onDevice, images);
    EXPECT_EQ(onDevice.images(), int64_t(images.size()));
    expectSameStatistics(onDevice.statistics(), onHost.statistics(), 1e-9, 1e-12);
}

} // namespace

TEST(BatchedAnalyses, EqualTheHostLoopsOnEveryBuiltinModel)
{
    // A plain ViT with a class token, the two attention kinds with their own maps, and one with no prefix token.
    for (const char* name : { "fmnist-vit-d4", "fmnist-bilateral-d4", "fmnist-quadratic", "conv3x3-as-attention", "fmnist-neutreno-d4" }) {
        SCOPED_TRACE(name);
        auto model = Model::load(std::string("builtin:") + name);
        ASSERT_TRUE(model) << model.message();
        const auto images = fashionSamples(**model, 5);
        ASSERT_EQ(images.size(), 5u);
        compareOnCpu(std::string("builtin:") + name, {}, images);
    }
}

TEST(BatchedAnalyses, EqualTheHostLoopsOnTheThirdPartyCifarModel)
{
    const std::string checkpoint = sharedDir() + "/models/cifar10-vit-tintn/model_final.pt";
    const std::string images = sharedDir() + "/data/cifar10-test-1000";
    if (!std::filesystem::exists(checkpoint) || !std::filesystem::is_directory(images))
        GTEST_SKIP() << checkpoint << " or " << images << " is absent (tests read third-party models from ../shared)";
    LoadOptions load;
    load.descriptionPath = ATTNSCOPE_TEST_SOURCE_DIR "/../docs/examples/cifar10-vit-tintn.json";
    auto model = Model::load(checkpoint, load);
    ASSERT_TRUE(model) << model.message();
    auto paths = expandImagePaths({ images });
    ASSERT_TRUE(paths) << paths.message();
    std::vector<Model::Prepared> prepared;
    for (size_t i = 0; i < 7 && i < paths->size(); ++i)
        prepared.push_back(*(*model)->prepare(*decodeImage((*paths)[i])));
    compareOnCpu(checkpoint, load, prepared);
}

// Registers (timm_dinov2_reg: CLS and 4 registers, layer scale): the token norms' register ratio and prefix shares.
TEST(BatchedAnalyses, EqualTheHostLoopsOnAModelWithRegisters)
{
    const std::string path = goldenDir() + "/timm_dinov2_reg";
    auto model = Model::load(path);
    ASSERT_TRUE(model) << model.message();
    auto image = decodeImage(path + "/image.png");
    ASSERT_TRUE(image) << image.message();
    auto prepared = (*model)->prepare(*image);
    ASSERT_TRUE(prepared) << prepared.message();
    compareOnCpu(path, {}, { *prepared, *prepared, *prepared, *prepared });
}

// The clean traces of the device path carry the logits of the host path; the taps only when asked for. The two paths
// run their forwards over batches of other sizes (the device path stacks every image's inputs), so they are equal to
// float32 rounding, not bitwise: LibTorch 2.11's MKL blocks its products by the row count and the thread count (at two
// threads the logits differ in the last bit or two; 1.13's OpenBLAS and oneDNN gave equal ones).
TEST(BatchedAnalyses, CleanTracesHoldLogitsAndTheTapsAskedFor)
{
    auto model = Model::load("builtin:fmnist-vit-d4");
    ASSERT_TRUE(model) << model.message();
    const auto images = fashionSamples(**model, 4);
    AnalysisOptions host = everyAnalysis(), device = everyAnalysis();
    host.analysesOnDevice = false;
    device.analysesOnDevice = true;
    AnalysisRun onHost(*model, host), onDevice(*model, device);
    std::vector<Trace> hostTraces, deviceTraces;
    addInBatches(onHost, images, &hostTraces);
    addInBatches(onDevice, images, &deviceTraces);
    ASSERT_EQ(deviceTraces.size(), images.size());
    for (size_t i = 0; i < images.size(); ++i) {
        ASSERT_EQ(deviceTraces[i].logits.numel(), hostTraces[i].logits.numel());
        for (int64_t k = 0; k < hostTraces[i].logits.numel(); ++k)
            EXPECT_NEAR(deviceTraces[i].logits.data()[k], hostTraces[i].logits.data()[k],
                        1e-5 * (1 + std::abs(hostTraces[i].logits.data()[k])))
                << "image " << i;
        EXPECT_TRUE(deviceTraces[i].attention.back().empty()); // not copied back: nobody asked
    }
    device.alsoRecord.attention = true;
    AnalysisRun withMaps(*model, device);
    std::vector<Trace> mapped;
    addInBatches(withMaps, images, &mapped);
    ASSERT_EQ(mapped.size(), images.size());
    const Tensor& a = mapped[2].attention.back();
    const Tensor& b = hostTraces[2].attention.back();
    ASSERT_EQ(a.shape(), b.shape());
    for (int64_t k = 0; k < a.numel(); ++k)
        ASSERT_NEAR(a.data()[k], b.data()[k], 1e-6);
}

// BF16 is a real change of arithmetic (autocast), close to FP32 but not equal; TF32 is refused off CUDA.
TEST(BatchedAnalyses, PrecisionBf16DeviatesLittleAndTf32NeedsCuda)
{
    if (const std::string why = bf16BlockedByTheAvx2Emulation(); !why.empty())
        GTEST_SKIP() << why;
    auto model = Model::load("builtin:fmnist-vit-d4", { "cpu", "" });
    ASSERT_TRUE(model) << model.message();
    const auto images = fashionSamples(**model, 3);
    AnalysisOptions fp32 = everyAnalysis(), bf16 = everyAnalysis();
    fp32.analysesOnDevice = bf16.analysesOnDevice = true;
    bf16.precision = Precision::Bf16;
    AnalysisRun exact(*model, fp32), reduced(*model, bf16);
    addInBatches(exact, images);
    addInBatches(reduced, images);
    double largest = 0;
    int differing = 0;
    for (const auto& [key, s] : exact.statistics()) {
        if (key.rfind("ts/", 0) != 0)
            continue;
        const double d = std::abs(reduced.statistics().at(key).mean() - s.mean());
        largest = std::max(largest, d);
        differing += d > 1e-6;
    }
    EXPECT_GT(differing, 0) << "bf16 gave the fp32 numbers: autocast did not run";
    EXPECT_LT(largest, 0.05) << "token similarity moved by " << largest << " under bf16";
    // The attention maps too (under autocast they are made apart from their stack's row and copied into it): the
    // successive maps' cosine and the heads' mean distance stay near fp32's.
    for (const auto& [key, s] : exact.statistics()) {
        const bool cosine = key.rfind("as/", 0) == 0 && key.find("successive_cos") != std::string::npos;
        const bool distance = key.rfind("hc/", 0) == 0 && key.find("mean_distance_px") != std::string::npos;
        if (cosine || distance)
            EXPECT_NEAR(reduced.statistics().at(key).mean(), s.mean(), cosine ? 0.05 : 0.05 * std::abs(s.mean()) + 0.05) << key;
    }

    AnalysisOptions tf32 = everyAnalysis();
    tf32.precision = Precision::Tf32;
    for (bool onDevice : { false, true }) {
        tf32.analysesOnDevice = onDevice;
        AnalysisRun run(*model, tf32);
        auto added = run.addImage(images[0], 0);
        ASSERT_FALSE(added);
        EXPECT_NE(added.message().find("tf32 needs a CUDA device"), std::string::npos) << added.message();
    }
    EXPECT_FALSE(parsePrecision("fp16"));
    EXPECT_EQ(*parsePrecision("bf16"), Precision::Bf16);
}

// On a GPU: the whole device path (forward and analyses on CUDA) against the CPU's host path.
TEST(BatchedAnalyses, CudaEqualsTheCpuHostPath)
{
    if (!torch::cuda::is_available())
        GTEST_SKIP() << "no CUDA device (this runs where a GPU is present)";
    auto cpu = Model::load("builtin:fmnist-vit-d4", { "cpu", "" });
    auto gpu = Model::load("builtin:fmnist-vit-d4", { "cuda", "" });
    ASSERT_TRUE(cpu) << cpu.message();
    ASSERT_TRUE(gpu) << gpu.message();
    const auto images = fashionSamples(**cpu, 5);
    AnalysisOptions host = everyAnalysis(), device = everyAnalysis();
    host.analysesOnDevice = false;
    AnalysisRun onHost(*cpu, host), onGpu(*gpu, device);
    EXPECT_TRUE(onGpu.analysesOnDevice()); // the default on a GPU
    addInBatches(onHost, images);
    addInBatches(onGpu, images);
    // The forwards differ in float32 rounding (cuBLAS and OpenBLAS sum in other orders): 1e-5 relative, with a
    // floor for the centres and redundancies that sit near zero.
    expectSameStatistics(onGpu.statistics(), onHost.statistics(), 1e-5, 1e-6);
}
