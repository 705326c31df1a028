// Batching (docs/performance.md): several images in one forward give what one forward per image gives, to 1e-5.
#include "TestSupport.h"

#include <attnscope/AnalysisRun.h>
#include <attnscope/Image.h>
#include <attnscope/Model.h>

#include "vit/Threads.h"

#include <ATen/Parallel.h>

#include <atomic>

using namespace attnscope;
using namespace attnscope::test;

namespace {

// max |a - b| over both tensors, which must have one shape.
double maxDifference(const Tensor& a, const Tensor& b)
{
    EXPECT_EQ(a.shape(), b.shape());
    double d = 0;
    for (int64_t i = 0; i < std::min(a.numel(), b.numel()); ++i)
        d = std::max(d, double(std::abs(a.data()[i] - b.data()[i])));
    return d;
}

// Every recorded tap of `a` within `tolerance` of `b`'s (max |a - b|), logits too; 0 asks for the same bits.
void expectTracesWithin(const Trace& a, const Trace& b, double tolerance, const std::string& what)
{
    EXPECT_LE(maxDifference(a.logits, b.logits), tolerance) << what;
    for (int l = 1; l <= b.depth; ++l) {
        EXPECT_LE(maxDifference(a.attention[size_t(l)], b.attention[size_t(l)]), tolerance) << what << " layer " << l;
        EXPECT_LE(maxDifference(a.attnBranch[size_t(l)], b.attnBranch[size_t(l)]), tolerance) << what << " layer " << l;
        EXPECT_LE(maxDifference(a.residual[size_t(l)], b.residual[size_t(l)]), tolerance) << what << " layer " << l;
    }
    for (int l = 0; l <= b.depth; ++l)
        EXPECT_LE(maxDifference(a.blocks[size_t(l)], b.blocks[size_t(l)]), tolerance) << what << " layer " << l;
}

// The two runs' statistics, key by key: the same keys and counts, means and sds within float32 rounding. The two
// runs' forwards may differ in the last bits of their float32 products: the matrix kernels of oneDNN and OpenBLAS
// block their sums by batch shape and thread count differently on different CPUs (an AVX2 CPU's differ from an
// AVX-512 one's; docs/performance.md, "Which numbers are bit for bit"). A few float32 ulps (1.2e-7 each) through 4
// layers and the analyses' own float32 sums stay below 1e-5 relative; a real mix-up of images or keys is 1e-3 and up.
void expectSameStatistics(const StatsTable& a, const StatsTable& b)
{
    ASSERT_GT(a.size(), 100u);
    ASSERT_EQ(b.size(), a.size());
    for (const auto& [key, s] : a) {
        const auto it = b.find(key);
        ASSERT_NE(it, b.end()) << key;
        EXPECT_EQ(it->second.count(), s.count()) << key;
        EXPECT_NEAR(it->second.mean(), s.mean(), 1e-5 * std::max(1.0, std::abs(s.mean()))) << key;
        EXPECT_NEAR(it->second.sd(), s.sd(), 1e-5 * std::max(1.0, std::abs(s.sd()))) << key;
    }
}

std::vector<Tensor> inputsOf(const std::vector<Model::Prepared>& images)
{
    std::vector<Tensor> inputs;
    for (const auto& p : images)
        inputs.push_back(p.input);
    return inputs;
}

class Batching : public SampleImagesTest { };
class InterOp : public SampleImagesTest { };

} // namespace

TEST_F(Batching, RunBatchEqualsOneRunPerImage)
{
    ASSERT_NO_FATAL_FAILURE(useSamples(3));
    RunOptions options;
    options.record = RecordSpec::everything();
    auto batch = model->runBatch(inputsOf(images), options);
    ASSERT_TRUE(batch) << batch.message();
    ASSERT_EQ(batch->size(), 3u);
    for (size_t i = 0; i < images.size(); ++i) {
        auto one = model->run(images[i].input, options);
        ASSERT_TRUE(one) << one.message();
        expectTracesWithin((*batch)[i], *one, 1e-5, "image " + std::to_string(i));
    }
    // The images differ, so a mix-up of batch rows would show.
    EXPECT_GT(maxDifference((*batch)[0].logits, (*batch)[1].logits), 1e-3);
}

TEST_F(Batching, RunBatchRefusesMixedSizes)
{
    ASSERT_NO_FATAL_FAILURE(useSamples(1));
    const auto& shape = images[0].input.shape();
    const Tensor larger = Tensor::fromVector({ shape[0], shape[1] * 2, shape[2] }, std::vector<float>(size_t(images[0].input.numel() * 2), 0.f));
    auto r = model->runBatch({ images[0].input, larger });
    ASSERT_FALSE(r);
    EXPECT_NE(r.message().find("one size"), std::string::npos) << r.message();
    EXPECT_FALSE(model->runBatch({}));
}

TEST_F(Batching, AddImagesEqualsAddImageOneAtATime)
{
    ASSERT_NO_FATAL_FAILURE(useSamples(5));
    AnalysisOptions options;
    options.perturbations.push_back(*Perturbation::parse("gaussian:sigma=8"));
    options.perturbations.push_back(*Perturbation::parse("blur:sigma=1"));
    options.draws = 2;
    AnalysisRun single(model, options), batched(model, options);
    for (size_t i = 0; i < images.size(); ++i)
        ASSERT_TRUE(single.addImage(images[i], int64_t(i)));
    // Batches of 3 and 2, with shard-like indices kept as given.
    ASSERT_TRUE(batched.addImages({ &images[0], &images[1], &images[2] }, { 0, 1, 2 }));
    std::vector<Trace> traces;
    ASSERT_TRUE(batched.addImages({ &images[3], &images[4] }, { 3, 4 }, {}, &traces));
    EXPECT_EQ(traces.size(), 2u);
    EXPECT_EQ(batched.images(), single.images());
    expectSameStatistics(single.statistics(), batched.statistics());
    EXPECT_FALSE(batched.addImages({ &images[0] }, {}));
}

namespace {
// Two engine threads for one test, back to the suite's one after.
struct TwoThreads {
    TwoThreads() { setNumThreads(2); }
    ~TwoThreads() { setNumThreads(1); }
};

} // namespace

// With two threads a batch is cut into single-threaded forwards on both (docs/performance.md, Thread policy): each
// trace must be, bit for bit, what a one-thread forward of that image alone gives.
TEST_F(InterOp, BatchAtTwoThreadsIsBitwiseOneThreadForwards)
{
    ASSERT_NO_FATAL_FAILURE(useSamples(5));
    RunOptions options;
    options.record = RecordSpec::everything();
    std::vector<Trace> alone;
    for (const auto& p : images) {
        auto one = model->run(p.input, options);
        ASSERT_TRUE(one) << one.message();
        alone.push_back(*one);
    }
    TwoThreads threads;
    auto batch = model->runBatch(inputsOf(images), options);
    ASSERT_TRUE(batch) << batch.message();
    ASSERT_EQ(batch->size(), alone.size());
    for (size_t i = 0; i < alone.size(); ++i)
        expectTracesWithin((*batch)[i], alone[i], 0.0, "image " + std::to_string(i));
    EXPECT_GT(maxDifference((*batch)[0].logits, (*batch)[1].logits), 1e-3);
}

// The same with a head ablated per input: the inter-op path gives each forward its own input's head.
TEST_F(InterOp, AblatedHeadsFollowTheirInputsAcrossThreads)
{
    ASSERT_NO_FATAL_FAILURE(useSamples(4));
    RunOptions options;
    options.ablatedHeads = { HeadRef { 1, 0 }, HeadRef {}, HeadRef { 4, 3 }, HeadRef { 3, 2 } };
    options.ablation = AblationMode::Mean;
    std::vector<Trace> alone;
    for (size_t i = 0; i < images.size(); ++i) {
        RunOptions one = options;
        one.ablatedHeads = { options.ablatedHeads[i] };
        auto t = model->run(images[i].input, one);
        ASSERT_TRUE(t) << t.message();
        alone.push_back(*t);
    }
    TwoThreads threads;
    auto batch = model->runBatch(inputsOf(images), options);
    ASSERT_TRUE(batch) << batch.message();
    for (size_t i = 0; i < alone.size(); ++i)
        EXPECT_EQ(maxDifference((*batch)[i].logits, alone[i].logits), 0.0) << "image " << i;
    auto plain = model->run(images[0].input);
    ASSERT_TRUE(plain);
    EXPECT_GT(maxDifference(plain->logits, alone[0].logits), 1e-4) << "the ablation changed nothing";
}

// cleanTraceReady hands each image's clean trace out after the forward and before the analyses (the GUI shows
// the heatmap while the curves are computed): once per image, in order, the very traces addImages returns.
TEST_F(Batching, CleanTracesComeOutBeforeTheAnalyses)
{
    ASSERT_NO_FATAL_FAILURE(useSamples(2));
    AnalysisOptions options;
    options.perturbations.push_back(*Perturbation::parse("gaussian:sigma=8"));
    std::vector<size_t> seen;
    std::vector<Trace> early;
    AnalysisRun* self = nullptr;
    options.cleanTraceReady = [&](size_t image, const Trace& clean) {
        seen.push_back(image);
        early.push_back(clean);
        EXPECT_EQ(self->images(), 0); // nothing analysed yet
    };
    AnalysisRun run(model, options);
    self = &run;
    std::vector<Trace> returned;
    ASSERT_TRUE(run.addImages({ &images[0], &images[1] }, { 0, 1 }, {}, &returned));
    EXPECT_EQ(run.images(), 2);
    EXPECT_EQ(seen, (std::vector<size_t> { 0, 1 }));
    ASSERT_EQ(returned.size(), 2u);
    for (size_t i = 0; i < 2; ++i)
        EXPECT_EQ(early[i].logits.data(), returned[i].logits.data()); // the same tensors, not a rerun
}

// The analyses of an image run as parallel tasks at two threads; the statistics must not depend on that beyond
// float32 rounding (expectSameStatistics).
TEST_F(InterOp, AnalysisStatisticsDoNotDependOnThreads)
{
    ASSERT_NO_FATAL_FAILURE(useSamples(3));
    AnalysisOptions options;
    options.perturbations.push_back(*Perturbation::parse("gaussian:sigma=8"));
    options.perturbations.push_back(*Perturbation::parse("saltpepper:fraction=0.05"));
    options.draws = 2;
    AnalysisRun one(model, options), two(model, options);
    for (size_t i = 0; i < images.size(); ++i)
        ASSERT_TRUE(one.addImage(images[i], int64_t(i)));
    {
        TwoThreads threads;
        ASSERT_TRUE(two.addImage(images[0], 0));
        ASSERT_TRUE(two.addImages({ &images[1], &images[2] }, { 1, 2 }));
    }
    expectSameStatistics(one.statistics(), two.statistics());
}

// A cancel asked during a batch spread over threads ends the run with "cancelled", from whichever thread saw it.
TEST_F(InterOp, CancelDuringABatchSpreadOverThreads)
{
    ASSERT_NO_FATAL_FAILURE(useSamples(4));
    const std::vector<Tensor> inputs = inputsOf(images);
    std::atomic<int> polls { 0 };
    RunOptions options;
    options.isCancelled = [&] { return ++polls > 5; };
    TwoThreads threads;
    auto r = model->runBatch(inputs, options);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.message(), "cancelled");
    EXPECT_TRUE(r.cancelled());
    options.isCancelled = {};
    EXPECT_TRUE(model->runBatch(inputs, options)) << "the model works after a cancelled batch";
}

// Each inter-op worker runs its forward single-threaded even when the intra-op count is above 1: LibTorch's lazy
// per-thread initialisation (the first at::get_num_threads() of a thread) must not put the worker's OpenMP count
// back to the intra-op count.
TEST_F(InterOp, WorkersStaySingleThreadedAfterLibTorchsFirstCall)
{
    TwoThreads two;
    std::vector<int> counts(4, -1);
    runInterOp(counts.size(), 2, [&](size_t i) {
        (void)at::get_num_threads(); // what any ATen operator does first
        counts[i] = ompThreadsHere();
    });
    for (const int c : counts)
        EXPECT_EQ(c, 1);
}
