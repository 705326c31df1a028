// One query's rows (queryRows: all that crosses a remote link for a click, issue 45) make the maps the trace makes,
// bit for bit: every layer, every head and the head mean, a few queries, and an attention-pool head's map; what is
// outside them throws.
#include "TestSupport.h"

#include <attnscope/Analyses.h>

#include <cstring>
#include <stdexcept>

using namespace attnscope;
using namespace attnscope::test;

namespace {

void expectSameMaps(const Trace& trace, const std::vector<int>& queries)
{
    ASSERT_GT(trace.depth, 0);
    for (int query : queries) {
        const QueryRows rows = queryRows(trace, query);
        EXPECT_EQ(rows.query, query);
        EXPECT_EQ(lastMapLayer(rows), lastMapLayer(trace));
        for (int layer = 1; layer <= lastMapLayer(trace); ++layer) {
            EXPECT_EQ(mapLayerName(rows, layer), mapLayerName(trace, layer));
            for (int head = -1; head < trace.numHeads; ++head)
                for (bool renormalise : { false, true }) {
                    const AttentionMap want = attentionMap(trace, layer, head, query, renormalise);
                    const AttentionMap got = attentionMap(rows, layer, head, renormalise);
                    ASSERT_EQ(got.patches.shape(), want.patches.shape());
                    ASSERT_EQ(std::memcmp(got.patches.data(), want.patches.data(), size_t(want.patches.numel()) * sizeof(float)), 0)
                        << "layer " << layer << " head " << head << " query " << query << " renormalise " << renormalise;
                    EXPECT_EQ(got.prefixMass, want.prefixMass) << "layer " << layer << " head " << head << " query " << query;
                }
        }
    }
}

Trace traceOf(const Model& model, const Tensor& input)
{
    RunOptions run;
    run.record.attention = true;
    auto trace = model.run(input, run);
    EXPECT_TRUE(trace) << trace.message();
    return trace ? *trace : Trace {};
}

} // namespace

TEST(QueryRows, MakeTheTracesMapsBitForBit)
{
    auto model = Model::load("builtin:fmnist-vit-d4");
    ASSERT_TRUE(model) << model.message();
    const auto samples = fashionSamples(**model, 1);
    ASSERT_EQ(samples.size(), 1u);
    const Trace trace = traceOf(**model, samples[0].input);
    const int N = trace.numPrefixTokens + trace.gridHeight * trace.gridWidth;
    expectSameMaps(trace, { 0, 1, N / 2, N - 1 });

    // Outside the trace's tokens, layers or heads: thrown, as attentionMap of the trace throws.
    EXPECT_THROW(queryRows(trace, -1), std::out_of_range);
    EXPECT_THROW(queryRows(trace, N), std::out_of_range);
    const QueryRows rows = queryRows(trace, 0);
    EXPECT_THROW(attentionMap(rows, 0, 0), std::out_of_range);
    EXPECT_THROW(attentionMap(rows, trace.depth + 1, 0), std::out_of_range); // no attention-pool head
    EXPECT_THROW(attentionMap(rows, 1, trace.numHeads), std::out_of_range);
    // A trace that recorded no maps has no rows.
    Trace bare = trace;
    bare.attention.clear();
    EXPECT_ANY_THROW(queryRows(bare, 0));
}

TEST(QueryRows, AnAttentionPoolHeadsMapIsTheLastLayer)
{
    const std::string dir = ATTNSCOPE_TEST_SOURCE_DIR "/golden/families/timm_siglip";
    auto model = Model::load(dir);
    ASSERT_TRUE(model) << model.message();
    ASSERT_EQ((*model)->config().pooling, Pooling::AttentionPool);
    const Trace trace = traceOf(**model, loadNpy(dir + "/input.npy"));
    ASSERT_GT(trace.poolAttention.numel(), 0);
    const int N = trace.numPrefixTokens + trace.gridHeight * trace.gridWidth;
    expectSameMaps(trace, { 0, N - 1 });
    const QueryRows rows = queryRows(trace, 0);
    EXPECT_EQ(lastMapLayer(rows), trace.depth + 1);
    EXPECT_EQ(mapLayerName(rows, trace.depth + 1), "pool");
    EXPECT_THROW(attentionMap(rows, trace.depth + 1, trace.numHeads), std::out_of_range);
    EXPECT_THROW(attentionMap(rows, trace.depth + 2, 0), std::out_of_range);
}
