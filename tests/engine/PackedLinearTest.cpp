// The forward's linear layers on oneDNN with packed weights (engine/src/vit/PackedLinear.h) against at::linear: with
// LibTorch 1.13 on Debian's oneDNN 2 (PackedLinear.cpp), with LibTorch 2.x on its own oneDNN 3 (PackedLinearTorch.cpp).
#include "vit/PackedLinear.h"

#include "TorchTestSupport.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>

using namespace attnscope;
using attnscope::test::expectClose;

namespace {

constexpr const char* kNoPackedPath = "no packed path here (LibTorch 1.13 without libdnnl-dev; LibTorch 2.x without oneDNN, "
                                      "or on a CPU without AVX-512 or ONEDNN_MAX_CPU_ISA below it)";

torch::nn::Linear randomLinear(int64_t in, int64_t out, bool bias, uint64_t seed)
{
    torch::nn::Linear layer(torch::nn::LinearOptions(in, out).bias(bias));
    at::Generator gen = at::detail::createCPUGenerator(seed);
    at::NoGradGuard noGrad;
    layer->weight.copy_(at::normal(0.0, 0.05, { out, in }, gen));
    if (bias)
        layer->bias.copy_(at::normal(0.0, 0.5, { out }, gen));
    return layer;
}

} // namespace

TEST(PackedLinear, MatchesAtLinearOverShapesAndLayouts)
{
    if (!PackedLinears::available())
        GTEST_SKIP() << kNoPackedPath << ": at::linear is used throughout";
    c10::InferenceMode inference;
    PackedLinears packed;
    at::Generator gen = at::detail::createCPUGenerator(7);
    struct Case {
        int64_t rows, in, out;
        bool bias;
    };
    for (const Case c : { Case { 197, 384, 1152, true }, Case { 197, 1536, 384, true }, Case { 17, 64, 192, false },
                          Case { 5, 19, 7, true }, Case { 1, 3, 1, false } }) {
        auto layer = randomLinear(c.in, c.out, c.bias, uint64_t(c.rows * 1000 + c.in));
        const at::Tensor x2 = at::normal(0.0, 1.0, { c.rows, c.in }, gen);
        expectClose(packed.forward(layer, x2), layer->forward(x2));
        const at::Tensor x3 = x2.view({ 1, c.rows, c.in });
        expectClose(packed.forward(layer, x3), layer->forward(x3));
        const at::Tensor strided = at::normal(0.0, 1.0, { c.in, c.rows }, gen).t(); // not contiguous
        expectClose(packed.forward(layer, strided), layer->forward(strided));
        // The second call reuses the packed weights: the same answer.
        EXPECT_TRUE(at::equal(packed.forward(layer, x2), packed.forward(layer, x2)));
    }
}

// The qkv projection cut into q, k and v: each part at::linear's, contiguous on the packed path; the whole layer's
// packed weights and the parts' do not get mixed up (the first part starts where the whole weight starts).
TEST(PackedLinear, SplitIntoPartsMatchesAtLinearChunks)
{
    c10::InferenceMode inference;
    PackedLinears packed;
    at::Generator gen = at::detail::createCPUGenerator(5);
    // both layers live as long as `packed`, as a model's layers do
    std::vector<torch::nn::Linear> layers { randomLinear(96, 3 * 96, true, 11), randomLinear(96, 3 * 96, false, 12) };
    for (auto& layer : layers) {
        const bool bias = layer->bias.defined();
        const at::Tensor x = at::normal(0.0, 1.0, { 2, 17, 96 }, gen);
        const at::Tensor whole = layer->forward(x);
        expectClose(packed.forward(layer, x), whole);
        const auto parts = packed.forwardSplit(layer, x, 3);
        ASSERT_EQ(parts.size(), 3u);
        for (int p = 0; p < 3; ++p) {
            SCOPED_TRACE(testing::Message() << "part " << p << (bias ? " with bias" : ""));
            expectClose(parts[size_t(p)], whole.narrow(-1, p * 96, 96));
            // contiguous where the packed path has a kernel on this CPU, whichever oneDNN offers (brgemm, jit_1x1)
            EXPECT_EQ(parts[size_t(p)].is_contiguous(), !PackedLinears::kernelHere().empty()) << PackedLinears::kernelHere();
        }
        expectClose(packed.forward(layer, x), whole); // after the parts: still the whole layer
        // parts that do not divide the output: at::linear's chunks
        const auto uneven = packed.forwardSplit(layer, x, 5);
        ASSERT_EQ(uneven.size(), 5u);
        expectClose(at::cat(uneven, -1), whole);
    }
}

TEST(PackedLinear, EverythingElseGoesThroughAtLinear)
{
    PackedLinears packed;
    auto layer = randomLinear(8, 4, true, 3);
    // float64 input: at::linear's own result, bit for bit
    {
        auto wide = randomLinear(8, 4, true, 3);
        wide->to(at::kDouble);
        const at::Tensor x = at::randn({ 3, 8 }, at::kDouble);
        EXPECT_TRUE(at::equal(packed.forward(wide, x), wide->forward(x)));
    }
    // autograd on: at::linear, so the gradient flows
    const at::Tensor x = at::randn({ 3, 8 });
    const at::Tensor y = packed.forward(layer, x);
    EXPECT_TRUE(y.requires_grad());
    y.sum().backward();
    EXPECT_TRUE(layer->weight.grad().defined());
    // an empty input
    EXPECT_EQ(packed.forward(layer, at::empty({ 0, 8 })).sizes(), (std::vector<int64_t> { 0, 4 }));
}

TEST(PackedLinear, ThreadsShareOneCache)
{
    if (!PackedLinears::available())
        GTEST_SKIP() << kNoPackedPath;
    PackedLinears packed;
    auto layer = randomLinear(64, 96, true, 11);
    const at::Tensor x = at::randn({ 50, 64 });
    at::Tensor expected;
    {
        c10::InferenceMode inference;
        expected = layer->forward(x);
    }
    test::expectSameOnFourThreads([&] { return packed.forward(layer, x); }, expected);
}

// The MLP's first product with its activation as oneDNN's epilogue, against at::linear then the activation.
TEST(PackedLinear, ActivationEpilogueMatchesTheSeparateActivation)
{
    if (!PackedLinears::available())
        GTEST_SKIP() << kNoPackedPath;
    c10::InferenceMode inference;
    at::Generator gen = at::detail::createCPUGenerator(5);
    auto layer = randomLinear(96, 200, true, 9);
    const at::Tensor x = at::normal(0.0, 1.0, { 1, 37, 96 }, gen);
    for (const Activation a : { Activation::Gelu, Activation::GeluTanh, Activation::QuickGelu, Activation::Relu, Activation::Silu }) {
        PackedLinears packed;
        SCOPED_TRACE(int(a));
        expectClose(packed.forward(layer, x, a), applyActivation(layer->forward(x), a));
    }
}

// At two intra-op threads the rows are cut into one block per team thread (PackedLinears' row split): the whole
// layer, the qkv parts and the MLP's activation epilogue still give at::linear's numbers.
TEST(PackedLinear, RowsCutOverTwoThreadsMatchAtLinear)
{
    c10::InferenceMode inference;
    PackedLinears packed;
    at::Generator gen = at::detail::createCPUGenerator(21);
    auto qkv = randomLinear(96, 3 * 96, true, 4), fc1 = randomLinear(96, 200, true, 5);
    const at::Tensor x = at::normal(0.0, 1.0, { 2, 97, 96 }, gen); // 194 rows: blocks of 97
    const int before = at::get_num_threads();
    at::set_num_threads(2);
    const at::Tensor y = packed.forward(qkv, x);
    const auto parts = packed.forwardSplit(qkv, x, 3);
    const at::Tensor h = packed.forward(fc1, x, Activation::Gelu);
    at::set_num_threads(before);
    const at::Tensor whole = qkv->forward(x);
    expectClose(y, whole);
    ASSERT_EQ(parts.size(), 3u);
    for (int p = 0; p < 3; ++p)
        expectClose(parts[size_t(p)], whole.narrow(-1, p * 96, 96));
    expectClose(h, applyActivation(fc1->forward(x), Activation::Gelu));
}

// Signals arriving while the linear layers run (Ctrl-C to the CLI, a profiler's SIGPROF) leave the heap intact
// (runUnderSignals), whichever kernel oneDNN gives the packed path on this CPU (brgemm, or the jit_1x1 convolution
// without AVX-512): the ViT-S qkv projection and the MLP's first layer with its activation.
TEST(PackedLinear, SignalsWhileItRunsLeaveTheHeapIntact)
{
    c10::InferenceMode inference;
    PackedLinears packed;
    at::Generator gen = at::detail::createCPUGenerator(13);
    auto qkv = randomLinear(384, 1152, true, 1), fc1 = randomLinear(384, 1536, true, 2);
    const at::Tensor x = at::normal(0.0, 1.0, { 1, 197, 384 }, gen);
    at::Tensor y, h;
    const int signals = test::runUnderSignals(2.0, [&] {
        y = packed.forward(qkv, x);
        h = packed.forward(fc1, x, Activation::Gelu);
    });
    EXPECT_GT(signals, 1000);
    expectClose(y, qkv->forward(x));
    expectClose(h, applyActivation(fc1->forward(x), Activation::Gelu));
}
