#include "figures/PngEncoder.h"

#include <zlib.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace attnscope {

namespace {

    void put32(std::vector<uint8_t>& out, uint32_t v)
    {
        for (int shift = 24; shift >= 0; shift -= 8)
            out.push_back(uint8_t(v >> shift));
    }

    void chunk(QByteArray& png, const char type[4], const std::vector<uint8_t>& data)
    {
        std::vector<uint8_t> head;
        put32(head, uint32_t(data.size()));
        head.insert(head.end(), type, type + 4);
        png.append(reinterpret_cast<const char*>(head.data()), int(head.size()));
        png.append(reinterpret_cast<const char*>(data.data()), int(data.size()));
        uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(type), 4);
        if (!data.empty()) // zlib's crc32 with a null buffer returns the initial value, not the running one
            crc = crc32(crc, data.data(), uInt(data.size()));
        std::vector<uint8_t> tail;
        put32(tail, uint32_t(crc));
        png.append(reinterpret_cast<const char*>(tail.data()), int(tail.size()));
    }

    // Sum of the filtered bytes read as signed: libpng's heuristic for choosing a row's filter.
    uint64_t cost(const uint8_t* row, size_t n)
    {
        uint64_t s = 0;
        for (size_t i = 0; i < n; ++i)
            s += uint64_t(std::abs(int(int8_t(row[i]))));
        return s;
    }

} // namespace

QByteArray encodePng(const QImage& source, double dpi)
{
    if (source.isNull())
        return {};
    QImage image = source.convertToFormat(QImage::Format_RGBA8888);
    bool opaque = true;
    for (int y = 0; y < image.height() && opaque; ++y) {
        const uint8_t* p = image.constScanLine(y);
        for (int x = 0; x < image.width(); ++x)
            if (p[4 * x + 3] != 255) {
                opaque = false;
                break;
            }
    }
    if (opaque)
        image = image.convertToFormat(QImage::Format_RGB888);
    const size_t channels = opaque ? 3 : 4, width = size_t(image.width()), height = size_t(image.height());
    const size_t rowBytes = width * channels;

    // Each row: a filter byte, then the row filtered by the cheapest of None (0), Sub (1) and Up (2).
    std::vector<uint8_t> filtered;
    filtered.reserve((rowBytes + 1) * height);
    std::array<std::vector<uint8_t>, 3> candidate;
    for (auto& c : candidate)
        c.resize(rowBytes);
    const std::vector<uint8_t> zeros(rowBytes, 0);
    for (size_t y = 0; y < height; ++y) {
        const uint8_t* row = image.constScanLine(int(y));
        const uint8_t* above = y ? image.constScanLine(int(y - 1)) : zeros.data();
        std::memcpy(candidate[0].data(), row, rowBytes);
        for (size_t i = 0; i < rowBytes; ++i) {
            candidate[1][i] = uint8_t(row[i] - (i >= channels ? row[i - channels] : 0));
            candidate[2][i] = uint8_t(row[i] - above[i]);
        }
        size_t best = 0;
        uint64_t bestCost = cost(candidate[0].data(), rowBytes);
        for (size_t f = 1; f < 3; ++f)
            if (const uint64_t c = cost(candidate[f].data(), rowBytes); c < bestCost) {
                best = f;
                bestCost = c;
            }
        filtered.push_back(uint8_t(best));
        filtered.insert(filtered.end(), candidate[best].begin(), candidate[best].end());
    }

    z_stream z {};
    if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return {};
    std::vector<uint8_t> idat(deflateBound(&z, uLong(filtered.size())));
    z.next_in = filtered.data();
    z.avail_in = uInt(filtered.size());
    z.next_out = idat.data();
    z.avail_out = uInt(idat.size());
    const int status = deflate(&z, Z_FINISH);
    idat.resize(idat.size() - z.avail_out);
    deflateEnd(&z);
    if (status != Z_STREAM_END)
        return {};

    QByteArray png("\x89PNG\r\n\x1a\n", 8);
    std::vector<uint8_t> header;
    put32(header, uint32_t(width));
    put32(header, uint32_t(height));
    header.insert(header.end(), { 8, uint8_t(opaque ? 2 : 6), 0, 0, 0 }); // 8 bits, RGB or RGBA, deflate, adaptive, no interlace
    chunk(png, "IHDR", header);
    std::vector<uint8_t> phys;
    const uint32_t perMetre = uint32_t(std::lround(dpi / 0.0254));
    put32(phys, perMetre);
    put32(phys, perMetre);
    phys.push_back(1); // unit: the metre
    chunk(png, "pHYs", phys);
    chunk(png, "IDAT", idat);
    chunk(png, "IEND", {});
    return png;
}

} // namespace attnscope
