#include "attnscope/Image.h"

#include "image/ImageHeader.h"
#include "io/AtomicFile.h"
#include "io/LoadError.h"

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <mutex>
#include <iterator>

namespace attnscope {

namespace {

// Composites an alpha channel onto white (docs/design.md section 4, "Preprocessing"); `m` is 8-bit BGRA or grey+alpha.
cv::Mat compositeOnWhite(const cv::Mat& m)
{
    std::vector<cv::Mat> planes;
    cv::split(m, planes);
    cv::Mat alpha;
    planes.back().convertTo(alpha, CV_32F, 1.0 / 255.0);
    planes.pop_back();
    for (auto& p : planes) {
        cv::Mat f;
        p.convertTo(f, CV_32F);
        f = f.mul(alpha) + 255.0f * (1.0f - alpha);
        f.convertTo(p, CV_8U); // rounds and saturates
    }
    cv::Mat out;
    cv::merge(planes, out);
    return out;
}

// Holds what the decoders write to stderr while it lives (libpng's "libpng error: ...", OpenCV's
// "imdecode_(...): can't read data ..."), so that a bad image gives the one line decodeImage returns, with the
// decoder's own first complaint in it, and no extra lines on the CLI's stderr. fd 2 is process-wide: captures
// hold stderrLock(), which every other writer to stderr takes too while images may be decoding on another thread
// (the CLI's progress lines and notes), so that their lines are neither lost in a capture nor taken for the
// decoder's complaint.
class StderrCapture {
public:
    explicit StderrCapture(std::string& said)
        : m_lock(stderrLock())
        , m_said(said)
    {
        std::fflush(stderr);
        m_file = std::tmpfile();
        m_saved = m_file ? ::dup(2) : -1;
        if (m_saved >= 0 && ::dup2(::fileno(m_file), 2) < 0) {
            ::close(m_saved);
            m_saved = -1;
        }
    }
    ~StderrCapture()
    {
        std::fflush(stderr);
        if (m_saved >= 0) {
            ::dup2(m_saved, 2);
            ::close(m_saved);
            char buf[512] = {};
            std::rewind(m_file);
            const size_t n = std::fread(buf, 1, sizeof buf - 1, m_file);
            std::string text(buf, n);
            text = text.substr(0, text.find('\n')); // the first complaint, one line
            m_said = text;
        }
        if (m_file)
            std::fclose(m_file);
    }
    StderrCapture(const StderrCapture&) = delete;
    StderrCapture& operator=(const StderrCapture&) = delete;

private:
    std::lock_guard<std::mutex> m_lock;
    std::string& m_said;
    std::FILE* m_file = nullptr;
    int m_saved = -1;
};

} // namespace

std::mutex& stderrLock()
{
    static std::mutex m;
    return m;
}

Result<Image> decodeImage(const std::string& path, const DecodeOptions& options)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Error { path + ": cannot open image" };
    std::vector<uchar> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.empty())
        return Error { path + ": empty file" };

    // The declared size is checked before OpenCV sees the file: its own limit cannot be lowered at run time
    // (ImageHeader.h), and a decoder allocates the whole image before reading its first row.
    const ImageHeader header = readImageHeader(bytes.data(), bytes.size());
    if (!header.recognised())
        return Error { path + ": not an image (no PNG, JPEG, BMP, TIFF, WebP, PNM, JPEG 2000 or HDR signature)" };
    if (header.format == "GIF")
        return Error { path + ": GIF images are not supported (this OpenCV has no GIF decoder); convert it to PNG" };
    if (!header.hasSize())
        return Error { path + ": truncated or corrupt " + header.format + " header (no image size)" };
    const std::string declared = std::to_string(header.width) + "x" + std::to_string(header.height);
    if (header.width == 0 || header.height == 0)
        return Error { path + ": " + header.format + " image declares zero size (" + declared + ")" };
    if (header.width > options.maxPixels / header.height)
        return Error { path + ": " + header.format + " image declares " + declared + " pixels, more than the budget of "
                       + (options.maxPixels >= 1000000 ? std::to_string(options.maxPixels / 1000000) + " megapixels"
                                                       : std::to_string(options.maxPixels) + " pixels")
                       + "; not decoded" };
    if (!header.refused.empty()) // a decoder that would allocate out of proportion to the size (ImageHeader.h)
        return Error { path + ": " + header.refused };
    if (!header.complete)
        return Error { path + ": truncated JPEG (the data ends before the end-of-image marker)" };

    const bool jpeg = header.format == "JPEG";
    cv::Mat m;
    std::string said;
    try {
        // JPEGs are decoded with EXIF orientation applied (and CMYK converted); other formats keep their alpha
        // channel (IMREAD_UNCHANGED, which OpenCV decodes without applying orientation).
        StderrCapture capture(said);
        m = cv::imdecode(bytes, jpeg ? (cv::IMREAD_ANYCOLOR | cv::IMREAD_ANYDEPTH) : cv::IMREAD_UNCHANGED);
    } catch (const cv::Exception& e) {
        return Error { path + ": cannot decode " + header.format + " image (" + e.err + ")" };
    }
    if (m.empty() || m.cols <= 0 || m.rows <= 0)
        return Error { path + ": corrupt or truncated " + header.format + " image (" + declared + " declared; "
                       + (said.empty() ? "OpenCV could not decode it" : said) + ")" };
    if (int64_t(m.cols) * m.rows > options.maxPixels) // a header this reader misread: still never pass on more
        return Error { path + ": image of " + std::to_string(m.cols) + "x" + std::to_string(m.rows) + " pixels exceeds the budget" };
    if (m.depth() == CV_16U)
        m.convertTo(m, CV_8U, 1.0 / 257.0);
    else if (m.depth() == CV_32F || m.depth() == CV_64F)
        m.convertTo(m, CV_8U, 255.0);
    else if (m.depth() != CV_8U)
        m.convertTo(m, CV_8U);
    if (m.channels() == 4 || m.channels() == 2)
        m = compositeOnWhite(m);
    if (header.grey && m.channels() == 3) // grey + alpha came back as BGRA: its three channels are equal
        cv::cvtColor(m, m, cv::COLOR_BGR2GRAY);
    Image img;
    if (m.channels() == 1) {
        img.channels = 1;
    } else if (m.channels() == 3) {
        cv::cvtColor(m, m, cv::COLOR_BGR2RGB);
        img.channels = 3;
    } else {
        return Error { path + ": images with " + std::to_string(m.channels()) + " channels are not supported" };
    }
    if (!m.isContinuous())
        m = m.clone();
    img.width = m.cols;
    img.height = m.rows;
    img.pixels.assign(m.data, m.data + size_t(m.total()) * size_t(img.channels));
    return img;
}

std::string imageFormatOf(const std::string& path)
{
    // Every signature readImageHeader knows lies in the first 16 bytes (JPEG 2000's box signature is the longest: 12).
    std::ifstream in(path, std::ios::binary);
    char bytes[64] = {};
    in.read(bytes, sizeof bytes);
    if (in.gcount() <= 0)
        return {};
    return readImageHeader(reinterpret_cast<const uint8_t*>(bytes), size_t(in.gcount())).format;
}

Status writeImage(const std::string& path, const Image& image)
{
    if (image.empty())
        return Error { path + ": nothing to write" };
    cv::Mat m(image.height, image.width, image.channels == 1 ? CV_8UC1 : CV_8UC3, const_cast<uint8_t*>(image.pixels.data()));
    cv::Mat bgr;
    if (image.channels == 3)
        cv::cvtColor(m, bgr, cv::COLOR_RGB2BGR);
    else
        bgr = m;
    const auto dot = path.rfind('.');
    const std::string ext = dot == std::string::npos ? ".png" : path.substr(dot);
    std::vector<uchar> encoded;
    try {
        if (!cv::imencode(ext, bgr, encoded))
            return Error { path + ": cannot encode image as " + ext };
        writeFileAtomically(path, std::string(encoded.begin(), encoded.end()));
    } catch (const cv::Exception& e) {
        return Error { path + ": cannot encode image (" + e.err + ")" };
    } catch (const LoadError& e) {
        return Error { e.what() };
    }
    return Done {};
}

} // namespace attnscope
