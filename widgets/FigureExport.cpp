#include "FigureExport.h"
#include "PngEncoder.h"

#include <QFileInfo>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSvgGenerator>
#include <cmath>
#include <qcustomplot.h>

namespace attnscope {

namespace {

    enum class Format { Png, Svg, Pdf, Unknown };

    constexpr double pngScale = 2.0; // PNG pixels per logical pixel: print resolution from screen sizes
    constexpr double logicalDpi = 96.0; // one logical pixel = 1/96 in (SVG size, PNG resolution tag)
    const QString creator = QStringLiteral("attnscope");

    Format formatOf(const QString& path)
    {
        const QString suffix = QFileInfo(path).suffix().toLower();
        if (suffix == QLatin1String("png"))
            return Format::Png;
        if (suffix == QLatin1String("svg"))
            return Format::Svg;
        if (suffix == QLatin1String("pdf"))
            return Format::Pdf;
        return Format::Unknown;
    }

    bool fail(QString* error, const QString& message)
    {
        if (error)
            *error = message;
        return false;
    }

    bool open(QSaveFile& file, QString* error)
    {
        if (!file.open(QIODevice::WriteOnly))
            return fail(error, QStringLiteral("%1: cannot write: %2").arg(file.fileName(), file.errorString()));
        return true;
    }

    bool commit(QSaveFile& file, QString* error)
    {
        if (!file.commit())
            return fail(error, QStringLiteral("%1: cannot write: %2").arg(file.fileName(), file.errorString()));
        return true;
    }

    bool unknownFormat(const QString& path, QString* error)
    {
        return fail(error, QStringLiteral("%1: unknown figure format (use .png, .svg or .pdf)").arg(path));
    }

    bool writePng(const QImage& image, double dpi, const QString& path, QString* error)
    {
        if (image.isNull())
            return fail(error, QStringLiteral("%1: nothing to write (empty figure)").arg(path));
        const QByteArray png = encodePng(image, dpi);
        if (png.isEmpty())
            return fail(error, QStringLiteral("%1: PNG encoding failed").arg(path));
        QSaveFile file(path);
        if (!open(file, error))
            return false;
        if (file.write(png) != png.size()) {
            file.cancelWriting();
            return fail(error, QStringLiteral("%1: cannot write: %2").arg(path, file.errorString()));
        }
        return commit(file, error);
    }

    // Runs `paint` on an SVG or PDF device of `size` logical pixels written to `path`.
    template <typename Paint>
    bool writeVector(Format format, const QString& path, QSize size, const QString& title, Paint paint, QString* error)
    {
        QSaveFile file(path);
        if (!open(file, error))
            return false;
        bool painted = false;
        if (format == Format::Svg) {
            QSvgGenerator generator;
            generator.setOutputDevice(&file);
            generator.setSize(size);
            generator.setViewBox(QRect(QPoint(0, 0), size));
            generator.setResolution(int(logicalDpi));
            generator.setTitle(title);
            generator.setDescription(creator);
            painted = paint(generator);
        } else {
            QPdfWriter writer(&file);
            writer.setCreator(creator);
            writer.setTitle(title);
            // One logical pixel = one point: the page is the figure, no margins, and text keeps its proportions.
            writer.setPageSize(QPageSize(QSizeF(size), QPageSize::Point, QString(), QPageSize::ExactMatch));
            writer.setPageMargins(QMarginsF(0, 0, 0, 0));
            writer.setResolution(72);
            painted = paint(writer);
        }
        if (!painted) {
            file.cancelWriting();
            return fail(error, QStringLiteral("%1: could not paint the figure").arg(path));
        }
        return commit(file, error);
    }

} // namespace

QString plotTitle(QCustomPlot* plot)
{
    QStringList parts;
    QCPLayoutGrid* layout = plot->plotLayout();
    for (int i = 0; i < layout->elementCount() && parts.size() < 2; ++i) {
        if (auto* text = qobject_cast<QCPTextElement*>(layout->elementAt(i)))
            parts << text->text();
    }
    return parts.join(QStringLiteral(" \u2014 "));
}

bool exportPlot(QCustomPlot* plot, const QString& path, int widthPx, int heightPx, QString* error)
{
    if (!plot || widthPx <= 0 || heightPx <= 0)
        return fail(error, QStringLiteral("%1: invalid figure size %2 x %3").arg(path).arg(widthPx).arg(heightPx));
    const Format format = formatOf(path);
    switch (format) {
    case Format::Png:
        return writePng(plot->toPixmap(widthPx, heightPx, pngScale).toImage(), logicalDpi * pngScale, path, error);
    case Format::Svg:
    case Format::Pdf:
        return writeVector(
            format, path, QSize(widthPx, heightPx), plotTitle(plot),
            [&](QPaintDevice& device) {
                QCPPainter painter;
                if (!painter.begin(&device))
                    return false;
                painter.setMode(QCPPainter::pmVectorized);
                painter.setMode(QCPPainter::pmNoCaching);
                plot->toPainter(&painter, widthPx, heightPx);
                return painter.end();
            },
            error);
    case Format::Unknown:
        break;
    }
    return unknownFormat(path, error);
}

bool exportImage(const QImage& image, const QString& path, QString* error)
{
    if (image.isNull())
        return fail(error, QStringLiteral("%1: nothing to write (empty figure)").arg(path));
    const Format format = formatOf(path);
    const QSizeF logical = image.deviceIndependentSize();
    switch (format) {
    case Format::Png:
        return writePng(image, logicalDpi * image.devicePixelRatio(), path, error);
    case Format::Svg:
    case Format::Pdf:
        return writeVector(
            format, path, QSize(int(std::ceil(logical.width())), int(std::ceil(logical.height()))), QString(),
            [&](QPaintDevice& device) {
                QPainter painter;
                if (!painter.begin(&device))
                    return false;
                painter.setRenderHint(QPainter::SmoothPixmapTransform);
                painter.drawImage(QRectF(QPointF(0, 0), logical), image);
                return painter.end();
            },
            error);
    case Format::Unknown:
        break;
    }
    return unknownFormat(path, error);
}

} // namespace attnscope
