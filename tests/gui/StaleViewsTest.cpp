// Nothing stale (issue 32, item 1): every view, tile, label and plot shows the current image, model and head, or is
// visibly cleared with the reason. Each test asserts on what is displayed: the view's rendering and text, the tiles,
// the Query line, the image dock's curves, status and figure text, the hover text.
#include "GuiTestSupport.h"

#include <cmath>
#include <cstring>
#include "gui/AttentionControls.h"
#include "gui/MainWindow.h"
#include "gui/ModelSlot.h"

#include <figures/FigurePanel.h>
#include <plots/PlotHover.h>
#include <attnscope/Analyses.h>
#include <attnscope/Perturbation.h>
#include <qcustomplot.h>

#include <QDir>
#include <QFile>
#include <QSpinBox>
#include <QStatusBar>

#include <algorithm>
#include <QLabel>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace guitest;
using namespace attnscope;

namespace {

// The image dock's curves are in for one series (the SNR last of them).
bool waitForCurves(MainWindow& w, int timeoutMs = 60000)
{
    QElapsedTimer timer;
    timer.start();
    while (timer.elapsed() < timeoutMs) {
        const auto& series = w.imagePanel()->data().series;
        if (!series.empty() && !series.front().snr.empty())
            return true;
        QTest::qWait(50);
    }
    return false;
}

QString queryLine(MainWindow& w) { return w.findChild<AttentionControls*>()->queryText(); }
QString statusText(MainWindow& w) { return w.statusBar()->currentMessage(); }

// With ATTNSCOPE_TEST_SHOTS=DIR, the window as the test left it, for a person to look at.
void shot(QWidget& w, const QString& name)
{
    if (const QString dir = qEnvironmentVariable("ATTNSCOPE_TEST_SHOTS"); !dir.isEmpty())
        w.grab().save(QDir(dir).filePath(name));
}

// Every text element of the plot (title, subtitle, notes), joined.
QString plotTexts(QCustomPlot* plot)
{
    QStringList texts;
    for (auto* element : plot->findChildren<QCPTextElement*>())
        texts << element->text();
    for (int i = 0; i < plot->itemCount(); ++i)
        if (auto* text = qobject_cast<QCPItemText*>(plot->item(i)))
            texts << text->text();
    return texts.join(QLatin1Char('\n'));
}

// Pixels of the view as drawn on screen that are coloured (the attention map's viridis); a line of text on the
// window's background has none, whatever its anti-aliasing.
int colouredPixels(QWidget* view)
{
    const QImage image = view->grab().toImage();
    int n = 0;
    for (int y = 0; y < image.height(); y += 2)
        for (int x = 0; x < image.width(); x += 2) {
            const QColor c = image.pixelColor(x, y);
            n += std::max({ c.red(), c.green(), c.blue() }) - std::min({ c.red(), c.green(), c.blue() }) > 40;
        }
    return n;
}

} // namespace

class StaleViewsTest : public QObject {
    Q_OBJECT
private slots:
    // An unreadable image selected after a good one: its error in the view, no tiles, no Query line, no curves; the
    // previous image's picture is nowhere.
    void unreadableImageClearsEveryViewAndSaysWhy()
    {
        QTemporaryDir dir;
        QFile bad(dir.filePath("broken.jpg"));
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write("this is not a JPEG");
        bad.close();
        MainWindow w;
        QVERIFY(showWithImages(w, QStringLiteral("builtin:fmnist-vit-d4"), { kSamples + "/fashion-mnist/test-0000-ankle-boot.png", bad.fileName() }));
        QSignalSpy imageReady(&w, &MainWindow::imageReady);
        QVERIFY(waitForCurves(w));
        QVERIFY(!w.view()->rendered().isNull());
        QVERIFY(!w.tiles()->isEmpty());
        QVERIFY(!queryLine(w).isEmpty());
        QVERIFY(colouredPixels(w.view()) > 1000);

        QSignalSpy errors(&w, &MainWindow::errorShown);
        w.selectImage(1);
        QVERIFY(errors.wait(20000));
        QVERIFY2(errors.last().at(0).toString().contains("broken.jpg"), qPrintable(errors.last().at(0).toString()));
        QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), 20000);
        QVERIFY(w.view()->rendered().isNull());
        QVERIFY2(w.view()->message().contains("broken.jpg"), qPrintable(w.view()->message()));
        QVERIFY2(colouredPixels(w.view()) == 0, "the view still draws a picture"); // text on the background only
        QVERIFY(w.tiles()->isEmpty());
        QVERIFY2(queryLine(w).isEmpty(), qPrintable(queryLine(w)));
        QVERIFY(!w.current());
        QVERIFY(w.imagePanel()->data().series.empty());
        QVERIFY(w.imagePanel()->data().decomposition == nullptr);
        QVERIFY2(w.imagePanel()->status().contains("broken.jpg"), qPrintable(w.imagePanel()->status())); // the dock names the file
        shot(w, "unreadable-image.png");

        // The good image again: everything back.
        w.selectImage(0);
        QVERIFY(imageReady.wait(20000));
        QVERIFY(w.view()->message().isEmpty());
        QVERIFY(colouredPixels(w.view()) > 1000);
        QVERIFY(!w.tiles()->isEmpty());
        QVERIFY(waitForCurves(w));
    }

    // A folder of a family attnscope does not run (timm's relpos ViT), opened after a good model: refused in one line naming
    // the architecture and what it lacks; nothing of it is shown, the model that was open stays open and current. Then
    // SigLIP's folder: its attention-pool head's map is the layer after the last, "pool", in the layer box and the tiles.
    // A Swin (docs/analyses.md, "Hierarchical models"): a clicked patch's map is its window's row at the block's stage
    // grid, the rest drawn as outside the window; the tiles are per block with each stage's heads; a head the block has
    // not shows the mean; the rollout and the token norms say why there are none, in place of a map.
    void aSwinShowsItsWindowsPerStage()
    {
        MainWindow w;
        QVERIFY(showWithImages(w, QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/golden/swin/timm_swin"),
                               { kSamples + "/fashion-mnist/test-0000-ankle-boot.png" }));
        QVERIFY(w.model()->config().hierarchical());
        QVERIFY(!w.tiles()->isEmpty());
        w.setQuery(5 * 16 + 6); // patch (5, 6) of the 16 x 16 grid
        w.setLayer(2);
        w.setHead(HeadChoice::single(1));
        QTRY_VERIFY_WITH_TIMEOUT(w.view()->map().has_value(), 20000);
        const AttentionMap& map = *w.view()->map();
        QCOMPARE(map.patches.size(0), int64_t(16)); // stage 1: the patch grid
        int outside = 0;
        for (int64_t i = 0; i < map.patches.numel(); ++i)
            outside += std::isnan(map.patches.data()[i]);
        QCOMPARE(outside, 256 - 16); // a 4 x 4 window
        QVERIFY(colouredPixels(w.view()) > 100);
        QVERIFY2(queryLine(w).contains("patch (5, 6) · stage 1, block 2 (shifted) · token (5, 6) of 16×16, window"),
                 qPrintable(queryLine(w)));
        // block 3 is stage 2's first (8 x 8 tokens, 4 heads); head 5 is past its heads: the mean
        w.setLayer(3);
        w.setHead(HeadChoice::single(5));
        QTRY_VERIFY_WITH_TIMEOUT(w.view()->map() && w.view()->map()->patches.size(0) == 8, 20000);
        const Trace& t = w.current()->trace;
        const AttentionMap mean = attentionMap(t, 3, -1, 5 * 16 + 6);
        QCOMPARE(std::memcmp(w.view()->map()->patches.data(), mean.patches.data(), 64 * sizeof(float)), 0);
        QVERIFY(queryLine(w).contains("stage 2, block 1 · token (2, 3) of 8×8"));
        // hovering a patch outside the window says so
        const QRect r = w.view()->imageRect();
        QVERIFY2(w.view()->hoverText(r.bottomRight() - QPoint(2, 2)).contains("outside the window"),
                 qPrintable(w.view()->hoverText(r.bottomRight() - QPoint(2, 2))));
        w.setHead(HeadChoice(HeadView::Rollout));
        QTRY_VERIFY_WITH_TIMEOUT(queryLine(w).startsWith("no rollout of a hierarchical model"), 20000);
        QVERIFY(!w.view()->map() || w.view()->map()->patches.numel() == 0);
        w.setHead(HeadChoice(HeadView::TokenNorms));
        QTRY_VERIFY_WITH_TIMEOUT(queryLine(w).startsWith("token norms: not of a Swin yet"), 20000);
        // GAE: refused in one line saying why; a head again: its map, the refusal gone
        QSignalSpy errors(&w, &MainWindow::errorShown);
        w.setHead(HeadChoice(HeadView::Gae));
        QVERIFY(errors.wait(20000));
        QVERIFY2(errors.last().at(0).toString().contains("class relevance (GAE, Grad-CAM) is not of a Swin"),
                 qPrintable(errors.last().at(0).toString()));
        w.setHead(HeadChoice::single(0));
        QTRY_VERIFY_WITH_TIMEOUT(w.view()->map() && w.view()->map()->patches.size(0) == 8 && w.view()->message().isEmpty(), 20000);
        QVERIFY(colouredPixels(w.view()) > 100);
        // the image's curves came (the analyses a Swin takes)
        QVERIFY(waitForCurves(w));
    }

    void aRefusedFamilyLeavesTheOpenModelAndAPoolHeadIsTheLastLayer()
    {
        MainWindow w;
        QVERIFY(showWithImages(w, QStringLiteral("builtin:fmnist-vit-d4"), { kSamples + "/fashion-mnist/test-0000-ankle-boot.png" }));
        const auto before = w.model();
        QSignalSpy errors(&w, &MainWindow::errorShown);
        w.openModel(QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/golden/families/timm_relpos"));
        QVERIFY(errors.wait(20000));
        const QString message = errors.last().at(0).toString();
        QVERIFY2(message.contains("vit_relpos_small_patch16_224: attnscope does not run relative position embedding")
                     && !message.contains('\n'),
                 qPrintable(message));
        QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), 20000);
        QCOMPARE(w.model(), before);
        QVERIFY(w.current() && !w.view()->rendered().isNull());
        QVERIFY(!w.tiles()->isEmpty());

        QSignalSpy modelReady(&w, &MainWindow::modelReady);
        QSignalSpy imageReady(&w, &MainWindow::imageReady);
        w.openModel(QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/golden/families/timm_siglip"));
        QVERIFY(modelReady.wait(20000));
        QVERIFY(imageReady.wait(20000));
        const int depth = w.model()->config().depth;
        QVERIFY(w.current()->trace.poolAttention.numel() > 0);
        auto* layerBox = w.findChild<AttentionControls*>()->findChild<QSpinBox*>();
        QVERIFY(layerBox);
        QCOMPARE(layerBox->maximum(), depth + 1);
        const int rowsBefore = w.tiles()->sizeHint().height();
        w.setLayer(depth + 1);
        QCOMPARE(layerBox->text(), QStringLiteral("pool"));
        shot(w, "siglip-pool-layer.png");
        QVERIFY2(queryLine(w).contains("attention-pool"), qPrintable(queryLine(w)));
        QVERIFY(!w.view()->rendered().isNull());
        // The view shows the pool's map (its heads' mean), not the last layer's row of the query.
        QVERIFY(w.view()->map());
        const AttentionMap pool = attentionMap(w.current()->trace, depth + 1, -1, 0);
        QVERIFY(std::equal(pool.patches.data(), pool.patches.data() + pool.patches.numel(), w.view()->map()->patches.data()));
        QVERIFY(!std::equal(pool.patches.data(), pool.patches.data() + pool.patches.numel(),
                            attentionMap(w.current()->trace, depth, -1, w.query()).patches.data()));
        QVERIFY2(statusText(w).contains("layer pool"), qPrintable(statusText(w)));
        // The tiles' last row is the pool's: named so when hovered, and no head of it offered for ablation.
        QPoint last;
        int rows = 0;
        for (int y = 0; y < w.tiles()->height(); ++y)
            if (const auto tile = w.tiles()->tileAt(QPoint(40, y)); tile && tile->first > rows) {
                rows = tile->first;
                last = QPoint(40, y);
            }
        QCOMPARE(rows, depth + 1);
        QVERIFY2(w.tiles()->hoverText(last).startsWith("attention pool"), qPrintable(w.tiles()->hoverText(last)));
        QVERIFY(!w.tiles()->tileMenu(last));
        QVERIFY(rowsBefore > 0);
        shot(w, "siglip-pool-layer.png");
    }

    // A model switch clears the tiles and the Query line until the new model's trace comes, then shows its own.
    void modelSwitchResetsTilesAndQueryLine()
    {
        MainWindow w;
        QVERIFY(showWithImages(w, QStringLiteral("builtin:fmnist-vit-d4"), { kSamples + "/fashion-mnist/test-0000-ankle-boot.png" }));
        QSignalSpy modelReady(&w, &MainWindow::modelReady);
        QSignalSpy imageReady(&w, &MainWindow::imageReady);
        QVERIFY(!w.tiles()->isEmpty());
        const int rowsBefore = w.tiles()->sizeHint().height();
        QVERIFY(!queryLine(w).isEmpty());

        bool tilesEmptyAtLoad = false, queryEmptyAtLoad = false, viewEmptyAtLoad = false;
        connect(&w, &MainWindow::modelReady, this, [&] {
            tilesEmptyAtLoad = w.tiles()->isEmpty();
            queryEmptyAtLoad = queryLine(w).isEmpty();
            viewEmptyAtLoad = w.view()->rendered().isNull();
        });
        w.openModel(QStringLiteral("builtin:fmnist-vit")); // 12 layers instead of 4
        QVERIFY(modelReady.wait(30000));
        QVERIFY(tilesEmptyAtLoad);
        QVERIFY(queryEmptyAtLoad);
        QVERIFY(viewEmptyAtLoad);
        QVERIFY(imageReady.wait(30000));
        QVERIFY(!w.tiles()->isEmpty());
        QVERIFY2(w.tiles()->sizeHint().height() > 2 * rowsBefore, "the tiles are not the 12-layer model's");
        QVERIFY(!queryLine(w).isEmpty());
    }

    // An analysis that fails (FGSM on a model without a classification head): its curves go, the dock says why, and
    // no curve stays under a subtitle naming a perturbation that did not run.
    void failedAnalysisRemovesTheCurvesAndSaysWhy()
    {
        MainWindow w;
        // CLIP's vision tower: its head is a projection, not a classifier
        QVERIFY(showWithImages(w, QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/golden/fixtures/hf_clip_vision"), { kImage }));
        QVERIFY(w.model()->config().headIsProjection);
        QVERIFY(waitForCurves(w));
        QSignalSpy errors(&w, &MainWindow::errorShown);
        w.setPerturbation(*Perturbation::parse("fgsm:eps=8"));
        QVERIFY(errors.wait(20000));
        QVERIFY2(errors.last().at(0).toString().contains("classification head"), qPrintable(errors.last().at(0).toString()));
        QTRY_VERIFY_WITH_TIMEOUT(w.imagePanel()->data().series.empty(), 20000);
        w.imagePanel()->setFigure(Figure::Snr);
        w.imagePanel()->plot()->replot();
        QVERIFY2(!plotTexts(w.imagePanel()->plot()).contains("fgsm"), qPrintable(plotTexts(w.imagePanel()->plot())));
        QVERIFY2(w.imagePanel()->status().contains("classification head"), qPrintable(w.imagePanel()->status())); // why its curves went
        QVERIFY(!w.view()->rendered().isNull()); // the image itself ran: its attention stays
        shot(w, "failed-analysis.png");
    }

    // The labels say what is shown: GAE is not called Grad-CAM, "mean of heads" is not head 0, and hovering a
    // heatmap names whole tokens.
    void labelsNameWhatIsShown()
    {
        MainWindow w;
        QVERIFY(showWithImages(w, QStringLiteral("builtin:fmnist-vit-d4"), { kSamples + "/fashion-mnist/test-0000-ankle-boot.png" }));
        QVERIFY(waitForCurves(w));

        QSignalSpy relevanceReady(w.slot(0), &ModelSlot::relevanceReady);
        w.setHead(HeadView::Gae);
        QVERIFY(relevanceReady.wait(20000));
        QVERIFY2(queryLine(w).contains("GAE") && !queryLine(w).contains("Grad-CAM"), qPrintable(queryLine(w)));
        w.setHead(HeadView::GradCam);
        QVERIFY2(queryLine(w).contains("Grad-CAM") && !queryLine(w).contains("GAE"), qPrintable(queryLine(w)));

        w.imagePanel()->setFigure(Figure::LogitDecomposition);
        w.setHead(HeadView::Mean);
        QCustomPlot* plot = w.imagePanel()->plot();
        plot->replot();
        QVERIFY2(plotTexts(plot).contains("mean of heads") && !plotTexts(plot).contains("head 0"), qPrintable(plotTexts(plot)));
        w.setHead(HeadChoice::single(1));
        plot->replot();
        QVERIFY2(plotTexts(plot).contains("head 1"), qPrintable(plotTexts(plot)));

        // Hovering a cell names its query and key tokens as whole numbers, wherever in the cell the pointer is.
        QCPColorMap* map = nullptr;
        for (int i = 0; i < plot->plottableCount() && !map; ++i)
            map = qobject_cast<QCPColorMap*>(plot->plottable(i));
        QVERIFY(map);
        const QPointF at = map->coordsToPixels(3.3, 5.2); // inside the cell of key 3, query 5
        const QString text = valuesAt(plot, at);
        QVERIFY2(text.contains(QRegularExpression("key token 3\\b")) && text.contains(QRegularExpression("query token 5\\b")),
                 qPrintable(text));
        QVERIFY2(!text.contains(QRegularExpression("token \\d+\\.\\d")), qPrintable(text));
    }
};

static const int registered = registerTest<StaleViewsTest>();
#include "StaleViewsTest.moc"
