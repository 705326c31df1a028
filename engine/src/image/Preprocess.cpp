#include "image/Preprocess.h"

#include "image/PilResample.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace attnscope {

namespace {

at::Tensor toChannels(const Image& image, int channels)
{
    // [H, W, c] uint8 -> [1, channels, H, W] float in 0..255
    auto t = at::from_blob(const_cast<uint8_t*>(image.pixels.data()), { image.height, image.width, image.channels }, at::kByte)
                 .permute({ 2, 0, 1 })
                 .to(at::kFloat)
                 .unsqueeze(0);
    if (image.channels == channels)
        return t.contiguous();
    if (channels == 3) // grey shown to an RGB model: replicate
        return t.expand({ 1, 3, image.height, image.width }).contiguous();
    // RGB to a grey model: PIL's "L" conversion, L = (299 R + 587 G + 114 B) / 1000, rounded to 8 bits
    auto l = (t.select(1, 0) * 0.299 + t.select(1, 1) * 0.587 + t.select(1, 2) * 0.114).round();
    return l.unsqueeze(1).contiguous();
}

// x: [1, C, H, W] of whole numbers 0..255 (an 8-bit image). Resized as PIL resizes an 8-bit image (PilResample.h),
// which timm, torchvision and Hugging Face preprocess with: the same pixels, enlarging or reducing.
at::Tensor resize(const at::Tensor& x, int h, int w, Interpolation interp)
{
    if (x.size(2) == h && x.size(3) == w)
        return x;
    const auto pixels = x[0].permute({ 1, 2, 0 }).to(at::kByte).contiguous();
    auto out = at::empty({ h, w, x.size(1) }, at::kByte);
    pilResize(pixels.data_ptr<uint8_t>(), int(x.size(2)), int(x.size(3)), int(x.size(1)), out.data_ptr<uint8_t>(), h, w,
              interp);
    return out.permute({ 2, 0, 1 }).unsqueeze(0).to(at::kFloat).contiguous();
}

// The size an image of h x w is resized to before the centre crop.
std::pair<int, int> resizedSize(int h, int w, const PreprocessConfig& cfg)
{
    switch (cfg.resize) {
    case ResizeMode::ShortestEdge: {
        // The short side becomes s; the long side int(s * long / short), truncated, as torchvision and HF do.
        const int s = cfg.resizeShortest;
        if (h <= w) {
            w = int(int64_t(s) * w / h);
            h = s;
        } else {
            h = int(int64_t(s) * h / w);
            w = s;
        }
        break;
    }
    case ResizeMode::Exact:
        h = cfg.resizeHeight;
        w = cfg.resizeWidth;
        break;
    case ResizeMode::Cover: {
        // timm's ResizeKeepRatio (longest = 0): ratio = min(h / target_h, w / target_w), each side round(side / ratio),
        // Python's round (half to even, as nearbyint).
        const double ratio = std::min(double(h) / cfg.resizeHeight, double(w) / cfg.resizeWidth);
        const int coverH = std::max(1, int(std::nearbyint(h / ratio)));
        const int coverW = std::max(1, int(std::nearbyint(w / ratio)));
        h = coverH;
        w = coverW;
        break;
    }
    case ResizeMode::None:
        break;
    }
    return { h, w };
}

} // namespace

at::Tensor preprocessImage(const Image& image, const PreprocessConfig& cfg, int channels, Image* shown)
{
    auto x = toChannels(image, channels);
    auto [h, w] = resizedSize(image.height, image.width, cfg);
    x = resize(x, h, w, cfg.interpolation);
    if (cfg.centerCrop) {
        const int ch = cfg.cropHeight, cw = cfg.cropWidth;
        if (h < ch || w < cw) { // smaller than the crop: pad with zeros around, as torchvision's CenterCrop does
            const int padH = std::max(0, ch - h), padW = std::max(0, cw - w);
            x = at::constant_pad_nd(x, { padW / 2, padW - padW / 2, padH / 2, padH - padH / 2 }, 0);
            h = int(x.size(2));
            w = int(x.size(3));
        }
        const auto offset = [&](int in, int out) {
            const double half = (in - out) / 2.0;
            return int(cfg.cropOffsetFloor ? std::floor(half) : std::nearbyint(half)); // nearbyint: half to even
        };
        x = x.slice(2, offset(h, ch), offset(h, ch) + ch).slice(3, offset(w, cw), offset(w, cw) + cw);
    }
    if (shown) {
        auto pixels = x[0].permute({ 1, 2, 0 }).to(at::kByte).contiguous();
        shown->height = int(pixels.size(0));
        shown->width = int(pixels.size(1));
        shown->channels = int(pixels.size(2));
        shown->pixels.assign(pixels.data_ptr<uint8_t>(), pixels.data_ptr<uint8_t>() + pixels.numel());
    }
    auto mean = at::tensor(std::vector<double>(cfg.mean.begin(), cfg.mean.end()), at::kFloat).view({ 1, -1, 1, 1 });
    auto stdev = at::tensor(std::vector<double>(cfg.std.begin(), cfg.std.end()), at::kFloat).view({ 1, -1, 1, 1 });
    return ((x * float(cfg.rescale) - mean) / stdev)[0].contiguous();
}

std::string describePreparation(int width, int height, int channels, const PreprocessConfig& cfg, int modelChannels)
{
    const auto size = [](int w, int h) { return std::to_string(w) + "\u00d7" + std::to_string(h); };
    std::vector<std::string> steps;
    if (channels != modelChannels)
        steps.push_back(modelChannels == 1 ? "converted to grey" : "grey copied to " + std::to_string(modelChannels) + " channels");
    const auto [h, w] = resizedSize(height, width, cfg);
    if (h != height || w != width)
        steps.push_back("resized " + size(width, height) + " \u2192 " + size(w, h));
    if (cfg.centerCrop && (h != cfg.cropHeight || w != cfg.cropWidth)) {
        if (h < cfg.cropHeight || w < cfg.cropWidth)
            steps.push_back("padded with black to " + size(std::max(w, cfg.cropWidth), std::max(h, cfg.cropHeight)));
        if (h > cfg.cropHeight || w > cfg.cropWidth)
            steps.push_back("centre " + size(cfg.cropWidth, cfg.cropHeight) + " cropped");
    }
    std::string line;
    for (const auto& step : steps)
        line += (line.empty() ? "" : ", ") + step;
    return line;
}

PreprocessConfig preprocessAtInputSize(const PreprocessConfig& config, int height, int width)
{
    PreprocessConfig p = config;
    p.cropHeight = height;
    p.cropWidth = width;
    if (!config.centerCrop) {
        p.resize = ResizeMode::Exact;
        p.resizeHeight = height;
        p.resizeWidth = width;
        return p;
    }
    if (config.resize == ResizeMode::None)
        return p;
    // floor(s / crop_pct) as timm computes it (in double); without a crop_pct, the config's own resize / crop ratio in
    // integers, which gives its resize back at its crop size.
    const auto scaled = [&](int side, int crop, int resize) {
        if (config.cropPct > 0)
            return std::max(1, int(std::floor(side / config.cropPct)));
        return std::max(1, int(int64_t(side) * resize / std::max(1, crop)));
    };
    switch (config.resize) {
    case ResizeMode::ShortestEdge: {
        const int crop = std::min(config.cropHeight, config.cropWidth);
        const int h = scaled(height, crop, config.resizeShortest), w = scaled(width, crop, config.resizeShortest);
        if (h == w) { // timm: torchvision's Resize(int), the shorter side
            p.resizeShortest = h;
        } else {
            p.resize = ResizeMode::Cover;
            p.resizeHeight = h;
            p.resizeWidth = w;
        }
        break;
    }
    case ResizeMode::Exact:
    case ResizeMode::Cover:
        p.resizeHeight = scaled(height, config.cropHeight, config.resizeHeight);
        p.resizeWidth = scaled(width, config.cropWidth, config.resizeWidth);
        break;
    case ResizeMode::None:
        break;
    }
    return p;
}

} // namespace attnscope
