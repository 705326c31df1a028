// docs/analyses.md sections 1, 2 (attention similarity), 3, 4 and 7 (token norms), for a batch, as tensor operations on
// the device the taps are on. Each analysis is written once over [B, ...] tensors in float64, mirroring the host loops
// of Analyses.cpp and SignalToNoise.cpp, which stay the reference (tests/engine/BatchedAnalysesTest.cpp compares the
// two).
#include "analyses/BatchedAnalyses.h"

#include "analyses/OffsetWindow.h"
#include "analyses/StatKeys.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <algorithm>
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
    // Several columns at once: `block` [B, k], its keys in column order.
    void addBlock(const at::Tensor& block, std::vector<std::string> blockKeys)
    {
        blocks.push_back(block.reshape({ block.size(0), -1 }));
        for (auto& k : blockKeys)
            keys.push_back(std::move(k));
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
        return at::full(s.sizes().slice(0, size_t(s.dim() - 1)), std::nan(""), s.options());
    return ((s * s).sum(-1) - double(m)) / (double(m) * double(m - 1));
}

const std::vector<at::Tensor>& tapOf(const ForwardState& state, Tap tap)
{
    return tap == Tap::Attn ? state.attnBranch : tap == Tap::Residual ? state.residual : state.blocks;
}

// The layers of `taps` that were recorded, `first` to the end. The analyses take a tap's layers at once ([B, L', ...]:
// one operation over all of them where a loop over the layers launched the same few once per layer, a kernel launch
// each on a GPU); AnalysisRun::recordSpec records a tap at every layer or at none, so the layers are one run.
std::vector<int> recordedLayers(const std::vector<at::Tensor>& taps, size_t first = 0)
{
    std::vector<int> layers;
    for (size_t l = first; l < taps.size(); ++l)
        if (taps[l].defined())
            layers.push_back(int(l));
    TORCH_INTERNAL_ASSERT(layers.empty() || layers.back() - layers.front() + 1 == int(layers.size()),
                          "the batched analyses need a tap's layers recorded without gaps");
    return layers;
}

// Input kind `which` of `layers` of `taps` (one of `state`'s tap vectors), as [B, L', ...] as recorded (float32), or in
// float64: one view of the stack the forward kept them in ([L + 1, B_all, ...], ForwardState::stackTaps, which
// AnalysisRun's forward of a batch sets).
at::Tensor stackedAsRecorded(const ForwardState& state, const std::vector<at::Tensor>& taps, const std::vector<int>& layers,
                             const BatchLayout& layout, int64_t which)
{
    const ForwardState::TapStack& stack = state.stackOf(taps);
    TORCH_INTERNAL_ASSERT(stack.rows.defined() && !layers.empty() && layers.front() >= stack.first,
                          "the batched analyses read taps the forward kept stacked");
    return pick(stack.rows.narrow(0, layers.front() - stack.first, int64_t(layers.size())).transpose(0, 1), layout, which);
}
at::Tensor stacked(const ForwardState& state, const std::vector<at::Tensor>& taps, const std::vector<int>& layers,
                   const BatchLayout& layout, int64_t which)
{
    return f64(stackedAsRecorded(state, taps, layers, layout, which));
}

// The attention maps' analyses hold their layers in float64 at once, a few such tensors alive together: `layers` cut
// into runs whose float64 copy of the maps stays within 1 GiB each (ViT-S/16 at batch 64: every layer at once, 0.9 GiB;
// ViT-B/16: two runs), so that memory stays bounded on any GPU while the operators stay few and constant in the batch
// below that.
std::vector<std::vector<int>> layerRuns(const std::vector<int>& layers, const at::Tensor& mapsOfOneLayer)
{
    constexpr int64_t kBudget = int64_t(1) << 30;
    const int64_t perLayer = std::max<int64_t>(1, mapsOfOneLayer.numel() * int64_t(sizeof(double)));
    const size_t runLength = size_t(std::max<int64_t>(1, kBudget / perLayer));
    std::vector<std::vector<int>> runs;
    for (size_t i = 0; i < layers.size(); i += runLength)
        runs.emplace_back(layers.begin() + std::ptrdiff_t(i), layers.begin() + std::ptrdiff_t(std::min(layers.size(), i + runLength)));
    return runs;
}

constexpr Tap kTaps[] = { Tap::Block, Tap::Attn, Tap::Residual };

// ---- 1. token cosine similarity, all tokens and patches only
void tokenSimilarity(const ForwardState& state, const BatchLayout& layout, Columns& out)
{
    for (Tap tap : kTaps) {
        const auto& taps = tapOf(state, tap);
        const std::vector<int> layers = recordedLayers(taps);
        if (layers.empty())
            continue;
        const at::Tensor z = stacked(state, taps, layers, layout, 0); // [B, L', N, D]
        const int64_t n = z.size(2), p = std::min<int64_t>(std::max(layout.prefixTokens, 0), n);
        const at::Tensor unit = z / z.norm(2, -1, true).clamp_min(1e-12);
        const at::Tensor patches = unit.narrow(2, p, n - p).sum(2); // [B, L', D]
        const at::Tensor all = p > 0 ? patches + unit.narrow(2, 0, p).sum(2) : patches;
        std::vector<std::string> names;
        for (int l : layers) {
            names.push_back(keys::tokenSimilarity(l, tap, TokenSet::All));
            names.push_back(keys::tokenSimilarity(l, tap, TokenSet::Patches));
        }
        out.addBlock(at::stack({ cosineOfUnitSum(all, n), cosineOfUnitSum(patches, n - p) }, 2), std::move(names)); // [B, L', 2]
    }
}

// ---- 2. attention similarity: successive layers' head means, pairwise cosine of a layer's heads
void attentionSimilarity(const ForwardState& state, const BatchLayout& layout, Columns& out)
{
    std::vector<int> layers = recordedLayers(state.attention, 1);
    while (!layers.empty() && layers.back() > layout.depth)
        layers.pop_back();
    if (layers.empty())
        return;
    // Per run of layers (layerRuns): the head means [B, L', N*N] and the head redundancy [B, L'].
    std::vector<at::Tensor> means, redundancies;
    int64_t heads = 0;
    for (const auto& run : layerRuns(layers, pick(state.attention[size_t(layers.front())], layout, 0))) {
        const at::Tensor a = stacked(state, state.attention, run, layout, 0).flatten(3); // [B, L', H, N*N]
        heads = a.size(2);
        means.push_back(a.mean(2));
        if (heads > 1) {
            // (|sum_h A[h] / |A[h]||^2 - sum_h |A[h] / |A[h]||^2) / (H (H - 1))
            const at::Tensor norm2 = (a * a).sum(-1); // [B, L', H]
            const at::Tensor inv = 1.0 / norm2.sqrt().clamp_min(kTiny);
            const at::Tensor self = (norm2 * inv * inv).sum(2);
            const at::Tensor unitSum = (a * inv.unsqueeze(-1)).sum(2); // [B, L', N*N]
            redundancies.push_back(((unitSum * unitSum).sum(-1) - self) / double(heads * (heads - 1))); // [B, L']
        }
    }
    const int64_t L = int64_t(layers.size());
    const at::Tensor mean = means.size() == 1 ? means.front() : at::cat(means, 1); // [B, L', N*N]
    const at::Tensor meanNorm2 = (mean * mean).sum(-1);                             // [B, L']
    // Successive layers' head means, where both layers were recorded (l and l + 1), in the order of the host loop:
    // each layer's successive cosine comes before the next layer's head redundancy.
    at::Tensor successive;
    if (L > 1) {
        const at::Tensor dot = (mean.narrow(1, 0, L - 1) * mean.narrow(1, 1, L - 1)).sum(-1);
        successive = dot / (meanNorm2.narrow(1, 0, L - 1).sqrt() * meanNorm2.narrow(1, 1, L - 1).sqrt()).clamp_min(kTiny);
    }
    const at::Tensor redundancy = redundancies.empty() ? at::Tensor() : redundancies.size() == 1 ? redundancies.front() : at::cat(redundancies, 1);
    // Columns by key, so their order among keys is free (each key has statistics of its own).
    if (L > 1) {
        std::vector<std::string> names;
        for (int64_t i = 0; i + 1 < L; ++i)
            names.push_back(keys::attentionSimilarity(layers[size_t(i)], "successive_cos"));
        out.addBlock(successive, std::move(names));
    }
    if (heads > 1) {
        std::vector<std::string> names;
        for (int l : layers)
            names.push_back(keys::attentionSimilarity(l, "head_redundancy"));
        out.addBlock(redundancy, std::move(names));
    }
}

// ---- 3. head centres: offsets, distances, prefix mass, and the offset map of the interior queries

} // namespace

// The tables of the head centres for one grid, window and device (Analyses.cpp's, on the device): made and uploaded
// once per run and shape (AnalysisTables), not per batch: an upload from pageable memory makes a GPU's host wait for
// the device.
struct CentresTables {
    int gridHeight = 0, gridWidth = 0, radius = 0;
    at::Device device { at::kCPU };
    int side = 0, cells = 0, np = 0;
    int64_t interior = 0;
    at::Tensor y, x, distance, interiorRows, cellKeys, cellY, cellX;
};

namespace {

std::shared_ptr<const CentresTables> centresTables(int gh, int gw, int radius, at::Device device)
{
    auto t = std::make_shared<CentresTables>();
    t->gridHeight = gh;
    t->gridWidth = gw;
    t->radius = radius;
    t->device = device;
    const int np = gh * gw, side = 2 * radius + 1, cells = side * side;
    t->side = side;
    t->cells = cells;
    t->np = np;
    std::vector<double> offY(size_t(np) * size_t(np)), offX(offY.size()), distance(offY.size());
    for (int q = 0; q < np; ++q)
        for (int k = 0; k < np; ++k) {
            const size_t i = size_t(q) * size_t(np) + size_t(k);
            offY[i] = double(k / gw - q / gw);
            offX[i] = double(k % gw - q % gw);
            distance[i] = std::hypot(double(std::abs(k / gw - q / gw)), double(std::abs(k % gw - q % gw)));
        }
    OffsetWindow window = offsetWindow(gh, gw, radius);
    std::vector<double> cellY, cellX;
    for (int c = 0; c < cells; ++c) {
        cellY.push_back(double(c / side - radius));
        cellX.push_back(double(c % side - radius));
    }
    // Owning copies (clone): on the CPU, to() would alias these vectors, which die with this function.
    const auto table = [&](std::vector<double>& v, std::vector<int64_t> shape) {
        return at::from_blob(v.data(), shape, at::kDouble).clone().to(device);
    };
    t->y = table(offY, { np, np });
    t->x = table(offX, { np, np });
    t->distance = table(distance, { np, np });
    t->cellY = table(cellY, { cells });
    t->cellX = table(cellX, { cells });
    t->interior = int64_t(window.interior.size());
    if (t->interior) {
        t->interiorRows = at::from_blob(window.interior.data(), { t->interior }, at::kLong).clone().to(device);
        t->cellKeys = at::from_blob(window.cellKeys.data(), { t->interior, cells }, at::kLong).clone().to(device);
    }
    return t;
}

void headCentresOf(const ForwardState& state, const BatchLayout& layout, const std::vector<int>& layers, const CentresTables& t,
                   Columns& out);

void headCentres(const ForwardState& state, const BatchLayout& layout, int radius, AnalysisTables* tables, Columns& out)
{
    // Every recorded layer at once: the attention maps stacked as [B, L', H, N, N].
    std::vector<int> layers = recordedLayers(state.attention, 1);
    while (!layers.empty() && layers.back() > layout.depth)
        layers.pop_back();
    if (layers.empty())
        return;
    const at::Tensor first = pick(state.attention[size_t(layers.front())], layout, 0); // [B, H, N, N]
    std::shared_ptr<const CentresTables> t = tables ? tables->centres : nullptr;
    if (!t || t->gridHeight != layout.gridHeight || t->gridWidth != layout.gridWidth || t->radius != radius
        || t->device != first.device()) {
        t = centresTables(layout.gridHeight, layout.gridWidth, radius, first.device());
        if (tables)
            tables->centres = t;
    }
    for (const auto& run : layerRuns(layers, first))
        headCentresOf(state, layout, run, *t, out);
}

// Head centres of a run of layers (headCentres' tables in `t`).
void headCentresOf(const ForwardState& state, const BatchLayout& layout, const std::vector<int>& layers, const CentresTables& t,
                   Columns& out)
{
    const int radius = t.radius, side = t.side, cells = t.cells, np = t.np, P = layout.prefixTokens;
    const int64_t nInterior = t.interior;
    const at::Tensor a = stackedAsRecorded(state, state.attention, layers, layout, 0); // [B, L', H, N, N]
    const auto device = at::TensorOptions().dtype(at::kDouble).device(a.device());
    const at::Tensor &tY = t.y, &tX = t.x, &tDistance = t.distance, &tInterior = t.interiorRows, &tCellKeys = t.cellKeys,
                     &tCellY = t.cellY, &tCellX = t.cellX; // made for this grid, window and device
    const int64_t B = a.size(0), L = a.size(1), H = a.size(2);
    const at::Tensor patchRows = a.narrow(3, P, np);
    const at::Tensor w = f64(patchRows.narrow(4, P, np));                      // [B, L', H, np, np]
    const at::Tensor aq = w / w.sum(-1, true).clamp_min(kTiny);                // a_q(k)
    std::vector<at::Tensor> fields(std::size(keys::kCentreFields));
    const auto nan = [&] { return at::full({ B, L, H }, std::nan(""), device); };
    fields[0] = (aq * tY).sum({ 3, 4 }) / double(np);
    fields[1] = (aq * tX).sum({ 3, 4 }) / double(np);
    fields[4] = (aq * tDistance).sum({ 3, 4 }) * (double(layout.patchSize) / double(np));
    fields[6] = P > 0 ? f64(patchRows.narrow(4, 0, P)).sum({ 3, 4 }) / double(np) : at::zeros({ B, L, H }, device);
    at::Tensor map;
    if (nInterior) {
        // M(delta) = mean over interior q of a_q(q + delta)
        map = aq.index_select(3, tInterior).gather(4, tCellKeys.expand({ B, L, H, nInterior, cells })).mean(3); // [B, L', H, cells]
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
    // [B, L', H, fields (+ cells)] -> [B, L' * H * (fields + cells)], keys layer by layer, head by head
    at::Tensor block = at::stack(fields, 3);
    if (map.defined())
        block = at::cat({ block, map }, 3);
    std::vector<std::string> names;
    for (int l : layers)
        for (int h = 0; h < H; ++h) {
            for (const char* field : keys::kCentreFields)
                names.push_back(keys::headCentre(l, h, field));
            for (int c = 0; map.defined() && c < cells; ++c)
                names.push_back(keys::offsetMapCell(l, h, c));
        }
    out.addBlock(block, std::move(names));
}

// ---- 4. SNR per tap and layer, and Proposition 3.1's diagnostics, for each noisy copy
void signalToNoise(const ForwardState& state, const BatchLayout& layout, const AnalysisOptions& options, Columns& out)
{
    const int64_t copies = layout.noisyPerImage;
    const auto specOf = [&](int64_t k) { return options.perturbations[size_t(k / std::max(1, options.draws))].spec(); };
    // |E|^2 of the block outputs per copy, [B, L + 1] (X_0 to X_L), for the sensitivity
    auto blockNoise2 = std::vector<at::Tensor>(static_cast<size_t>(copies));
    for (Tap tap : kTaps) {
        const auto& taps = tapOf(state, tap);
        const std::vector<int> layers = recordedLayers(taps);
        if (layers.empty())
            continue;
        // Every layer at once: [B, L', N, D], the tokens on dimension 2.
        const at::Tensor clean = stacked(state, taps, layers, layout, 0);
        const at::Tensor signal = (options.centreSignal ? clean - clean.mean(2, true) : clean).square().sum({ 2, 3 }).sqrt();
        std::vector<at::Tensor> snr;
        for (int64_t k = 0; k < copies; ++k) {
            const at::Tensor noise2 = (stacked(state, taps, layers, layout, 1 + k) - clean).square().sum({ 2, 3 }); // [B, L']
            if (tap == Tap::Block)
                blockNoise2[size_t(k)] = noise2;
            snr.push_back(20.0 * (signal / noise2.sqrt().clamp_min(kTiny)).log10());
        }
        std::vector<std::string> names; // layer by layer, each copy in order (a key's draws in draw order)
        for (int l : layers)
            for (int64_t k = 0; k < copies; ++k)
                names.push_back(keys::snr(specOf(k), l, tap));
        out.addBlock(at::stack(snr, 2), std::move(names)); // [B, L', copies]
    }
    if (state.blocks.empty() || !state.blocks[0].defined())
        return;
    // Proposition 3.1's terms for every layer l at once: X_{l-1} and U_l stacked as [B, L, N, D] (both taps are recorded
    // at every layer whenever the SNR runs).
    std::vector<int> layers = recordedLayers(state.attnBranch, 1), previous;
    while (!layers.empty() && layers.back() > layout.depth)
        layers.pop_back();
    if (layers.empty())
        return;
    for (int l : layers)
        previous.push_back(l - 1);
    const auto centredTokens = [&](const at::Tensor& clean) { return options.centreSignal ? clean - clean.mean(2, true) : clean; };
    const at::Tensor x = stacked(state, state.blocks, previous, layout, 0);
    const at::Tensor u = stacked(state, state.attnBranch, layers, layout, 0);
    const at::Tensor s = centredTokens(x), sh = centredTokens(u);
    const at::Tensor ns = s.square().sum({ 2, 3 }).sqrt(), nsh = sh.square().sum({ 2, 3 }).sqrt(); // [B, L']
    const at::Tensor ssh = (s * sh).sum({ 2, 3 }), signalSum = (s + sh).square().sum({ 2, 3 }).sqrt();
    const at::Tensor alpha = nsh / ns;
    const at::Tensor beta = ssh / (ns * nsh).clamp_min(kTiny);
    for (int64_t k = 0; k < copies; ++k) {
        const at::Tensor e = stacked(state, state.blocks, previous, layout, 1 + k) - x;
        const at::Tensor eh = stacked(state, state.attnBranch, layers, layout, 1 + k) - u;
        const at::Tensor ne = e.square().sum({ 2, 3 }).sqrt();
        const at::Tensor gamma = eh.square().sum({ 2, 3 }).sqrt() / ne;
        const at::Tensor gain = (signalSum / (e + eh).square().sum({ 2, 3 }).sqrt()) / (ns / ne);
        const at::Tensor bound = (1.0 + 2.0 * alpha * beta + alpha * alpha).sqrt() / (1.0 + gamma);
        const at::Tensor condition = at::minimum(alpha, beta).gt(gamma).to(at::kDouble);
        // |E_l| / |E_0| from the SNR's block noise (X_0 .. X_L): layers `layers` against layer 0
        const at::Tensor& noise2 = blockNoise2[size_t(k)];
        const at::Tensor sensitivity = noise2.narrow(1, layers.front(), int64_t(layers.size())).sqrt() / noise2.narrow(1, 0, 1).sqrt();
        const std::string spec = specOf(k);
        std::vector<std::string> names; // layer by layer, the fields in order
        for (int l : layers)
            for (const char* field : keys::kDiagnosticFields)
                names.push_back(keys::snrDiagnostic(spec, l, field));
        out.addBlock(at::stack({ alpha, beta, gamma, gain, bound, condition, sensitivity }, 2), std::move(names)); // [B, L', 7]
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

BatchedValues analyseBatch(const ForwardState& state, const BatchLayout& layout, const AnalysisOptions& options, AnalysisTables* tables)
{
    // Each analysis is a named scope for LibTorch's profiler and device_path_bench's operator counts.
    Columns columns;
    if (options.snr && layout.noisyPerImage > 0) {
        RECORD_USER_SCOPE("attnscope::snr");
        signalToNoise(state, layout, options, columns);
    }
    if (options.centres) {
        RECORD_USER_SCOPE("attnscope::centres");
        headCentres(state, layout, options.radius, tables, columns);
    }
    if (options.attention) {
        RECORD_USER_SCOPE("attnscope::attention_similarity");
        attentionSimilarity(state, layout, columns);
    }
    if (options.similarity) {
        RECORD_USER_SCOPE("attnscope::token_similarity");
        tokenSimilarity(state, layout, columns);
    }
    if (options.norms) {
        RECORD_USER_SCOPE("attnscope::norms");
        tokenNorms(state, layout, options.outlierRatio, columns);
    }
    BatchedValues out;
    out.keys = std::move(columns.keys);
    out.values = columns.blocks.empty() ? at::empty({ layout.images, 0 }, at::kDouble) : at::cat(columns.blocks, 1);
    return out;
}

} // namespace attnscope
