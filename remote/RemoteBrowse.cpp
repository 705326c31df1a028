// Browsing the host from the window (docs/remote.md): a folder's entries for the remote file dialog, and small
// thumbnails of host images for the image strip. Both read only what a request names, and send names and a few kB.
#include "RemoteServer.h"

#include "ServerRequests.h"

#include <attnscope/Files.h>
#include <attnscope/Image.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace attnscope::remote {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxEntries = 20000; // a folder's entries sent at most (the dialog says when there were more)
constexpr size_t kMaxThumbnails = 256; // per request

// A path as the user types it on the host: "" or "~" the home folder, "~/x" under it, relative ones from it (where
// ssh starts the server).
fs::path hostPathOf(const std::string& typed)
{
    const char* home = std::getenv("HOME");
    const fs::path base = home && *home ? fs::path(home) : fs::current_path();
    if (typed.empty() || typed == "~")
        return base;
    if (typed.rfind("~/", 0) == 0)
        return base / typed.substr(2);
    return fs::path(typed).is_absolute() ? fs::path(typed) : fs::current_path() / typed;
}

// `image` scaled to fit `size` x `size` (its aspect kept), each pixel the mean of the block it covers.
Image thumbnailOf(const Image& image, int size)
{
    const double scale = std::min(1.0, double(size) / double(std::max(image.width, image.height)));
    Image out;
    out.width = std::max(1, int(image.width * scale));
    out.height = std::max(1, int(image.height * scale));
    out.channels = image.channels;
    out.pixels.resize(size_t(out.width) * size_t(out.height) * size_t(out.channels));
    for (int y = 0; y < out.height; ++y) {
        const int y0 = int(int64_t(y) * image.height / out.height), y1 = std::max(y0 + 1, int(int64_t(y + 1) * image.height / out.height));
        for (int x = 0; x < out.width; ++x) {
            const int x0 = int(int64_t(x) * image.width / out.width), x1 = std::max(x0 + 1, int(int64_t(x + 1) * image.width / out.width));
            for (int c = 0; c < image.channels; ++c) {
                uint64_t sum = 0;
                for (int yy = y0; yy < y1; ++yy)
                    for (int xx = x0; xx < x1; ++xx)
                        sum += image.pixels[(size_t(yy) * size_t(image.width) + size_t(xx)) * size_t(image.channels) + size_t(c)];
                const uint64_t n = uint64_t(y1 - y0) * uint64_t(x1 - x0);
                out.pixels[(size_t(y) * size_t(out.width) + size_t(x)) * size_t(out.channels) + size_t(c)] = uint8_t((sum + n / 2) / n);
            }
        }
    }
    return out;
}

} // namespace

json Server::listDir(const json& params)
{
    const fs::path dir = hostPathOf(text(params, "path", false));
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(dir, ec);
    const fs::path shown = ec ? dir : canonical;
    if (!fs::is_directory(shown, ec))
        throw RequestError { Failed, shown.string() + ": not a folder on the host" };
    json entries = json::array();
    size_t total = 0;
    auto it = fs::directory_iterator(shown, fs::directory_options::skip_permission_denied, ec);
    if (ec)
        throw RequestError { Failed, shown.string() + ": cannot be listed (" + ec.message() + ")" };
    std::vector<std::pair<bool, std::string>> names; // (not a folder, name): folders first
    std::vector<uint64_t> sizes;
    for (; it != fs::directory_iterator(); it.increment(ec)) {
        if (ec)
            break;
        ++total;
        if (names.size() >= kMaxEntries)
            continue;
        std::error_code e;
        const bool folder = it->is_directory(e);
        names.emplace_back(!folder, it->path().filename().string());
    }
    std::sort(names.begin(), names.end());
    for (const auto& [file, name] : names) {
        std::error_code e;
        const fs::path p = shown / name;
        json entry = { { "name", name }, { "folder", !file } };
        if (file) {
            entry["size"] = uint64_t(fs::file_size(p, e));
            entry["image"] = hasImageSuffix(name);
        }
        entries.push_back(std::move(entry));
    }
    return { { "path", shown.string() }, { "parent", shown.has_parent_path() && shown != shown.root_path() ? shown.parent_path().string() : "" },
             { "entries", entries }, { "total", total } };
}

json Server::thumbnails(const json& params)
{
    const json& images = field(params, "images");
    if (!images.is_array() || images.empty() || images.size() > kMaxThumbnails)
        throw RequestError { InvalidParams, "\"images\" is not a list of 1 to " + std::to_string(kMaxThumbnails) + " images" };
    const int size = int(integer(params, "size"));
    if (size < 16 || size > 256)
        throw RequestError { InvalidParams, "\"size\" is " + std::to_string(size) + ", not 16 to 256 pixels" };
    json out = json::array();
    for (size_t i = 0; i < images.size(); ++i) {
        const std::string path = hostPath(images[i], "images[" + std::to_string(i) + "]");
        auto image = decodeImage(path);
        if (!image) {
            out.push_back({ { "error", image.message() } });
            continue;
        }
        const Image small = thumbnailOf(*image, size);
        out.push_back({ { "width", small.width }, { "height", small.height }, { "channels", small.channels },
                        { "pixels", encodeBytes(small.pixels.data(), small.pixels.size()) } });
    }
    return { { "thumbnails", out } };
}

} // namespace attnscope::remote
