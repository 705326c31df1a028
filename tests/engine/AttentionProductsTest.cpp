// The attention's batched products on oneDNN (engine/src/vit/AttentionProducts.h) against at::matmul, on the layouts the
// forward hands them: q, k and v as contiguous [B, N, D] (the packed path) or as views of one qkv projection.
#include "vit/AttentionProducts.h"
#include "vit/PackedLinear.h"

#include "TorchTestSupport.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>


#ifdef ATTNSCOPE_HAVE_DNNL
#include "vit/OneDnnSupport.h"
#endif

using namespace attnscope;
using attnscope::test::expectClose;

namespace {

struct Qkv {
    at::Tensor q, k, v;
};
// q, k, v [B, H, N, d] as views of one qkv projection [B, N, 3 D]: the forward's layout without the packed path.
Qkv viewsOfProjection(int64_t B, int64_t N, int64_t H, int64_t d, at::Generator& gen)
{
    const at::Tensor qkv = at::normal(0.0, 1.0, { B, N, 3 * H * d }, gen).reshape({ B, N, 3, H, d }).permute({ 2, 0, 3, 1, 4 });
    return { qkv[0], qkv[1], qkv[2] };
}
// q, k, v [B, H, N, d] as views of three contiguous [B, N, D] (PackedLinears::forwardSplit): the packed path's layout.
Qkv viewsOfParts(int64_t B, int64_t N, int64_t H, int64_t d, at::Generator& gen)
{
    const auto part = [&] { return at::normal(0.0, 1.0, { B, N, H * d }, gen).view({ B, N, H, d }).transpose(1, 2); };
    Qkv out;
    out.q = part(), out.k = part(), out.v = part();
    return out;
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
    for (const Case c : { Case { 1, 197, 6, 64 }, Case { 2, 50, 3, 64 }, Case { 3, 17, 4, 8 }, Case { 1, 1, 1, 1 } })
        for (const bool parts : { true, false }) {
            SCOPED_TRACE(testing::Message() << c.B << "x" << c.N << " H" << c.H << " d" << c.d << (parts ? " parts" : " views"));
            const auto [q, k, v] = parts ? viewsOfParts(c.B, c.N, c.H, c.d, gen) : viewsOfProjection(c.B, c.N, c.H, c.d, gen);
            const double scale = 1.0 / std::sqrt(double(c.d));
            const at::Tensor logits = products.scores(q, k, scale);
            expectClose(logits, at::matmul(q * scale, k.transpose(-2, -1)));
            const at::Tensor attn = at::softmax(logits, -1);
            const at::Tensor o = products.mix(attn, v);
            expectClose(o, at::matmul(attn, v));
            // oneDNN's brgemm, or one product per head where it has none (the views, a CPU without AVX-512), writes
            // the heads interleaved in memory, as the output projection reads them; at::matmul runs only where the
            // linear layers have no oneDNN kernel either
            if (c.N > 1 && c.H > 1)
                EXPECT_EQ(o.transpose(1, 2).is_contiguous(), !PackedLinears::kernelHere().empty()) << "the path taken";
            // a second call reuses the primitive: the same answer
            EXPECT_TRUE(at::equal(products.mix(attn, v), o));
            // contiguous operands and an attention map broadcast over the batch (QuadraticAttention's) take either path
            expectClose(products.scores(q.contiguous(), k.contiguous(), 1.0), at::matmul(q, k.transpose(-2, -1)));
            const at::Tensor shared = attn.narrow(0, 0, 1).expand_as(attn);
            expectClose(products.mix(shared, v), at::matmul(shared, v));
        }
}

// At two intra-op threads, as a single image's forward in the window runs: oneDNN's kernel, or the heads spread over
// the OpenMP team where it has none (a CPU without AVX-512: make test-avx2), each team thread in the caller's
// InferenceMode.
TEST(AttentionProducts, TwoIntraOpThreadsMatchAtMatmul)
{
    c10::InferenceMode inference;
    AttentionProducts products;
    at::Generator gen = at::detail::createCPUGenerator(17);
    const Qkv t = viewsOfParts(2, 197, 6, 64, gen);
    const int before = at::get_num_threads();
    at::set_num_threads(2);
    const at::Tensor logits = products.scores(t.q, t.k, 0.125);
    const at::Tensor o = products.mix(at::softmax(logits, -1), t.v);
    at::set_num_threads(before);
    expectClose(logits, at::matmul(t.q * 0.125, t.k.transpose(-2, -1)));
    expectClose(o, at::matmul(at::softmax(logits, -1), t.v));
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
    const Qkv views = viewsOfParts(1, 65, 4, 16, gen); // the layout oneDNN runs
    const at::Tensor &q = views.q, &k = views.k, &v = views.v;
    at::Tensor expected;
    {
        c10::InferenceMode inference;
        expected = at::matmul(at::softmax(at::matmul(q * 0.25, k.transpose(-2, -1)), -1), v);
    }
    test::expectSameOnFourThreads([&] { return products.mix(at::softmax(products.scores(q, k, 0.25), -1), v); }, expected);
}

#ifdef ATTNSCOPE_HAVE_DNNL
// The rule both oneDNN paths follow (OneDnnSupport.h): brgemm yes; reference and gemm-based kernels no.
TEST(AttentionProducts, GemmBasedKernelsAreRefused)
{
    using dims = dnnl::memory::dims;
    const auto desc = [](dims sizes, dims strides) { return dnnl::memory::desc(sizes, dnnl::memory::data_type::f32, strides); };
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const int64_t N = 197, D = 384, d = 64;
    const auto logits = desc({ 1, 6, N, N }, { 6 * N * N, N * N, N, 1 });
    // q k^T on views of one [1, N, 3D] projection, and on three [1, N, D]
    const dnnl::matmul::primitive_desc views(dnnl::matmul::desc(desc({ 1, 6, N, d }, { N * 3 * D, d, 3 * D, 1 }),
                                                                desc({ 1, 6, d, N }, { N * 3 * D, d, 1, 3 * D }), logits),
                                             engine);
    const dnnl::matmul::primitive_desc parts(
        dnnl::matmul::desc(desc({ 1, 6, N, d }, { N * D, d, D, 1 }), desc({ 1, 6, d, N }, { N * D, d, 1, D }), logits), engine);
    const std::string viewsImpl = views.impl_info_str(), partsImpl = parts.impl_info_str();
    SCOPED_TRACE(viewsImpl + " / " + partsImpl);
    EXPECT_EQ(onednn::isUsableKernel(views), viewsImpl.rfind("brg", 0) == 0);
    EXPECT_EQ(onednn::isUsableKernel(parts), partsImpl.rfind("brg", 0) == 0);
    if (onednn::effectiveIsa().rfind("avx512_core", 0) == 0) { // what oneDNN 2.6.3 picks where it uses AVX-512
        EXPECT_NE(viewsImpl.find("gemm:jit"), std::string::npos);
        EXPECT_EQ(partsImpl.rfind("brg", 0), 0u);
    }
}
#endif

// Signals arriving while the products run (Ctrl-C to the CLI, a profiler's SIGPROF) leave the heap intact
// (runUnderSignals), on both layouts the forward uses.
TEST(AttentionProducts, SignalsWhileTheyRunLeaveTheHeapIntact)
{
    c10::InferenceMode inference;
    AttentionProducts products;
    at::Generator gen = at::detail::createCPUGenerator(11);
    const Qkv parts = viewsOfParts(1, 197, 6, 64, gen), views = viewsOfProjection(1, 197, 6, 64, gen);
    at::Tensor o[2];
    int calls = 0;
    const int signals = test::runUnderSignals(2.0, [&] {
        const Qkv& t = calls % 2 ? views : parts;
        o[calls++ % 2] = products.mix(at::softmax(products.scores(t.q, t.k, 0.125), -1), t.v);
    });
    EXPECT_GT(signals, 1000);
    for (int i = 0; i < 2; ++i) {
        const Qkv& t = i % 2 ? views : parts;
        expectClose(o[i], at::matmul(at::softmax(at::matmul(t.q * 0.125, t.k.transpose(-2, -1)), -1), t.v));
    }
}
