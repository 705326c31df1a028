#include "figures/FigureExport.h"
#include "figures/PngEncoder.h"

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

    Status fail(const QString& message) { return Error { message.toStdString() }; }

    Status open(QSaveFile& file)
    {
        if (!file.open(QIODevice::WriteOnly))
            return fail(QStringLiteral("%1: cannot write: %2").arg(file.fileName(), file.errorString()));
        return Done {};
    }

    Status commit(QSaveFile& file)
    {
        if (!file.commit())
            return fail(QStringLiteral("%1: cannot write: %2").arg(file.fileName(), file.errorString()));
        return Done {};
    }

    Status unknownFormat(const QString& path)
    {
        return fail(QStringLiteral("%1: unknown figure format (use .png, .svg or .pdf)").arg(path));
    }

    Status writePng(const QImage& image, double dpi, const QString& path)
    {
        if (image.isNull())
            return fail(QStringLiteral("%1: nothing to write (empty figure)").arg(path));
        const QByteArray png = encodePng(image, dpi);
        if (png.isEmpty())
            return fail(QStringLiteral("%1: PNG encoding failed").arg(path));
        QSaveFile file(path);
        if (auto opened = open(file); !opened)
            return opened;
        if (file.write(png) != png.size()) {
            file.cancelWriting();
            return fail(QStringLiteral("%1: cannot write: %2").arg(path, file.errorString()));
        }
        return commit(file);
    }

    // Runs `paint` on an SVG or PDF device of `size` logical pixels written to `path`.
    template <typename Paint>
    Status writeVector(Format format, const QString& path, QSize size, const QString& title, Paint paint)
    {
        QSaveFile file(path);
        if (auto opened = open(file); !opened)
            return opened;
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
            return fail(QStringLiteral("%1: could not paint the figure").arg(path));
        }
        return commit(file);
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

Status exportPlot(QCustomPlot* plot, const QString& path, int widthPx, int heightPx)
{
    if (!plot || widthPx <= 0 || heightPx <= 0)
        return fail(QStringLiteral("%1: invalid figure size %2 x %3").arg(path).arg(widthPx).arg(heightPx));
    const Format format = formatOf(path);
    switch (format) {
    case Format::Png:
        return writePng(plot->toPixmap(widthPx, heightPx, pngScale).toImage(), logicalDpi * pngScale, path);
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
            });
    case Format::Unknown:
        break;
    }
    return unknownFormat(path);
}

Status exportImage(const QImage& image, const QString& path)
{
    if (image.isNull())
        return fail(QStringLiteral("%1: nothing to write (empty figure)").arg(path));
    const Format format = formatOf(path);
    const QSizeF logical = image.deviceIndependentSize();
    switch (format) {
    case Format::Png:
        return writePng(image, logicalDpi * image.devicePixelRatio(), path);
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
            });
    case Format::Unknown:
        break;
    }
    return unknownFormat(path);
}

} // namespace attnscope
