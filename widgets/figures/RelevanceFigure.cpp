#include "figures/RelevanceFigure.h"

#include "plots/AttentionOverlay.h"
#include "plots/PlotElements.h"

#include <QPainter>

namespace attnscope {

QImage renderRelevanceFigure(const RelevanceFigure& f, double scale, const PlotStyle& ts)
{
    const Relevance& r = f.relevance;
    const QFont titleFont = ts.font(ts.titleFontPx, true), subtitleFont = ts.font(ts.subtitleFontPx), labelFont = ts.font(ts.labelFontPx);
    const QImage shown = toQImage(f.shown);
    const double tile = 200, gap = 16, margin = 16;
    const double tileH = shown.isNull() || shown.width() == 0 ? tile : std::round(tile * shown.height() / double(shown.width()));
    const QString title = QStringLiteral("Relevance for class %1%2 (p = %3)")
                              .arg(r.targetClass)
                              .arg(f.label.empty() ? QString() : QStringLiteral(" \u201c%1\u201d").arg(fromStd(f.label)))
                              .arg(r.probability, 0, 'f', 3);
    const QString subtitle = joinProvenance({ fromStd(f.model), fromStd(f.image),
        QStringLiteral("GAE (Chefer et al. 2021), Grad-CAM on X_%1").arg(r.gradCamLayer), QStringLiteral("each map 0 to its maximum") });
    const double titleHeight = QFontMetricsF(titleFont).height() + QFontMetricsF(subtitleFont).height() + 12;
    const double labelHeight = QFontMetricsF(labelFont).height() + 4;
    const double width = std::max(2 * margin + 3 * tile + 2 * gap,
        2 * margin + std::max(QFontMetricsF(titleFont).horizontalAdvance(title), QFontMetricsF(subtitleFont).horizontalAdvance(subtitle)));
    const double barTop = margin + titleHeight + labelHeight + tileH + 14, barHeight = 58;
    const double height = barTop + barHeight + margin;

    QImage image(QSize(int(std::ceil(width * scale)), int(std::ceil(height * scale))), QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(scale);
    image.fill(ts.background);
    QPainter p(&image);
    p.setRenderHint(QPainter::Antialiasing);
    p.setRenderHint(QPainter::SmoothPixmapTransform);
    p.setPen(ts.foreground);
    p.setFont(titleFont);
    p.drawText(QRectF(0, margin, width, QFontMetricsF(titleFont).height()), Qt::AlignHCenter, title);
    p.setFont(subtitleFont);
    p.setPen(ts.mutedText);
    p.drawText(QRectF(0, margin + QFontMetricsF(titleFont).height() + 4, width, QFontMetricsF(subtitleFont).height()), Qt::AlignHCenter, subtitle);

    const double left = (width - (3 * tile + 2 * gap)) / 2, top = margin + titleHeight + labelHeight;
    const AttentionMap gae { r.gae, 0.0 }, cam { r.gradCam, 0.0 };
    const QImage panels[3] = { shown, renderAttentionOverlay(shown, gae, r.gridHeight, r.gridWidth, 0.65, Colormap::Viridis, std::nullopt),
                               renderAttentionOverlay(shown, cam, r.gridHeight, r.gridWidth, 0.65, Colormap::Viridis, std::nullopt) };
    const QString captions[3] = { QStringLiteral("input"), QStringLiteral("GAE (max %1)").arg(mapMaximum(gae), 0, 'g', 3),
                                  QStringLiteral("Grad-CAM (max %1)").arg(mapMaximum(cam), 0, 'g', 3) };
    p.setFont(labelFont);
    p.setPen(ts.foreground);
    for (int i = 0; i < 3; ++i) {
        const QRectF area(left + i * (tile + gap), top, tile, tileH);
        p.drawText(QRectF(area.left(), top - labelHeight, tile, labelHeight), Qt::AlignHCenter | Qt::AlignBottom, captions[i]);
        if (!panels[i].isNull())
            p.drawImage(area, panels[i]);
    }
    paintColorBar(p, QRectF(left + tile + gap, barTop, 2 * tile + gap, barHeight), Colormap::Viridis, ValueRange { 0.0, 1.0 },
        Qt::Horizontal, QStringLiteral("relevance, share of each map's maximum"), ts);
    p.end();
    return image;
}

} // namespace attnscope
