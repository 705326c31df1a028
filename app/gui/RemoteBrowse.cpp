// RemoteBackend's view of the host's files (docs/remote.md): folders for the remote file dialog, thumbnails for the
// image strip.
#include "gui/RemoteBackend.h"

namespace attnscope {

using json = nlohmann::json;

Result<RemoteBackend::HostListing> RemoteBackend::listHost(const QString& path)
{
    auto answer = call("list_dir", { { "path", path.toStdString() } });
    if (!answer)
        return answer.error();
    HostListing listing;
    listing.path = QString::fromStdString(answer->value("path", std::string()));
    listing.parent = QString::fromStdString(answer->value("parent", std::string()));
    listing.total = answer->value("total", int64_t(0));
    for (const json& e : answer->value("entries", json::array())) {
        if (!e.is_object())
            continue;
        HostEntry entry;
        entry.name = QString::fromStdString(e.value("name", std::string()));
        entry.folder = e.value("folder", false);
        entry.image = e.value("image", false);
        entry.size = e.value("size", int64_t(0));
        if (!entry.name.isEmpty() && !entry.name.contains(QLatin1Char('/')))
            listing.entries.push_back(std::move(entry));
    }
    return listing;
}

Result<std::vector<QImage>> RemoteBackend::thumbnails(const QStringList& hostPaths, int size)
{
    json images = json::array();
    for (const QString& p : hostPaths)
        images.push_back(p.toStdString());
    auto answer = call("thumbnails", { { "images", images }, { "size", size } });
    if (!answer)
        return answer.error();
    std::vector<QImage> out;
    for (const json& t : answer->value("thumbnails", json::array())) {
        auto bytes = t.contains("pixels") ? remote::decodeBytes(t["pixels"]) : Result<std::vector<uint8_t>>(Error {});
        const int w = t.value("width", 0), h = t.value("height", 0), c = t.value("channels", 0);
        if (!bytes || w <= 0 || h <= 0 || w > size || h > size || (c != 1 && c != 3) || bytes->size() != size_t(w) * size_t(h) * size_t(c)) {
            out.emplace_back(); // not readable there: the strip shows the crossed box
            continue;
        }
        QImage image(bytes->data(), w, h, w * c, c == 3 ? QImage::Format_RGB888 : QImage::Format_Grayscale8);
        out.push_back(image.copy()); // its own pixels, not the answer's
    }
    if (out.size() != size_t(hostPaths.size()))
        return Error { m_endpoint.host + ": " + std::to_string(out.size()) + " thumbnails for " + std::to_string(hostPaths.size()) + " images" };
    return out;
}

} // namespace attnscope
