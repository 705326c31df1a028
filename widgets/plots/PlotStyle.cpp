#include "plots/PlotStyle.h"

#include <qcustomplot.h>

namespace attnscope {

std::vector<QColor> PlotStyle::okabeIto()
{
    return { QColor(0x00, 0x72, 0xb2), // blue
        QColor(0xd5, 0x5e, 0x00), // vermillion
        QColor(0x00, 0x9e, 0x73), // bluish green
        QColor(0xcc, 0x79, 0xa7), // reddish purple
        QColor(0xe6, 0x9f, 0x00), // orange
        QColor(0x56, 0xb4, 0xe9), // sky blue
        QColor(0xf0, 0xe4, 0x42) }; // yellow
}

std::vector<QColor> PlotStyle::tableau10()
{
    return { QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0xe1, 0x57, 0x59), QColor(0x76, 0xb7, 0xb2),
        QColor(0x59, 0xa1, 0x4f), QColor(0xed, 0xc9, 0x48), QColor(0xb0, 0x7a, 0xa1), QColor(0xff, 0x9d, 0xa7),
        QColor(0x9c, 0x75, 0x5f), QColor(0xba, 0xb0, 0xac) };
}

QColor PlotStyle::color(int index) const
{
    if (palette.empty())
        return foreground;
    const int n = int(palette.size());
    return palette[size_t(((index % n) + n) % n)];
}

QFont PlotStyle::font(int pixelSize, bool bold) const
{
    QFont f(fontFamily);
    f.setPixelSize(pixelSize);
    f.setBold(bold);
    // Exports go through several paint devices; full hinting would snap glyphs differently on each.
    f.setHintingPreference(QFont::PreferNoHinting);
    return f;
}

void applyStyle(QCPAxis* axis, const PlotStyle& style)
{
    QPen base(style.foreground, style.axisWidth);
    base.setCapStyle(Qt::SquareCap);
    axis->setBasePen(base);
    axis->setTickPen(base);
    axis->setSubTickPen(base);
    axis->setTickLengthIn(0);
    axis->setTickLengthOut(4);
    axis->setSubTickLengthIn(0);
    axis->setSubTickLengthOut(2);
    axis->setTickLabelFont(style.font(style.tickFontPx));
    axis->setTickLabelColor(style.foreground);
    axis->setLabelFont(style.font(style.labelFontPx));
    axis->setLabelColor(style.foreground);
    axis->setTickLabelPadding(4);
    axis->setLabelPadding(6);
    axis->grid()->setPen(QPen(style.grid, style.gridWidth));
    axis->grid()->setZeroLinePen(Qt::NoPen);
    axis->grid()->setSubGridVisible(false);
}

void applyStyle(QCPAxisRect* rect, const PlotStyle& style)
{
    // The layers QCustomPlot gives its own default rect (axis rects created later land on the current layer,
    // "main", where their background would hide the grid and reference lines).
    rect->setLayer(QStringLiteral("background"));
    rect->setBackground(QBrush(style.background));
    for (QCPAxis* axis : rect->axes()) {
        axis->setLayer(QStringLiteral("axes"));
        axis->grid()->setLayer(QStringLiteral("grid"));
        applyStyle(axis, style);
    }
    // A closed box as most journals print it: ticks and labels only on the bottom and left.
    for (auto type : { QCPAxis::atTop, QCPAxis::atRight }) {
        if (QCPAxis* axis = rect->axis(type)) {
            axis->setVisible(true);
            axis->setTicks(false);
            axis->setTickLabels(false);
            axis->grid()->setVisible(false);
        }
    }
    for (auto type : { QCPAxis::atBottom, QCPAxis::atLeft }) {
        if (QCPAxis* axis = rect->axis(type))
            axis->grid()->setVisible(true);
    }
}

void applyStyle(QCPLegend* legend, const PlotStyle& style, bool inside)
{
    legend->setFont(style.font(style.legendFontPx));
    legend->setTextColor(style.foreground);
    legend->setIconSize(30, 12);
    legend->setIconTextPadding(6);
    legend->setRowSpacing(1);
    legend->setColumnSpacing(16);
    if (inside) {
        legend->setBrush(QColor(255, 255, 255, 230));
        legend->setBorderPen(QPen(style.grid, 1.0));
    } else {
        legend->setBrush(Qt::NoBrush);
        legend->setBorderPen(Qt::NoPen);
    }
    legend->setSelectableParts(QCPLegend::spNone);
}

void applyStyle(QCustomPlot* plot, const PlotStyle& style)
{
    plot->setBackground(QBrush(style.background));
    plot->setAntialiasedElements(QCP::aeAll);
    plot->setNotAntialiasedElements(QCP::aeNone);
    plot->setPlottingHint(QCP::phCacheLabels, false); // cached label pixmaps would be rasterised in SVG/PDF
    for (QCPAxisRect* rect : plot->axisRects())
        applyStyle(rect, style);
}

} // namespace attnscope
