#pragma once

// Figure files, the format chosen by the suffix (.png, .svg, .pdf). Every file is written to a temporary name in
// the target folder and renamed over the final name only once complete (QSaveFile), so an interrupted or failed
// export never leaves a partial file. No dialogs; safe without a screen (QT_QPA_PLATFORM=offscreen), but a
// QApplication must exist and the calls belong to the GUI thread.

#include <QImage>
#include <QString>

class QCustomPlot;

namespace attnscope {

// `plot` laid out at widthPx x heightPx logical pixels: .png rendered at twice that (192 dpi), .svg and .pdf as
// vector graphics of that size (PDF page: one logical pixel = one point). Returns false with a message naming the
// file in *error (when given).
bool exportPlot(QCustomPlot* plot, const QString& path, int widthPx, int heightPx, QString* error = nullptr);

// A rendered figure (e.g. renderAttentionGrid): .png as it is, .svg/.pdf with the image embedded at its logical
// size (size / devicePixelRatio).
bool exportImage(const QImage& image, const QString& path, QString* error = nullptr);

// The title and subtitle of a plot made by a builder ("" when there is none), joined by " — "; used as the
// title of SVG and PDF files.
QString plotTitle(QCustomPlot* plot);

} // namespace attnscope
