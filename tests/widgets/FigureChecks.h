#pragma once

// What every exported figure must satisfy, whatever it shows.

#include <QImage>
#include <QSize>
#include <QString>

namespace attnscope::testing {

// A PNG that decodes, has `expected` pixels, more than `minColours` distinct colours and more than 2% of its
// pixels differing from the background (the top-left pixel). Returns "" or what failed.
QString checkPng(const QString& path, QSize expected, int minColours = 20);
QString checkSvg(const QString& path); // parses (QSvgRenderer::isValid) and has a non-empty size
QString checkPdf(const QString& path); // starts with %PDF, ends with %%EOF, larger than 1 KiB
int distinctColours(const QImage& image);
double nonBackgroundShare(const QImage& image); // share of pixels unlike the top-left one

// Where figures are also written for a person to look at: $ATTNSCOPE_FIGURE_DIR, or "" when unset.
QString figureDir();

} // namespace attnscope::testing
