// attnscope-train: trains the small ViTs of attnscope's model zoo, and builds the convolution-as-attention model.
#include <attnscope/Datasets.h>
#include <attnscope/Model.h>
#include <attnscope/Npy.h>
#include <attnscope/Trainer.h>

#include <CLI/CLI.hpp>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <cstdio>
#include <iostream>

namespace {

std::atomic<bool> g_interrupted { false };
extern "C" void onInterrupt(int) { g_interrupted = true; }

int fail(const std::string& message)
{
    std::cerr << "attnscope-train: " << message << '\n';
    return 1;
}

// The default bank for `conv`: identity, 3x3 box blur, Sobel x, Sobel y on a grey image.
attnscope::Tensor defaultKernel()
{
    std::vector<float> k = { 0, 0, 0, 0, 1, 0, 0, 0, 0, //
                             1 / 9.f, 1 / 9.f, 1 / 9.f, 1 / 9.f, 1 / 9.f, 1 / 9.f, 1 / 9.f, 1 / 9.f, 1 / 9.f, //
                             -1, 0, 1, -2, 0, 2, -1, 0, 1, //
                             -1, -2, -1, 0, 0, 0, 1, 2, 1 };
    return attnscope::Tensor::fromVector({ 4, 1, 3, 3 }, std::move(k));
}

} // namespace

int main(int argc, char** argv)
{
    attnscope::relaunchWithFastBlasKernels(argv); // before anything else runs: it may execute this program again
    CLI::App app { "attnscope-train: train a small ViT (Fashion-MNIST or an image folder) for attnscope" };
    app.set_version_flag("--version", std::string("attnscope ") + attnscope::version());
    attnscope::TrainOptions o;
    int threads = 0;
    app.add_option("--data", o.data, "fashion-mnist, or a folder with one sub-folder per class")->capture_default_str();
    app.add_option("--fashion-mnist-dir", o.fashionMnistDir, "where the IDX files are")->capture_default_str();
    app.add_option("--out", o.out, "output model folder")->required();
    app.add_option("--name", o.name, "model name (for the card)")->capture_default_str();
    app.add_option("--variant", o.variant, "vit, neutreno, boost, bilateral or quadratic")->capture_default_str();
    app.add_option("--neutreno-lambda", o.neutrenoLambda, "NeuTRENO lambda during training")->capture_default_str();
    app.add_option("--boost-t", o.boostT, "Boost t during training")->capture_default_str();
    app.add_option("--image-size", o.imageSize)->capture_default_str();
    app.add_option("--patch", o.patchSize)->capture_default_str();
    app.add_option("--width", o.width)->capture_default_str();
    app.add_option("--depth", o.depth)->capture_default_str();
    app.add_option("--heads", o.heads)->capture_default_str();
    app.add_option("--mlp", o.mlpHidden, "MLP hidden width")->capture_default_str();
    app.add_option("--epochs", o.epochs)->capture_default_str();
    app.add_option("--batch", o.batchSize)->capture_default_str();
    app.add_option("--lr", o.learningRate)->capture_default_str();
    app.add_option("--seed", o.seed)->capture_default_str();
    app.add_option("--limit-train", o.limitTrain, "use only the first N training images")->capture_default_str();
    app.add_option("--limit-test", o.limitTest, "use only the first N test images")->capture_default_str();
    app.add_flag("!--no-augment", o.augment, "no random shifts and flips");
    app.add_flag("--bf16", o.bf16, "matrix products in bfloat16 (autocast; fast on CPUs with AMX and on GPUs)");
    app.add_option("--threads", threads, "CPU threads (0: LibTorch's default)")->capture_default_str();
    int epochsThisRun = 0;
    app.add_option("--epochs-this-run", epochsThisRun,
                   "train at most K epochs, then stop and keep <out>.train-state: the same command goes on (for jobs "
                   "shorter than the training)")
        ->check(CLI::PositiveNumber);
    app.add_flag("--fresh", o.fresh, "start again, discarding what an interrupted run of this --out left (<out>.train-state)");
    app.add_option("--device", o.device, "where to train: cpu, cuda, cuda:<i> or auto (a GPU when there is one)")->capture_default_str();

    auto* conv = app.add_subcommand("conv", "build the convolution-as-attention model (Cordonnier et al., Lemma 1)");
    std::string kernelPath, biasPath, convOut;
    int convSize = 28;
    double alpha = 50;
    conv->add_option("--kernel", kernelPath, ".npy [C_out, C_in, K, K] (default: identity, blur, Sobel x, Sobel y)");
    conv->add_option("--bias", biasPath, ".npy [C_out]");
    conv->add_option("--image-size", convSize)->capture_default_str();
    conv->add_option("--alpha", alpha, "sharpness of the quadratic heads")->capture_default_str();
    conv->add_option("--out", convOut, "output model folder")->required();
    auto* exportImages = app.add_subcommand("export-images", "write Fashion-MNIST images as PNG files (for analyze)");
    std::string exportSplit = "test", exportOut;
    int exportCount = 200;
    exportImages->add_option("--split", exportSplit, "train or test")->capture_default_str();
    exportImages->add_option("--count", exportCount, "how many, from the first")->capture_default_str();
    exportImages->add_option("--out", exportOut, "output folder")->required();
    bool classFolders = false;
    exportImages->add_flag("--class-folders", classFolders,
                           "a folder per class, named after it (\"T-shirt_top\"): analyze then knows each image's class (the "
                           "ablation's accuracy change)");
    // `conv` does not need the training options' --out
    app.get_option("--out")->required(false);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? 0 : 2;
    }
    attnscope::setNumThreads(threads);
    if (exportImages->parsed()) {
        auto data = attnscope::readFashionMnist(o.fashionMnistDir, exportSplit, exportCount);
        if (!data)
            return fail(data.message());
        std::filesystem::create_directories(exportOut);
        for (size_t i = 0; i < data->images.size(); ++i) {
            char name[64];
            std::snprintf(name, sizeof name, "/%s-%05zu-class%d.png", exportSplit.c_str(), i, data->labels[i]);
            std::string folder = exportOut;
            if (classFolders) {
                std::string className = data->classNames[size_t(data->labels[i])];
                for (char& ch : className)
                    if (ch == '/' || ch == ' ')
                        ch = '_';
                folder += "/" + className;
                std::filesystem::create_directories(folder);
            }
            auto w = attnscope::writeImage(folder + name, data->images[i]);
            if (!w)
                return fail(w.message());
        }
        std::cerr << "attnscope-train: " << data->images.size() << " images written to " << exportOut << '\n';
        return 0;
    }
    if (conv->parsed()) {
        auto kernel = kernelPath.empty() ? attnscope::Result<attnscope::Tensor>(defaultKernel()) : attnscope::readNpy(kernelPath);
        if (!kernel)
            return fail(kernel.message());
        attnscope::Tensor bias;
        if (!biasPath.empty()) {
            auto b = attnscope::readNpy(biasPath);
            if (!b)
                return fail(b.message());
            bias = *b;
        }
        auto r = attnscope::buildConvolutionAsAttention(*kernel, bias, convSize, alpha, convOut);
        if (!r)
            return fail(r.message());
        std::cerr << "attnscope-train: convolution-as-attention model written to " << convOut << '\n';
        return 0;
    }
    if (o.out.empty())
        return fail("--out is required");
    for (int i = 0; i < argc; ++i)
        o.command += (i ? " " : "") + std::string(argv[i]);
    std::signal(SIGINT, onInterrupt);
    int epochsDone = 0;
    o.isCancelled = [&] { return g_interrupted.load() || (epochsThisRun > 0 && epochsDone >= epochsThisRun); };
    o.onEpoch = [&](const attnscope::TrainOptions::Epoch& e) {
        std::fprintf(stderr, "epoch %d/%d  loss %.4f  train accuracy %.4f  %.0f s\n", e.epoch, e.epochs, e.loss,
                     e.trainAccuracy, e.seconds);
        ++epochsDone;
    };
    o.onResume = [](int done, const std::string& state) {
        std::fprintf(stderr, "attnscope-train: going on after epoch %d (%s)\n", done, state.c_str());
    };
    auto r = attnscope::trainModel(o);
    if (r.cancelled() && !g_interrupted.load()) {
        std::fprintf(stderr, "attnscope-train: stopped after %d epoch%s (--epochs-this-run); the state is kept in %s: the same "
                             "command goes on from there\n", epochsDone, epochsDone == 1 ? "" : "s", attnscope::trainingStatePath(o.out).c_str());
        return 0;
    }
    if (r.cancelled())
        return fail("interrupted; the epochs done are kept in " + attnscope::trainingStatePath(o.out) +
                    ": the same command goes on from there");
    if (!r)
        return fail(r.message());
    std::fprintf(stderr, "attnscope-train: %s: test accuracy %.4f on %d images, %lld parameters, %.0f s\n", r->outDir.c_str(),
                 r->testAccuracy, r->testCount, static_cast<long long>(r->parameters), r->wallSeconds);
    return 0;
}
