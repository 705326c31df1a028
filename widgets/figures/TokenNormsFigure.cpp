#include "figures/TokenNormsFigure.h"

#include "plots/AttentionOverlay.h"
#include "plots/PlotElements.h"

#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>

namespace attnscope {

int tokenNormsShownLayer(const TokenNorms& t)
{
    int shown = t.layers.empty() ? 0 : t.layers.back().layer;
    size_t most = 0;
    for (const auto& l : t.layers)
        if (l.outliers.size() >= most && !l.outliers.empty()) {
            most = l.outliers.size();
            shown = l.layer;
        }
    return shown;
}

namespace {

// Round tick steps (1, 2 or 5 times a power of ten) giving at most `maxTicks` ticks over [0, high].
double tickStep(double high, int maxTicks)
{
    const double raw = high / std::max(1, maxTicks);
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : { 1.0, 2.0, 5.0, 10.0 })
        if (m * power >= raw)
            return m * power;
    return 10.0 * power;
}

// The figure's colours: the outliers, the CLS token, the registers and the histograms' bars.
struct NormColors {
    QColor outlier, cls, registers, bar;
};

// The image with the norms of the shown layer's patch tokens over it and its outliers outlined, its caption above it in
// `caption` and its colour bar in `bar`.
void drawShownLayer(QPainter& p, const TokenNorms& t, const TokenNormLayer& shown, const QImage& image, const QRectF& area,
                    const QRectF& caption, const QRectF& bar, const QFont& labelFont, const QColor& outlierColor,
                    const PlotStyle& ts)
{
    const int P = t.numPrefixTokens, gh = t.gridHeight, gw = t.gridWidth;
    std::vector<float> patchNorms(shown.norms.begin() + std::min<size_t>(size_t(P), shown.norms.size()), shown.norms.end());
    double high = 0;
    for (float v : patchNorms)
        high = std::max(high, double(v));
    const AttentionMap map { Tensor::fromVector({ gh, gw }, std::move(patchNorms)), 0.0 };
    const QImage overlay = renderAttentionOverlay(image, map, gh, gw, 0.65, Colormap::Viridis, std::nullopt, ValueRange { 0.0, high });
    p.setFont(labelFont);
    p.setPen(ts.foreground);
    p.drawText(caption, Qt::AlignHCenter | Qt::AlignBottom,
               QStringLiteral("X_%1: %2 outlier%3").arg(shown.layer).arg(shown.outliers.size()).arg(shown.outliers.size() == 1 ? "" : "s"));
    if (!overlay.isNull())
        p.drawImage(area, overlay);
    p.setPen(QPen(outlierColor, 2.0));
    p.setBrush(Qt::NoBrush);
    const double cw = area.width() / gw, ch = area.height() / gh;
    for (int token : shown.outliers) {
        const int patch = token - P;
        p.drawRect(QRectF(area.left() + (patch % gw) * cw + 1, area.top() + (patch / gw) * ch + 1, cw - 2, ch - 2));
    }
    paintColorBar(p, bar, Colormap::Viridis, ValueRange { 0.0, high }, Qt::Horizontal, QStringLiteral("patch token norm |x|"), ts);
}

// The right end of the histograms' axis (norm / patch median): past the outlier cut, the largest patch ratio and every
// prefix token.
double ratioAxisHigh(const TokenNorms& t)
{
    const int P = t.numPrefixTokens;
    double xHigh = t.outlierRatio * 1.25;
    for (const auto& l : t.layers) {
        if (std::isfinite(l.maxRatio))
            xHigh = std::max(xHigh, l.maxRatio * 1.05);
        if (std::isfinite(l.clsRatio))
            xHigh = std::max(xHigh, l.clsRatio * 1.05);
        for (int i = 0; i < P && size_t(i) < l.norms.size(); ++i)
            if (l.patchMedian > 0)
                xHigh = std::max(xHigh, l.norms[size_t(i)] / l.patchMedian * 1.05);
    }
    return xHigh;
}

// Where the histograms go across the figure: a row label ending at hx, the bars from hx over histW, then a note; and
// their shared axis from 0 to xHigh.
struct HistogramColumns {
    double hx, labelW, histW, noteW, rowH, xHigh;

    double xOf(double v) const { return hx + std::clamp(v / xHigh, 0.0, 1.0) * histW; }
};

// One layer's row at `top`: its label, the histogram of its patch norms over their median, its prefix tokens as ticks
// and a note of its outliers.
void drawHistogramRow(QPainter& p, const TokenNormsFigure& f, const TokenNormLayer& l, double top, int shownLayer,
                      const HistogramColumns& h, const NormColors& colors, const PlotStyle& ts)
{
    constexpr int kBins = 48;
    const int P = f.norms.numPrefixTokens;
    p.setPen(ts.foreground);
    p.drawText(QRectF(h.hx - h.labelW, top, h.labelW - 6, h.rowH), Qt::AlignRight | Qt::AlignVCenter,
               QStringLiteral("X_%1").arg(l.layer));
    p.fillRect(QRectF(h.hx, top, h.histW, h.rowH),
               l.layer == shownLayer ? QColor(0xf2, 0xf2, 0xf2) : QColor(0xfa, 0xfa, 0xfa));
    std::vector<int> bins(kBins, 0);
    for (size_t i = size_t(P); i < l.norms.size(); ++i)
        if (l.patchMedian > 0)
            ++bins[size_t(std::clamp(int(l.norms[i] / l.patchMedian / h.xHigh * kBins), 0, kBins - 1))];
    const int fullest = *std::max_element(bins.begin(), bins.end());
    for (int b = 0; b < kBins && fullest > 0; ++b) {
        if (!bins[size_t(b)])
            continue;
        const double barH = (h.rowH - 2) * bins[size_t(b)] / double(fullest);
        const bool beyond = (b + 0.5) * h.xHigh / kBins > f.norms.outlierRatio;
        p.fillRect(QRectF(h.hx + b * h.histW / kBins, top + h.rowH - barH, h.histW / kBins - 0.5, barH),
                   beyond ? colors.outlier : colors.bar);
    }
    // the prefix tokens as ticks above the row
    for (int i = 0; i < P && size_t(i) < l.norms.size() && l.patchMedian > 0; ++i) {
        const bool isCls = i == 0 && f.hasClassToken, isRegister = i >= P - f.registers;
        const double x = h.xOf(l.norms[size_t(i)] / l.patchMedian);
        p.setPen(QPen(isCls ? colors.cls : isRegister ? colors.registers : ts.neutral, 2.0));
        p.drawLine(QPointF(x, top), QPointF(x, top + h.rowH));
    }
    p.setPen(ts.mutedText);
    const QString note = QStringLiteral("%1 outlier%2%3")
                             .arg(l.outliers.size())
                             .arg(l.outliers.size() == 1 ? "" : "s")
                             .arg(std::isfinite(l.outlierAttention) && !l.outliers.empty()
                                      ? QStringLiteral(", %1% attn").arg(100.0 * l.outlierAttention, 0, 'f', 1)
                                      : QString());
    p.drawText(QRectF(h.hx + h.histW + 8, top, h.noteW, h.rowH), Qt::AlignLeft | Qt::AlignVCenter, note);
}

} // namespace

QImage renderTokenNormsFigure(const TokenNormsFigure& f, double scale, const PlotStyle& ts)
{
    const TokenNorms& t = f.norms;
    const int P = t.numPrefixTokens, gh = t.gridHeight, gw = t.gridWidth;
    const QFont titleFont = ts.font(ts.titleFontPx, true), subtitleFont = ts.font(ts.subtitleFontPx),
                labelFont = ts.font(ts.labelFontPx), tickFont = ts.font(ts.tickFontPx);
    const QFontMetricsF titleMetrics(titleFont), subtitleMetrics(subtitleFont), labelMetrics(labelFont), tickMetrics(tickFont);
    const NormColors colors { ts.color(1), ts.color(3), ts.color(2), ts.color(0) };

    const int shownLayer = tokenNormsShownLayer(t);
    const TokenNormLayer* shown = nullptr;
    for (const auto& l : t.layers)
        if (l.layer == shownLayer)
            shown = &l;

    const QString title = QStringLiteral("Token norms by layer");
    const QString subtitle = joinProvenance({ fromStd(f.model), fromStd(f.image),
        QStringLiteral("outlier: patch norm > %1\u00d7 the layer's patch median").arg(t.outlierRatio, 0, 'g', 3),
        QStringLiteral("attention share: of layer l+1's attention, which reads X_l") });

    // Geometry (logical pixels)
    const double margin = 16, gap = 28, tile = 220;
    const QImage image = toQImage(f.shown);
    const double tileH = image.isNull() || image.width() == 0 ? tile : std::round(tile * image.height() / double(image.width()));
    const double rowH = 24, rowGap = 3, labelW = tickMetrics.horizontalAdvance(QStringLiteral("X_88")) + 8, histW = 300;
    const double noteW = tickMetrics.horizontalAdvance(QStringLiteral("88 outliers, 100.0% attn")) + 10;
    const double titleHeight = titleMetrics.height() + subtitleMetrics.height() + 12;
    const double captionH = labelMetrics.height() + 4;
    const double rows = double(t.layers.size());
    const double histTop = margin + titleHeight + captionH;
    const double histBottom = histTop + rows * (rowH + rowGap);
    const double axisH = tickMetrics.height() + labelMetrics.height() + 10;
    const double barTop = histTop + tileH + 14, barHeight = 58;
    const double contentW = tile + gap + labelW + histW + noteW;
    const double width = std::max(2 * margin + contentW,
        2 * margin + std::max(titleMetrics.horizontalAdvance(title), subtitleMetrics.horizontalAdvance(subtitle)));
    const double height = std::max(barTop + barHeight, histBottom + axisH) + margin;

    QImage out(QSize(int(std::ceil(width * scale)), int(std::ceil(height * scale))), QImage::Format_ARGB32_Premultiplied);
    out.setDevicePixelRatio(scale);
    out.fill(ts.background);
    QPainter p(&out);
    p.setRenderHint(QPainter::Antialiasing);
    p.setRenderHint(QPainter::SmoothPixmapTransform);
    p.setPen(ts.foreground);
    p.setFont(titleFont);
    p.drawText(QRectF(0, margin, width, titleMetrics.height()), Qt::AlignHCenter, title);
    p.setFont(subtitleFont);
    p.setPen(ts.mutedText);
    p.drawText(QRectF(0, margin + titleMetrics.height() + 4, width, subtitleMetrics.height()), Qt::AlignHCenter, subtitle);

    const double left = (width - contentW) / 2;
    // --- the image with the shown layer's norms and outliers
    if (shown && gh > 0 && gw > 0)
        drawShownLayer(p, t, *shown, image, QRectF(left, histTop, tile, tileH),
                       QRectF(left, histTop - captionH, tile, captionH), QRectF(left, barTop, tile, barHeight), labelFont,
                       colors.outlier, ts);

    // --- one histogram per layer of norm / patch median
    const double xHigh = ratioAxisHigh(t);
    const double hx = left + tile + gap + labelW;
    const HistogramColumns columns { hx, labelW, histW, noteW, rowH, xHigh };
    p.setFont(tickFont);
    for (size_t r = 0; r < t.layers.size(); ++r)
        drawHistogramRow(p, f, t.layers[r], histTop + double(r) * (rowH + rowGap), shownLayer, columns, colors, ts);
    // the outlier cut and the axis
    p.setPen(QPen(colors.outlier, 1.5, Qt::DashLine));
    p.drawLine(QPointF(columns.xOf(t.outlierRatio), histTop - 2), QPointF(columns.xOf(t.outlierRatio), histBottom));
    p.setPen(QPen(ts.foreground, ts.axisWidth));
    p.drawLine(QPointF(hx, histBottom), QPointF(hx + histW, histBottom));
    const double step = tickStep(xHigh, 8);
    for (double v = 0; v <= xHigh + 1e-9; v += step) {
        const double x = columns.xOf(v);
        p.drawLine(QPointF(x, histBottom), QPointF(x, histBottom + 4));
        p.drawText(QRectF(x - 30, histBottom + 5, 60, tickMetrics.height()), Qt::AlignHCenter, QString::number(v, 'g', 3));
    }
    p.setFont(labelFont);
    QString axis = QStringLiteral("norm / median patch norm of the layer");
    p.drawText(QRectF(hx - 40, histBottom + 6 + tickMetrics.height(), histW + 80, labelMetrics.height()), Qt::AlignHCenter, axis);
    // key: CLS and registers
    p.setFont(tickFont);
    double kx = hx;
    const auto key = [&](const QColor& c, const QString& text) {
        p.setPen(QPen(c, 2.0));
        p.drawLine(QPointF(kx, histTop - captionH + 4), QPointF(kx, histTop - 4));
        p.setPen(ts.foreground);
        p.drawText(QRectF(kx + 5, histTop - captionH, 160, captionH - 2), Qt::AlignLeft | Qt::AlignVCenter, text);
        kx += 12 + tickMetrics.horizontalAdvance(text) + 10;
    };
    if (f.hasClassToken && P > 0)
        key(colors.cls, QStringLiteral("CLS"));
    if (f.registers > 0)
        key(colors.registers, QStringLiteral("registers"));
    if (P - (f.hasClassToken ? 1 : 0) - f.registers > 0)
        key(ts.neutral, QStringLiteral("distillation token"));
    key(colors.outlier, QStringLiteral("outliers"));
    p.end();
    return out;
}

} // namespace attnscope
