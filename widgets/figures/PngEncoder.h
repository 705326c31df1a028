#pragma once

#include <QByteArray>
#include <QImage>

namespace attnscope {

// A figure as PNG bytes, written for speed: 8-bit RGB (RGBA where a pixel is not opaque), each row filtered with
// whichever of None, Sub and Up leaves the smallest sum of absolute bytes, deflated at zlib's fastest level in
// run-length mode, one IDAT chunk, and `dpi` in pHYs. Plots are flat colour with straight edges, which those filters
// and run lengths catch: the files come out about as small as Qt's default writer makes them, several times sooner
// (docs/performance.md, "Whole process"). An empty QByteArray if the image is null or zlib fails.
QByteArray encodePng(const QImage& image, double dpi);

} // namespace attnscope
