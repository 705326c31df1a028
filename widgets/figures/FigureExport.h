#pragma once

// Figure files, the format chosen by the suffix (.png, .svg, .pdf). Every file is written to a temporary name in
// the target folder and renamed over the final name only once complete (QSaveFile), so an interrupted or failed
// export never leaves a partial file. No dialogs; safe without a screen (QT_QPA_PLATFORM=offscreen), but a
// QApplication must exist and the calls belong to the GUI thread.

#include <QImage>
#include <QString>
#include <attnscope/Result.h>

class QCustomPlot;

namespace attnscope {

// `plot` laid out at widthPx x heightPx logical pixels: .png rendered at twice that (192 dpi), .svg and .pdf as
// vector graphics of that size (PDF page: one logical pixel = one point). An error names the file.
Status exportPlot(QCustomPlot* plot, const QString& path, int widthPx, int heightPx);

// A rendered figure (e.g. renderAttentionGrid): .png as it is, .svg/.pdf with the image embedded at its logical
// size (size / devicePixelRatio).
Status exportImage(const QImage& image, const QString& path);

// The title and subtitle of a plot made by a builder ("" when there is none), joined by " — "; used as the
// title of SVG and PDF files.
QString plotTitle(QCustomPlot* plot);

} // namespace attnscope
