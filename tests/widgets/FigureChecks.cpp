#include "FigureChecks.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSet>
#include <QSvgRenderer>

namespace attnscope::testing {

int distinctColours(const QImage& image)
{
    const QImage rgb = image.convertToFormat(QImage::Format_RGB32);
    QSet<QRgb> colours;
    for (int y = 0; y < rgb.height(); ++y) {
        const auto* line = reinterpret_cast<const QRgb*>(rgb.constScanLine(y));
        for (int x = 0; x < rgb.width(); ++x)
            colours.insert(line[x]);
    }
    return int(colours.size());
}

double nonBackgroundShare(const QImage& image)
{
    const QImage rgb = image.convertToFormat(QImage::Format_RGB32);
    if (rgb.isNull())
        return 0.0;
    const QRgb background = rgb.pixel(0, 0);
    qint64 other = 0;
    for (int y = 0; y < rgb.height(); ++y) {
        const auto* line = reinterpret_cast<const QRgb*>(rgb.constScanLine(y));
        for (int x = 0; x < rgb.width(); ++x)
            other += line[x] != background;
    }
    return double(other) / (double(rgb.width()) * rgb.height());
}

QString checkPng(const QString& path, QSize expected, int minColours)
{
    QImage image(path);
    if (image.isNull())
        return QStringLiteral("%1 does not decode as an image").arg(path);
    if (image.size() != expected)
        return QStringLiteral("%1 is %2 x %3, expected %4 x %5")
            .arg(path)
            .arg(image.width())
            .arg(image.height())
            .arg(expected.width())
            .arg(expected.height());
    const int colours = distinctColours(image);
    if (colours <= minColours)
        return QStringLiteral("%1 has only %2 distinct colours").arg(path).arg(colours);
    const double share = nonBackgroundShare(image);
    if (share <= 0.02)
        return QStringLiteral("%1 is nearly blank (%2% non-background)").arg(path).arg(100 * share);
    return {};
}

QString checkSvg(const QString& path)
{
    QSvgRenderer renderer(path);
    if (!renderer.isValid())
        return QStringLiteral("%1 is not valid SVG").arg(path);
    if (renderer.defaultSize().isEmpty())
        return QStringLiteral("%1 has no size").arg(path);
    return {};
}

QString checkPdf(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return QStringLiteral("%1 cannot be read").arg(path);
    const QByteArray bytes = file.readAll();
    if (!bytes.startsWith("%PDF"))
        return QStringLiteral("%1 does not start with %PDF").arg(path);
    if (!bytes.trimmed().endsWith("%%EOF"))
        return QStringLiteral("%1 does not end with %%EOF (truncated?)").arg(path);
    if (bytes.size() <= 1024)
        return QStringLiteral("%1 is only %2 bytes").arg(path).arg(bytes.size());
    return {};
}

QString figureDir()
{
    const QString dir = qEnvironmentVariable("ATTNSCOPE_FIGURE_DIR");
    if (!dir.isEmpty())
        QDir().mkpath(dir);
    return dir;
}

} // namespace attnscope::testing
