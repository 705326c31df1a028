// Export: the format follows the suffix, sizes are as asked, failures leave no file and say why.

#include "FigureChecks.h"
#include "SyntheticData.h"

#include <figures/FigureExport.h>
#include <figures/PngEncoder.h>
#include <QBuffer>
#include <QRandomGenerator>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <QtTest>
#include <plots/TokenSimilarityPlot.h>
#include <qcustomplot.h>

#include <memory>

using namespace attnscope;

class FigureExportTest : public QObject {
    Q_OBJECT

private:
    // Every test starts with a token-similarity plot and an empty temporary folder (init).
    std::unique_ptr<QCustomPlot> m_plot;
    std::unique_ptr<QTemporaryDir> m_dir;

    static QByteArray contents(const QString& path)
    {
        QFile file(path);
        return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
    }

private slots:
    void init()
    {
        m_plot = std::make_unique<QCustomPlot>();
        buildTokenSimilarityPlot(m_plot.get(), { testdata::makeSummary("ViT-S/16", "ViT-S/16") }, Tap::Block, PlotStyle());
        m_dir = std::make_unique<QTemporaryDir>();
    }
    void cleanup()
    {
        m_plot.reset();
        m_dir.reset();
    }

    void pngIsTwiceTheLogicalSize()
    {
        const QString path = m_dir->filePath("a.png");
        QVERIFY(exportPlot(m_plot.get(), path, 640, 400));
        const QImage image(path);
        QCOMPARE(image.size(), QSize(1280, 800));
        QVERIFY(std::abs(image.dotsPerMeterX() - 7559) <= 1); // 192 dpi
    }

    // attnscope's own PNG writer, read back by Qt's (libpng): every pixel as written, opaque images as RGB, others as
    // RGBA, the resolution in pHYs; a plot, noise (every filter and byte value), one-pixel and odd sizes.
    void pngEncoderRoundTripsExactly()
    {
        QImage noise(37, 5, QImage::Format_ARGB32);
        QImage translucent(3, 7, QImage::Format_ARGB32);
        QRandomGenerator rng(7);
        for (int y = 0; y < noise.height(); ++y)
            for (int x = 0; x < noise.width(); ++x)
                noise.setPixel(x, y, rng.generate() | 0xff000000u);
        for (int y = 0; y < translucent.height(); ++y)
            for (int x = 0; x < translucent.width(); ++x)
                translucent.setPixel(x, y, qRgba(int(rng.bounded(256)), 255 - 30 * y, x * 90, 20 * (x + y)));
        QImage one(1, 1, QImage::Format_RGB32);
        one.fill(qRgb(1, 2, 3));
        const QImage figure = m_plot->toPixmap(320, 200, 2.0).toImage();
        int translucentImages = 0;
        for (const QImage& source : { figure, noise, translucent, one }) {
            const QByteArray png = encodePng(source, 192);
            QVERIFY(png.startsWith("\x89PNG\r\n\x1a\n"));
            QImage back;
            QVERIFY(back.loadFromData(png, "PNG"));
            QCOMPARE(back.size(), source.size());
            const QImage a = source.convertToFormat(QImage::Format_ARGB32), b = back.convertToFormat(QImage::Format_ARGB32);
            bool opaque = true;
            for (int y = 0; y < a.height(); ++y)
                for (int x = 0; x < a.width(); ++x)
                    opaque = opaque && qAlpha(a.pixel(x, y)) == 255;
            QCOMPARE(back.hasAlphaChannel(), !opaque);
            translucentImages += !opaque;
            for (int y = 0; y < a.height(); ++y)
                for (int x = 0; x < a.width(); ++x)
                    QCOMPARE(b.pixel(x, y), a.pixel(x, y));
            QVERIFY(std::abs(back.dotsPerMeterX() - 7559) <= 1);
        }
        QCOMPARE(translucentImages, 1);
        QVERIFY(encodePng(QImage(), 96).isEmpty());
    }

    void svgHasTheLogicalSizeAndTitle()
    {
        const QString path = m_dir->filePath("a.svg");
        QVERIFY(exportPlot(m_plot.get(), path, 640, 400));
        const QByteArray svg = contents(path);
        QVERIFY(svg.contains("viewBox=\"0 0 640 400\""));
        QVERIFY(svg.contains("<title>Token cosine similarity"));
        QVERIFY2(svg.contains("<text"), "text stays text (vector), not a bitmap");
        QCOMPARE(testing::checkSvg(path), QString());
    }

    void pdfPageIsTheFigure()
    {
        const QString path = m_dir->filePath("a.pdf");
        QVERIFY(exportPlot(m_plot.get(), path, 640, 400));
        const QByteArray pdf = contents(path);
        QVERIFY(pdf.startsWith("%PDF"));
        // One logical pixel = one point: a landscape 640 x 400 pt page.
        const QRegularExpression mediaBox(QStringLiteral("/MediaBox \\[0 0 640(\\.0+)? 400(\\.0+)?\\]"));
        const int box = pdf.indexOf("/MediaBox");
        QVERIFY(box >= 0);
        QVERIFY2(mediaBox.match(QString::fromLatin1(pdf.mid(box, 48))).hasMatch(), pdf.mid(box, 48).constData());
        // The creator, "attnscope", as PDF text strings are stored: UTF-16BE.
        const QString creator = QStringLiteral("attnscope");
        QByteArray utf16;
        for (QChar c : creator)
            utf16.append(char(c.unicode() >> 8)).append(char(c.unicode() & 0xff));
        QVERIFY(pdf.contains("attnscope") || pdf.contains(utf16));
    }

    void suffixIsCaseInsensitive()
    {
        QVERIFY(exportPlot(m_plot.get(), m_dir->filePath("a.PNG"), 300, 200));
        QCOMPARE(QImage(m_dir->filePath("a.PNG")).size(), QSize(600, 400));
    }

    void unknownFormatIsRefused()
    {
        const Status refused = exportPlot(m_plot.get(), m_dir->filePath("a.jpg"), 300, 200);
        QVERIFY(!refused);
        const QString error = QString::fromStdString(refused.message());
        QVERIFY2(error.contains("a.jpg") && error.contains(".png"), qPrintable(error));
        QVERIFY(!refused.cancelled());
        QVERIFY(!exportImage(QImage(10, 10, QImage::Format_RGB32), m_dir->filePath("b.tiff")));
        QVERIFY(QDir(m_dir->path()).entryList(QDir::Files).isEmpty());
    }

    void missingFolderFailsCleanly()
    {
        const QString path = m_dir->filePath("no/such/folder/a.png");
        const Status refused = exportPlot(m_plot.get(), path, 300, 200);
        QVERIFY(!refused);
        QVERIFY2(QString::fromStdString(refused.message()).contains(path), refused.message().c_str());
        QVERIFY(!QFileInfo::exists(path));
        QVERIFY(!exportPlot(m_plot.get(), m_dir->filePath("a.pdf"), 0, 200));
        QVERIFY(!exportImage(QImage(), m_dir->filePath("a.png")));
        QVERIFY(QDir(m_dir->path()).entryList(QDir::Files).isEmpty());
    }

    void replacesAnExistingFile()
    {
        const QString path = m_dir->filePath("a.png");
        QFile stale(path);
        QVERIFY(stale.open(QIODevice::WriteOnly));
        stale.write("not a png");
        stale.close();
        QVERIFY(exportPlot(m_plot.get(), path, 300, 200));
        QCOMPARE(QImage(path).size(), QSize(600, 400));
        QCOMPARE(QDir(m_dir->path()).entryList(QDir::Files), QStringList { "a.png" });
    }

    void imageExportKeepsLogicalSize()
    {
        QImage image(200, 100, QImage::Format_RGB32);
        image.fill(Qt::darkCyan);
        image.setDevicePixelRatio(2.0);
        QVERIFY(exportImage(image, m_dir->filePath("i.png")));
        QCOMPARE(QImage(m_dir->filePath("i.png")).size(), QSize(200, 100));
        QVERIFY(exportImage(image, m_dir->filePath("i.svg")));
        QSvgRenderer svg(m_dir->filePath("i.svg"));
        QVERIFY(svg.isValid());
        QCOMPARE(svg.viewBox().size(), QSize(100, 50));
        QVERIFY(exportImage(image, m_dir->filePath("i.pdf")));
        QVERIFY(contents(m_dir->filePath("i.pdf")).startsWith("%PDF"));
    }
};

QObject* makeFigureExportTest() { return new FigureExportTest; }

#include "FigureExportTest.moc"
