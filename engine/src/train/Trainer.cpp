#include "attnscope/Trainer.h"

#include "attnscope/Datasets.h"
#include "attnscope/Model.h"
#include "image/Preprocess.h"
#include "io/AtomicFile.h"
#include "io/LoadError.h"
#include "train/ModelWriter.h"
#include "train/TrainingState.h"
#include "vit/ModelImpl.h"
#include "vit/VisionTransformer.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>
#include <torch/nn/init.h>
#include <torch/optim/adamw.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <optional>
#include <random>
#include <sstream>
#include <unistd.h>

namespace attnscope {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

ModelConfig configFor(const TrainOptions& o, int channels, int classes)
{
    ModelConfig c;
    c.width = o.width;
    c.depth = o.depth;
    c.numHeads = o.heads;
    c.mlpHidden = o.mlpHidden;
    c.patchSize = o.patchSize;
    c.imageHeight = c.imageWidth = o.imageSize;
    c.channels = channels;
    c.numClasses = classes;
    c.layerNormEps = 1e-6;
    c.activation = Activation::Gelu;
    if (o.variant == "neutreno")
        c.neutrenoLambda = o.neutrenoLambda;
    else if (o.variant == "boost")
        c.boostT = o.boostT;
    else if (o.variant == "bilateral")
        c.attention = AttentionKind::Bilateral;
    else if (o.variant == "quadratic") {
        // Positions enter only through the quadratic logits; no CLS (it has no position), mean-pooled head.
        c.attention = AttentionKind::Quadratic;
        c.classToken = false;
        c.posEmbed = false;
        c.pooling = Pooling::PatchMean;
    }
    return c;
}

void initialise(VisionTransformerImpl& net, const ModelConfig& c, std::mt19937_64& rng)
{
    torch::NoGradGuard noGrad;
    for (auto& p : net.named_parameters()) {
        const std::string& name = p.key();
        auto& t = p.value();
        const bool isNorm = name.find("norm") != std::string::npos;
        if (name.find("centre") != std::string::npos) {
            // Quadratic heads start spread over the 3x3 neighbourhood, so that they can specialise.
            for (int h = 0; h < c.numHeads; ++h) {
                t[h][0] = double(h / 3 % 3) - 1.0 + 0.1 * (std::uniform_real_distribution<double>(-1, 1)(rng));
                t[h][1] = double(h % 3) - 1.0 + 0.1 * (std::uniform_real_distribution<double>(-1, 1)(rng));
            }
        } else if (name.find("alpha") != std::string::npos) {
            t.fill_(1.0);
        } else if (name.find("log_h") != std::string::npos) {
            t.zero_();
        } else if (isNorm) {
            name.size() > 6 && name.compare(name.size() - 6, 6, "weight") == 0 ? t.fill_(1.0) : t.zero_();
        } else if (name.size() > 4 && name.compare(name.size() - 4, 4, "bias") == 0) {
            t.zero_();
        } else {
            // timm's ViT initialisation: normal(0, 0.02) truncated at two standard deviations
            t.normal_(0.0, 0.02).clamp_(-0.04, 0.04);
        }
    }
}

// TrainOptions::bf16: LibTorch's autocast on the training device for as long as this lives. Its cache of cast weights
// is off, since every step changes the weights.
class Bf16Autocast {
public:
    Bf16Autocast(bool on, at::DeviceType device)
        : m_on(on)
        , m_device(device)
        , m_cache(at::autocast::is_autocast_cache_enabled())
    {
        if (m_on) {
            at::autocast::set_autocast_cache_enabled(false);
            enable(true);
        }
    }
    ~Bf16Autocast()
    {
        if (m_on) {
            enable(false);
            at::autocast::set_autocast_cache_enabled(m_cache);
        }
    }
    Bf16Autocast(const Bf16Autocast&) = delete;
    Bf16Autocast& operator=(const Bf16Autocast&) = delete;

private:
    void enable(bool on) const
    {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
        at::autocast::set_autocast_dtype(m_device, at::kBFloat16);
        at::autocast::set_autocast_enabled(m_device, on);
#else
        if (m_device == at::kCPU) {
            at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
            at::autocast::set_cpu_enabled(on);
        } else {
            at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
            at::autocast::set_enabled(on);
        }
#endif
    }

    bool m_on;
    at::DeviceType m_device;
    bool m_cache;
};

at::Tensor stack(const LabelledImages& data, const PreprocessConfig& p, int channels)
{
    std::vector<at::Tensor> xs;
    xs.reserve(data.images.size());
    for (const auto& img : data.images)
        xs.push_back(preprocessImage(img, p, channels, nullptr));
    return at::stack(xs);
}

// Random shifts of up to 2 pixels (padding with the background value) and horizontal flips.
at::Tensor augment(const at::Tensor& x, float background, std::mt19937_64& rng)
{
    // Every image of the batch shifted by up to 2 pixels (a crop of the padded image) and flipped on a coin, drawn in
    // the order dy, dx, coin per image. The crops are two gathers over the whole batch (rows, then columns), so that a
    // batch costs a few operations on a GPU rather than a few per image; they copy values, so the result is exact.
    const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    auto padded = at::constant_pad_nd(x, { 2, 2, 2, 2 }, background);
    std::vector<int64_t> rows(static_cast<size_t>(B * H)), cols(static_cast<size_t>(B * W));
    std::uniform_int_distribution<int> shift(0, 4), coin(0, 1);
    for (int64_t i = 0; i < B; ++i) {
        const int dy = shift(rng), dx = shift(rng);
        const bool flip = coin(rng) != 0;
        for (int64_t h = 0; h < H; ++h)
            rows[size_t(i * H + h)] = dy + h;
        for (int64_t w = 0; w < W; ++w)
            cols[size_t(i * W + w)] = dx + (flip ? W - 1 - w : w);
    }
    const auto rowIndex = at::tensor(rows, at::kLong).to(x.device()).view({ B, 1, H, 1 }).expand({ B, C, H, W + 4 });
    const auto colIndex = at::tensor(cols, at::kLong).to(x.device()).view({ B, 1, 1, W }).expand({ B, C, H, W });
    return padded.gather(2, rowIndex).gather(3, colIndex);
}

// "the CPU", or where each run of epochs went when a run went on on another device: "cuda for epochs 1-21, the CPU
// for epochs 22-60".
std::string trainedOn(const std::vector<std::string>& epochDevices)
{
    const auto named = [](const std::string& d) { return d == "cpu" ? std::string("the CPU") : d; };
    std::vector<std::pair<std::string, std::pair<size_t, size_t>>> runs; // device, first and last epoch
    for (size_t i = 0; i < epochDevices.size(); ++i)
        if (!runs.empty() && runs.back().first == epochDevices[i])
            runs.back().second.second = i + 1;
        else
            runs.push_back({ epochDevices[i], { i + 1, i + 1 } });
    if (runs.size() == 1)
        return named(runs.front().first);
    std::string text;
    for (const auto& [device, epochs] : runs) {
        text += (text.empty() ? "" : ", ") + named(device) + " for epoch";
        text += epochs.first == epochs.second ? " " + std::to_string(epochs.first)
                                              : "s " + std::to_string(epochs.first) + "-" + std::to_string(epochs.second);
    }
    return text;
}

std::string modelCard(const TrainOptions& o, const ModelConfig& c, const TrainResult& r, const std::string& dataName,
                      int trainCount, const std::vector<std::string>& epochLines, const std::vector<std::string>& epochDevices)
{
    std::ostringstream s;
    s << "# " << o.name << "\n\n"
      << "A small vision transformer trained by `attnscope-train` for attnscope's embedded model zoo.\n\n"
      << "| | |\n|---|---|\n"
      << "| variant | " << o.variant;
    if (o.variant == "neutreno")
        s << " (NeuTRENO, lambda = " << o.neutrenoLambda << " during training and by default at inference)";
    if (o.variant == "boost")
        s << " (Boost, t = " << o.boostT << " during training and by default at inference)";
    if (o.variant == "bilateral")
        s << " (bilateral attention: token and position logits with learned bandwidths, cross terms dropped)";
    if (o.variant == "quadratic")
        s << " (quadratic positional attention: learned centre and sharpness per head, content terms off)";
    s << " |\n"
      << "| data | " << dataName << ", " << trainCount << " training images; test accuracy on " << r.testCount << " test images |\n"
      << "| architecture | patch " << c.patchSize << ", input " << c.imageHeight << "x" << c.imageWidth << "x" << c.channels
      << ", width " << c.width << ", depth " << c.depth << ", " << c.numHeads << " heads, MLP " << c.mlpHidden << ", "
      << r.parameters << " parameters |\n"
      << "| training | " << o.epochs << " epochs, batch " << o.batchSize << ", AdamW (lr " << o.learningRate
      << ", weight decay " << o.weightDecay << "), cosine schedule with warm-up, label smoothing " << o.labelSmoothing
      << (o.augment ? ", random 2-pixel shifts and horizontal flips" : "")
      << (o.bf16 ? ", matrix products in bfloat16 (autocast)" : "") << " |\n"
      << "| seed | " << o.seed << " |\n"
      << "| wall time | " << std::lround(r.wallSeconds) << " s (training on " << trainedOn(epochDevices)
      << ", evaluation on the CPU) |\n"
      << "| test accuracy | " << std::fixed;
    s.precision(4);
    s << r.testAccuracy << " |\n\n";
    s << "## Epochs\n\n```\n";
    for (const auto& l : epochLines)
        s << l << "\n";
    s << "```\n\n## Reproduce\n\n```sh\n" << (o.command.empty() ? "attnscope-train ..." : o.command) << "\n```\n";
    if (dataName.rfind("Fashion-MNIST", 0) == 0)
        s << "\nFashion-MNIST: Xiao, Rasul, Vollgraf (2017), Zalando Research, MIT licence (Debian package "
             "dataset-fashion-mnist).\n";
    return s.str();
}

// The images a run trains and tests on.
struct TrainingData {
    LabelledImages train, test;
};

Result<TrainingData> readTrainingData(const TrainOptions& o, bool fmnist)
{
    auto train = fmnist ? readFashionMnist(o.fashionMnistDir, "train", o.limitTrain) : readImageFolder(o.data, o.limitTrain);
    if (!train)
        return train.error();
    Result<LabelledImages> test = fmnist ? readFashionMnist(o.fashionMnistDir, "test", o.limitTest) : Result<LabelledImages>(LabelledImages {});
    if (!test)
        return test.error();
    if (!fmnist) {
        // An image folder has no test split: every tenth image is held out, so the card's accuracy is not
        // measured on training images.
        LabelledImages kept;
        kept.classNames = test->classNames = train->classNames;
        for (size_t i = 0; i < train->images.size(); ++i) {
            LabelledImages& to = i % 10 == 9 ? *test : kept;
            to.images.push_back(std::move(train->images[i]));
            to.labels.push_back(train->labels[i]);
        }
        *train = std::move(kept);
        if (train->images.empty() || test->images.empty())
            return Error { o.data + ": too few images to hold out a test tenth" };
    }
    return TrainingData { std::move(*train), std::move(*test) };
}

// The training images normalised and on the device, with the preprocessing the written model applies.
struct TrainingSet {
    PreprocessConfig preprocess;
    at::Tensor x, y;
    float background; // the value of a black pixel after normalisation: what augment() pads with
};

TrainingSet normalisedTrainingSet(const TrainOptions& o, const LabelledImages& train, int channels,
                                  const at::Device& device)
{
    // Normalisation from the training images themselves (Fashion-MNIST: mean 0.2860, sd 0.3530).
    PreprocessConfig p;
    p.resize = ResizeMode::ShortestEdge;
    p.resizeShortest = o.imageSize;
    p.centerCrop = true;
    p.cropHeight = p.cropWidth = o.imageSize;
    p.interpolation = Interpolation::Bilinear;
    p.mean.assign(size_t(channels), 0.0);
    p.std.assign(size_t(channels), 1.0);
    at::Tensor raw = stack(train, p, channels); // in 0..1
    auto mean = raw.mean({ 0, 2, 3 }), sd = raw.std({ 0, 2, 3 });
    for (int ch = 0; ch < channels; ++ch) {
        p.mean[size_t(ch)] = std::round(mean[ch].item<double>() * 1e4) / 1e4;
        p.std[size_t(ch)] = std::round(sd[ch].item<double>() * 1e4) / 1e4;
    }
    const auto meanT = at::tensor(std::vector<float>(p.mean.begin(), p.mean.end())).view({ 1, -1, 1, 1 });
    const auto sdT = at::tensor(std::vector<float>(p.std.begin(), p.std.end())).view({ 1, -1, 1, 1 });
    const at::Tensor xTrain = ((raw - meanT) / sdT).to(device); // the whole set on the device, once
    raw = at::Tensor();
    const at::Tensor yTrain = at::tensor(train.labels, at::kLong).to(device);
    const float background = float(-p.mean[0] / p.std[0]);
    return { p, xTrain, yTrain, background };
}

torch::optim::AdamW makeOptimiser(VisionTransformerImpl& net, const TrainOptions& o)
{
    // No weight decay on norms, biases, tokens, position tables and the variants' per-head scalars.
    std::vector<at::Tensor> decay, noDecay;
    for (auto& param : net.named_parameters()) {
        const bool matrix = param.value().dim() >= 2 && param.key().find("token") == std::string::npos
            && param.key().find("pos_embed") == std::string::npos && param.key().find("centre") == std::string::npos;
        (matrix ? decay : noDecay).push_back(param.value());
    }
    torch::optim::AdamW optimiser({ torch::optim::OptimizerParamGroup(decay, std::make_unique<torch::optim::AdamWOptions>(o.learningRate)),
                                    torch::optim::OptimizerParamGroup(noDecay, std::make_unique<torch::optim::AdamWOptions>(o.learningRate)) });
    static_cast<torch::optim::AdamWOptions&>(optimiser.param_groups()[0].options()).weight_decay(o.weightDecay);
    static_cast<torch::optim::AdamWOptions&>(optimiser.param_groups()[1].options()).weight_decay(0.0);
    return optimiser;
}

// The whole run's step counts and its learning rate at each step.
struct Schedule {
    int64_t stepsPerEpoch, totalSteps, warmup;

    // Linear warm-up, then cosine decay to zero.
    double learningRate(double peak, int64_t step) const
    {
        return step < warmup ? peak * double(step + 1) / warmup
                             : 0.5 * peak * (1 + std::cos(M_PI * double(step - warmup) / double(totalSteps - warmup)));
    }
};

// One epoch's steps over the training set in a new random order, `step` counting on from the previous epoch's. Returns
// the loss summed over the images and the count of right predictions, both still on the device.
Result<std::pair<at::Tensor, at::Tensor>> trainEpoch(const TrainOptions& o, const ModelConfig& c, VisionTransformer& net,
                                                     torch::optim::AdamW& optimiser, const TrainingSet& set,
                                                     const Schedule& schedule, const at::Device& device,
                                                     std::mt19937_64& rng, int64_t& step)
{
    const int64_t n = set.x.size(0);
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    const auto perm = at::tensor(order, at::kLong).to(device);
    // Summed on the device and read once an epoch, so that a GPU never waits for the host between steps
    // (the same float64 sum, in the same order, as reading each step's loss).
    auto lossSum = at::zeros({}, at::TensorOptions().dtype(at::kDouble).device(device));
    auto correct = at::zeros({}, at::TensorOptions().dtype(at::kLong).device(device));
    for (int64_t b = 0; b < schedule.stepsPerEpoch; ++b) {
        if (o.isCancelled && o.isCancelled())
            return Error::cancel();
        const auto idx = perm.slice(0, b * o.batchSize, std::min(n, (b + 1) * o.batchSize));
        at::Tensor x = set.x.index_select(0, idx);
        if (o.augment)
            x = augment(x, set.background, rng);
        const at::Tensor y = set.y.index_select(0, idx);
        const double lr = schedule.learningRate(o.learningRate, step);
        for (auto& g : optimiser.param_groups())
            static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
        ForwardState state;
        state.neutrenoLambda = c.neutrenoLambda;
        state.boostT = c.boostT;
        state.reset(c.depth);
        const at::Tensor logits = net->forward(x, state);
        const at::Tensor loss = at::cross_entropy_loss(logits, y, {}, at::Reduction::Mean, -100, o.labelSmoothing);
        optimiser.zero_grad();
        loss.backward();
        optimiser.step();
        ++step;
        lossSum += loss.detach().to(at::kDouble) * double(idx.size(0));
        correct += logits.argmax(1).eq(y).sum();
    }
    return std::pair { lossSum, correct };
}

std::string epochLine(const TrainOptions::Epoch& e)
{
    char line[160];
    std::snprintf(line, sizeof line, "epoch %d/%d  loss %.4f  train accuracy %.4f  %.0f s", e.epoch, e.epochs, e.loss,
                  e.trainAccuracy, e.seconds);
    return line;
}

// How many test images the written model classifies right, read through the same path every user takes.
Result<int> testCorrect(const Model& model, const LabelledImages& test)
{
    int correct = 0;
    for (size_t i = 0; i < test.images.size(); ++i) {
        auto prepared = model.prepare(test.images[i]);
        if (!prepared)
            return prepared.error();
        auto trace = model.run(prepared->input);
        if (!trace)
            return trace.error();
        const float* z = trace->logits.data();
        correct += int(std::max_element(z, z + trace->logits.numel()) - z) == test.labels[i];
    }
    return correct;
}

} // namespace

Result<TrainResult> trainModel(const TrainOptions& o)
{
    const auto start = Clock::now();
    static const std::vector<std::string> variants { "vit", "neutreno", "boost", "bilateral", "quadratic" };
    if (std::find(variants.begin(), variants.end(), o.variant) == variants.end())
        return Error { "unknown variant \"" + o.variant + "\" (vit, neutreno, boost, bilateral, quadratic)" };
    if (o.out.empty())
        return Error { "no output folder" };
    if (o.width % o.heads || o.imageSize % o.patchSize || o.epochs < 1 || o.batchSize < 1)
        return Error { "inconsistent settings: heads must divide width, patch size the image size" };
    try {
        const bool fmnist = o.data == "fashion-mnist";
        auto data = readTrainingData(o, fmnist);
        if (!data)
            return data.error();
        const LabelledImages& train = data->train;
        const LabelledImages& test = data->test;
        const std::string trainingImages = trainingImagesFingerprint(train);
        const int channels = train.images.front().channels;
        const int classes = int(train.classNames.size());

        const at::Device device = parseDevice(o.device);
        std::mt19937_64 rng(o.seed);
        at::manual_seed(o.seed);
        const ModelConfig c = configFor(o, channels, classes);
        VisionTransformer net(c);
        initialise(*net, c, rng); // on the CPU, so that a seed gives the same start on every device
        net->to(device);
        net->train();

        const TrainingSet set = normalisedTrainingSet(o, train, channels, device);
        torch::optim::AdamW optimiser = makeOptimiser(*net, o);

        const int64_t n = set.x.size(0);
        const int64_t stepsPerEpoch = (n + o.batchSize - 1) / o.batchSize;
        const int64_t totalSteps = stepsPerEpoch * o.epochs;
        const Schedule schedule { stepsPerEpoch, totalSteps, std::max<int64_t>(1, totalSteps / 20) };
        int64_t step = 0;
        std::vector<std::string> epochLines, epochDevices;
        // An unfinished run of the same settings goes on after its last whole epoch, and ends with the weights an
        // uninterrupted run writes; the state is written after every epoch and removed once the model is.
        int firstEpoch = 1;
        double earlierSeconds = 0;
        std::error_code ec;
        if (o.fresh)
            std::filesystem::remove(trainingStatePath(o.out), ec);
        auto resumed = loadTrainingState(o, trainingImages, *net, optimiser, device);
        if (!resumed)
            return resumed.error();
        if (*resumed) {
            const TrainingState& done = **resumed;
            firstEpoch = done.epoch + 1;
            step = done.step;
            epochLines = done.epochLines;
            epochDevices = done.epochDevices;
            earlierSeconds = done.seconds;
            rng = done.rng;
            if (o.onResume)
                o.onResume(done.epoch, trainingStatePath(o.out));
        }
        std::optional<Bf16Autocast> autocast;
        autocast.emplace(o.bf16, device.type());
        for (int epoch = firstEpoch; epoch <= o.epochs; ++epoch) {
            const auto epochStart = Clock::now();
            auto sums = trainEpoch(o, c, net, optimiser, set, schedule, device, rng, step);
            if (!sums)
                return sums.error();
            const auto& [lossSum, correct] = *sums;
            TrainOptions::Epoch e { epoch, o.epochs, lossSum.item<double>() / double(n), double(correct.item<int64_t>()) / double(n),
                                    seconds(epochStart) };
            epochLines.push_back(epochLine(e));
            epochDevices.push_back(o.device);
            auto saved = saveTrainingState(o, trainingImages,
                                           { epoch, step, rng, epochLines, epochDevices, earlierSeconds + seconds(start) },
                                           *net, optimiser);
            if (!saved)
                return saved.error();
            if (o.onEpoch)
                o.onEpoch(e);
        }

        autocast.reset();
        net->eval();
        net->to(at::kCPU); // written, and tested, from the CPU
        nlohmann::json section = { { "variant", o.variant }, { "attention", toString(c.attention) },
                                   { "neutreno_lambda", c.neutrenoLambda }, { "boost_t", c.boostT },
                                   { "trained_by", "attnscope-train" }, { "seed", o.seed } };
        writeModelFolder(o.out, *net, set.preprocess, train.classNames, section);

        // Test accuracy from the written files, through the same path every user takes.
        auto model = Model::load(o.out);
        if (!model)
            return model.error();
        auto correct = testCorrect(**model, test);
        if (!correct)
            return correct.error();
        TrainResult r;
        r.outDir = o.out;
        r.testCount = int(test.images.size());
        r.testAccuracy = double(*correct) / std::max(1, r.testCount);
        r.parameters = (*model)->info().parameterCount;
        r.wallSeconds = earlierSeconds + seconds(start);
        const std::string dataName = fmnist ? "Fashion-MNIST (" + o.fashionMnistDir + ")"
                                            : "image folder " + o.data + " (every tenth image held out for the test)";
        writeFileAtomically(o.out + "/MODEL_CARD.md", modelCard(o, c, r, dataName, int(n), epochLines, epochDevices));
        std::filesystem::remove(trainingStatePath(o.out), ec);
        return r;
    } catch (const LoadError& e) {
        return Error { e.what() };
    } catch (const c10::Error& e) {
        return Error { std::string("training failed: ") + e.what_without_backtrace() };
    } catch (const std::exception& e) { // a library below LibTorch's own (oneDNN's dnnl::error: no kernel for an op)
        return Error { std::string("training failed: ") + e.what() };
    }
}

void relaunchWithFastBlasKernels(char** argv)
{
    static constexpr const char* kGuard = "ATTNSCOPE_BLAS_RELAUNCHED";
    const auto corename = reinterpret_cast<char* (*)()>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
    if (!corename || std::getenv("OPENBLAS_CORETYPE") || std::getenv(kGuard))
        return;
    const std::string core = corename();
    for (const char* fast : { "SkylakeX", "Cooperlake", "SapphireRapids", "Haswell", "Zen" })
        if (core == fast)
            return;
    __builtin_cpu_init();
    const char* wanted = __builtin_cpu_supports("avx512f") ? "SkylakeX"
        : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? "Haswell"
                                                                           : nullptr;
    if (!wanted)
        return;
    setenv("OPENBLAS_CORETYPE", wanted, 1);
    setenv(kGuard, core.c_str(), 1); // once: an OpenBLAS built for one core ignores the variable
    execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_CORETYPE"); // the exec failed: go on as we were
}

} // namespace attnscope
