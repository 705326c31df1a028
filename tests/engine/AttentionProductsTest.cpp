// The attention's batched products on oneDNN (engine/src/AttentionProducts.h) against at::matmul, on the strided
// views the forward hands them.
#include "AttentionProducts.h"
#include "PackedLinear.h"

#include "TorchTestSupport.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>

using namespace attnscope;
using attnscope::test::expectClose;

namespace {

// q, k, v [B, H, N, d] as views of one qkv projection [B, N, 3 D], the way the forward takes them.
struct Qkv {
    at::Tensor q, k, v;
};
Qkv viewsOfProjection(int64_t B, int64_t N, int64_t H, int64_t d, at::Generator& gen)
{
    const at::Tensor qkv = at::normal(0.0, 1.0, { B, N, 3 * H * d }, gen).reshape({ B, N, 3, H, d }).permute({ 2, 0, 3, 1, 4 });
    return { qkv[0], qkv[1], qkv[2] };
}

} // namespace

TEST(AttentionProducts, MatchAtMatmulOnTheForwardsViews)
{
    if (!AttentionProducts::enabled())
        GTEST_SKIP() << "the oneDNN path is off (AttentionProducts.cpp): at::matmul is used throughout";
    c10::InferenceMode inference;
    AttentionProducts products;
    at::Generator gen = at::detail::createCPUGenerator(3);
    struct Case {
        int64_t B, N, H, d;
    };
    for (const Case c : { Case { 1, 197, 6, 64 }, Case { 2, 50, 3, 64 }, Case { 3, 17, 4, 8 }, Case { 1, 1, 1, 1 } }) {
        SCOPED_TRACE(testing::Message() << c.B << "x" << c.N << " H" << c.H << " d" << c.d);
        const auto [q, k, v] = viewsOfProjection(c.B, c.N, c.H, c.d, gen);
        const double scale = 1.0 / std::sqrt(double(c.d));
        const at::Tensor logits = products.scores(q, k, scale);
        expectClose(logits, at::matmul(q * scale, k.transpose(-2, -1)));
        const at::Tensor attn = at::softmax(logits, -1);
        const at::Tensor o = products.mix(attn, v);
        expectClose(o, at::matmul(attn, v));
        // heads interleaved in memory as the output projection reads them
        EXPECT_TRUE(o.transpose(1, 2).is_contiguous());
        // a second call reuses the primitive: the same answer
        EXPECT_TRUE(at::equal(products.mix(attn, v), o));
        // contiguous operands and an attention map broadcast over the batch (QuadraticAttention's) take either path
        expectClose(products.scores(q.contiguous(), k.contiguous(), 1.0), at::matmul(q, k.transpose(-2, -1)));
        const at::Tensor shared = attn.narrow(0, 0, 1).expand_as(attn);
        expectClose(products.mix(shared, v), at::matmul(shared, v));
    }
}

TEST(AttentionProducts, EverythingElseGoesThroughAtMatmul)
{
    AttentionProducts products;
    // float64: at::matmul's own result, bit for bit
    const at::Tensor q = at::randn({ 1, 2, 5, 4 }, at::kDouble), k = at::randn({ 1, 2, 5, 4 }, at::kDouble);
    EXPECT_TRUE(at::equal(products.scores(q, k, 0.5), at::matmul(q * 0.5, k.transpose(-2, -1))));
    EXPECT_TRUE(at::equal(attentionMix(q, k.transpose(-2, -1), nullptr), at::matmul(q, k.transpose(-2, -1))));
    // autograd on: at::matmul, so the gradient flows
    const at::Tensor a = at::randn({ 1, 2, 5, 5 }).requires_grad_(), v = at::randn({ 1, 2, 5, 4 });
    const at::Tensor o = products.mix(a, v);
    ASSERT_TRUE(o.requires_grad());
    o.sum().backward();
    EXPECT_TRUE(a.grad().defined());
    // empty
    EXPECT_EQ(products.mix(at::empty({ 1, 2, 0, 0 }), at::empty({ 1, 2, 0, 4 })).sizes(), (std::vector<int64_t> { 1, 2, 0, 4 }));
}

TEST(AttentionProducts, ThreadsShareOneCache)
{
    if (!AttentionProducts::enabled())
        GTEST_SKIP() << "the oneDNN path is off (AttentionProducts.cpp)";
    AttentionProducts products;
    at::Generator gen = at::detail::createCPUGenerator(9);
    const Qkv views = viewsOfProjection(1, 65, 4, 16, gen);
    const at::Tensor &q = views.q, &k = views.k, &v = views.v;
    at::Tensor expected;
    {
        c10::InferenceMode inference;
        expected = at::matmul(at::softmax(at::matmul(q * 0.25, k.transpose(-2, -1)), -1), v);
    }
    test::expectSameOnFourThreads([&] { return products.mix(at::softmax(products.scores(q, k, 0.25), -1), v); }, expected);
}
