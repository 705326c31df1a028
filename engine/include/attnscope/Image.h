#pragma once

#include "attnscope/Result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope {

// 8-bit pixels, row-major, interleaved; channels 1 (grey) or 3 (RGB, in that order).
struct Image {
    int width = 0;
    int height = 0;
    int channels = 0;
    std::vector<uint8_t> pixels; // [height, width, channels]

    bool empty() const { return pixels.empty(); }
};

struct DecodeOptions {
    // Images whose declared size exceeds this many pixels are refused before their pixels are decoded.
    int64_t maxPixels = int64_t(16384) * 16384;
};

// Decodes any image OpenCV reads: 8/16-bit, grey, alpha (composited on white), CMYK JPEG, EXIF-rotated.
// Returns RGB (3 channels) or grey (1 channel) as stored; conversion to the model's channel count happens in
// preprocessing.
Result<Image> decodeImage(const std::string& path, const DecodeOptions& options = {});

// Writes an 8-bit image (PNG/JPEG by suffix), via a temporary file and rename.
Result<bool> writeImage(const std::string& path, const Image& image);

} // namespace attnscope
