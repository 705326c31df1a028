#pragma once

#include "attnscope/Result.h"

#include <cstdint>
#include <mutex>
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

// The pixel budget of decoding: 100 megapixels (e.g. 10000 x 10000), enough for any photograph a ViT is shown
// (they see 224 x 224 to 518 x 518) and at most ~800 MB while decoding (16-bit RGBA). The size an image declares
// in its header is checked against it before a pixel is decoded, so a small file declaring 30000 x 30000 is
// refused without allocating its 2.7 GB.
inline constexpr int64_t kMaxImagePixels = 100'000'000;

struct DecodeOptions {
    // Images whose declared width x height exceeds this are refused before their pixels are decoded.
    int64_t maxPixels = kMaxImagePixels;
};

// Decodes PNG (also APNG: its first frame), JPEG (CMYK converted, EXIF orientation applied), BMP, TIFF, WebP,
// PNM/PFM, Sun raster, JPEG 2000 and Radiance HDR, recognised by content (not by suffix); 8/16-bit, grey,
// alpha (composited on white). GIF is refused (OpenCV 4.6 has no GIF decoder). Returns RGB (3 channels) or
// grey (1 channel) as stored; conversion to the model's channel count happens in preprocessing. Errors are one
// line naming the file: empty, not an image, truncated header, zero size, over the pixel budget, corrupt data.
Result<Image> decodeImage(const std::string& path, const DecodeOptions& options = {});
// decodeImage lends file descriptor 2 to the decoders for the milliseconds of a decode, to catch their complaint.
// Whoever writes to stderr while images may be decoding on another thread holds this lock meanwhile.
std::mutex& stderrLock();

// The image format a file's first bytes declare ("PNG", "JPEG", "GIF", ...), by content and without decoding; ""
// when they carry no image signature or the file cannot be read. For telling images from other files (a photo
// without a suffix), not a promise that decodeImage succeeds (GIF is recognised and refused).
std::string imageFormatOf(const std::string& path);

// Writes an 8-bit image (PNG/JPEG by suffix), via a temporary file and rename.
Status writeImage(const std::string& path, const Image& image);

} // namespace attnscope
