// Export: the format follows the suffix, sizes are as asked, failures leave no file and say why.

#include "FigureChecks.h"
#include "SyntheticData.h"

#include <FigureExport.h>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <QtTest>
#include <TokenSimilarityPlot.h>
#include <qcustomplot.h>

using namespace attnscope;

class FigureExportTest : public QObject {
    Q_OBJECT

private:
    static void build(QCustomPlot* plot)
    {
        buildTokenSimilarityPlot(plot, { testdata::makeSummary("ViT-S/16", "ViT-S/16") }, Tap::Block, PlotStyle());
    }

private slots:
    void pngIsTwiceTheLogicalSize()
    {
        QCustomPlot plot;
        build(&plot);
        QTemporaryDir dir;
        const QString path = dir.filePath("a.png");
        QVERIFY(exportPlot(&plot, path, 640, 400));
        const QImage image(path);
        QCOMPARE(image.size(), QSize(1280, 800));
        QVERIFY(std::abs(image.dotsPerMeterX() - 7559) <= 1); // 192 dpi
    }

    void svgHasTheLogicalSizeAndTitle()
    {
        QCustomPlot plot;
        build(&plot);
        QTemporaryDir dir;
        const QString path = dir.filePath("a.svg");
        QVERIFY(exportPlot(&plot, path, 640, 400));
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray svg = file.readAll();
        QVERIFY(svg.contains("viewBox=\"0 0 640 400\""));
        QVERIFY(svg.contains("<title>Token cosine similarity"));
        QVERIFY2(svg.contains("<text"), "text stays text (vector), not a bitmap");
        QCOMPARE(testing::checkSvg(path), QString());
    }

    void pdfPageIsTheFigure()
    {
        QCustomPlot plot;
        build(&plot);
        QTemporaryDir dir;
        const QString path = dir.filePath("a.pdf");
        QVERIFY(exportPlot(&plot, path, 640, 400));
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray pdf = file.readAll();
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
        QCustomPlot plot;
        build(&plot);
        QTemporaryDir dir;
        QVERIFY(exportPlot(&plot, dir.filePath("a.PNG"), 300, 200));
        QCOMPARE(QImage(dir.filePath("a.PNG")).size(), QSize(600, 400));
    }

    void unknownFormatIsRefused()
    {
        QCustomPlot plot;
        build(&plot);
        QTemporaryDir dir;
        QString error;
        QVERIFY(!exportPlot(&plot, dir.filePath("a.jpg"), 300, 200, &error));
        QVERIFY2(error.contains("a.jpg") && error.contains(".png"), qPrintable(error));
        QVERIFY(!exportImage(QImage(10, 10, QImage::Format_RGB32), dir.filePath("b.tiff"), &error));
        QVERIFY(QDir(dir.path()).entryList(QDir::Files).isEmpty());
    }

    void missingFolderFailsCleanly()
    {
        QCustomPlot plot;
        build(&plot);
        QTemporaryDir dir;
        const QString path = dir.filePath("no/such/folder/a.png");
        QString error;
        QVERIFY(!exportPlot(&plot, path, 300, 200, &error));
        QVERIFY2(error.contains(path), qPrintable(error));
        QVERIFY(!QFileInfo::exists(path));
        QVERIFY(!exportPlot(&plot, dir.filePath("a.pdf"), 0, 200, &error));
        QVERIFY(!exportImage(QImage(), dir.filePath("a.png"), &error));
        QVERIFY(QDir(dir.path()).entryList(QDir::Files).isEmpty());
    }

    void replacesAnExistingFile()
    {
        QCustomPlot plot;
        build(&plot);
        QTemporaryDir dir;
        const QString path = dir.filePath("a.png");
        QFile stale(path);
        QVERIFY(stale.open(QIODevice::WriteOnly));
        stale.write("not a png");
        stale.close();
        QVERIFY(exportPlot(&plot, path, 300, 200));
        QCOMPARE(QImage(path).size(), QSize(600, 400));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList { "a.png" });
    }

    void imageExportKeepsLogicalSize()
    {
        QImage image(200, 100, QImage::Format_RGB32);
        image.fill(Qt::darkCyan);
        image.setDevicePixelRatio(2.0);
        QTemporaryDir dir;
        QVERIFY(exportImage(image, dir.filePath("i.png")));
        QCOMPARE(QImage(dir.filePath("i.png")).size(), QSize(200, 100));
        QVERIFY(exportImage(image, dir.filePath("i.svg")));
        QSvgRenderer svg(dir.filePath("i.svg"));
        QVERIFY(svg.isValid());
        QCOMPARE(svg.viewBox().size(), QSize(100, 50));
        QVERIFY(exportImage(image, dir.filePath("i.pdf")));
        QFile pdf(dir.filePath("i.pdf"));
        QVERIFY(pdf.open(QIODevice::ReadOnly));
        QVERIFY(pdf.readAll().startsWith("%PDF"));
    }
};

QObject* makeFigureExportTest() { return new FigureExportTest; }

#include "FigureExportTest.moc"
