#pragma once

// What the remote tests share: a trace made on the host checked against the same forward in this process.

#include <RemoteWire.h>

#include <attnscope/Model.h>

#include <gtest/gtest.h>

#include <cstring>

namespace remotetest {

// `traced`, the host's answer to `trace` on connection `c`, is `trace` and `shown` of this process, bit for bit: its
// logits, the preprocessed pixels, and every layer's and head's attention row of queries 0, 17 and the last token.
template <class Connection>
void expectTheLocalTrace(Connection& c, const nlohmann::json& traced, const attnscope::Trace& trace, const attnscope::Image& shown)
{
    using attnscope::remote::decodeBytes;
    using attnscope::remote::decodeTensor;
    auto logits = decodeTensor(traced["logits"]);
    ASSERT_TRUE(logits) << logits.message();
    ASSERT_EQ(logits->numel(), trace.logits.numel());
    EXPECT_EQ(std::memcmp(logits->data(), trace.logits.data(), size_t(logits->numel()) * 4), 0);
    auto pixels = decodeBytes(traced["shown"]["pixels"]);
    ASSERT_TRUE(pixels);
    EXPECT_EQ(*pixels, shown.pixels);
    const int64_t N = trace.numPrefixTokens + int64_t(trace.gridHeight) * trace.gridWidth;
    for (int query : { 0, 17, int(N - 1) }) {
        auto rows = c.call("attention_rows", { { "trace", traced["trace"] }, { "query", query } });
        ASSERT_TRUE(rows) << rows.message();
        auto t = decodeTensor((*rows)["rows"]);
        ASSERT_TRUE(t) << t.message();
        ASSERT_EQ(t->shape(), (std::vector<int64_t> { trace.depth, trace.numHeads, N }));
        for (int l = 1; l <= trace.depth; ++l)
            for (int h = 0; h < trace.numHeads; ++h)
                ASSERT_EQ(std::memcmp(t->data() + (int64_t(l - 1) * trace.numHeads + h) * N,
                                      trace.attention[size_t(l)].data() + (int64_t(h) * N + query) * N, size_t(N) * 4),
                          0)
                    << "layer " << l << " head " << h << " query " << query;
    }
}

} // namespace remotetest
