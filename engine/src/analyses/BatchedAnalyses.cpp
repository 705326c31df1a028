// ANALYSES.md sections 1, 2 (attention similarity), 3 and 4, and the token norms (Analyses.h section 7), for a batch, as tensor operations on the device the taps
// are on. Each analysis is written once over [B, ...] tensors in float64, mirroring the host loops of Analyses.cpp and
// SignalToNoise.cpp, which stay the reference (tests/engine/BatchedAnalysesTest.cpp compares the two).
#include "analyses/BatchedAnalyses.h"

#include "analyses/OffsetWindow.h"
#include "analyses/StatKeys.h"

#include <ATen/ATen.h>

#include <cmath>

namespace attnscope {

namespace {

constexpr double kTiny = 1e-300;

// The columns being collected: blocks [B, k] on the device, with their keys.
struct Columns {
    std::vector<at::Tensor> blocks;
    std::vector<std::string> keys;

    void add(const at::Tensor& column, std::string key)
    {
        blocks.push_back(column.unsqueeze(1));
        keys.push_back(std::move(key));
    }
};

// The recorded tensor of one input kind: `which` 0 = the clean inputs [B, ...], 1 + k = the k-th noisy copy.
at::Tensor pick(const at::Tensor& tap, const BatchLayout& layout, int64_t which)
{
    const int64_t stride = 1 + layout.noisyPerImage;
    if (stride == 1)
        return tap;
    std::vector<int64_t> shape { layout.images, stride };
    for (int64_t d = 1; d < tap.dim(); ++d)
        shape.push_back(tap.size(d));
    return tap.reshape(shape).select(1, which);
}

at::Tensor f64(const at::Tensor& t) { return t.to(at::kDouble); }

// cs over m unit rows whose sum is s [B, D]: (|s|^2 - m) / (m (m - 1)); NaN below two rows.
at::Tensor cosineOfUnitSum(const at::Tensor& s, int64_t m)
{
    if (m < 2)
        return at::full({ s.size(0) }, std::nan(""), s.options());
    return ((s * s).sum(-1) - double(m)) / (double(m) * double(m - 1));
}

const std::vector<at::Tensor>& tapOf(const ForwardState& state, Tap tap)
{
    return tap == Tap::Attn ? state.attnBranch : tap == Tap::Residual ? state.residual : state.blocks;
}

constexpr Tap kTaps[] = { Tap::Block, Tap::Attn, Tap::Residual };

// ---- 1. token cosine similarity, all tokens and patches only
void tokenSimilarity(const ForwardState& state, const BatchLayout& layout, Columns& out)
{
    for (Tap tap : kTaps) {
        const auto& taps = tapOf(state, tap);
        for (size_t l = 0; l < taps.size(); ++l) {
            if (!taps[l].defined())
                continue;
            const at::Tensor z = f64(pick(taps[l], layout, 0)); // [B, N, D]
            const int64_t n = z.size(1), p = std::min<int64_t>(std::max(layout.prefixTokens, 0), n);
            const at::Tensor unit = z / z.norm(2, -1, true).clamp_min(1e-12);
            const at::Tensor patches = unit.narrow(1, p, n - p).sum(1);
            const at::Tensor all = p > 0 ? patches + unit.narrow(1, 0, p).sum(1) : patches;
            out.add(cosineOfUnitSum(all, n), keys::tokenSimilarity(int(l), tap, TokenSet::All));
            out.add(cosineOfUnitSum(patches, n - p), keys::tokenSimilarity(int(l), tap, TokenSet::Patches));
        }
    }
}

// ---- 2. attention similarity: successive layers' head means, pairwise cosine of a layer's heads
void attentionSimilarity(const ForwardState& state, const BatchLayout& layout, Columns& out)
{
    at::Tensor previousMean, previousNorm2;
    int previousLayer = -1;
    for (int l = 1; l <= layout.depth; ++l) {
        const at::Tensor& recorded = state.attention.at(size_t(l));
        if (!recorded.defined())
            continue;
        const at::Tensor a = f64(pick(recorded, layout, 0)).flatten(2); // [B, H, N*N]
        const int64_t heads = a.size(1);
        const at::Tensor mean = a.mean(1);
        const at::Tensor meanNorm2 = (mean * mean).sum(-1);
        if (previousLayer == l - 1) {
            const at::Tensor dot = (mean * previousMean).sum(-1);
            out.add(dot / (previousNorm2.sqrt() * meanNorm2.sqrt()).clamp_min(kTiny),
                    keys::attentionSimilarity(previousLayer, "successive_cos"));
        }
        if (heads > 1) {
            // (|sum_h A[h] / |A[h]||^2 - sum_h |A[h] / |A[h]||^2) / (H (H - 1))
            const at::Tensor norm2 = (a * a).sum(-1);                     // [B, H]
            const at::Tensor inv = 1.0 / norm2.sqrt().clamp_min(kTiny);
            const at::Tensor self = (norm2 * inv * inv).sum(1);
            const at::Tensor unitSum = (a * inv.unsqueeze(-1)).sum(1);   // [B, N*N]
            out.add(((unitSum * unitSum).sum(-1) - self) / double(heads * (heads - 1)),
                    keys::attentionSimilarity(l, "head_redundancy"));
        }
        previousMean = mean;
        previousNorm2 = meanNorm2;
        previousLayer = l;
    }
}

// ---- 3. head centres: offsets, distances, prefix mass, and the offset map of the interior queries
void headCentres(const ForwardState& state, const BatchLayout& layout, int radius, Columns& out)
{
    const int gh = layout.gridHeight, gw = layout.gridWidth, P = layout.prefixTokens, np = gh * gw;
    const int side = 2 * radius + 1, cells = side * side;
    // The tables of Analyses.cpp, made once per batch on the host and moved to the device.
    std::vector<double> offY(size_t(np) * size_t(np)), offX(offY.size()), distance(offY.size());
    for (int q = 0; q < np; ++q)
        for (int k = 0; k < np; ++k) {
            const size_t i = size_t(q) * size_t(np) + size_t(k);
            offY[i] = double(k / gw - q / gw);
            offX[i] = double(k % gw - q % gw);
            distance[i] = std::hypot(double(std::abs(k / gw - q / gw)), double(std::abs(k % gw - q % gw)));
        }
    OffsetWindow window = offsetWindow(gh, gw, radius);
    std::vector<int64_t>& interior = window.interior;
    std::vector<int64_t>& cellKeys = window.cellKeys;
    std::vector<double> cellY, cellX;
    for (int c = 0; c < cells; ++c) {
        cellY.push_back(double(c / side - radius));
        cellX.push_back(double(c % side - radius));
    }
    at::Tensor tY, tX, tDistance, tInterior, tCellKeys, tCellY, tCellX;
    const int64_t nInterior = int64_t(interior.size());

    for (int l = 1; l <= layout.depth; ++l) {
        const at::Tensor& recorded = state.attention.at(size_t(l));
        if (!recorded.defined())
            continue;
        const at::Tensor a = pick(recorded, layout, 0); // [B, H, N, N]
        const auto device = at::TensorOptions().dtype(at::kDouble).device(a.device());
        if (!tY.defined()) {
            const auto table = [&](std::vector<double>& v, std::vector<int64_t> shape) {
                return at::from_blob(v.data(), shape, at::kDouble).to(device.device());
            };
            tY = table(offY, { np, np });
            tX = table(offX, { np, np });
            tDistance = table(distance, { np, np });
            tCellY = table(cellY, { cells });
            tCellX = table(cellX, { cells });
            if (nInterior) {
                tInterior = at::from_blob(interior.data(), { nInterior }, at::kLong).to(device.device());
                tCellKeys = at::from_blob(cellKeys.data(), { nInterior, cells }, at::kLong).to(device.device());
            }
        }
        const int64_t B = a.size(0), H = a.size(1);
        const at::Tensor patchRows = a.narrow(2, P, np);
        const at::Tensor w = f64(patchRows.narrow(3, P, np));                      // [B, H, np, np]
        const at::Tensor aq = w / w.sum(-1, true).clamp_min(kTiny);                // a_q(k)
        std::vector<at::Tensor> fields(std::size(keys::kCentreFields));
        const auto nan = [&] { return at::full({ B, H }, std::nan(""), device); };
        fields[0] = (aq * tY).sum({ 2, 3 }) / double(np);
        fields[1] = (aq * tX).sum({ 2, 3 }) / double(np);
        fields[4] = (aq * tDistance).sum({ 2, 3 }) * (double(layout.patchSize) / double(np));
        fields[6] = P > 0 ? f64(patchRows.narrow(3, 0, P)).sum({ 2, 3 }) / double(np) : at::zeros({ B, H }, device);
        at::Tensor map;
        if (nInterior) {
            // M(delta) = mean over interior q of a_q(q + delta)
            map = aq.index_select(2, tInterior).gather(3, tCellKeys.expand({ B, H, nInterior, cells })).mean(2); // [B, H, cells]
            const at::Tensor mass = map.sum(-1);
            const at::Tensor peak = map.argmax(-1);
            fields[2] = f64(peak.div(side, "floor")) - double(radius);
            fields[3] = f64(peak.remainder(side)) - double(radius);
            fields[7] = mass;
            const at::Tensor my = (map * tCellY).sum(-1, true) / mass.unsqueeze(-1);
            const at::Tensor mx = (map * tCellX).sum(-1, true) / mass.unsqueeze(-1);
            const at::Tensor spread = (map * ((tCellY - my).square() + (tCellX - mx).square())).sum(-1);
            fields[5] = (spread / mass).sqrt();
            map = map.to(at::kFloat).to(at::kDouble); // the host path keeps the map in float32
        } else {
            fields[2] = fields[3] = fields[5] = fields[7] = nan();
        }
        // [B, H, fields (+ cells)] -> [B, H * (fields + cells)], keys head by head
        at::Tensor block = at::stack(fields, 2);
        if (map.defined())
            block = at::cat({ block, map }, 2);
        out.blocks.push_back(block.reshape({ B, -1 }));
        for (int h = 0; h < H; ++h) {
            for (const char* field : keys::kCentreFields)
                out.keys.push_back(keys::headCentre(l, h, field));
            for (int c = 0; map.defined() && c < cells; ++c)
                out.keys.push_back(keys::offsetMapCell(l, h, c));
        }
    }
}

// ---- 4. SNR per tap and layer, and Proposition 3.1's diagnostics, for each noisy copy
void signalToNoise(const ForwardState& state, const BatchLayout& layout, const AnalysisOptions& options, Columns& out)
{
    const int64_t copies = layout.noisyPerImage;
    const auto specOf = [&](int64_t k) { return options.perturbations[size_t(k / std::max(1, options.draws))].spec(); };
    const auto centred = [&](const at::Tensor& clean) { return options.centreSignal ? clean - clean.mean(1, true) : clean; };
    // |E|^2 of the block outputs per copy and layer, for the sensitivity
    std::vector<std::vector<at::Tensor>> blockNoise2(size_t(copies), std::vector<at::Tensor>(state.blocks.size()));
    for (Tap tap : kTaps) {
        const auto& taps = tapOf(state, tap);
        for (size_t l = 0; l < taps.size(); ++l) {
            if (!taps[l].defined())
                continue;
            const at::Tensor clean = f64(pick(taps[l], layout, 0));
            const at::Tensor signal = centred(clean).square().sum({ 1, 2 }).sqrt();
            for (int64_t k = 0; k < copies; ++k) {
                const at::Tensor noise2 = (f64(pick(taps[l], layout, 1 + k)) - clean).square().sum({ 1, 2 });
                if (tap == Tap::Block)
                    blockNoise2[size_t(k)][l] = noise2;
                out.add(20.0 * (signal / noise2.sqrt().clamp_min(kTiny)).log10(), keys::snr(specOf(k), int(l), tap));
            }
        }
    }
    if (state.blocks.empty() || !state.blocks[0].defined())
        return;
    for (int l = 1; l <= layout.depth; ++l) {
        if (!state.attnBranch.at(size_t(l)).defined() || !state.blocks.at(size_t(l - 1)).defined())
            continue;
        const at::Tensor x = f64(pick(state.blocks[size_t(l - 1)], layout, 0));
        const at::Tensor u = f64(pick(state.attnBranch[size_t(l)], layout, 0));
        const at::Tensor s = centred(x), sh = centred(u);
        const at::Tensor ns = s.square().sum({ 1, 2 }).sqrt(), nsh = sh.square().sum({ 1, 2 }).sqrt();
        const at::Tensor ssh = (s * sh).sum({ 1, 2 }), signalSum = (s + sh).square().sum({ 1, 2 }).sqrt();
        const at::Tensor alpha = nsh / ns;
        const at::Tensor beta = ssh / (ns * nsh).clamp_min(kTiny);
        for (int64_t k = 0; k < copies; ++k) {
            const at::Tensor e = f64(pick(state.blocks[size_t(l - 1)], layout, 1 + k)) - x;
            const at::Tensor eh = f64(pick(state.attnBranch[size_t(l)], layout, 1 + k)) - u;
            const at::Tensor ne = e.square().sum({ 1, 2 }).sqrt();
            const at::Tensor gamma = eh.square().sum({ 1, 2 }).sqrt() / ne;
            const at::Tensor gain = (signalSum / (e + eh).square().sum({ 1, 2 }).sqrt()) / (ns / ne);
            const at::Tensor bound = (1.0 + 2.0 * alpha * beta + alpha * alpha).sqrt() / (1.0 + gamma);
            const at::Tensor condition = at::minimum(alpha, beta).gt(gamma).to(at::kDouble);
            const at::Tensor& noiseL = blockNoise2[size_t(k)].at(size_t(l));
            const at::Tensor sensitivity = noiseL.defined() ? noiseL.sqrt() / blockNoise2[size_t(k)][0].sqrt()
                                                            : at::full_like(alpha, std::nan(""));
            const at::Tensor values[] = { alpha, beta, gamma, gain, bound, condition, sensitivity };
            const std::string spec = specOf(k);
            for (size_t f = 0; f < std::size(values); ++f)
                out.add(values[f], keys::snrDiagnostic(spec, l, keys::kDiagnosticFields[f]));
        }
    }
}

// ---- 7. token norms of each block output, outliers over the patch median, and the next attention's shares on them
void tokenNorms(const ForwardState& state, const BatchLayout& layout, double ratio, Columns& out)
{
    const int64_t P = layout.prefixTokens;
    const int64_t registers = std::min<int64_t>(layout.registers, P);
    for (size_t l = 0; l < state.blocks.size(); ++l) {
        if (!state.blocks[l].defined())
            continue;
        const at::Tensor norms = f64(pick(state.blocks[l], layout, 0)).norm(2, -1); // [B, N]
        const int64_t B = norms.size(0), n = norms.size(1), np = n - std::min(P, n);
        const at::Tensor patches = norms.narrow(1, n - np, np);
        const at::Tensor sorted = std::get<0>(patches.sort(-1));
        const at::Tensor median = np % 2 ? sorted.select(1, np / 2)
                                         : 0.5 * (sorted.select(1, np / 2 - 1) + sorted.select(1, np / 2));
        const at::Tensor outlier = patches.gt(ratio * median.unsqueeze(1)); // [B, np]
        const auto nan = [&] { return at::full({ B }, std::nan(""), norms.options()); };
        const at::Tensor cls = layout.classToken && P > 0 ? norms.select(1, 0) / median : nan();
        const at::Tensor reg = registers > 0 ? norms.narrow(1, P - registers, registers).mean(1) / median : nan();
        at::Tensor outlierAttention = nan(), prefixAttention = nan();
        const size_t next = l + 1;
        if (int(next) <= layout.depth && next < state.attention.size() && state.attention[next].defined()) {
            const at::Tensor received = f64(pick(state.attention[next], layout, 0)).mean({ 1, 2 }); // [B, N]
            outlierAttention = (received.narrow(1, n - np, np) * outlier.to(at::kDouble)).sum(1);
            if (P > 0)
                prefixAttention = received.narrow(1, 0, std::min(P, n)).sum(1);
        }
        const at::Tensor values[] = { outlier.sum(1).to(at::kDouble), median, std::get<0>(patches.max(1)) / median, cls, reg,
                                      outlierAttention, prefixAttention };
        for (size_t f = 0; f < std::size(values); ++f)
            out.add(values[f], keys::tokenNorm(int(l), keys::kNormFields[f]));
    }
}

} // namespace

BatchedValues analyseBatch(const ForwardState& state, const BatchLayout& layout, const AnalysisOptions& options)
{
    Columns columns;
    if (options.snr && layout.noisyPerImage > 0)
        signalToNoise(state, layout, options, columns);
    if (options.centres)
        headCentres(state, layout, options.radius, columns);
    if (options.attention)
        attentionSimilarity(state, layout, columns);
    if (options.similarity)
        tokenSimilarity(state, layout, columns);
    if (options.norms)
        tokenNorms(state, layout, options.outlierRatio, columns);
    BatchedValues out;
    out.keys = std::move(columns.keys);
    out.values = columns.blocks.empty() ? at::empty({ layout.images, 0 }, at::kDouble)
                                        : at::cat(columns.blocks, 1).to(at::kCPU).contiguous(); // the one copy back
    return out;
}

} // namespace attnscope
