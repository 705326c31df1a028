// attnscope-train's choice of BLAS kernels (relaunchWithFastBlasKernels, Trainer.h): OpenBLAS prints the core it
// picked when OPENBLAS_VERBOSE=2, once per load, so a relaunch shows as two lines. On a CPU with AVX-512 or AVX2, the
// last core is one that uses them, whatever OpenBLAS picked first; a core the user sets is kept.
#include "CliSupport.h"

#include <attnscope/Datasets.h>
#include <attnscope/Model.h>

#include <cstdlib>
#include <regex>

using namespace attnscope::test;
namespace fs = std::filesystem;

namespace {

struct TrainRun {
    int status = -1;
    std::string output;
};

TrainRun train(const fs::path& dir, const std::string& environment, const std::string& options = "", int epochs = 1)
{
    const fs::path log = dir / "train.log";
    const std::string cmd = environment + " OPENBLAS_VERBOSE=2 " ATTNSCOPE_TRAIN " --depth 1 --width 16 --heads 2 --mlp 16 --epochs "
        + std::to_string(epochs) + " --limit-train 64 --limit-test 16 --threads 1 " + options + " --out " + (dir / "model").string() + " >" + log.string()
        + " 2>&1 </dev/null";
    const int raw = std::system(cmd.c_str());
    return { WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp(log) };
}

std::vector<std::string> cores(const std::string& output)
{
    std::vector<std::string> found;
    const std::regex line("Core: ([A-Za-z0-9]+)");
    for (auto it = std::sregex_iterator(output.begin(), output.end(), line); it != std::sregex_iterator(); ++it)
        found.push_back((*it)[1]);
    return found;
}

TEST_F(Cli, TrainingUsesTheCpusVectorKernels)
{
    if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
        GTEST_SKIP() << "Fashion-MNIST (dataset-fashion-mnist) is not installed";
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2"))
        GTEST_SKIP() << "a CPU without AVX2: OpenBLAS's generic kernels are what it has";
    const TrainRun run = train(m_dir, "");
    ASSERT_EQ(run.status, 0) << run.output;
    EXPECT_TRUE(fs::exists(m_dir / "model" / "MODEL_CARD.md"));
    const auto seen = cores(run.output);
    if (seen.empty())
        GTEST_SKIP() << "this OpenBLAS does not say which core it uses (not a DYNAMIC_ARCH build?)";
    const std::string last = seen.back();
    if (const char* chosen = std::getenv("OPENBLAS_CORETYPE")) { // the environment's choice (make test-avx2): left alone
        EXPECT_EQ(seen, std::vector<std::string> { chosen }) << run.output;
        return;
    }
    const bool avx512 = __builtin_cpu_supports("avx512f");
    const std::vector<std::string> fast = avx512 ? std::vector<std::string> { "SkylakeX", "Cooperlake", "SapphireRapids" }
                                                 : std::vector<std::string> { "Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids" };
    EXPECT_NE(std::find(fast.begin(), fast.end(), last), fast.end()) << "cores seen: " << run.output;
    EXPECT_LE(seen.size(), 2u) << "relaunched more than once: " << run.output;

    // A core the user chose is left alone.
    const TrainRun chosen = train(m_dir, "OPENBLAS_CORETYPE=Prescott");
    ASSERT_EQ(chosen.status, 0) << chosen.output;
    EXPECT_EQ(cores(chosen.output), std::vector<std::string> { "Prescott" }) << chosen.output;
}

// --device: the CPU by default; cuda where LibTorch has CUDA and a GPU is present (the card says where it trained),
// otherwise one line naming the device; a device of no kind is refused.
TEST_F(Cli, TrainingRunsOnTheDeviceAsked)
{
    if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
        GTEST_SKIP() << "Fashion-MNIST (dataset-fashion-mnist) is not installed";
    const TrainRun cpu = train(m_dir, "", "--device cpu");
    ASSERT_EQ(cpu.status, 0) << cpu.output;
    EXPECT_NE(slurp(m_dir / "model" / "MODEL_CARD.md").find("training on the CPU"), std::string::npos);
    fs::remove_all(m_dir / "model");
    const TrainRun cuda = train(m_dir, "", "--device cuda");
    if (cuda.status == 0) {
        EXPECT_NE(slurp(m_dir / "model" / "MODEL_CARD.md").find("training on cuda"), std::string::npos);
    } else {
        EXPECT_EQ(cuda.status, 1) << cuda.output;
        EXPECT_NE(cuda.output.find("device cuda: this build of LibTorch has no CUDA, or no GPU is present"), std::string::npos)
            << cuda.output;
        EXPECT_FALSE(fs::exists(m_dir / "model" / "model.safetensors")) << "nothing written for a device that is not there";
    }
    const TrainRun bad = train(m_dir, "", "--device gpu");
    EXPECT_EQ(bad.status, 1) << bad.output;
    EXPECT_NE(bad.output.find("device gpu: not a device (auto, cpu, cuda, cuda:<i>)"), std::string::npos) << bad.output;
}

// --epochs-this-run K: K epochs, then exit 0 with the state kept and no model written; the same command goes on,
// K more each time, and the last run writes the model and removes the state.
TEST_F(Cli, TrainingInPartsGoesOnWhereEachPartStopped)
{
    if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
        GTEST_SKIP() << "Fashion-MNIST (dataset-fashion-mnist) is not installed";
    const std::string state = (m_dir / "model.train-state").string();
    const std::string options = "--epochs-this-run 2";
    const TrainRun first = train(m_dir, "", options, 3);
    ASSERT_EQ(first.status, 0) << first.output;
    EXPECT_NE(first.output.find("epoch 2/3"), std::string::npos) << first.output;
    EXPECT_EQ(first.output.find("epoch 3/3"), std::string::npos) << first.output;
    EXPECT_NE(first.output.find("stopped after 2 epochs (--epochs-this-run)"), std::string::npos) << first.output;
    EXPECT_TRUE(fs::exists(state));
    EXPECT_FALSE(fs::exists(m_dir / "model" / "model.safetensors"));

    const TrainRun second = train(m_dir, "", options, 3);
    ASSERT_EQ(second.status, 0) << second.output;
    EXPECT_NE(second.output.find("going on after epoch 2"), std::string::npos) << second.output;
    EXPECT_NE(second.output.find("epoch 3/3"), std::string::npos) << second.output;
    EXPECT_TRUE(fs::exists(m_dir / "model" / "model.safetensors"));
    EXPECT_FALSE(fs::exists(state));

    const TrainRun refused = train(m_dir, "", "--epochs-this-run 0", 3);
    EXPECT_NE(refused.status, 0) << refused.output;
}

// export-images --class-folders: each image in a folder named after its class, which analyze reads back as that class
// (classOfFolder, the ablation's accuracy change).
TEST_F(Cli, ExportedClassFoldersNameEachImagesClass)
{
    if (!fs::exists("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"))
        GTEST_SKIP() << "Fashion-MNIST (dataset-fashion-mnist) is not installed";
    const fs::path out = m_dir / "images";
    const std::string cmd = ATTNSCOPE_TRAIN " export-images --count 30 --class-folders --out " + out.string() + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    auto model = attnscope::Model::load("builtin:fmnist-vit-d4");
    ASSERT_TRUE(model) << model.message();
    int files = 0;
    const std::regex label("-class([0-9])\\.png$");
    for (const auto& e : fs::recursive_directory_iterator(out)) {
        if (!e.is_regular_file())
            continue;
        std::smatch m;
        const std::string name = e.path().filename().string();
        ASSERT_TRUE(std::regex_search(name, m, label)) << name;
        EXPECT_EQ(attnscope::classOfFolder(e.path().string(), (*model)->info().labels), std::stoi(m[1])) << e.path();
        ++files;
    }
    EXPECT_EQ(files, 30);
}

} // namespace
