#include "image/PilResample.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace attnscope {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2; // Pillow's PRECISION_BITS for 8-bit images

double bilinear(double x)
{
    x = std::fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

double bicubic(double x)
{
    constexpr double a = -0.5;
    x = std::fabs(x);
    if (x < 1.0)
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0)
        return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

// One axis's filter: for output pixel i, the first source pixel `first[i]`, the count `count[i]`, and its fixed-point
// weights at weights[i * width ...].
struct Taps {
    int width = 0;
    std::vector<int> first, count;
    std::vector<int32_t> weights;
};

Taps taps(int inSize, int outSize, Interpolation interpolation)
{
    const double support0 = interpolation == Interpolation::Bicubic ? 2.0 : 1.0;
    double (*filter)(double) = interpolation == Interpolation::Bicubic ? bicubic : bilinear;
    const double scale = double(inSize) / outSize;
    const double filterScale = std::max(scale, 1.0);
    const double support = support0 * filterScale;
    Taps t;
    t.width = int(std::ceil(support)) * 2 + 1;
    t.first.resize(size_t(outSize));
    t.count.resize(size_t(outSize));
    t.weights.assign(size_t(outSize) * size_t(t.width), 0);
    std::vector<double> k(size_t(t.width));
    for (int i = 0; i < outSize; ++i) {
        const double centre = (i + 0.5) * scale;
        // Pillow rounds with a cast, (int)(v + 0.5), which truncates toward zero.
        const int lo = std::max(0, int(centre - support + 0.5));
        const int hi = std::min(inSize, int(centre + support + 0.5));
        const int n = hi - lo;
        double sum = 0;
        for (int x = 0; x < n; ++x) {
            k[size_t(x)] = filter((x + lo - centre + 0.5) / filterScale);
            sum += k[size_t(x)];
        }
        for (int x = 0; x < n; ++x) {
            const double w = sum != 0.0 ? k[size_t(x)] / sum : k[size_t(x)];
            t.weights[size_t(i) * size_t(t.width) + size_t(x)] = int32_t(w < 0 ? -0.5 + w * (1 << kPrecisionBits)
                                                                                 : 0.5 + w * (1 << kPrecisionBits));
        }
        t.first[size_t(i)] = lo;
        t.count[size_t(i)] = n;
    }
    return t;
}

inline uint8_t clip8(int64_t v)
{
    if (v >= (int64_t(1) << kPrecisionBits << 8))
        return 255;
    if (v <= 0)
        return 0;
    return uint8_t(v >> kPrecisionBits);
}

// Pillow's ImagingScaleAffine: positions accumulated from the first pixel's centre, a step of in / out each, truncated.
void nearest(const uint8_t* in, int inH, int inW, int c, uint8_t* out, int outH, int outW)
{
    std::vector<int> xs(static_cast<size_t>(outW));
    const double stepX = double(inW) / outW, stepY = double(inH) / outH;
    double position = stepX * 0.5;
    for (int x = 0; x < outW; ++x, position += stepX)
        xs[size_t(x)] = std::min(inW - 1, int(position));
    position = stepY * 0.5;
    for (int y = 0; y < outH; ++y, position += stepY) {
        const int sy = std::min(inH - 1, int(position));
        for (int x = 0; x < outW; ++x)
            std::copy_n(in + (size_t(sy) * inW + size_t(xs[size_t(x)])) * c, c, out + (size_t(y) * outW + x) * c);
    }
}

} // namespace

void pilResize(const uint8_t* in, int inH, int inW, int c, uint8_t* out, int outH, int outW, Interpolation interpolation)
{
    if (interpolation == Interpolation::Nearest) {
        nearest(in, inH, inW, c, out, outH, outW);
        return;
    }
    const Taps horizontal = taps(inW, outW, interpolation);
    const Taps vertical = taps(inH, outH, interpolation);
    // The horizontal pass covers only the source rows the vertical pass reads.
    const int rowFirst = vertical.first.front();
    const int rowLast = vertical.first.back() + vertical.count.back();
    const int rows = inW != outW ? rowLast - rowFirst : inH;
    const int rowOffset = inW != outW ? rowFirst : 0;
    std::vector<uint8_t> temp;
    const uint8_t* source = in;
    if (inW != outW) {
        temp.resize(size_t(rows) * size_t(outW) * size_t(c));
        at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
            for (int64_t y = begin; y < end; ++y) {
                const uint8_t* row = in + size_t(y + rowOffset) * size_t(inW) * size_t(c);
                uint8_t* dst = temp.data() + size_t(y) * size_t(outW) * size_t(c);
                for (int x = 0; x < outW; ++x) {
                    const int32_t* k = horizontal.weights.data() + size_t(x) * size_t(horizontal.width);
                    const uint8_t* px = row + size_t(horizontal.first[size_t(x)]) * size_t(c);
                    for (int ch = 0; ch < c; ++ch) {
                        int64_t sum = int64_t(1) << (kPrecisionBits - 1);
                        for (int i = 0; i < horizontal.count[size_t(x)]; ++i)
                            sum += int64_t(px[size_t(i) * size_t(c) + size_t(ch)]) * k[i];
                        dst[size_t(x) * size_t(c) + size_t(ch)] = clip8(sum);
                    }
                }
            }
        });
        source = temp.data();
    }
    const int width = outW;
    if (inH == outH) {
        std::copy_n(source, size_t(outH) * size_t(width) * size_t(c), out);
        return;
    }
    at::parallel_for(0, outH, 16, [&](int64_t begin, int64_t end) {
        for (int64_t y = begin; y < end; ++y) {
            const int32_t* k = vertical.weights.data() + size_t(y) * size_t(vertical.width);
            const int first = vertical.first[size_t(y)] - rowOffset;
            uint8_t* dst = out + size_t(y) * size_t(width) * size_t(c);
            for (int x = 0; x < width * c; ++x) {
                int64_t sum = int64_t(1) << (kPrecisionBits - 1);
                for (int i = 0; i < vertical.count[size_t(y)]; ++i)
                    sum += int64_t(source[(size_t(first + i) * size_t(width)) * size_t(c) + size_t(x)]) * k[i];
                dst[x] = clip8(sum);
            }
        }
    });
}

} // namespace attnscope
