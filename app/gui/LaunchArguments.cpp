#include "gui/LaunchArguments.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSettings>
#include <attnscope/Files.h>
#include <attnscope/Image.h>

#include <algorithm>

namespace {

bool hasModelSuffix(const QString& path)
{
    static const QStringList suffixes { "safetensors", "pt", "pth", "bin", "json" };
    return suffixes.contains(QFileInfo(path).suffix().toLower());
}

} // namespace

bool hasImageSuffix(const QString& path)
{
    return attnscope::hasImageSuffix(path.toStdString()); // the engine's rule, as for the CLI's folders
}

bool isModelPath(const QString& path)
{
    if (path.startsWith(QLatin1String("builtin:")))
        return true;
    const QFileInfo info(path);
    if (!info.isDir())
        return hasModelSuffix(path);
    const QDir dir(path);
    return !dir.entryList({ "*.safetensors", "*.pt", "*.pth", "pytorch_model.bin", "config.json", "attnscope.json" },
                   QDir::Files)
                .isEmpty();
}

bool isImagePath(const QString& path)
{
    if (hasImageSuffix(path))
        return true;
    const QFileInfo info(path);
    return info.isFile() && !hasModelSuffix(path) && !attnscope::imageFormatOf(path.toStdString()).empty();
}

bool isImageFolder(const QString& path)
{
    if (!QFileInfo(path).isDir() || isModelPath(path))
        return false;
    // The first image ends the search; a tree of other files (a home folder given by mistake) is not walked to its
    // end before the window opens: after 20000 files it is taken for no image folder.
    QDirIterator it(path, QDir::Files, QDirIterator::Subdirectories);
    for (int seen = 0; it.hasNext() && seen < 20000; ++seen)
        if (hasImageSuffix(it.next()))
            return true;
    return false;
}

LaunchArguments splitLaunchArguments(const QStringList& positional, const QString& defaultModel)
{
    if (positional.isEmpty())
        return { defaultModel, {} };
    const QString& first = positional.front();
    if (!first.startsWith(QLatin1String("builtin:")) && (isImagePath(first) || isImageFolder(first)))
        return { defaultModel, positional };
    // A checkpoint followed by its description (`attnscope model_final.pt described.json photo.jpg`): one model.
    if (positional.size() > 1 && !isModelDescription(first) && isModelDescription(positional[1]))
        return { first, positional.mid(2), positional[1] };
    return { first, positional.mid(1) };
}

bool isModelDescription(const QString& path)
{
    if (!path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive))
        return false;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly) || file.size() > 16 * 1024 * 1024)
        return false;
    const QJsonObject json = QJsonDocument::fromJson(file.readAll()).object();
    // Its own keys; timm's config.json has an "architecture" too, but a string.
    return json.contains(QLatin1String("attnscope_description")) || json.value(QLatin1String("rename")).isArray()
        || json.value(QLatin1String("architecture")).isObject();
}

QRect placeWithin(const QRect& available, const QMargins& frame, const QSize& wanted, const QPoint& at)
{
    const QRect room = available.marginsRemoved(frame);
    const QSize size = wanted.boundedTo(room.size()).expandedTo(QSize(1, 1));
    // Where it was asked to be, moved only as far as needed for the frame to fit.
    const int x = std::clamp(at.x(), room.left(), std::max(room.left(), room.right() + 1 - size.width()));
    const int y = std::clamp(at.y(), room.top(), std::max(room.top(), room.bottom() + 1 - size.height()));
    return { QPoint(x, y), size };
}

QStringList recentRemoteHosts() { return QSettings().value("remoteHosts").toStringList(); }

void rememberRemoteHost(const QString& host)
{
    QStringList hosts = recentRemoteHosts();
    hosts.removeAll(host);
    hosts.prepend(host);
    QSettings().setValue("remoteHosts", hosts.mid(0, 8));
}

QStringList remoteWindowArguments(const QString& host, const QString& model, const QStringList& images)
{
    QStringList args { QStringLiteral("--remote"), host };
    if (!model.isEmpty())
        args << model;
    return args + images;
}
