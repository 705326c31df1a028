#pragma once

// Figure defaults shared by every plot builder, chosen for a paper: one sans-serif family, sizes in logical
// pixels (so PNG, SVG and PDF exports of the same plot lay out identically, whatever the device resolution),
// a colour-blind-safe categorical palette, white background, light grey grid.

#include <QColor>
#include <QFont>
#include <QString>
#include <vector>

class QCustomPlot;
class QCPAxis;
class QCPAxisRect;
class QCPLegend;

namespace attnscope {

enum class LegendPlacement {
    Below, // a row under the axes, centred: never covers data (the default)
    Right, // a column right of the axes
    InsideTopLeft,
    InsideTopRight,
    InsideBottomLeft,
    InsideBottomRight,
};

struct PlotStyle {
    QString fontFamily = QStringLiteral("DejaVu Sans");
    // Sizes in logical pixels: a figure exported at 800 x 500 reads like a 8 x 5 in figure at 100 dpi, i.e.
    // 12 px is ~9 pt once the figure is scaled to a 3.3 in column.
    int tickFontPx = 12;
    int labelFontPx = 13;
    int legendFontPx = 12;
    int titleFontPx = 15;
    int subtitleFontPx = 11;

    double lineWidth = 2.0;
    double axisWidth = 1.0;
    double gridWidth = 1.0;
    double markerSize = 6.0;
    double bandAlpha = 0.15; // fill opacity of 95% confidence bands

    QColor background = Qt::white;
    QColor foreground = QColor(0x22, 0x22, 0x22); // axes, ticks, text
    QColor mutedText = QColor(0x55, 0x55, 0x55); // subtitles, panel notes
    QColor grid = QColor(0xe3, 0xe3, 0xe3);
    QColor neutral = QColor(0x60, 0x60, 0x60); // legend keys for line styles, reference lines

    // Okabe & Ito (2008), "Color Universal Design", without black (used for text) and with yellow last (weak
    // on white). Wong, Nature Methods 8:441 (2011) recommends it for figures.
    std::vector<QColor> palette = okabeIto();
    LegendPlacement legendPlacement = LegendPlacement::Below;

    QColor color(int index) const; // palette[index mod size]
    QFont font(int pixelSize, bool bold = false) const;

    static std::vector<QColor> okabeIto();
    static std::vector<QColor> tableau10(); // Tableau 10 (2016 revision): for more than 7 categories
};

// Background, antialiasing and the look of every axis rect already in the plot.
void applyStyle(QCustomPlot* plot, const PlotStyle& style);
// One axis rect: fonts, pens, grid, ticks pointing out, a closed box (top/right axes without labels).
void applyStyle(QCPAxisRect* rect, const PlotStyle& style);
void applyStyle(QCPAxis* axis, const PlotStyle& style);
void applyStyle(QCPLegend* legend, const PlotStyle& style, bool inside);

} // namespace attnscope
