#include "LaunchArguments.h"

#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <attnscope/Files.h>
#include <attnscope/Image.h>

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
    return { first, positional.mid(1) };
}
