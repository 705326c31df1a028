// The memory estimate of a run (Model.h, estimateRunMemory) and the refusal of runs that cannot fit.
#include "TestSupport.h"

#include <attnscope/Model.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

using namespace attnscope;
using namespace attnscope::test;

namespace {

TEST(RunMemory, EstimateCountsTapsAsAnalysesMdShapesThem)
{
    auto model = Model::load("builtin:fmnist-vit-d4");
    ASSERT_TRUE(model.ok()) << model.message();
    const ModelConfig& c = (*model)->config();
    const int64_t n = c.numTokens(); // 1 + 7 x 7
    ASSERT_EQ(n, 50);
    const int64_t h = c.numHeads, d = c.width, layers = c.depth;

    RecordSpec none;
    const RunMemory bare = estimateRunMemory(c, none);
    EXPECT_EQ(bare.tokens, n);
    EXPECT_EQ(bare.taps, 0);
    // The architecture's parameter count is the loaded model's, for this plain timm ViT.
    EXPECT_EQ(bare.weights, (*model)->info().parameterCount * 4);
    EXPECT_EQ(bare.working, 4 * (2 * h * n * n + 6 * n * d + n * c.mlpHidden));

    RecordSpec attention;
    attention.attention = true;
    EXPECT_EQ(estimateRunMemory(c, attention).taps, 4 * layers * h * n * n);
    attention.layers = { 2 };
    EXPECT_EQ(estimateRunMemory(c, attention).taps, 4 * h * n * n);

    const RunMemory all = estimateRunMemory(c, RecordSpec::everything());
    EXPECT_EQ(all.taps, 4 * (layers * h * n * n + 2 * layers * n * d + (layers + 1) * n * d));
    EXPECT_EQ(all.total(), all.weights + all.taps + all.working);

    // Twice the pixels per side: four times the patches.
    const RunMemory big = estimateRunMemory(c, attention, 56, 56);
    EXPECT_EQ(big.tokens, 1 + 14 * 14);
}

TEST(RunMemory, EstimateSaturatesInsteadOfWrapping)
{
    ModelConfig c;
    c.patchSize = 1;
    RecordSpec s = RecordSpec::everything();
    const RunMemory m = estimateRunMemory(c, s, 1 << 30, 1 << 30);
    EXPECT_EQ(m.taps, INT64_MAX);
    EXPECT_GT(m.working, 0);
}

TEST(RunMemory, AvailableMemoryIsReadFromProcMeminfo)
{
    const int64_t available = availableMemoryBytes();
    if (available < 0)
        GTEST_SKIP() << "no /proc/meminfo";
    EXPECT_GT(available, int64_t(16) << 20);
    EXPECT_EQ(formatBytes(1536), "1.5 KiB");
    EXPECT_EQ(formatBytes(3 * (int64_t(1) << 30)), "3.0 GiB");
    EXPECT_EQ(formatBytes(100), "100 bytes");
}

// A 2800 x 2800 input to a patch-4 model: 490,001 tokens, so one layer's attention map alone is 4 heads x
// 490,001^2 floats = 3.5 TiB. The input itself is 31 MB; the run must be refused before the forward allocates.
TEST(RunMemory, RunThatCannotFitIsRefusedWithTheEstimate)
{
    if (availableMemoryBytes() < 0)
        GTEST_SKIP() << "no /proc/meminfo: runs are not checked";
    auto model = Model::load("builtin:fmnist-vit-d4");
    ASSERT_TRUE(model.ok()) << model.message();
    const int64_t side = 2800;
    Tensor input = Tensor::fromVector({ 1, side, side }, std::vector<float>(size_t(side * side), 0.5f));
    RunOptions options;
    options.record.attention = true;
    auto run = (*model)->run(input, options);
    ASSERT_FALSE(run.ok()) << "a run needing terabytes was started";
    const std::string& m = run.message();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_NE(m.find("run refused: an input of 2800x2800 (490001 tokens) needs about"), std::string::npos) << m;
    EXPECT_NE(m.find("TiB"), std::string::npos) << m;
    EXPECT_NE(m.find("is available (MemAvailable)"), std::string::npos) << m;
    std::printf("[ message  ] %s\n", m.c_str());

    // Recording nothing still needs the working set of one block: 2 x 4 x 490001^2 floats, also refused.
    auto bare = (*model)->run(input);
    ASSERT_FALSE(bare.ok());
    EXPECT_NE(bare.message().find("run refused"), std::string::npos) << bare.message();

    // The trained size runs.
    auto normal = (*model)->run(Tensor::fromVector({ 1, 28, 28 }, std::vector<float>(28 * 28, 0.5f)), options);
    EXPECT_TRUE(normal.ok()) << normal.message();
}

// The estimate against what a run really takes: a 200 x 200 input (2501 tokens) with attention recorded, in a
// child process so that its peak resident memory (ru_maxrss) is this run's. The estimate must hold the recorded
// maps it promises and not be exceeded by more than LibTorch's allocator slack.
TEST(RunMemory, EstimateBoundsTheMeasuredPeak)
{
    auto model = Model::load("builtin:fmnist-vit-d4");
    ASSERT_TRUE(model.ok()) << model.message();
    RunOptions options;
    options.record.attention = true;
    const int64_t side = 200;
    const RunMemory estimate = estimateRunMemory((*model)->config(), options.record, side, side);
    ASSERT_EQ(estimate.tokens, 2501);
    Tensor input = Tensor::fromVector({ 1, side, side }, std::vector<float>(size_t(side * side), 0.5f));
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        setNumThreads(1); // OpenMP's worker threads did not survive the fork
        long pages = 0, resident = 0;
        std::ifstream("/proc/self/statm") >> pages >> resident;
        const int64_t before = int64_t(resident) * sysconf(_SC_PAGESIZE);
        auto run = (*model)->run(input, options);
        rusage usage {};
        getrusage(RUSAGE_SELF, &usage);
        const int64_t result[2] = { run.ok() ? 1 : 0, int64_t(usage.ru_maxrss) * 1024 - before };
        _exit(write(fds[1], result, sizeof result) == sizeof result ? 0 : 1);
    }
    close(fds[1]);
    int64_t result[2] = { 0, 0 };
    const bool got = read(fds[0], result, sizeof result) == sizeof result;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(got && result[0] == 1) << "the run failed in the child";
    const int64_t measured = result[1];
    std::printf("[ measured ] 2501 tokens, attention recorded: estimate %s (taps %s + working %s), peak growth %s\n",
                formatBytes(estimate.taps + estimate.working).c_str(), formatBytes(estimate.taps).c_str(),
                formatBytes(estimate.working).c_str(), formatBytes(measured).c_str());
    EXPECT_GE(measured, estimate.taps * 9 / 10);
#if defined(__SANITIZE_ADDRESS__)
    // Under AddressSanitizer freed blocks wait in its quarantine and every block carries redzones, so the peak is
    // the sanitizer's, not the run's: only the lower bound holds.
#else
    EXPECT_LE(measured, (estimate.taps + estimate.working) * 5 / 4);
#endif
}

} // namespace
