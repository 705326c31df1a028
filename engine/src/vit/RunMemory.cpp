// The memory estimate of one forward pass (Model.h, RunMemory), checked by Model::run before it allocates.
#include "attnscope/Model.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace attnscope {

namespace {

constexpr int64_t kFloat = 4;

// Saturating arithmetic: a request for millions of tokens must give a huge estimate, not a wrapped one.
int64_t mul(int64_t a, int64_t b)
{
    if (a == 0 || b == 0)
        return 0;
    if (a > INT64_MAX / b)
        return INT64_MAX;
    return a * b;
}
int64_t add(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

} // namespace

namespace {

// A hierarchical model at its input size: each block's maps per window and its stage's tokens.
RunMemory hierarchicalMemory(const ModelConfig& c, const RecordSpec& record)
{
    RunMemory m;
    const std::vector<WindowBlock> blocks = windowBlocks(c);
    m.tokens = int64_t(c.gridHeight()) * c.gridWidth();
    int64_t taps = 0, working = 0, params = 0;
    if (record.blocks && record.wants(0))
        taps = mul(m.tokens, c.stages.front().width);
    for (size_t i = 0; i < blocks.size(); ++i) {
        const WindowBlock& g = blocks[i];
        const int l = int(i) + 1;
        const int64_t maps = mul(mul(int64_t(g.numWindows()) * g.heads, g.windowArea()), g.windowArea());
        const int64_t stream = mul(int64_t(g.gridH) * g.gridW, g.width);
        const int64_t mlp = c.stages[size_t(g.stage)].mlpHidden;
        if (record.wants(l))
            taps = add(taps, add(record.attention ? maps : 0,
                                 mul(stream, int64_t(record.attnBranch) + int64_t(record.residual) + int64_t(record.blocks))));
        working = std::max(working, add(mul(3, maps), add(mul(stream, 8), mul(int64_t(g.gridH) * g.gridW, mlp))));
        params = add(params, int64_t(g.width) * (4 * g.width + 2 * mlp + 8));
    }
    m.weights = mul(params, kFloat);
    m.taps = mul(taps, kFloat);
    m.working = mul(working, kFloat);
    return m;
}

} // namespace

RunMemory estimateRunMemory(const ModelConfig& c, const RecordSpec& record, int64_t imageHeight, int64_t imageWidth)
{
    if (c.hierarchical())
        return hierarchicalMemory(c, record);
    RunMemory m;
    const int64_t p = std::max(c.patchSize, 1);
    const int64_t h = imageHeight > 0 ? imageHeight : c.imageHeight;
    const int64_t w = imageWidth > 0 ? imageWidth : c.imageWidth;
    const int64_t n = add(c.numPrefixTokens(), mul(h / p, w / p));
    const int64_t d = c.width, heads = c.numHeads, mlp = c.mlpHidden;
    m.tokens = n;

    // Weights, from the architecture (the loaded model's exact count is ModelInfo::parameterCount).
    int64_t params = int64_t(c.channels) * p * p * d + d + int64_t(c.numPrefixTokens()) * d + int64_t(c.numTokens()) * d;
    const int64_t a = c.attnWidth(); // the width of q, k and v
    const int64_t perBlock = 4 * d + 3 * a * d + 3 * a + a * d + d + d * mlp + mlp + mlp * d + d + (c.layerScale ? 2 * d : 0);
    params += int64_t(c.depth) * perBlock + 2 * d;
    if (c.numClasses > 0)
        params += int64_t(c.numClasses) * (c.pooling == Pooling::TokenAndPatchMean ? 2 * d : d) + c.numClasses;
    m.weights = params * kFloat;

    // Recorded taps.
    const int64_t map = mul(mul(heads, n), n);
    const int64_t stream = mul(n, d);
    int64_t taps = 0;
    for (int l = 0; l <= c.depth; ++l) {
        if (!record.wants(l))
            continue;
        if (l >= 1) {
            if (record.attention)
                taps = add(taps, map);
            if (record.attnBranch)
                taps = add(taps, stream);
            if (record.residual)
                taps = add(taps, stream);
        }
        if (record.blocks)
            taps = add(taps, stream);
    }
    m.taps = mul(taps, kFloat);

    // The transient peak inside one block: logits and softmax (plus the distance table of quadratic attention),
    // x, q (scaled copy), k, v, the attention output and the MLP hidden layer.
    const int64_t maps = c.attention == AttentionKind::Quadratic ? 3 : 2;
    m.working = mul(add(mul(maps, map), add(mul(n, 6 * d), mul(n, mlp))), kFloat);
    return m;
}

int64_t availableMemoryBytes()
{
    std::ifstream in("/proc/meminfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("MemAvailable:", 0) != 0)
            continue;
        std::istringstream fields(line.substr(13));
        long long kib = -1;
        fields >> kib;
        return kib < 0 ? -1 : int64_t(kib) * 1024;
    }
    return -1;
}

std::string formatBytes(int64_t bytes)
{
    static const char* units[] = { "bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    double v = double(bytes);
    int u = 0;
    while (v >= 1024 && u < 6) {
        v /= 1024;
        ++u;
    }
    char buf[48];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
    return buf;
}

} // namespace attnscope
