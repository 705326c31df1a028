// The variants of docs/analyses.md section 6. NeuTRENO and Boost against a plain-PyTorch forward written from the
// formulas (tests/golden/make_variants.py, float64, relative 1e-4 of each tensor's scale); the convolution
// builder against LibTorch's conv2d (1e-4); "off" is bit-for-bit the plain model.
#include "TestSupport.h"
#include "io/TensorImpl.h"
#include "checkpoint/SafeTensors.h"
#include "train/TrainingState.h"

#include <attnscope/Model.h>
#include <attnscope/Datasets.h>
#include <attnscope/Trainer.h>

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/cuda.h>
#include <torch/version.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>

using namespace attnscope;
using namespace attnscope::test;
namespace fs = std::filesystem;

namespace {

bool bitIdentical(const Tensor& a, const Tensor& b)
{
    return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), sizeof(float) * size_t(a.numel())) == 0;
}

Result<Trace> runFixture(const std::shared_ptr<const Model>& model, std::optional<double> lambda, std::optional<double> t)
{
    RunOptions options;
    options.record = RecordSpec::everything();
    options.neutrenoLambda = lambda;
    options.boostT = t;
    return model->run(loadNpy(goldenDir() + "/tv_timm/input.npy"), options);
}

TEST(Variants, OffIsBitForBitThePlainModel)
{
    auto model = Model::load(goldenDir() + "/tv_timm");
    ASSERT_TRUE(model.ok()) << model.message();
    auto plain = runFixture(*model, std::nullopt, std::nullopt);
    auto off = runFixture(*model, 0.0, 0.0);
    ASSERT_TRUE(plain.ok() && off.ok());
    EXPECT_TRUE(bitIdentical(plain->logits, off->logits));
    for (int l = 1; l <= plain->depth; ++l) {
        EXPECT_TRUE(bitIdentical(plain->attention[size_t(l)], off->attention[size_t(l)]));
        EXPECT_TRUE(bitIdentical(plain->blocks[size_t(l)], off->blocks[size_t(l)]));
    }
}

TEST(Variants, MatchThePythonReferenceOfTheFormulas)
{
    auto model = Model::load(goldenDir() + "/tv_timm");
    ASSERT_TRUE(model.ok()) << model.message();
    std::ifstream in(ATTNSCOPE_TEST_SOURCE_DIR "/golden/variants/variants.json");
    const auto variants = nlohmann::json::parse(in)["variants"];
    ASSERT_GE(variants.size(), 4u);
    for (const auto& [name, v] : variants.items()) {
        const std::string dir = ATTNSCOPE_TEST_SOURCE_DIR "/golden/variants/" + name;
        auto trace = runFixture(*model, v.value("neutreno_lambda", 0.0), v.value("boost_t", 0.0));
        ASSERT_TRUE(trace.ok()) << trace.message();
        EXPECT_DOUBLE_EQ(trace->neutrenoLambda, v.value("neutreno_lambda", 0.0));
        EXPECT_TRUE(closeTo(trace->logits, loadNpy(dir + "/logits.npy"), 1e-4)) << name;
        for (int l = 1; l <= trace->depth; ++l)
            EXPECT_TRUE(closeTo(trace->attention[size_t(l)], loadNpy(dir + "/attn_L" + std::to_string(l) + ".npy"), 1e-4)) << name << " L" << l;
        for (int l = 0; l <= trace->depth; ++l)
            EXPECT_TRUE(closeTo(trace->blocks[size_t(l)], loadNpy(dir + "/block_L" + std::to_string(l) + ".npy"), 1e-4)) << name << " L" << l;
    }
}

TEST(Variants, NeutrenoLeavesTheFirstLayerAlone)
{
    auto model = Model::load(goldenDir() + "/tv_timm");
    ASSERT_TRUE(model.ok());
    auto plain = runFixture(*model, std::nullopt, std::nullopt);
    auto neutreno = runFixture(*model, 0.6, std::nullopt);
    ASSERT_TRUE(plain.ok() && neutreno.ok());
    // V_1 - V_1 = 0: layer 1 is unchanged; layer 2 is not.
    EXPECT_TRUE(bitIdentical(plain->blocks[1], neutreno->blocks[1]));
    EXPECT_FALSE(bitIdentical(plain->blocks[2], neutreno->blocks[2]));
}

class ConvAsAttention : public ::testing::TestWithParam<std::tuple<int, int, int>> { };

// Cordonnier et al., Lemma 1: the built model's U_1 equals conv2d at interior pixels, and every head attends
// exactly to its shift.
TEST_P(ConvAsAttention, ReproducesConv2dAndItsHeadsSitOnTheShifts)
{
    const auto [k, cIn, cOut] = GetParam();
    const int size = 11;
    at::manual_seed(k * 100 + cIn * 10 + cOut);
    const at::Tensor kernel = at::randn({ cOut, cIn, k, k });
    const at::Tensor bias = at::randn({ cOut });
    const auto dir = scratchDir("conv" + std::to_string(k) + std::to_string(cIn) + std::to_string(cOut));
    auto built = buildConvolutionAsAttention(wrap(kernel), wrap(bias), size, 50.0, dir.string());
    ASSERT_TRUE(built.ok()) << built.message();
    auto model = Model::load(dir.string());
    ASSERT_TRUE(model.ok()) << model.message();
    EXPECT_EQ((*model)->config().numHeads, k * k);
    EXPECT_EQ((*model)->config().attention, AttentionKind::Quadratic);

    const at::Tensor x = at::randn({ cIn, size, size });
    RunOptions options;
    options.record.attnBranch = true;
    options.record.attention = true;
    auto trace = (*model)->run(wrap(x), options);
    ASSERT_TRUE(trace.ok()) << trace.message();
    // Reference: LibTorch's conv2d (valid region = the interior, where every shift lands inside the image).
    const at::Tensor expected = at::conv2d(x.unsqueeze(0), kernel, bias)[0]; // [C_out, size-k+1, size-k+1]
    const at::Tensor u = unwrap(trace->attnBranch[1]).reshape({ size, size, -1 }).permute({ 2, 0, 1 });
    const int r = k / 2;
    const at::Tensor interior = u.slice(0, 0, cOut).slice(1, r, size - r).slice(2, r, size - r);
    const double err = (interior - expected).abs().max().item<double>() / expected.abs().max().item<double>();
    EXPECT_LT(err, 1e-4);

    // Each head's attention from an interior query peaks (with all but ~e^-50 of the mass) at q + (dy, dx).
    const at::Tensor a = unwrap(trace->attention[1]); // [H, N, N]
    for (int h = 0; h < k * k; ++h) {
        const int dy = h / k - r, dx = h % k - r;
        for (int qy = r; qy < size - r; ++qy)
            for (int qx = r; qx < size - r; ++qx) {
                const int64_t q = qy * size + qx, target = (qy + dy) * size + (qx + dx);
                ASSERT_EQ(a[h][q].argmax().item<int64_t>(), target) << "head " << h;
                ASSERT_GT(a[h][q][target].item<float>(), 1.0f - 1e-6f);
            }
    }
    fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Kernels, ConvAsAttention,
                         ::testing::Values(std::make_tuple(3, 1, 4), std::make_tuple(3, 3, 2), std::make_tuple(5, 2, 3)));

// A small, quick training run: 2 layers of width 32 on the first Fashion-MNIST images, into a scratch folder.
TrainOptions tinyTraining(const std::string& folder, int images, int epochs)
{
    TrainOptions o;
    o.out = scratchDir(folder).string();
    o.limitTrain = images;
    o.limitTest = 64;
    o.epochs = epochs;
    o.width = 32;
    o.depth = 2;
    o.heads = 2;
    o.mlpHidden = 64;
    return o;
}

TEST(Trainer, SameSeedGivesIdenticalWeights)
{
    if (!fs::exists(std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz"))
        GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    std::vector<std::string> weights;
    for (int run = 0; run < 2; ++run) {
        TrainOptions o = tinyTraining("train" + std::to_string(run), 512, 1);
        o.variant = "neutreno";
        auto r = trainModel(o);
        ASSERT_TRUE(r.ok()) << r.message();
        std::ifstream in(o.out + "/model.safetensors", std::ios::binary);
        weights.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        EXPECT_TRUE(fs::exists(o.out + "/MODEL_CARD.md"));
        EXPECT_TRUE(fs::exists(o.out + "/preprocessor_config.json"));
    }
    ASSERT_GT(weights[0].size(), 1000u);
    EXPECT_TRUE(weights[0] == weights[1]) << "two runs with the same seed differ";
}

// --bf16: the matrix products in bfloat16 change the training (the weights differ from a float32 run with the same
// seed) without changing what it learns (every epoch's loss within 2% of float32's); the model is written in float32,
// and autocast is off again when training returns.
TEST(Trainer, Bf16ProductsTrainAFloat32Model)
{
    if (!fs::exists(std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz"))
        GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    if (const std::string why = bf16BlockedByTheAvx2Emulation(); !why.empty())
        GTEST_SKIP() << why;
    std::vector<std::string> weights, headers;
    std::vector<std::vector<double>> losses(2);
    for (int run = 0; run < 2; ++run) {
        TrainOptions o = tinyTraining("bf16-" + std::to_string(run), 1024, 2);
        o.bf16 = run == 1;
        o.onEpoch = [&](const TrainOptions::Epoch& e) { losses[size_t(run)].push_back(e.loss); };
        auto r = trainModel(o);
        ASSERT_TRUE(r.ok()) << r.message();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
        EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
#else
        EXPECT_FALSE(at::autocast::is_cpu_enabled());
#endif
        std::ifstream in(o.out + "/model.safetensors", std::ios::binary);
        weights.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        uint64_t headerSize = 0;
        ASSERT_GT(weights.back().size(), 8u);
        std::memcpy(&headerSize, weights.back().data(), 8);
        headers.push_back(weights.back().substr(8, size_t(headerSize)));
        const std::string card = [&] { std::ifstream c(o.out + "/MODEL_CARD.md"); return std::string((std::istreambuf_iterator<char>(c)), std::istreambuf_iterator<char>()); }();
        EXPECT_EQ(card.find("bfloat16") != std::string::npos, o.bf16) << card;
    }
    EXPECT_EQ(headers[0], headers[1]) << "the bf16 run wrote other tensors or dtypes";
    EXPECT_EQ(headers[1].find("BF16"), std::string::npos);
    EXPECT_NE(headers[1].find("F32"), std::string::npos);
    EXPECT_NE(weights[0], weights[1]) << "--bf16 changed nothing: autocast did not reach the products";
    ASSERT_EQ(losses[0].size(), 2u);
    ASSERT_EQ(losses[1].size(), 2u);
    for (size_t e = 0; e < 2; ++e)
        EXPECT_NEAR(losses[1][e], losses[0][e], 0.02 * losses[0][e]) << "epoch " << e + 1;
}

// An interrupted run goes on after its last whole epoch and ends with the weights of a run never stopped; a run with
// other settings refuses the state, naming the setting, and keeps it; fresh starts again from the first epoch.
TEST(Trainer, InterruptedTrainingGoesOnToTheSameWeights)
{
    if (!fs::exists(std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz"))
        GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    const auto bytes = [](const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    TrainOptions straight = tinyTraining("resume-straight", 512, 3);
    fs::remove(trainingStatePath(straight.out));
    ASSERT_TRUE(trainModel(straight).ok());
    const std::string want = bytes(straight.out + "/model.safetensors");
    ASSERT_GT(want.size(), 1000u);
    EXPECT_FALSE(fs::exists(trainingStatePath(straight.out)));

    TrainOptions o = tinyTraining("resume", 512, 3);
    const std::string state = trainingStatePath(o.out);
    fs::remove(state);
    bool stop = false;
    o.onEpoch = [&](const TrainOptions::Epoch& e) { stop = e.epoch == 1; };
    o.isCancelled = [&] { return stop; };
    ASSERT_TRUE(trainModel(o).cancelled());
    EXPECT_TRUE(fs::exists(state));
    EXPECT_FALSE(fs::exists(o.out + "/model.safetensors"));

    TrainOptions other = o;
    other.epochs = 4;
    other.onEpoch = nullptr;
    other.isCancelled = nullptr;
    auto refused = trainModel(other);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.message().find("epochs 3, now 4"), std::string::npos) << refused.message();
    EXPECT_NE(refused.message().find(state), std::string::npos) << refused.message();
    EXPECT_TRUE(fs::exists(state));

    // It goes on with the same images read from another folder (a state names its images by content, not by path).
    const fs::path elsewhere = scratchDir("resume-images-elsewhere") / "fashion-mnist";
    fs::create_directory_symlink(kFashionMnistDir, elsewhere);
    o.fashionMnistDir = elsewhere.string();
    std::vector<int> epochs;
    int resumedAfter = 0;
    o.isCancelled = nullptr;
    o.onEpoch = [&](const TrainOptions::Epoch& e) { epochs.push_back(e.epoch); };
    o.onResume = [&](int done, const std::string&) { resumedAfter = done; };
    ASSERT_TRUE(trainModel(o).ok());
    EXPECT_EQ(resumedAfter, 1);
    EXPECT_EQ(epochs, (std::vector<int> { 2, 3 }));
    EXPECT_TRUE(bytes(o.out + "/model.safetensors") == want) << "the resumed run ended with other weights";
    EXPECT_FALSE(fs::exists(state));
    const std::string card = bytes(o.out + "/MODEL_CARD.md");
    EXPECT_NE(card.find("epoch 1/3"), std::string::npos) << card;
    EXPECT_NE(card.find("epoch 3/3"), std::string::npos) << card;
    EXPECT_NE(card.find("(training on the CPU, evaluation"), std::string::npos) << card;

    // Interrupted again, then started afresh: every epoch runs, to the same weights.
    stop = false;
    o.onResume = nullptr;
    o.onEpoch = [&](const TrainOptions::Epoch& e) { stop = e.epoch == 2; };
    o.isCancelled = [&] { return stop; };
    fs::remove_all(o.out);
    ASSERT_TRUE(trainModel(o).cancelled());
    epochs.clear();
    o.fresh = true;
    o.isCancelled = nullptr;
    o.onEpoch = [&](const TrainOptions::Epoch& e) { epochs.push_back(e.epoch); };
    ASSERT_TRUE(trainModel(o).ok());
    EXPECT_EQ(epochs, (std::vector<int> { 1, 2, 3 }));
    EXPECT_TRUE(bytes(o.out + "/model.safetensors") == want);
}

TEST(Trainer, TrainingImagesAreNamedByContent)
{
    LabelledImages a;
    a.images.push_back({ 2, 2, 1, { 0, 1, 2, 3 } });
    a.images.push_back({ 2, 2, 1, { 4, 5, 6, 7 } });
    a.labels = { 0, 1 };
    LabelledImages b = a;
    EXPECT_EQ(trainingImagesFingerprint(a), trainingImagesFingerprint(b));
    EXPECT_NE(trainingImagesFingerprint(a).find("2 images"), std::string::npos) << trainingImagesFingerprint(a);
    b.images[1].pixels[3] = 8;
    EXPECT_NE(trainingImagesFingerprint(a), trainingImagesFingerprint(b));
    b = a;
    b.labels[1] = 2;
    EXPECT_NE(trainingImagesFingerprint(a), trainingImagesFingerprint(b));
    b = a;
    b.images[0] = { 1, 4, 1, { 0, 1, 2, 3 } }; // the same bytes in another shape
    EXPECT_NE(trainingImagesFingerprint(a), trainingImagesFingerprint(b));
}

// A state written by attnscope-train built against LibTorch 1.13 and one written against 2.11
// (scripts/make-train-state-goldens.sh) both go on, in either build, to the weights of a run never stopped. LibTorch
// 2.x's own Optimizer::load gives every parameter of a 1.x state the same moments (it reads 1.x's hex keys as
// numbers); a state read that way fails here by the moments' shapes, or by weights off by the learning rate's order.
TEST(Trainer, StatesOfEitherLibTorchGoOn)
{
    if (!fs::exists(std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz"))
        GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    const auto golden = [](const std::string& folder, int images = 256) {
        TrainOptions o = tinyTraining(folder, images, 2);
        o.width = 16;
        o.depth = 1;
        o.heads = 2;
        o.mlpHidden = 32;
        o.name = "golden";
        return o;
    };
    TrainOptions straight = golden("state-straight");
    fs::remove(trainingStatePath(straight.out));
    ASSERT_TRUE(trainModel(straight).ok());
    const TensorMap want = readSafetensors(straight.out + "/model.safetensors").tensors;
    for (const std::string version : { "libtorch-1.13", "libtorch-2.11" }) {
        SCOPED_TRACE(version);
        TrainOptions o = golden("state-" + version);
        fs::remove_all(o.out);
        fs::copy_file(fs::path(testDataDir()) / "train-state" / (version + ".train-state"), trainingStatePath(o.out),
                      fs::copy_options::overwrite_existing);
        int resumedAfter = 0;
        o.onResume = [&](int done, const std::string&) { resumedAfter = done; };
        auto r = trainModel(o);
        ASSERT_TRUE(r.ok()) << r.message();
        EXPECT_EQ(resumedAfter, 1);
        const TensorMap got = readSafetensors(o.out + "/model.safetensors").tensors;
        ASSERT_EQ(got.size(), want.size());
        double worst = 0;
        for (const auto& [name, tensor] : want)
            worst = std::max(worst, (got.at(name) - tensor).abs().max().item<double>());
        // Two builds' kernels sum in other orders (~1e-7 after an epoch); moments lost or mixed up move the weights
        // by ~1e-3 (the learning rate) a step.
        EXPECT_LT(worst, 2e-5);
    }

    // A state written before states named their images by content (session 11's trainer, commit 980dafa: it named the
    // folder and the device) still goes on, and its card says where its epochs ran.
    TrainOptions old = golden("state-before-fingerprints", 4096);
    fs::remove_all(old.out);
    fs::copy_file(fs::path(testDataDir()) / "train-state" / "before-fingerprints.train-state", trainingStatePath(old.out),
                  fs::copy_options::overwrite_existing);
    int resumedAfter = 0;
    old.onResume = [&](int done, const std::string&) { resumedAfter = done; };
    auto r = trainModel(old);
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(resumedAfter, 1);
    std::ifstream in(old.out + "/MODEL_CARD.md");
    const std::string card((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(card.find("(training on the CPU, evaluation"), std::string::npos) << card;
}

// A run started on the CPU goes on on a GPU (the same tensors and generator, moved); the card says where each epoch
// ran. Not byte for byte the CPU's weights (other kernels), but the same model to within a test image or two.
TEST(Trainer, ARunGoesOnOnAnotherDevice)
{
    if (!torch::cuda::is_available())
        GTEST_SKIP() << "no CUDA device (this runs where a GPU is present)";
    if (!fs::exists(std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz"))
        GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    TrainOptions straight = tinyTraining("device-straight", 512, 3);
    fs::remove(trainingStatePath(straight.out));
    auto want = trainModel(straight);
    ASSERT_TRUE(want.ok()) << want.message();

    TrainOptions o = tinyTraining("device-moved", 512, 3);
    fs::remove(trainingStatePath(o.out));
    bool stop = false;
    o.onEpoch = [&](const TrainOptions::Epoch& e) { stop = e.epoch == 1; };
    o.isCancelled = [&] { return stop; };
    ASSERT_TRUE(trainModel(o).cancelled());
    o.device = "cuda";
    o.isCancelled = nullptr;
    int resumedAfter = 0;
    o.onResume = [&](int done, const std::string&) { resumedAfter = done; };
    auto moved = trainModel(o);
    ASSERT_TRUE(moved.ok()) << moved.message();
    EXPECT_EQ(resumedAfter, 1);
    EXPECT_NEAR(moved->testAccuracy, want->testAccuracy, 2.5 / 64);
    std::ifstream in(o.out + "/MODEL_CARD.md");
    const std::string card((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(card.find("training on the CPU for epoch 1, cuda for epochs 2-3"), std::string::npos) << card;
}

} // namespace
