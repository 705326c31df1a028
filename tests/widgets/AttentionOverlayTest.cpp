// The attention overlay and the layers x heads figure.

#include "FigureChecks.h"
#include "SyntheticData.h"

#include <figures/AttentionGridFigure.h>
#include <plots/AttentionOverlay.h>
#include <view/AttentionTileGrid.h>
#include <figures/FigureExport.h>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;

namespace {

// A [gh, gw] map that is `hot` at one patch and `cold` everywhere else.
AttentionMap onePatch(int gh, int gw, int row, int col, float hot = 0.9f, float cold = 0.001f)
{
    std::vector<float> v(size_t(gh * gw), cold);
    v[size_t(row * gw + col)] = hot;
    return { Tensor::fromVector({ gh, gw }, v), 0.0 };
}

int distance(QRgb a, QRgb b)
{
    return std::abs(qRed(a) - qRed(b)) + std::abs(qGreen(a) - qGreen(b)) + std::abs(qBlue(a) - qBlue(b));
}

} // namespace

class AttentionOverlayTest : public QObject {
    Q_OBJECT

private slots:
    void hotPatchDiffersFromColdPatch()
    {
        Image grey;
        grey.width = grey.height = 224;
        grey.channels = 1;
        grey.pixels.assign(224 * 224, 128);
        const QImage out = renderAttentionOverlay(grey, onePatch(14, 14, 3, 10), 14, 14, 0.7, Colormap::Viridis, {});
        QCOMPARE(out.size(), QSize(224, 224));
        // Centres of patch (3, 10) and of patch (10, 3); 16 px patches.
        const QRgb hot = out.pixel(10 * 16 + 8, 3 * 16 + 8);
        const QRgb cold = out.pixel(3 * 16 + 8, 10 * 16 + 8);
        QVERIFY2(distance(hot, cold) > 150, qPrintable(QColor(hot).name() + " vs " + QColor(cold).name()));
        // Hot is viridis near its yellow end blended 70% over grey, cold its purple end. Pixel centres sit 1/32
        // patch off the patch centre on both axes, so the bilinear value there is (31/32)^2 of the peak (plus the
        // floor's share).
        const double w = 31.0 / 32.0, t = (w * w * (0.9 - 0.001) + 0.001) / 0.9;
        const QRgb expected = colormapColor(Colormap::Viridis, t);
        QVERIFY2(std::abs(qRed(hot) - int(0.3 * 128 + 0.7 * qRed(expected))) <= 2, qPrintable(QColor(hot).name()));
        QVERIFY2(std::abs(qGreen(hot) - int(0.3 * 128 + 0.7 * qGreen(expected))) <= 2, qPrintable(QColor(hot).name()));
        QVERIFY(qBlue(cold) > qGreen(cold));
    }

    // A Swin's map at a stage's grid (AttentionMap): each token over the patches it covers, NaN outside the query's
    // window drawn as the image greyed (hatched), not as the colormap's zero; the maximum skips the NaN.
    void windowedMapAtAStageGrid()
    {
        Image image;
        image.width = image.height = 64;
        image.channels = 3;
        image.pixels.assign(64 * 64 * 3, 0);
        for (size_t i = 0; i < image.pixels.size(); i += 3)
            image.pixels[i] = 200; // red: a grey pixel can only come from the outside's drawing
        // stage 1 of a 16 x 16 patch grid: 8 x 8 tokens of 2 x 2 patches (8 px); the window is tokens rows 0-3, cols 4-7
        std::vector<float> v(64, std::numeric_limits<float>::quiet_NaN());
        for (int y = 0; y < 4; ++y)
            for (int x = 4; x < 8; ++x)
                v[size_t(y * 8 + x)] = 0.01f;
        v[size_t(1 * 8 + 5)] = 0.9f;
        const AttentionMap map { Tensor::fromVector({ 8, 8 }, v), 0.0, 0.05 };
        QCOMPARE(mapMaximum(map), double(0.9f));
        const QImage out = renderAttentionOverlay(image, map, 16, 16, 0.8, Colormap::Viridis, QPoint(11, 3));
        QCOMPARE(out.size(), QSize(64, 64));
        const auto isGrey = [](QRgb c) { return qRed(c) == qGreen(c) && qGreen(c) == qBlue(c); };
        for (int y = 0; y < 64; y += 3) // outside the window: every pixel grey
            for (int x = 0; x < 32; x += 3)
                QVERIFY2(isGrey(out.pixel(x, y)), qPrintable(QStringLiteral("(%1, %2) %3").arg(x).arg(y).arg(QColor(out.pixel(x, y)).name())));
        for (int y = 40; y < 64; y += 3)
            QVERIFY(isGrey(out.pixel(50, y)));
        // inside: coloured, the hot token (1, 5) near viridis' yellow end
        const QRgb hot = out.pixel(5 * 8 + 4, 1 * 8 + 4), cold = out.pixel(7 * 8 + 4, 3 * 8 + 4);
        QVERIFY(!isGrey(hot) && !isGrey(cold));
        QVERIFY2(qGreen(hot) > qGreen(cold) + 60, qPrintable(QColor(hot).name() + " vs " + QColor(cold).name()));
        // the query's token (patch (3, 11) is token (1, 5)) is outlined over its 2 x 2 patches (pixels 40..47), not
        // the patch alone (44..47)
        const QImage plain = renderAttentionOverlay(image, map, 16, 16, 0.8, Colormap::Viridis, std::nullopt);
        QVERIFY(out.pixel(40, 12) != plain.pixel(40, 12));
        QVERIFY(out.pixel(43, 12) == plain.pixel(43, 12));
    }

    void opaqueConstantMapIsUniform()
    {
        std::vector<float> v(size_t(7 * 7), 0.02f);
        const AttentionMap flat { Tensor::fromVector({ 7, 7 }, v), 0.0 };
        const QImage out = renderAttentionOverlay(
            testdata::makeImage(112, 112), flat, 7, 7, 1.0, Colormap::Magma, {}, ValueRange { 0.0, 0.04 });
        const QRgb expected = colormapColor(Colormap::Magma, 0.5);
        for (QPoint p : { QPoint(0, 0), QPoint(55, 60), QPoint(111, 111) })
            QVERIFY(distance(out.pixel(p), expected) <= 3);
    }

    void bilinearBetweenPatchCentres()
    {
        // Two patches 0 and 1 in a 1 x 2 grid: the colour halfway between their centres is the mid colour.
        const AttentionMap ramp { Tensor::fromVector({ 1, 2 }, { 0.0f, 1.0f }), 0.0 };
        const QImage out = renderAttentionOverlay(Image {}, ramp, 1, 2, 1.0, Colormap::Greys, {}, ValueRange { 0, 1 });
        QCOMPARE(out.size(), QSize(32, 16));
        QVERIFY(qRed(out.pixel(0, 8)) < 5); // left of the first centre: clamped to 0
        QVERIFY(qRed(out.pixel(31, 8)) > 250); // right of the second centre: clamped to 1
        const int middle = qRed(out.pixel(15, 8)) / 2 + qRed(out.pixel(16, 8)) / 2;
        QVERIFY2(
            std::abs(middle - qRed(colormapColor(Colormap::Greys, 0.5))) <= 12, qPrintable(QString::number(middle)));
    }

    void queryPatchIsOutlined()
    {
        const Image image = testdata::makeImage(224, 224);
        const AttentionMap map = onePatch(14, 14, 0, 0);
        const QImage plain = renderAttentionOverlay(image, map, 14, 14, 0.5, Colormap::Viridis, {});
        const QImage marked = renderAttentionOverlay(image, map, 14, 14, 0.5, Colormap::Viridis, QPoint(5, 7));
        // The outline runs along the patch border (x = 80..96, y = 112..128).
        QVERIFY(distance(plain.pixel(88, 112), marked.pixel(88, 112)) > 60);
        QCOMPARE(plain.pixel(30, 30), marked.pixel(30, 30));
        QVERIFY(queryPatchOf(0, 1, 14) == std::nullopt);
        QCOMPARE(*queryPatchOf(1 + 7 * 14 + 5, 1, 14), QPoint(5, 7));
    }

    // Issue 32, item 8: a ViT-B-like 12 x 12 grid (13 columns with the mean) and conv3x3-as-attention's 9 heads show
    // whole in a tiles dock of a 1280 x 800 window (about 350 x 320), the tiles shrunk to fit; in a smaller dock they stop
    // at their smallest size and the dock scrolls (minimumSizeHint).
    void tilesShrinkToShowTheWholeGrid()
    {
        for (const int heads : { 12, 9 }) {
            const int layers = 12, side = 14, n = 1 + side * side;
            Trace trace;
            trace.depth = layers;
            trace.numHeads = heads;
            trace.gridHeight = trace.gridWidth = side;
            trace.numPrefixTokens = 1;
            trace.attention.resize(size_t(layers) + 1);
            for (int l = 1; l <= layers; ++l)
                trace.attention[size_t(l)] = Tensor::fromVector({ heads, n, n }, std::vector<float>(size_t(heads) * n * n, 1.0f / float(n)));
            AttentionTileGrid grid;
            grid.setRows(queryRows(trace, 0), testdata::makeImage());
            grid.resize(350, 320);
            grid.show();
            QCoreApplication::processEvents();
            QVERIFY2(grid.minimumSizeHint().width() <= 350 && grid.minimumSizeHint().height() <= 320,
                     qPrintable(QString("%1x%2").arg(grid.minimumSizeHint().width()).arg(grid.minimumSizeHint().height())));
            QVERIFY(grid.tileSize() >= 14 && grid.tileSize() < 56);
            // The last layer's mean tile (28 px of labels, 3 px gaps, the mean column 6 px apart) lies inside the widget,
            // where a click finds it.
            const int t = grid.tileSize();
            const QPoint meanOfLast(28 + heads * (t + 3) + 6 + t / 2, 28 + 11 * (t + 3) + t / 2);
            QVERIFY(grid.rect().contains(meanOfLast));
            const auto last = grid.tileAt(meanOfLast);
            QVERIFY(last && last->first == 12 && last->second == -1);
            const QImage drawn = grid.grab().toImage();
            QVERIFY(!drawn.isNull());
        }
    }

    void mismatchedMapLeavesTheImage()
    {
        const Image image = testdata::makeImage(64, 64);
        const QImage out = renderAttentionOverlay(image, onePatch(3, 3, 1, 1), 14, 14, 0.8, Colormap::Viridis, {});
        QCOMPARE(out, toQImage(image));
    }

    void gridFigureExports()
    {
        const AttentionGrid grid = testdata::makeGrid(12, 6, 1 + 9 * 14 + 3);
        GridStyle style;
        const QImage figure = renderAttentionGrid(grid, style);
        QVERIFY(!figure.isNull());
        QCOMPARE(figure.devicePixelRatio(), style.scale);
        // 7 tile columns and 12 + 1 tile rows at 88 px, plus labels.
        QVERIFY(figure.deviceIndependentSize().width() > 7 * 88);
        QVERIFY(figure.deviceIndependentSize().height() > 13 * 88);
        QTemporaryDir dir;
        for (const QString suffix : { "png", "svg", "pdf" }) {
            const Status written = exportImage(figure, dir.filePath("grid." + suffix));
            QVERIFY2(written, written ? "" : written.message().c_str());
        }
        QString problem = testing::checkPng(dir.filePath("grid.png"), figure.size());
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        problem = testing::checkSvg(dir.filePath("grid.svg"));
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        problem = testing::checkPdf(dir.filePath("grid.pdf"));
        QVERIFY2(problem.isEmpty(), qPrintable(problem));

        if (const QString out = testing::figureDir(); !out.isEmpty()) {
            QVERIFY(exportImage(figure, QDir(out).filePath("attention_grid.png")));
            GridStyle shared;
            shared.sharedScale = true;
            shared.colormap = Colormap::Inferno;
            QVERIFY(exportImage(renderAttentionGrid(testdata::makeGrid(4, 3, 0), shared),
                QDir(out).filePath("attention_grid_shared.png")));
            QVERIFY(exportImage(renderColorBar(Colormap::Viridis, { 0, 0.035 }, QSize(80, 300), Qt::Vertical,
                                    "attention weight", PlotStyle()),
                QDir(out).filePath("colorbar_vertical.png")));
        }
    }

    void gridWithoutImageDrawsMapsOpaque()
    {
        AttentionGrid grid = testdata::makeGrid(2, 2, 0);
        grid.shown = Image {};
        const QImage figure = renderAttentionGrid(grid, GridStyle {});
        QVERIFY(!figure.isNull());
        QVERIFY(testing::distinctColours(figure) > 100);
    }

    void emptyGridStillRenders()
    {
        const QImage figure = renderAttentionGrid(AttentionGrid {}, GridStyle {});
        QVERIFY(!figure.isNull());
        QVERIFY(testing::nonBackgroundShare(figure) > 0.0);
    }
};

QObject* makeAttentionOverlayTest() { return new AttentionOverlayTest; }

#include "AttentionOverlayTest.moc"
