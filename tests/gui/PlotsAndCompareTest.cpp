// The plot docks, variants, perturbations and compare mode, driven as a user would, offscreen.
#include "GuiTestSupport.h"
#include "gui/MainWindow.h"

#include <plots/PlotHover.h>

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

using namespace guitest;
using namespace attnscope;

namespace {

// Waits until the window's current image has been analysed by every model and variant asked for.
bool waitForAnalyses(MainWindow& w, size_t series, int timeoutMs = 60000)
{
    QElapsedTimer timer;
    timer.start();
    while (timer.elapsed() < timeoutMs) {
        if (w.imagePanel()->data().series.size() == series && !w.imagePanel()->data().series.front().snr.empty())
            return true;
        QTest::qWait(50);
    }
    return false;
}

QStringList labels(const FigureData& data)
{
    QStringList out;
    for (const auto& s : data.series)
        out << QString::fromStdString(s.label);
    return out;
}

} // namespace

class PlotsAndCompareTest : public QObject {
    Q_OBJECT
private slots:
    void imagePlotsFillInAndExportEveryFigure()
    {
        MainWindow w;
        w.resize(1300, 900);
        w.show();
        QSignalSpy modelReady(&w, &MainWindow::modelReady);
        w.openModel(QStringLiteral("builtin:fmnist-vit-d4"));
        QVERIFY(modelReady.wait(20000));
        w.addImages({ kSamples + "/fashion-mnist" });
        QVERIFY(waitForAnalyses(w, 1));
        const FigureData& data = w.imagePanel()->data();
        QCOMPARE(data.series.front().images, int64_t(1));
        QVERIFY(!data.series.front().tokenSimilarity.empty());
        QVERIFY(!data.series.front().headCentres.empty());
        QVERIFY(data.decomposition != nullptr);

        QTemporaryDir dir;
        for (Figure f : w.imagePanel()->figures()) {
            QVERIFY2(figureHasData(f, data), qPrintable(figureTitle(f)));
            w.imagePanel()->setFigure(f);
            const QString base = dir.filePath(QString::fromStdString(figureFileName(f)));
            for (const char* ext : { ".png", ".svg", ".pdf" })
                QVERIFY2(w.imagePanel()->exportFigure(base + ext), qPrintable(base + ext));
            QVERIFY(w.imagePanel()->exportData(base + ".csv"));
            const QImage png(base + ".png");
            QVERIFY2(!png.isNull() && distinctColours(png) > 20, qPrintable(base));
            QFile svg(base + ".svg");
            QVERIFY(svg.open(QIODevice::ReadOnly) && svg.readAll().contains("<svg"));
            QFile pdf(base + ".pdf");
            QVERIFY(pdf.open(QIODevice::ReadOnly) && pdf.read(5) == "%PDF-");
            QFile csv(base + ".csv");
            QVERIFY(csv.open(QIODevice::ReadOnly));
            QVERIFY(csv.readAll().count('\n') > 4);
        }

        // Hovering the token-similarity curve shows the point's values.
        w.imagePanel()->setFigure(Figure::TokenSimilarity);
        QCustomPlot* plot = w.imagePanel()->plot();
        plot->replot();
        QCPGraph* curve = nullptr;
        for (int i = 0; i < plot->graphCount() && !curve; ++i)
            if (plot->graph(i)->name() == "fmnist-vit-d4 · all tokens" && plot->graph(i)->dataCount() > 2)
                curve = plot->graph(i);
        QVERIFY(curve);
        const auto point = curve->data()->at(2);
        const QString text = valuesAt(plot, curve->coordsToPixels(point->key, point->value));
        QVERIFY2(text.contains("fmnist-vit-d4") && text.contains(QString::number(point->value, 'g', 4)), qPrintable(text));
        QVERIFY(valuesAt(plot, { 2, 2 }).isEmpty());

        // The logit decomposition follows the head.
        w.imagePanel()->setFigure(Figure::LogitDecomposition);
        const QImage head0 = plot->toPixmap(600, 200).toImage();
        w.setHead(HeadChoice::single(2));
        QVERIFY(differingPixels(head0, plot->toPixmap(600, 200).toImage()) > 50);
    }

    void variantAndPerturbationOverlayNewCurves()
    {
        MainWindow w;
        QSignalSpy modelReady(&w, &MainWindow::modelReady);
        w.openModel(QStringLiteral("builtin:fmnist-vit-d4"));
        QVERIFY(modelReady.wait(20000));
        w.addImages({ kSamples + "/fashion-mnist/test-0000-ankle-boot.png" });
        QVERIFY(waitForAnalyses(w, 1));
        const double ownSimilarity = w.imagePanel()->data().series.front().tokenSimilarity.back().value.mean;

        w.runVariant(0.6, 0.3);
        QVERIFY(waitForAnalyses(w, 2));
        QCOMPARE(labels(w.imagePanel()->data()), QStringList({ "fmnist-vit-d4", "fmnist-vit-d4 (NeuTRENO 0.6, Boost 0.3)" }));
        QVERIFY(w.variant() && w.variant()->trace.neutrenoLambda == 0.6);
        // The variant changes the curve and leaves the model's own where it was.
        const auto& series = w.imagePanel()->data().series;
        QCOMPARE(series[0].tokenSimilarity.back().value.mean, ownSimilarity);
        QVERIFY(std::abs(series[1].tokenSimilarity.back().value.mean - ownSimilarity) > 1e-4);

        Perturbation blur;
        blur.kind = Perturbation::Kind::Blur;
        blur.strength = 1.5;
        w.setPerturbation(blur);
        QElapsedTimer timer;
        timer.start();
        const auto blurred = [&] {
            const auto& s = w.imagePanel()->data().series;
            return s.size() == 2 && !s[0].snr.empty() && s[0].snr.front().perturbation == "blur:sigma=1.5" && !s[1].snr.empty()
                && s[1].snr.front().perturbation == "blur:sigma=1.5";
        };
        while (!blurred() && timer.elapsed() < 60000)
            QTest::qWait(50);
        QVERIFY(blurred());

        w.runVariant(0, 0); // the model's own values: the variant goes
        QCOMPARE(w.imagePanel()->data().series.size(), size_t(1));
    }

    void compareModeKeepsTwoModelsInStep()
    {
        MainWindow w;
        w.resize(1300, 900);
        w.show();
        QSignalSpy modelReady(&w, &MainWindow::modelReady);
        QSignalSpy compareReady(&w, &MainWindow::compareReady);
        w.openModel(kFixture); // 16 x 16 patches
        QVERIFY(modelReady.wait(20000));
        w.openCompareModel(QStringLiteral("builtin:fmnist-vit-d4")); // 7 x 7 patches, 1 channel
        QVERIFY(compareReady.wait(20000));
        w.addImages({ kImage });
        QVERIFY(waitForAnalyses(w, 2));
        QCOMPARE(labels(w.imagePanel()->data()), QStringList({ "tv_grid16", "fmnist-vit-d4" }));
        QTRY_VERIFY_WITH_TIMEOUT(!w.compareView()->rendered().isNull(), 20000);
        QVERIFY(w.compareView()->isVisible());

        // The same place in both: the bottom-right patch of one is the bottom-right patch of the other.
        w.setQuery(1 + 15 * 16 + 15);
        QCOMPARE(w.compareQuery(), 1 + 6 * 7 + 6);
        const QImage before = w.compareView()->rendered();
        // A click in the compared view moves the query of both.
        const QRect r = w.compareView()->imageRect();
        QTest::mouseClick(w.compareView(), Qt::LeftButton, {}, r.topLeft() + QPoint(2, 2));
        QCOMPARE(w.compareQuery(), 1);
        QCOMPARE(w.query(), 1 + 1 * 16 + 1); // patch (0, 0) of 7 x 7 is centred on patch (1, 1) of 16 x 16
        QVERIFY(differingPixels(before, w.compareView()->rendered()) > 50);
        // Layer and head follow; a head the compared model lacks shows its head mean.
        w.setLayer(1);
        w.setHead(HeadChoice::single(3));
        const QImage head3 = w.compareView()->rendered();
        w.setHead(HeadChoice::single(1));
        QVERIFY(differingPixels(head3, w.compareView()->rendered()) > 50);

        QTemporaryDir dir;
        QVERIFY(w.exportView(dir.filePath("both.png")));
        const QImage both(dir.filePath("both.png"));
        QVERIFY(!both.isNull());
        QVERIFY(both.width() > both.height() * 3 / 2);
        // The data of both maps: one row per patch of each model's grid.
        QVERIFY(w.exportView(dir.filePath("both.csv")));
        QFile csv(dir.filePath("both.csv"));
        QVERIFY(csv.open(QIODevice::ReadOnly));
        const QList<QByteArray> rows = csv.readAll().trimmed().split('\n');
        QCOMPARE(rows.size(), 1 + 16 * 16 + 7 * 7);
        QVERIFY(rows[1].startsWith("tv_grid16,1,1,18,0,0,"));
        QVERIFY(rows.last().startsWith("fmnist-vit-d4,1,1,1,6,6,"));
        // The layers x heads grid of the current query, as a figure and as data.
        QVERIFY(w.exportTiles(dir.filePath("grid.png")));
        QVERIFY(distinctColours(QImage(dir.filePath("grid.png"))) > 50);
        QVERIFY(w.exportTiles(dir.filePath("grid.csv")));
        QFile gridCsv(dir.filePath("grid.csv"));
        QVERIFY(gridCsv.open(QIODevice::ReadOnly));
        const int layers = w.current()->trace.depth, heads = w.current()->trace.numHeads;
        QCOMPARE(gridCsv.readAll().trimmed().count('\n'), layers * (heads + 1) * 256 + 256);

        w.closeCompare();
        QVERIFY(!w.compareView()->isVisible());
        QCOMPARE(w.imagePanel()->data().series.size(), size_t(1));
    }
};

static const int registered = registerTest<PlotsAndCompareTest>();
#include "PlotsAndCompareTest.moc"
