#include "attnscope/Image.h"

#include "AtomicFile.h"
#include "LoadError.h"

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace attnscope {

namespace {

// Composites an alpha channel onto white (DESIGN.md, Preprocessing); `m` is 8-bit BGRA or grey+alpha.
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

} // namespace

Result<Image> decodeImage(const std::string& path, const DecodeOptions& options)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Error { path + ": cannot open image" };
    std::vector<uchar> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.empty())
        return Error { path + ": empty file" };
    // OpenCV's decoders refuse images whose declared size exceeds this before allocating their pixels.
    static const bool limitSet = [&] {
        const std::string v = std::to_string(options.maxPixels);
        return setenv("OPENCV_IO_MAX_IMAGE_PIXELS", v.c_str(), 0) == 0;
    }();
    (void)limitSet;

    const bool jpeg = bytes.size() > 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF;
    cv::Mat m;
    try {
        // JPEGs are decoded with EXIF orientation applied (and CMYK converted); other formats keep their alpha
        // channel (IMREAD_UNCHANGED, which OpenCV decodes without applying orientation).
        m = cv::imdecode(bytes, jpeg ? (cv::IMREAD_ANYCOLOR | cv::IMREAD_ANYDEPTH) : cv::IMREAD_UNCHANGED);
    } catch (const cv::Exception& e) {
        return Error { path + ": cannot decode image (" + e.err + ")" };
    }
    if (m.empty())
        return Error { path + ": not an image OpenCV can decode (or truncated)" };
    if (m.cols <= 0 || m.rows <= 0)
        return Error { path + ": image has zero size" };
    if (int64_t(m.cols) * m.rows > options.maxPixels)
        return Error { path + ": image of " + std::to_string(m.cols) + "x" + std::to_string(m.rows) + " pixels exceeds the limit" };
    if (m.depth() == CV_16U)
        m.convertTo(m, CV_8U, 1.0 / 257.0);
    else if (m.depth() == CV_32F || m.depth() == CV_64F)
        m.convertTo(m, CV_8U, 255.0);
    else if (m.depth() != CV_8U)
        m.convertTo(m, CV_8U);
    if (m.channels() == 4 || m.channels() == 2)
        m = compositeOnWhite(m);
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

Result<bool> writeImage(const std::string& path, const Image& image)
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
    return true;
}

} // namespace attnscope
