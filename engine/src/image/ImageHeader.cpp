#include "image/ImageHeader.h"

#include <cctype>
#include <cstdio>
#include <cstring>

namespace attnscope {

namespace {

// Bounds-checked reads from the file's bytes: every accessor says whether the bytes were there.
class Bytes {
public:
    Bytes(const uint8_t* data, size_t size)
        : m_data(data)
        , m_size(size)
    {
    }
    size_t size() const { return m_size; }
    const uint8_t* data() const { return m_data; }
    bool has(size_t offset, size_t n) const { return offset <= m_size && n <= m_size - offset; }
    // `magic` is a string literal; its size (not strlen) counts, so magics may hold NUL bytes.
    template <size_t N>
    bool startsWith(const char (&magic)[N], size_t offset = 0) const
    {
        return has(offset, N - 1) && std::memcmp(m_data + offset, magic, N - 1) == 0;
    }
    uint8_t at(size_t i) const { return m_data[i]; }
    bool be16(size_t i, int64_t& v) const { return read(i, 2, false, v); }
    bool be32(size_t i, int64_t& v) const { return read(i, 4, false, v); }
    bool le16(size_t i, int64_t& v) const { return read(i, 2, true, v); }
    bool le24(size_t i, int64_t& v) const { return read(i, 3, true, v); }
    bool le32(size_t i, int64_t& v) const { return read(i, 4, true, v); }
    bool u16(size_t i, bool little, int64_t& v) const { return read(i, 2, little, v); }
    bool u32(size_t i, bool little, int64_t& v) const { return read(i, 4, little, v); }

private:
    bool read(size_t i, int n, bool little, int64_t& v) const
    {
        if (!has(i, size_t(n)))
            return false;
        uint64_t r = 0;
        for (int k = 0; k < n; ++k)
            r |= uint64_t(m_data[i + size_t(little ? k : n - 1 - k)]) << (8 * k);
        v = int64_t(r);
        return true;
    }
    const uint8_t* m_data;
    size_t m_size;
};

ImageHeader sized(const char* format, int64_t w, int64_t h) { return { format, w, h }; }
ImageHeader truncated(const char* format) { return { format, -1, -1 }; }

ImageHeader png(const Bytes& b)
{
    // Signature, then the IHDR chunk: length, "IHDR", width, height (big-endian).
    int64_t w, h;
    if (!b.startsWith("IHDR", 12) || !b.be32(16, w) || !b.be32(20, h))
        return truncated("PNG");
    ImageHeader header = sized("PNG", w, h);
    header.grey = b.has(25, 1) && (b.at(25) == 0 || b.at(25) == 4);
    return header;
}

ImageHeader jpeg(const Bytes& b)
{
    // Markers after SOI until a start-of-frame (SOF0..SOF15 except DHT C4, JPG C8, DAC CC): precision,
    // height, width; then on to the first start-of-scan, after which the end-of-image marker must follow (in
    // entropy-coded data a 0xFF byte is always followed by 0x00 or a restart marker, never by 0xD9).
    ImageHeader header = truncated("JPEG");
    size_t i = 2;
    while (b.has(i, 2)) {
        if (b.at(i) != 0xFF)
            return truncated("JPEG"); // not a marker where one must be
        const uint8_t marker = b.at(i + 1);
        if (marker == 0xFF) { // fill byte
            ++i;
            continue;
        }
        // FF 00 is a stuffed zero, not a marker: libjpeg discards it as garbage and scans on for the next FF, so
        // it reads the markers inside what this reader took for a segment's length (a frame of 20000x20000 there,
        // one of 8x8 after it: crash-jpeg-stuffed-zero-hides-frame). Refused like any other garbage.
        if (marker == 0x00)
            return truncated("JPEG");
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) {
            i += 2;
            continue;
        }
        if (marker == 0xD9) // end of image before any scan
            return truncated("JPEG");
        int64_t length;
        if (!b.be16(i + 2, length) || length < 2)
            return truncated("JPEG");
        if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) {
            int64_t h, w;
            if (!b.be16(i + 5, h) || !b.be16(i + 7, w))
                return truncated("JPEG");
            header = sized("JPEG", w, h);
        }
        if (marker == 0xDA) {
            if (!header.hasSize())
                return header;
            header.complete = false;
            for (size_t j = i + 2; b.has(j, 2); ++j)
                if (b.at(j) == 0xFF && b.at(j + 1) == 0xD9) {
                    header.complete = true;
                    break;
                }
            return header;
        }
        i += 2 + size_t(length);
    }
    return header; // the size if a frame header was read, but no scan: libjpeg will refuse it
}

ImageHeader bmp(const Bytes& b)
{
    int64_t dib, w, h;
    if (!b.le32(14, dib))
        return truncated("BMP");
    if (dib == 12) { // OS/2 BITMAPCOREHEADER: 16-bit sizes
        if (!b.le16(18, w) || !b.le16(20, h))
            return truncated("BMP");
        return sized("BMP", w, h);
    }
    if (!b.le32(18, w) || !b.le32(22, h))
        return truncated("BMP");
    const auto signed32 = [](int64_t v) { return v >= (int64_t(1) << 31) ? v - (int64_t(1) << 32) : v; };
    w = signed32(w);
    h = signed32(h);
    if (h < 0) // top-down rows
        h = -h;
    return sized("BMP", w < 0 ? 0 : w, h); // a negative width is invalid: report it as no size
}

ImageHeader webp(const Bytes& b)
{
    int64_t w, h;
    if (b.startsWith("VP8X", 12)) {
        if (!b.le24(24, w) || !b.le24(27, h))
            return truncated("WebP");
        return sized("WebP", w + 1, h + 1);
    }
    if (b.startsWith("VP8L", 12)) {
        int64_t bits;
        if (!b.has(20, 1) || b.at(20) != 0x2F || !b.le32(21, bits))
            return truncated("WebP");
        return sized("WebP", (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1);
    }
    if (b.startsWith("VP8 ", 12)) {
        // Chunk header (8 bytes) then a 3-byte frame tag, the start code 9D 01 2A, 14-bit width and height.
        if (!b.has(23, 3) || b.at(23) != 0x9D || b.at(24) != 0x01 || b.at(25) != 0x2A || !b.le16(26, w) || !b.le16(28, h))
            return truncated("WebP");
        return sized("WebP", w & 0x3FFF, h & 0x3FFF);
    }
    return truncated("WebP");
}

ImageHeader tiff(const Bytes& b)
{
    const bool little = b.at(0) == 'I';
    int64_t ifd, count;
    if (!b.u32(4, little, ifd) || !b.u16(size_t(ifd), little, count))
        return truncated("TIFF");
    int64_t w = -1, h = -1;
    for (int64_t e = 0; e < count; ++e) {
        const size_t at = size_t(ifd) + 2 + size_t(e) * 12;
        int64_t tag, type, n, value;
        if (!b.u16(at, little, tag) || !b.u16(at + 2, little, type) || !b.u32(at + 4, little, n))
            return truncated("TIFF");
        if (tag != 256 && tag != 257)
            continue;
        // libtiff keeps the first of duplicated tags (a later ImageWidth of 2 after one of 20000 made this reader
        // declare 2 while OpenCV allocated 20000 columns: fuzz corpus crash-tiff-duplicate-size-tags). Sizes other
        // than one SHORT or LONG (a LONG8's field is an offset, not the value) are refused rather than guessed.
        if ((tag == 256 ? w : h) >= 0)
            continue;
        if (n != 1 || (type != 3 && type != 4))
            return truncated("TIFF");
        if (!(type == 3 ? b.u16(at + 8, little, value) : b.u32(at + 8, little, value)))
            return truncated("TIFF");
        (tag == 256 ? w : h) = value;
    }
    if (w < 0 || h < 0)
        return truncated("TIFF");
    return sized("TIFF", w, h);
}

// Netpbm and PFM: the magic, then width and height as ASCII decimals separated by whitespace and comments.
ImageHeader ascii(const Bytes& b, const char* format)
{
    size_t i = 2;
    int64_t v[2] = { -1, -1 };
    for (auto& value : v) {
        while (b.has(i, 1) && (std::isspace(b.at(i)) || b.at(i) == '#')) {
            if (b.at(i) == '#') // a comment ends at CR as well as LF, as in OpenCV's reader: with LF only, a size
                                // after "#...\r" was skipped here and read by OpenCV (crash-pnm-comment-ends-at-cr)
                while (b.has(i, 1) && b.at(i) != '\n' && b.at(i) != '\r')
                    ++i;
            else
                ++i;
        }
        if (!b.has(i, 1) || !std::isdigit(b.at(i)))
            return truncated(format);
        value = 0;
        while (b.has(i, 1) && std::isdigit(b.at(i)) && value < (int64_t(1) << 40))
            value = value * 10 + (b.at(i++) - '0');
    }
    return sized(format, v[0], v[1]);
}

ImageHeader jpeg2000(const Bytes& b, bool codestream)
{
    int64_t w, h, x0, y0;
    if (codestream) { // SOC, then SIZ: Lsiz, Rsiz, Xsiz, Ysiz, XOsiz, YOsiz, XTsiz, YTsiz, XTOsiz, YTOsiz, Csiz
        if (!b.be32(8, w) || !b.be32(12, h) || !b.be32(16, x0) || !b.be32(20, y0))
            return truncated("JPEG 2000");
        ImageHeader header = sized("JPEG 2000", w > x0 ? w - x0 : 0, h > y0 ? h - y0 : 0);
        // OpenJPEG's per-tile and per-component allocations (ImageHeader::refused; found by fuzz_image:
        // crash-jpeg2000-15617-tiles, a 4x3604483 tile grid 15617 tiles wide, 84 MB of tile parameters for a
        // 62468x4 image). Without these fields OpenJPEG refuses the header itself.
        int64_t tw, th, tx0, ty0, components;
        if (b.be32(24, tw) && b.be32(28, th) && b.be32(32, tx0) && b.be32(36, ty0) && b.be16(40, components)) {
            constexpr int64_t kMaxTiles = 4096;
            const int64_t across = tw > 0 && w > tx0 ? (w - tx0 + tw - 1) / tw : 0;
            const int64_t down = th > 0 && h > ty0 ? (h - ty0 + th - 1) / th : 0;
            if (components > 4)
                header.refused = "JPEG 2000 image of " + std::to_string(components)
                    + " components (at most 4 are decoded); not decoded";
            else if (across > kMaxTiles || down > kMaxTiles || across * down > kMaxTiles)
                header.refused = "JPEG 2000 image of " + std::to_string(across) + "x" + std::to_string(down)
                    + " tiles (at most " + std::to_string(kMaxTiles) + " are decoded); not decoded";
        }
        return header;
    }
    // JP2: the size OpenJPEG allocates is the codestream's SIZ (it refuses an "ihdr" box that disagrees), so the
    // top-level boxes are walked, as OpenJPEG reads them, to the codestream box "jp2c". Searching the bytes for
    // "ihdr" instead found one inside any earlier box (an "xml " box) declaring 4x4 while the real header and the
    // codestream said 20000x20000 (crash-jp2-ihdr-inside-another-box).
    size_t i = 0;
    while (b.has(i, 8)) {
        int64_t length;
        b.be32(i, length);
        size_t header = 8;
        if (length == 1) { // extended length: 64 bits after the type
            int64_t high, low;
            if (!b.be32(i + 8, high) || !b.be32(i + 12, low) || high != 0)
                return truncated("JPEG 2000");
            length = low;
            header = 16;
        }
        if (b.startsWith("jp2c", i + 4)) {
            if (!b.has(i + header, 0))
                return truncated("JPEG 2000");
            const Bytes codestream(b.data() + i + header, b.size() - i - header);
            if (!codestream.startsWith("\xFF\x4F\xFF\x51"))
                return truncated("JPEG 2000");
            return jpeg2000(codestream, true);
        }
        if (length == 0 || size_t(length) < header) // "to the end of the file" is only valid for jp2c
            return truncated("JPEG 2000");
        i += size_t(length);
    }
    return truncated("JPEG 2000");
}

ImageHeader radiance(const Bytes& b)
{
    // Header lines up to an empty line, then the resolution line "-Y <h> +X <w>" (or another orientation).
    // The lines are cut as OpenCV's reader (rgbe.cpp) cuts them, with fgets into 128 bytes: pieces of at most 127
    // bytes, each ending after a newline; the header ends at the first piece after the signature's that starts
    // with a newline, and the size is read from the next piece. A search for "\n\n" missed the end of a header
    // after a line of exactly 127 bytes (the newline alone is a piece for OpenCV), and read a later 1x1 while
    // OpenCV read 20000x20000 (fuzz corpus crash-radiance-127-byte-header-line).
    size_t i = 0;
    const auto piece = [&b, &i](std::string* text) {
        if (!b.has(i, 1))
            return false;
        const size_t start = i;
        while (b.has(i, 1) && i - start < 127)
            if (b.at(i++) == '\n')
                break;
        if (text)
            text->assign(reinterpret_cast<const char*>(b.data() + start), i - start);
        return true;
    };
    if (!piece(nullptr))
        return truncated("Radiance HDR");
    for (;;) {
        if (!b.has(i, 1))
            return truncated("Radiance HDR");
        const bool blank = b.at(i) == '\n';
        piece(nullptr);
        if (blank)
            break;
    }
    std::string line;
    if (!piece(&line))
        return truncated("Radiance HDR");
    char a1[3] = {}, a2[3] = {};
    long long n1 = -1, n2 = -1;
    if (std::sscanf(line.c_str(), "%2s %lld %2s %lld", a1, &n1, a2, &n2) != 4)
        return truncated("Radiance HDR");
    if (n1 < 0 || n2 < 0) // "-Y -5 +X 3": a corrupt size, not a size (ImageHeader: -1 or >= 0)
        return truncated("Radiance HDR");
    const bool yFirst = a1[1] == 'Y';
    return sized("Radiance HDR", yFirst ? n2 : n1, yFirst ? n1 : n2);
}

} // namespace

ImageHeader readImageHeader(const uint8_t* data, size_t size)
{
    const Bytes b(data, size);
    if (b.startsWith("\x89PNG\r\n\x1a\n"))
        return png(b);
    if (b.startsWith("\xFF\xD8\xFF"))
        return jpeg(b);
    if (b.startsWith("GIF87a") || b.startsWith("GIF89a")) {
        int64_t w, h;
        return b.le16(6, w) && b.le16(8, h) ? sized("GIF", w, h) : truncated("GIF");
    }
    if (b.startsWith("BM"))
        return bmp(b);
    if (b.startsWith("RIFF") && b.startsWith("WEBP", 8))
        return webp(b);
    if (b.startsWith("II*\0") || b.startsWith("MM\0*"))
        return tiff(b);
    if (b.has(0, 2) && b.at(0) == 'P' && b.at(1) >= '1' && b.at(1) <= '6')
        return ascii(b, "PNM");
    if (b.startsWith("Pf") || b.startsWith("PF"))
        return ascii(b, "PFM");
    if (b.startsWith("\x59\xA6\x6A\x95")) {
        int64_t w, h;
        return b.be32(4, w) && b.be32(8, h) ? sized("Sun raster", w, h) : truncated("Sun raster");
    }
    if (b.startsWith("\xFF\x4F\xFF\x51"))
        return jpeg2000(b, true);
    if (b.startsWith("\x00\x00\x00\x0CjP  \r\n\x87\n"))
        return jpeg2000(b, false);
    if (b.startsWith("#?RADIANCE") || b.startsWith("#?RGBE"))
        return radiance(b);
    return {};
}

} // namespace attnscope
