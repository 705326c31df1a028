#include "plots/AttentionOverlay.h"

#include <QFontMetricsF>
#include <QPainter>
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace attnscope {

namespace {

    // Source index pair and weight of every destination pixel along one axis, for bilinear upsampling with
    // half-pixel centres (align_corners=False): source coordinate (i + 0.5) * n / size - 0.5, clamped at the borders.
    struct Tap1d {
        int i0, i1;
        double w1;
    };

    std::vector<Tap1d> bilinearTaps(int size, int n)
    {
        std::vector<Tap1d> taps(size_t(std::max(0, size)));
        for (int i = 0; i < size; ++i) {
            const double s = std::clamp((i + 0.5) * n / size - 0.5, 0.0, double(n - 1));
            const int i0 = std::min(int(s), n - 1);
            const int i1 = std::min(i0 + 1, n - 1);
            taps[size_t(i)] = { i0, i1, s - i0 };
        }
        return taps;
    }

    // Nice tick values covering [low, high]: steps of 1, 2, 2.5 or 5 times a power of ten, about four of them.
    std::vector<double> niceTicks(double low, double high)
    {
        if (!(high > low))
            return { low };
        const double raw = (high - low) / 4.0;
        const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
        double step = magnitude;
        for (double m : { 1.0, 2.0, 2.5, 5.0, 10.0 }) {
            step = m * magnitude;
            if (step >= raw)
                break;
        }
        std::vector<double> ticks;
        for (double v = std::ceil(low / step - 1e-9) * step; v <= high + step * 1e-9; v += step)
            ticks.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
        return ticks;
    }

    // A hierarchical model's map at a stage's grid [h, w] over the image's patch grid [gridH, gridW]: the side f (a power
    // of two) of the patches one of its tokens covers, ceil(gridH / f) = h; 1 for a map at the patch grid or one that
    // fits no stage.
    int stageFactor(const Tensor& patches, int gridH, int gridW)
    {
        if (patches.dim() != 2 || (patches.size(0) == gridH && patches.size(1) == gridW))
            return 1;
        for (int f = 2; f <= 1024; f *= 2)
            if ((gridH + f - 1) / f == patches.size(0) && (gridW + f - 1) / f == patches.size(1))
                return f;
        return 1;
    }

    // The stage map at the patch grid: each token's value on every patch it covers (the padding tokens' off the image).
    Tensor expandStageMap(const Tensor& patches, int f, int gridH, int gridW)
    {
        const int64_t w = patches.size(1);
        std::vector<float> out(size_t(gridH) * size_t(gridW));
        for (int y = 0; y < gridH; ++y)
            for (int x = 0; x < gridW; ++x)
                out[size_t(y) * size_t(gridW) + size_t(x)] = patches.data()[(y / f) * w + x / f];
        return Tensor::fromVector({ gridH, gridW }, std::move(out));
    }

    // A pixel outside a windowed map's window: the image in grey, darkened, under thin diagonal hatching, so that it
    // reads as "no attention here" and not as the colormap's zero.
    QRgb outsidePixel(QRgb base, int x, int y, int lineWidth)
    {
        const int grey = (qRed(base) * 77 + qGreen(base) * 150 + qBlue(base) * 29) >> 8;
        const int v = ((x + y) % 9 < lineWidth) ? 150 : 30 + grey * 3 / 10;
        return qRgb(v, v, v);
    }

} // namespace

QImage toQImage(const Image& image)
{
    if (image.empty() || image.width <= 0 || image.height <= 0)
        return {};
    QImage out(image.width, image.height, QImage::Format_RGB32);
    for (int y = 0; y < image.height; ++y) {
        auto* line = reinterpret_cast<QRgb*>(out.scanLine(y));
        const uint8_t* src = image.pixels.data() + size_t(y) * size_t(image.width) * size_t(image.channels);
        for (int x = 0; x < image.width; ++x) {
            const uint8_t* p = src + size_t(x) * size_t(image.channels);
            line[x] = image.channels >= 3 ? qRgb(p[0], p[1], p[2]) : qRgb(p[0], p[0], p[0]);
        }
    }
    return out;
}

std::optional<QPoint> queryPatchOf(int query, int numPrefixTokens, int gridWidth)
{
    if (query < numPrefixTokens || gridWidth <= 0)
        return std::nullopt;
    const int k = query - numPrefixTokens;
    return QPoint(k % gridWidth, k / gridWidth);
}

int mapCellPatches(const AttentionMap& map, int gridH, int gridW) { return stageFactor(map.patches, gridH, gridW); }

std::optional<double> mapValueAt(const AttentionMap& map, int gridH, int gridW, int row, int col)
{
    const Tensor& p = map.patches;
    if (p.dim() != 2 || !p.data() || row < 0 || col < 0 || row >= gridH || col >= gridW)
        return std::nullopt;
    const int f = stageFactor(p, gridH, gridW);
    if (f == 1 && (p.size(0) != gridH || p.size(1) != gridW))
        return std::nullopt;
    return double(p.data()[(row / f) * p.size(1) + col / f]);
}

double mapMaximum(const AttentionMap& map)
{
    const float* data = map.patches.data();
    double best = 0.0;
    for (int64_t i = 0; data && i < map.patches.numel(); ++i)
        if (data[i] > best) // NaN (outside a window) compares false
            best = data[i];
    return best;
}

QImage renderAttentionOverlay(const Image& shown, const AttentionMap& map, int gridH, int gridW, double opacity,
    Colormap colormap, std::optional<QPoint> queryPatch, std::optional<ValueRange> range)
{
    return renderAttentionOverlay(toQImage(shown), map, gridH, gridW, opacity, colormap, queryPatch, range);
}

QImage renderAttentionOverlay(const QImage& shown, const AttentionMap& map, int gridH, int gridW, double opacity,
    Colormap colormap, std::optional<QPoint> queryPatch, std::optional<ValueRange> range)
{
    const int f = stageFactor(map.patches, gridH, gridW);
    const Tensor expanded = f > 1 ? expandStageMap(map.patches, f, gridH, gridW) : Tensor();
    const Tensor& patches = f > 1 ? expanded : map.patches;
    const bool valid = gridH > 0 && gridW > 0 && patches.numel() == int64_t(gridH) * gridW && patches.data();
    QImage out = shown.isNull() ? QImage(std::max(1, gridW) * 16, std::max(1, gridH) * 16, QImage::Format_RGB32)
                                : shown.convertToFormat(QImage::Format_RGB32);
    if (shown.isNull()) {
        out.fill(Qt::black);
        opacity = 1.0; // nothing to blend over
    }
    if (!valid)
        return out;
    opacity = std::clamp(opacity, 0.0, 1.0);

    const ValueRange r = range.value_or(ValueRange { 0.0, mapMaximum(map) });
    const double span = r.high - r.low;
    const double scale = span > 0 ? 1.0 / span : 0.0;
    // NaN marks the cells outside a windowed map's window: interpolated as 0, drawn as outside by the nearest cell.
    const float* values = patches.data();
    std::vector<float> finite;
    std::vector<uint8_t> outside;
    for (int64_t i = 0; i < patches.numel(); ++i)
        if (std::isnan(values[i])) {
            if (finite.empty()) {
                finite.assign(values, values + patches.numel());
                outside.assign(size_t(patches.numel()), 0);
            }
            finite[size_t(i)] = 0.0f;
            outside[size_t(i)] = 1;
        }
    if (!finite.empty())
        values = finite.data();
    const int hatch = out.width() >= 160 ? 2 : 1; // a small image is drawn scaled up: thinner lines
    const ColormapTable& table = colormapTable(colormap);
    const std::vector<Tap1d> xs = bilinearTaps(out.width(), gridW);
    const std::vector<Tap1d> ys = bilinearTaps(out.height(), gridH);
    // Blending in 8-bit fixed point: out = (base (256 - a) + colour a + 128) / 256, a = opacity in 1/256 (within
    // one level of the exact blend). The colour's share is precomputed per table entry.
    const int a = int(std::lround(opacity * 256.0));
    std::array<std::array<int, 3>, 256> over {};
    for (size_t i = 0; i < 256; ++i)
        over[i] = { qRed(table[i]) * a + 128, qGreen(table[i]) * a + 128, qBlue(table[i]) * a + 128 };
    const float low = float(r.low), toIndex = float(scale * 255.0);
    // Separable bilinear upsampling: the two source rows of an output row are blended once into `mixed`, then
    // each pixel interpolates along x.
    std::vector<float> mixed(static_cast<size_t>(gridW));
    const int width = out.width(), height = out.height();
    for (int y = 0; y < height; ++y) {
        const Tap1d ty = ys[size_t(y)];
        const float* row0 = values + size_t(ty.i0) * size_t(gridW);
        const float* row1 = values + size_t(ty.i1) * size_t(gridW);
        const float wy = float(ty.w1);
        for (int c = 0; c < gridW; ++c)
            mixed[size_t(c)] = row0[c] + wy * (row1[c] - row0[c]);
        auto* line = reinterpret_cast<QRgb*>(out.scanLine(y));
        for (int x = 0; x < width; ++x) {
            const Tap1d& tx = xs[size_t(x)];
            if (!outside.empty()
                && outside[size_t(std::min(gridH - 1, y * gridH / height)) * size_t(gridW)
                    + size_t(std::min(gridW - 1, x * gridW / width))]) {
                line[x] = outsidePixel(line[x], x, y, hatch);
                continue;
            }
            const float v = mixed[size_t(tx.i0)] + float(tx.w1) * (mixed[size_t(tx.i1)] - mixed[size_t(tx.i0)]);
            const float t = std::clamp((v - low) * toIndex, 0.0f, 255.0f);
            const auto& c = over[size_t(t + 0.5f)];
            const QRgb b = line[x];
            line[x] = qRgb((qRed(b) * (256 - a) + c[0]) >> 8, (qGreen(b) * (256 - a) + c[1]) >> 8,
                (qBlue(b) * (256 - a) + c[2]) >> 8);
        }
    }

    if (queryPatch && queryPatch->x() >= 0 && queryPatch->y() >= 0 && queryPatch->x() < gridW
        && queryPatch->y() < gridH) {
        // At a stage's grid, the query's token: the f x f patches it covers (cut at the image's edge).
        const double cw = double(out.width()) / gridW, ch = double(out.height()) / gridH;
        const int x0 = queryPatch->x() / f * f, y0 = queryPatch->y() / f * f;
        const QRectF cell(x0 * cw, y0 * ch, std::min(f, gridW - x0) * cw, std::min(f, gridH - y0) * ch);
        QPainter painter(&out);
        painter.setRenderHint(QPainter::Antialiasing);
        const double width = std::clamp(cw / 8.0, 1.0, 3.0);
        // White on a dark rim: visible over any colour of any map.
        painter.setPen(QPen(QColor(0, 0, 0, 200), width + 2.0));
        painter.drawRect(cell.adjusted(-width / 2, -width / 2, width / 2, width / 2));
        painter.setPen(QPen(Qt::white, width));
        painter.drawRect(cell.adjusted(-width / 2, -width / 2, width / 2, width / 2));
    }
    return out;
}

void paintColorBar(QPainter& painter, const QRectF& area, Colormap colormap, ValueRange range,
    Qt::Orientation orientation, const QString& caption, const PlotStyle& style)
{
    painter.save();
    painter.setRenderHint(QPainter::Antialiasing);
    const ColormapTable& table = colormapTable(colormap);
    QImage strip(
        orientation == Qt::Horizontal ? 256 : 1, orientation == Qt::Horizontal ? 1 : 256, QImage::Format_RGB32);
    for (int i = 0; i < 256; ++i) {
        if (orientation == Qt::Horizontal)
            strip.setPixel(i, 0, table[size_t(i)]);
        else
            strip.setPixel(0, 255 - i, table[size_t(i)]); // high values at the top
    }
    const QFont tickFont = style.font(style.tickFontPx - 1);
    const QFont captionFont = style.font(style.tickFontPx);
    const QFontMetricsF tickMetrics(tickFont);
    const double thickness = 12.0, tickLength = 4.0;
    const QPen pen(style.foreground, 1.0);
    const double span = range.high - range.low;
    const std::vector<double> ticks = niceTicks(range.low, range.high);

    if (orientation == Qt::Horizontal) {
        // Leave half a label's width at each end so the end labels fit.
        const double margin = tickMetrics.horizontalAdvance(QStringLiteral("0.000")) / 2.0;
        const QRectF bar(area.left() + margin, area.top(), std::max(1.0, area.width() - 2 * margin), thickness);
        painter.drawImage(bar, strip);
        painter.setPen(pen);
        painter.setBrush(Qt::NoBrush);
        painter.drawRect(bar);
        painter.setFont(tickFont);
        for (double v : ticks) {
            const double x = bar.left() + (span > 0 ? (v - range.low) / span : 0.0) * bar.width();
            painter.drawLine(QPointF(x, bar.bottom()), QPointF(x, bar.bottom() + tickLength));
            const QRectF label(x - 40, bar.bottom() + tickLength + 1, 80, tickMetrics.height());
            painter.drawText(label, Qt::AlignHCenter | Qt::AlignTop, QString::number(v, 'g', 3));
        }
        painter.setFont(captionFont);
        painter.drawText(QRectF(area.left(), bar.bottom() + tickLength + tickMetrics.height() + 2, area.width(),
                             area.bottom() - bar.bottom()),
            Qt::AlignHCenter | Qt::AlignTop | Qt::TextWordWrap, caption);
    } else {
        const double margin = tickMetrics.height() / 2.0;
        const QRectF bar(area.left(), area.top() + margin, thickness, std::max(1.0, area.height() - 2 * margin));
        painter.drawImage(bar, strip);
        painter.setPen(pen);
        painter.setBrush(Qt::NoBrush);
        painter.drawRect(bar);
        painter.setFont(tickFont);
        double labelWidth = 0;
        for (double v : ticks) {
            const double y = bar.bottom() - (span > 0 ? (v - range.low) / span : 0.0) * bar.height();
            painter.drawLine(QPointF(bar.right(), y), QPointF(bar.right() + tickLength, y));
            const QString text = QString::number(v, 'g', 3);
            labelWidth = std::max(labelWidth, tickMetrics.horizontalAdvance(text));
            painter.drawText(
                QRectF(bar.right() + tickLength + 2, y - tickMetrics.height() / 2, 80, tickMetrics.height()),
                Qt::AlignLeft | Qt::AlignVCenter, text);
        }
        painter.setFont(captionFont);
        const double x = bar.right() + tickLength + 6 + labelWidth + QFontMetricsF(captionFont).height() / 2;
        painter.translate(x, bar.center().y());
        painter.rotate(-90);
        painter.drawText(QRectF(-bar.height() / 2, -QFontMetricsF(captionFont).height() / 2, bar.height(),
                             QFontMetricsF(captionFont).height()),
            Qt::AlignCenter, caption);
    }
    painter.restore();
}

QImage renderColorBar(Colormap colormap, ValueRange range, QSize size, Qt::Orientation orientation,
    const QString& caption, const PlotStyle& style, double scale)
{
    QImage image(QSize(int(std::ceil(size.width() * scale)), int(std::ceil(size.height() * scale))),
        QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(scale);
    image.fill(style.background);
    QPainter painter(&image);
    paintColorBar(painter, QRectF(QPointF(0, 0), QSizeF(size)), colormap, range, orientation, caption, style);
    return image;
}

} // namespace attnscope
