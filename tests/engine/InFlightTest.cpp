// Two batches in flight (AnalysisRun::enqueue, then finish): the report queues batch k + 1 before it waits for batch k.
// On the CPU the work is done when enqueue returns, so the statistics must be exactly those of adding the batches one
// after the other; a batch that is never finished (cancelled while queued, failed, dropped) must change nothing; and
// the order of finishing is checked, not assumed.
#include "TestSupport.h"

#include <attnscope/AnalysisRun.h>

#include <torch/cuda.h>

#include <cmath>
#include <memory>
#include <optional>

using namespace attnscope;
using namespace attnscope::test;

namespace {

AnalysisOptions withSnr(bool onDevice)
{
    AnalysisOptions options;
    options.perturbations.push_back(*Perturbation::parse("gaussian:sigma=8"));
    options.seed = 5;
    options.ablation = true; // its values are computed when queued and enter the statistics when finished
    options.analysesOnDevice = onDevice;
    return options;
}

class InFlight : public SampleImagesTest {
protected:
    // Images [begin, end) staged for `run`, indexed by their position.
    StagedBatch staged(const AnalysisRun& run, size_t begin, size_t end)
    {
        std::vector<const Model::Prepared*> batch;
        std::vector<int64_t> indices;
        for (size_t i = begin; i < end; ++i) {
            batch.push_back(&images[i]);
            indices.push_back(int64_t(i));
        }
        auto s = run.stage(batch, indices);
        EXPECT_TRUE(s) << s.message();
        return s ? *s : StagedBatch();
    }
};

// On the CPU the same operations in the same order: bit for bit. On a GPU (where a device machine runs these tests
// with the model on CUDA) a kernel may sum in another order from one call to the next: 1e-9 relative (and 1e-12).
void expectSame(const StatsTable& actual, const StatsTable& expected, bool onCpu)
{
    ASSERT_GT(expected.size(), 50u);
    ASSERT_EQ(actual.size(), expected.size());
    const double relative = onCpu ? 0.0 : 1e-9, absolute = onCpu ? 0.0 : 1e-12;
    for (const auto& [key, s] : expected) {
        const auto it = actual.find(key);
        ASSERT_NE(it, actual.end()) << key;
        EXPECT_EQ(it->second.count(), s.count()) << key;
        EXPECT_NEAR(it->second.mean(), s.mean(), relative * std::abs(s.mean()) + absolute) << key;
        EXPECT_NEAR(it->second.m2(), s.m2(), relative * std::abs(s.m2()) + absolute) << key;
    }
}

} // namespace

TEST_F(InFlight, TwoQueuedBatchesFinishToTheStatisticsOfOneAfterTheOther)
{
    ASSERT_NO_FATAL_FAILURE(useSamples(5));
    for (bool onDevice : { true, false }) {
        SCOPED_TRACE(onDevice ? "device path" : "host path");
        AnalysisRun serial(model, withSnr(onDevice)), piped(model, withSnr(onDevice));
        std::vector<Trace> serialTraces, pipedTraces;
        ASSERT_TRUE(serial.addStaged(staged(serial, 0, 3), {}, &serialTraces));
        ASSERT_TRUE(serial.addStaged(staged(serial, 3, 5), {}, &serialTraces));

        auto first = piped.enqueue(staged(piped, 0, 3), {}, true);
        ASSERT_TRUE(first) << first.message();
        auto second = piped.enqueue(staged(piped, 3, 5), {}, true);
        ASSERT_TRUE(second) << second.message();
        EXPECT_EQ(piped.images(), 0); // queued, not yet in the statistics
        EXPECT_TRUE(piped.statistics().empty());
        ASSERT_TRUE(piped.finish(*first, &pipedTraces));
        EXPECT_EQ(piped.images(), 3);
        ASSERT_TRUE(piped.finish(*second, &pipedTraces));
        EXPECT_EQ(piped.images(), 5);
        expectSame(piped.statistics(), serial.statistics(), model->info().device == "cpu");
        // The clean traces come out in image order with their logits.
        ASSERT_EQ(pipedTraces.size(), 5u);
        for (size_t i = 0; i < 5; ++i)
            EXPECT_LE(relativeError(pipedTraces[i].logits, serialTraces[i].logits), model->info().device == "cpu" ? 0.0 : 1e-6) << i;
    }
}

TEST_F(InFlight, ABatchNeverFinishedChangesNothingAndTheOrderIsChecked)
{
    ASSERT_NO_FATAL_FAILURE(useSamples(5));
    AnalysisRun reference(model, withSnr(true)), run(model, withSnr(true)), other(model, withSnr(true));
    ASSERT_TRUE(reference.addStaged(staged(reference, 0, 2)));
    ASSERT_TRUE(reference.addStaged(staged(reference, 4, 5)));

    // Cancelled while queued: nothing to finish, nothing added.
    auto cancelled = run.enqueue(staged(run, 2, 4), [] { return true; });
    ASSERT_FALSE(cancelled);
    EXPECT_TRUE(cancelled.cancelled());

    auto a = run.enqueue(staged(run, 0, 2));
    auto dropped = run.enqueue(staged(run, 2, 4)); // queued and then given up: never finished
    auto b = run.enqueue(staged(run, 4, 5));
    ASSERT_TRUE(a && dropped && b);
    // Out of order: b's numbers would enter before a's.
    ASSERT_TRUE(run.finish(*a));
    ASSERT_TRUE(run.finish(*b));
    auto again = run.finish(*a);
    ASSERT_FALSE(again);
    EXPECT_NE(again.message().find("in the order they were enqueued"), std::string::npos) << again.message();
    auto late = run.finish(*dropped); // older than one finished: refused, not added out of order
    ASSERT_FALSE(late);
    EXPECT_EQ(run.images(), 3);
    expectSame(run.statistics(), reference.statistics(), model->info().device == "cpu");

    // Another run's batch, and no batch at all.
    auto foreign = other.enqueue(staged(other, 0, 1));
    ASSERT_TRUE(foreign);
    auto wrongRun = run.finish(*foreign);
    ASSERT_FALSE(wrongRun);
    EXPECT_NE(wrongRun.message().find("another run"), std::string::npos) << wrongRun.message();
    PendingBatch none;
    EXPECT_FALSE(run.finish(none));
    EXPECT_EQ(run.images(), 3);
}

namespace {

// Images 0..4 in batches of 2 ([0 1] [2 3] [4 0] [1 2] [3], indices 0..8): three batches of one shape after the first,
// and a last, partial one.
std::vector<std::vector<size_t>> batchesOfTwo() { return { { 0, 1 }, { 2, 3 }, { 4, 0 }, { 1, 2 }, { 3 } }; }

StagedBatch stageImages(const AnalysisRun& run, const std::vector<Model::Prepared>& images, const std::vector<size_t>& which, int64_t first)
{
    std::vector<const Model::Prepared*> batch;
    std::vector<int64_t> indices;
    for (size_t k = 0; k < which.size(); ++k) {
        batch.push_back(&images[which[k]]);
        indices.push_back(first + int64_t(k));
    }
    auto s = run.stage(batch, indices);
    EXPECT_TRUE(s) << s.message();
    return s ? *s : StagedBatch();
}

// The same batches through `run`, two in flight, the clean traces kept.
void addTwoInFlight(AnalysisRun& run, const std::vector<Model::Prepared>& images, std::vector<Trace>& traces)
{
    std::optional<PendingBatch> previous;
    int64_t first = 0;
    for (const auto& which : batchesOfTwo()) {
        auto queued = run.enqueue(stageImages(run, images, which, first), {}, true);
        ASSERT_TRUE(queued) << queued.message();
        first += int64_t(which.size());
        if (previous)
            ASSERT_TRUE(run.finish(*previous, &traces));
        previous = std::move(*queued);
    }
    ASSERT_TRUE(run.finish(*previous, &traces));
}

// The same batches through a run asking for CUDA graphs (`graphed`) and one that does not (`eager`), two in flight,
// on `device`; the statistics compared, bit for bit on the CPU.
struct InFlightGraphs : ::testing::Test {
    void runBoth(const std::string& device)
    {
        LoadOptions load;
        load.device = device;
        auto model = Model::load("builtin:fmnist-vit-d4", load);
        ASSERT_TRUE(model) << model.message();
        const auto images = fashionSamples(**model, 5);
        AnalysisOptions withGraphs = withSnr(true), without = withSnr(true);
        withGraphs.cudaGraph = true;
        withGraphs.ablation = without.ablation = false;
        graphed = std::make_unique<AnalysisRun>(*model, withGraphs);
        eager = std::make_unique<AnalysisRun>(*model, without);
        ASSERT_NO_FATAL_FAILURE(addTwoInFlight(*graphed, images, graphedTraces));
        ASSERT_NO_FATAL_FAILURE(addTwoInFlight(*eager, images, eagerTraces));
        expectSame(graphed->statistics(), eager->statistics(), device == "cpu");
        EXPECT_EQ(eager->cudaGraphNote(), "");
    }
    std::unique_ptr<AnalysisRun> graphed, eager;
    std::vector<Trace> graphedTraces, eagerTraces;
};

} // namespace

// Off CUDA (or in a build without CUDA graphs) a run asking for them runs every batch eagerly, the same numbers, and
// says why.
TEST_F(InFlightGraphs, OffCudaEveryBatchRunsEagerlyAndTheRunSaysWhy)
{
    ASSERT_NO_FATAL_FAILURE(runBoth("cpu"));
    EXPECT_EQ(graphed->cudaGraphReplays(), 0);
    EXPECT_NE(graphed->cudaGraphNote().find("CUDA graphs need a CUDA device"), std::string::npos) << graphed->cudaGraphNote();
}

// On a GPU (the device machine runs this): batches replayed from a captured graph give the eager run's statistics and
// logits; the first batch of the shape and the last, partial one run eagerly.
TEST_F(InFlightGraphs, CudaGraphReplaysGiveTheEagerRunsNumbers)
{
    if (!torch::cuda::is_available())
        GTEST_SKIP() << "no CUDA device (this runs where a GPU is present)";
    ASSERT_NO_FATAL_FAILURE(runBoth("cuda"));
    EXPECT_EQ(graphed->cudaGraphNote(), "");
    EXPECT_EQ(graphed->cudaGraphReplays(), 3);
    ASSERT_EQ(graphedTraces.size(), eagerTraces.size());
    for (size_t i = 0; i < graphedTraces.size(); ++i)
        EXPECT_LE(relativeError(graphedTraces[i].logits, eagerTraces[i].logits), 1e-6) << i;
}
