#pragma once

#include "attnscope/Result.h"
#include "attnscope/Tensor.h"

#include <cstdint>
#include <functional>
#include <string>

namespace attnscope {

// attnscope-train: a small ViT trained in LibTorch on Fashion-MNIST or a folder of images, written as an
// ordinary model folder (model.safetensors in timm naming, config.json, preprocessor_config.json, MODEL_CARD.md).
struct TrainOptions {
    std::string name = "fmnist-vit";
    std::string data = "fashion-mnist"; // "fashion-mnist" or a folder with one sub-folder per class
    std::string fashionMnistDir = "/usr/share/datasets/fashion-mnist";
    std::string out;
    // vit | neutreno | boost | bilateral | quadratic (docs/analyses.md section 6)
    std::string variant = "vit";
    double neutrenoLambda = 0.6; // NeuTRENO's training value (Nguyen et al.)
    double boostT = 0.3;         // Boost's t, fixed during training
    int imageSize = 28;
    int patchSize = 4;
    int width = 64;
    int depth = 4;
    int heads = 4;
    int mlpHidden = 128;
    int epochs = 8;
    int batchSize = 128;
    double learningRate = 2e-3;
    double weightDecay = 0.05;
    double labelSmoothing = 0.1;
    uint64_t seed = 0;
    int limitTrain = 0; // 0: all
    int limitTest = 0;
    bool augment = true; // random shifts of up to 2 pixels and horizontal flips
    // Matrix products in bfloat16 (LibTorch's autocast; weights, optimiser state, norms, softmax and the loss stay in
    // float32): on CPUs with AMX or AVX512-BF16, and on GPUs, several times faster. The written model is float32.
    bool bf16 = false;
    std::string device = "cpu"; // where the training runs: cpu, cuda, cuda:<i> or auto (the test accuracy is measured on the CPU)
    std::string command; // the command line, for the model card
    // After every epoch the run's state is written beside the output folder ("<out>.train-state"); a run with the same
    // settings goes on from it, to the same weights as a run never stopped. fresh: discard it and start again.
    bool fresh = false;

    struct Epoch {
        int epoch = 0, epochs = 0;
        double loss = 0, trainAccuracy = 0, seconds = 0;
    };
    std::function<void(const Epoch&)> onEpoch;
    std::function<bool()> isCancelled;
    std::function<void(int epochsDone, const std::string& statePath)> onResume;
};

struct TrainResult {
    std::string outDir;
    double testAccuracy = 0;
    int testCount = 0;
    double wallSeconds = 0;
    int64_t parameters = 0;
};

Result<TrainResult> trainModel(const TrainOptions& options);

// Where trainModel keeps an unfinished run's state: the file "<out>.train-state" beside the output folder.
std::string trainingStatePath(const std::string& out);

// Training goes through LibTorch's autograd, whose matrix products are OpenBLAS's (the inference forward uses oneDNN).
// OpenBLAS picks its kernels once, when it is loaded, and Debian 12's 0.3.21 does not know CPUs newer than it: on a
// Sapphire Rapids it falls back to its SSE3 "Prescott" kernels, and training runs 2.3x slower (docs/performance.md,
// "Training"). Where OpenBLAS chose a core without the CPU's AVX-512 (or AVX2) and OPENBLAS_CORETYPE is unset, this sets
// it (SkylakeX, or Haswell) and executes the program again with the same arguments; it returns when there is nothing to
// do, when it already did so once, or when the exec failed.
void relaunchWithFastBlasKernels(char** argv);

// Cordonnier et al., Lemma 1: a one-layer multi-head attention model with K^2 quadratic-attention heads that
// computes the convolution of `kernel` [C_out, C_in, K, K] (and `bias` [C_out], may be empty) on images of
// `imageSize` pixels (patch size 1: one token per pixel). Head h = i*K + j is centred on the shift
// (i - K/2, j - K/2); `alpha` sets how sharply it attends there. Written as a model folder; the convolution
// appears as the first C_out channels of the attention branch U_1 (and X_1) at interior pixels.
Status buildConvolutionAsAttention(const Tensor& kernel, const Tensor& bias, int imageSize, double alpha,
                                         const std::string& outDir);

} // namespace attnscope
