#include "SyntheticData.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

namespace attnscope::testdata {

namespace {

    Estimate estimate(double mean, double sd, int64_t n)
    {
        return { mean, sd, n > 0 ? 1.96 * sd / std::sqrt(double(n)) : 0.0, n };
    }

    // How global head h of layer l is, 0 (local) .. 1 (global): early layers mix both, late layers are global, as in
    // the ViT paper's Fig. 7.
    double globalness(int layer, int head, int layers)
    {
        return std::clamp((layer - 1 + 2.0 * (head % 3)) / (0.7 * layers), 0.0, 1.0);
    }

} // namespace

std::vector<double> gaussianOffsetMap(int radius, double dy, double dx, double sigma, double mass)
{
    const int n = 2 * radius + 1;
    std::vector<double> map(size_t(n * n));
    double sum = 0;
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
            const double ey = i - radius - dy, ex = j - radius - dx;
            const double v = std::exp(-(ey * ey + ex * ex) / (2 * sigma * sigma));
            map[size_t(i * n + j)] = v;
            sum += v;
        }
    }
    for (double& v : map)
        v *= mass / sum;
    return map;
}

double massContour(const std::vector<double>& map, double share)
{
    std::vector<double> sorted = map;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    const double total = std::accumulate(sorted.begin(), sorted.end(), 0.0);
    double cumulative = 0;
    for (double v : sorted) {
        cumulative += v;
        if (cumulative >= share * total)
            return v;
    }
    return sorted.empty() ? 0.0 : sorted.back();
}

AnalysisSummary makeSummary(const std::string& model, const std::string& label, const SummaryShape& shape)
{
    AnalysisSummary s;
    s.model = model;
    s.label = label;
    s.options = "gaussian:sigma=8, seed 0";
    s.images = shape.images;
    s.patchSize = 16;
    const int64_t n = shape.images;

    for (int l = 0; l <= shape.layers; ++l) {
        const double depth = double(l) / shape.layers;
        const double all = 0.12 + 0.8 * (1.0 - std::exp(-3.0 * shape.smoothing * depth));
        for (Tap tap : { Tap::Block, Tap::Attn, Tap::Residual }) {
            if (tap != Tap::Block && l == 0)
                continue;
            const double shift = tap == Tap::Attn ? 0.05 : tap == Tap::Residual ? -0.02 : 0.0;
            s.tokenSimilarity.push_back({ l, tap, TokenSet::All, estimate(std::min(0.99, all + shift), 0.45, n) });
            s.tokenSimilarity.push_back(
                { l, tap, TokenSet::Patches, estimate(std::min(0.99, all - 0.07 + shift), 0.5, n) });
        }
    }

    for (int l = 1; l <= shape.layers; ++l) {
        for (int h = 0; h < shape.heads; ++h) {
            const double g = globalness(l, h, shape.layers);
            const double angle = 2.0 * M_PI * h / shape.heads + 0.35 * l;
            const double reach = (1.0 - g) * 1.3 + 0.15 * g;
            const double dy = reach * std::sin(angle), dx = reach * std::cos(angle);
            const double sigma = 0.45 + 2.6 * g;
            const double mass = 0.92 - 0.55 * g;
            HeadCentreRow row;
            row.layer = l;
            row.head = h;
            row.centreDy = estimate(dy, 0.3, n);
            row.centreDx = estimate(dx, 0.3, n);
            row.peakDy = estimate(std::round(dy), 0.4, n);
            row.peakDx = estimate(std::round(dx), 0.4, n);
            row.meanDistancePx = estimate(16.0 * (1.1 + 5.5 * g + 0.35 * reach) + 2.5 * h, 6.0, n);
            row.bandwidth = estimate(sigma, 0.2, n);
            row.prefixMass = estimate(l > shape.layers / 2 && h == 0 ? 0.7 : 0.05 + 0.02 * l, 0.05, n);
            row.radius = shape.radius;
            row.offsetMap = gaussianOffsetMap(shape.radius, dy, dx, sigma, mass);
            row.windowMass = estimate(mass, 0.05, n);
            row.contour50 = massContour(row.offsetMap, 0.5);
            row.contour90 = massContour(row.offsetMap, 0.9);
            s.headCentres.push_back(row);
        }
    }

    for (int l = 0; l < shape.layers; ++l)
        s.attentionSimilarity.push_back({ l + 1, estimate(0.5 + 0.03 * l, 0.1, n), estimate(0.3 + 0.04 * l, 0.1, n) });

    const std::string perturbation = "gaussian:sigma=8";
    for (int l = 0; l <= shape.layers; ++l) {
        const double base = 18.0 - 1.1 * l * shape.smoothing;
        s.snr.push_back({ perturbation, l, Tap::Block, estimate(base, 3.0, n) });
        if (l > 0) {
            s.snr.push_back({ perturbation, l, Tap::Attn, estimate(base - 4.0 + 0.2 * l, 3.5, n) });
            s.snr.push_back({ perturbation, l, Tap::Residual, estimate(base + 0.8, 3.0, n) });
        }
    }
    for (int l = 1; l <= shape.layers; ++l) {
        // The variant (smoothing < 1) keeps more of the signal: a larger alpha and beta, a smaller gamma.
        const double keep = 1.0 / shape.smoothing;
        const double alpha = (0.4 + 0.08 * l) * keep, beta = 0.35 - 0.04 * l / keep, gamma = (0.3 + 0.05 * l) / keep;
        const double bound = std::sqrt(1 + 2 * alpha * beta + alpha * alpha) / (1 + gamma);
        SnrDiagnosticsRow row;
        row.perturbation = perturbation;
        row.layer = l;
        row.alpha = estimate(alpha, 0.1, n);
        row.beta = estimate(beta, 0.1, n);
        row.gamma = estimate(gamma, 0.1, n);
        row.bound = estimate(bound, 0.05, n);
        row.gain = estimate(bound * (1.15 + 0.02 * l), 0.06, n);
        row.sensitivity = estimate(std::exp(0.28 * l * shape.smoothing), 0.3 * std::exp(0.28 * l), n);
        row.conditionShare = std::min(alpha, beta) > gamma ? 0.9 : 0.1;
        s.snrDiagnostics.push_back(row);
    }
    return s;
}

Image makeImage(int width, int height, int channels)
{
    Image image;
    image.width = width;
    image.height = height;
    image.channels = channels;
    image.pixels.resize(size_t(width) * size_t(height) * size_t(channels));
    for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
            double r = 90 + 80.0 * x / width, g = 120 + 60.0 * y / height, b = 160 - 50.0 * x / width;
            const double cx = x - 0.62 * width, cy = y - 0.38 * height;
            if (cx * cx + cy * cy < 0.04 * width * height) // a warm disc: "the object"
                r = 225, g = 140 + 20.0 * cx / width, b = 60;
            if (x > 0.12 * width && x < 0.4 * width && y > 0.62 * height && y < 0.85 * height)
                r = 70, g = 80, b = 95;
            uint8_t* p = image.pixels.data() + (size_t(y) * size_t(width) + size_t(x)) * size_t(channels);
            if (channels == 1) {
                p[0] = uint8_t(std::clamp(0.299 * r + 0.587 * g + 0.114 * b, 0.0, 255.0));
            } else {
                p[0] = uint8_t(std::clamp(r, 0.0, 255.0));
                p[1] = uint8_t(std::clamp(g, 0.0, 255.0));
                p[2] = uint8_t(std::clamp(b, 0.0, 255.0));
            }
        }
    }
    return image;
}

AttentionMap bumpMap(int gh, int gw, double row, double col, double sigma, double prefixMass)
{
    std::vector<float> v(size_t(gh * gw));
    double sum = 0;
    for (int i = 0; i < gh; ++i) {
        for (int j = 0; j < gw; ++j) {
            const double d2 = (i - row) * (i - row) + (j - col) * (j - col);
            const double value = std::exp(-d2 / (2 * sigma * sigma)) + 0.02;
            v[size_t(i * gw + j)] = float(value);
            sum += value;
        }
    }
    for (float& x : v)
        x = float(x / sum * (1.0 - prefixMass));
    return { Tensor::fromVector({ gh, gw }, std::move(v)), prefixMass };
}

AttentionGrid makeGrid(int layers, int heads, int query)
{
    AttentionGrid grid;
    grid.model = "synthetic ViT-S/16";
    grid.image = "synthetic.png";
    grid.shown = makeImage();
    grid.query = query;
    grid.gridHeight = 14;
    grid.gridWidth = 14;
    grid.numPrefixTokens = 1;
    const int gh = grid.gridHeight, gw = grid.gridWidth;
    const double objectRow = 0.38 * gh - 0.5, objectCol = 0.62 * gw - 0.5;
    double queryRow = objectRow, queryCol = objectCol;
    if (query >= grid.numPrefixTokens) {
        queryRow = (query - 1) / gw;
        queryCol = (query - 1) % gw;
    }
    for (int l = 1; l <= layers; ++l) {
        std::vector<AttentionMap> row;
        std::vector<float> mean(size_t(gh * gw), 0.0f);
        for (int h = 0; h < heads; ++h) {
            const double g = globalness(l, h, layers);
            const double angle = 2.0 * M_PI * h / heads;
            // Local heads look next to the query; global ones at the object, broadly.
            const double r = (1 - g) * (queryRow + 1.5 * std::sin(angle)) + g * objectRow;
            const double c = (1 - g) * (queryCol + 1.5 * std::cos(angle)) + g * objectCol;
            AttentionMap map = bumpMap(gh, gw, r, c, 0.8 + 2.5 * g, 0.05 + 0.04 * l);
            for (int k = 0; k < gh * gw; ++k)
                mean[size_t(k)] += map.patches.data()[k] / float(heads);
            row.push_back(std::move(map));
        }
        row.push_back({ Tensor::fromVector({ gh, gw }, mean), 0.3 });
        grid.maps.push_back(std::move(row));
    }
    grid.rollout = bumpMap(gh, gw, objectRow, objectCol, 2.5, 0.2);
    return grid;
}

LogitDecomposition makeDecomposition(int heads, int side)
{
    const int n = 1 + side * side;
    const size_t cells = size_t(heads) * size_t(n) * size_t(n);
    std::vector<float> tt(cells), tp(cells), pt(cells), pp(cells), sum(cells);
    auto pos = [&](int i) { return std::pair<double, double>((i - 1) / side, (i - 1) % side); };
    for (int h = 0; h < heads; ++h) {
        for (int i = 0; i < n; ++i) {
            for (int j = 0; j < n; ++j) {
                const size_t k = (size_t(h) * n + i) * n + j;
                // Content: tokens of a similar "colour" (a smooth function of position) attend to each other.
                const double ci = std::sin(0.37 * i + h), cj = std::sin(0.37 * j + h);
                tt[k] = float(2.0 * ci * cj);
                if (i == 0 || j == 0) {
                    pp[k] = float(i == j ? 1.5 : 0.4);
                    tp[k] = float(0.2 * ci);
                    pt[k] = float(0.2 * cj);
                } else {
                    const auto [ri, coli] = pos(i);
                    const auto [rj, colj] = pos(j);
                    const double dy = rj - ri - (h % 2 ? 1 : 0), dx = colj - coli - (h / 2 ? 1 : 0);
                    pp[k] = float(4.0 * std::exp(-(dy * dy + dx * dx) / 4.0) - 1.0);
                    tp[k] = float(0.6 * ci * std::cos(0.5 * rj + 0.3 * colj));
                    pt[k] = float(0.6 * cj * std::cos(0.4 * ri - 0.2 * coli));
                }
                sum[k] = tt[k] + tp[k] + pt[k] + pp[k];
            }
        }
    }
    const std::vector<int64_t> shape = { heads, n, n };
    LogitDecomposition d;
    d.tt = Tensor::fromVector(shape, tt);
    d.tp = Tensor::fromVector(shape, tp);
    d.pt = Tensor::fromVector(shape, pt);
    d.pp = Tensor::fromVector(shape, pp);
    d.logits = Tensor::fromVector(shape, sum);
    return d;
}

} // namespace attnscope::testdata
