// Fits the screen and colours stay (issue 32, items 8 and 10): at 1280x800 every Attention control shows without
// scrolling and the window opens no larger than its screen; the Layers x heads tiles shrink to show a whole 12-layer
// grid; the query is outlined without covering its patch; figures with rows of panels scroll in the dock rather than
// squeezing their keys and legends, and open larger in a window of their own; a compared model keeps its colour when
// a variant is added.
#include "GuiTestSupport.h"
#include "gui/AttentionControls.h"
#include "gui/MainWindow.h"
#include "gui/ModelSlot.h"

#include <view/AttentionTileGrid.h>
#include <figures/FigurePanel.h>
#include <figures/FigureSizes.h>
#include <qcustomplot.h>

#include <QDockWidget>
#include <QProcess>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace guitest;
using namespace attnscope;

namespace {

const QString kFashion = QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/../resources/samples/fashion-mnist");


QScrollArea* scrollAreaOf(QWidget* content)
{
    for (QWidget* w = content; w; w = w->parentWidget())
        if (auto* area = qobject_cast<QScrollArea*>(w))
            return area;
    return nullptr;
}

// The colour of the first curve named `label` or "label · …" in the panel's plot.
std::optional<QRgb> curveColour(QCustomPlot* plot, const QString& label)
{
    for (int i = 0; i < plot->plottableCount(); ++i) {
        const QString name = plot->plottable(i)->name();
        if (name == label || name.startsWith(label + QStringLiteral(" \u00b7")))
            return plot->plottable(i)->pen().color().rgb();
    }
    return std::nullopt;
}

} // namespace

class FitAndColoursTest : public QObject {
    Q_OBJECT
private slots:
    // The default layout, not one a previous test saved on closing.
    void init()
    {
        QSettings().remove("window/state");
        QSettings().remove("window/geometry");
    }

    void everyControlShowsAt1280x800()
    {
        MainWindow w;
        QVERIFY(showWithImages(w, "builtin:fmnist-vit", { kFashion }));
        QTest::qWait(50);
        auto* controls = w.findChild<AttentionControls*>();
        QScrollArea* area = scrollAreaOf(controls);
        QVERIFY(area);
        QVERIFY2(!area->verticalScrollBar()->isVisible(),
                 qPrintable(QString("controls %1 px high in a %2 px dock").arg(controls->height()).arg(area->viewport()->height())));
        QVERIFY(controls->height() <= area->viewport()->height());

        // A 12-layer grid (13 columns with the mean) shows whole in its dock, the tiles shrunk to fit.
        AttentionTileGrid* tiles = w.tiles();
        QScrollArea* tilesArea = scrollAreaOf(tiles);
        QVERIFY(tilesArea);
        QVERIFY2(!tilesArea->verticalScrollBar()->isVisible() && !tilesArea->horizontalScrollBar()->isVisible(),
                 qPrintable(QString("tiles %1x%2 in %3x%4").arg(tiles->width()).arg(tiles->height())
                                .arg(tilesArea->viewport()->width()).arg(tilesArea->viewport()->height())));
        QVERIFY(tiles->tileSize() >= 14 && tiles->tileSize() < 56);
    }

    // The executable on a 1280x800 screen (the offscreen platform's, from a config file): its window, 1280x860 by
    // default, opens no larger than the screen.
    void theWindowOpensNoLargerThanItsScreen()
    {
        QTemporaryDir dir;
        const QString shot = dir.filePath("window.png");
        QFile screen(dir.filePath("screen.json"));
        QVERIFY(screen.open(QIODevice::WriteOnly));
        screen.write(R"({"screens": [{"name": "laptop", "x": 0, "y": 0, "width": 1280, "height": 800, "logicalDpiX": 96,
                         "logicalDpiY": 96, "dpr": 1}]})");
        screen.close();
        QCOMPARE(runWindow(dir.path(), { kFashion + "/test-0000-ankle-boot.png", "--screenshot", shot },
                           "offscreen:configfile=" + screen.fileName()),
                 0);
        const QImage picture(shot);
        QVERIFY(!picture.isNull());
        QVERIFY2(picture.width() <= 1280 && picture.height() <= 800, qPrintable(QString("%1x%2").arg(picture.width()).arg(picture.height())));
        // As high as the screen allows with the window's frame inside it too (the offscreen platform's is 2 px a side).
        QVERIFY2(picture.height() >= 790, qPrintable(QString::number(picture.height())));
    }

    // The query's outline lies outside its patch: the patch's own pixels are drawn as without a query.
    void theQueryOutlineLeavesItsPatchVisible()
    {
        MainWindow w;
        QVERIFY(showWithImages(w, "builtin:fmnist-vit", { kFashion + "/test-0000-ankle-boot.png" }));
        w.setQuery(1 + 3 * 7 + 3); // patch (3, 3) of the 7 x 7 grid
        QTest::qWait(50);
        AttentionView* view = w.view();
        const QImage with = view->grab().toImage();
        view->setQuery(0); // the CLS token: no outline, the same map
        const QImage without = view->grab().toImage();
        const QRect image = view->imageRect();
        const double cw = image.width() / 7.0, ch = image.height() / 7.0;
        const QRect cell(int(image.left() + 3 * cw) + 1, int(image.top() + 3 * ch) + 1, int(cw) - 2, int(ch) - 2);
        int inside = 0, ring = 0;
        for (int y = cell.top(); y <= cell.bottom(); ++y)
            for (int x = cell.left(); x <= cell.right(); ++x)
                inside += with.pixel(x, y) != without.pixel(x, y);
        for (int x = cell.left(); x <= cell.right(); ++x)
            ring += with.pixel(x, cell.top() - 3) != without.pixel(x, cell.top() - 3);
        QCOMPARE(inside, 0);
        QVERIFY2(ring > cell.width() / 2, qPrintable(QString::number(ring))); // the outline is there, just outside
    }

    // SNR diagnostics with four series in the dock: the plot keeps the height its rows need and the dock scrolls;
    // Enlarge shows the same figure in a window of its own. Head kernels of a 12-layer model likewise.
    void figuresScrollRatherThanSqueezeAndOpenLarger()
    {
        MainWindow w;
        QVERIFY(showWithImages(w, "builtin:fmnist-vit", { kFashion + "/test-0000-ankle-boot.png" }));
        QSignalSpy compared(&w, &MainWindow::compareReady);
        w.openCompareModel("builtin:fmnist-quadratic");
        QVERIFY(compared.wait(20000));
        w.runVariant(0.6, 0.3);
        QVERIFY(waitFor([&] { return w.imagePanel()->data().series.size() == 4 && !w.busy(); }));
        FigurePanel* panel = w.imagePanel();
        panel->setFigure(Figure::SnrDiagnostics);
        QTest::qWait(50);
        QVERIFY2(panel->plot()->height() >= snrDiagnosticsFigureSize().height() * 3 / 4, qPrintable(QString::number(panel->plot()->height())));
        panel->setFigure(Figure::HeadKernels);
        QTest::qWait(50);
        QVERIFY(panel->plot()->height() >= 400);
        panel->showLarger();
        QVERIFY(panel->largerView() && panel->largerView()->isVisible());
        auto* larger = panel->largerView()->findChild<QCustomPlot*>();
        QVERIFY(larger);
        QCOMPARE(larger->plottableCount(), panel->plot()->plottableCount());
        QVERIFY(panel->largerView()->height() > panel->height());
        panel->largerView()->close();
    }

    // The compared model's curves keep their colour when a variant is added; the variant's differ from both.
    void aComparedModelKeepsItsColour()
    {
        MainWindow w;
        QVERIFY(showWithImages(w, "builtin:fmnist-vit", { kFashion + "/test-0000-ankle-boot.png" }));
        QSignalSpy compared(&w, &MainWindow::compareReady);
        w.openCompareModel("builtin:fmnist-quadratic");
        QVERIFY(compared.wait(20000));
        QVERIFY(waitFor([&] { return w.imagePanel()->data().series.size() == 2 && !w.busy(); }));
        w.imagePanel()->setFigure(Figure::TokenSimilarity);
        const auto before = curveColour(w.imagePanel()->plot(), "fmnist-quadratic");
        QVERIFY(before);
        w.runVariant(0.6, 0.3);
        QVERIFY(waitFor([&] { return w.imagePanel()->data().series.size() == 4 && !w.busy(); }));
        QCOMPARE(curveColour(w.imagePanel()->plot(), "fmnist-quadratic"), before);
        const auto variant = curveColour(w.imagePanel()->plot(), "fmnist-vit (NeuTRENO 0.6, Boost 0.3)");
        QVERIFY(variant && *variant != *before && *variant != *curveColour(w.imagePanel()->plot(), "fmnist-vit"));
    }
};

static const int registered = registerTest<FitAndColoursTest>();

#include "FitAndColoursTest.moc"
