#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace attnscope {

// What an image file's first bytes declare, read without decoding any pixel: the format and the size.
// decodeImage checks the size against the pixel budget before OpenCV allocates anything (OpenCV 4.6 has no
// public header-only API, and its own limit, OPENCV_IO_MAX_IMAGE_PIXELS, is read once when the library loads
// and defaults to 2^30 pixels, so it cannot be lowered from here).
struct ImageHeader {
    std::string format;  // "PNG", "JPEG", "GIF", "BMP", "TIFF", "WebP", "PNM", "PFM", "Sun raster", "JPEG 2000",
                         // "Radiance HDR"; empty when the bytes carry no signature of a format OpenCV reads
    int64_t width = -1;  // -1: the signature is there but the header ends before the size (truncated)
    int64_t height = -1;
    // False for a JPEG whose bytes end before its end-of-image marker: libjpeg decodes such a file with a warning,
    // filling the missing rows with grey, which would be a silently wrong image.
    bool complete = true;
    // A PNG stored as grey (colour types 0 and 4): OpenCV returns grey + alpha as BGRA, decodeImage makes it grey again.
    bool grey = false;
    // Non-empty (JPEG 2000 only): why the decoder must not see the file although its size fits the budget.
    // OpenJPEG allocates its structures for every tile and component while reading the main header, before any
    // pixel: a 3 KB codestream of 2000 one-pixel tiles and 1000 components took 2.2 GB. More than 4 components
    // (OpenCV decodes 1 to 4) or more than 4096 tiles are refused.
    std::string refused;

    bool recognised() const { return !format.empty(); }
    bool hasSize() const { return width >= 0 && height >= 0; }
};

// Reads the format and declared size from the start of a file's bytes. Never reads past `size`.
ImageHeader readImageHeader(const uint8_t* bytes, size_t size);

} // namespace attnscope
