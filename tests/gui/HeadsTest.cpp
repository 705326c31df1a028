// Head importance and the query-key map in the window (docs/analyses.md sections 8 and 9): the image set's head
// ablation drawn and shown on the tiles, one head ablated on the current image with the prediction it leaves (and
// nothing of it left on another image), and the Query-key map dock following the head and the clicks on its points.
#include "GuiTestSupport.h"
#include "gui/MainWindow.h"

#include <figures/FigurePanel.h>
#include <attnscope/Analyses.h>
#include <attnscope/Datasets.h>
#include <attnscope/Image.h>
#include <attnscope/QueryKey.h>

#include <QDockWidget>
#include <QMenu>
#include <QTemporaryDir>
#include <QCheckBox>
#include <QtTest>

#include <cmath>
#include <map>

using namespace guitest;
using namespace attnscope;

namespace {

const QString kFashion = QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/../resources/samples/fashion-mnist");

QStringList fashionFiles()
{
    QStringList paths;
    for (const QString& name : QDir(kFashion).entryList(QDir::Files, QDir::Name))
        paths << kFashion + "/" + name;
    return paths;
}

Tensor inputOf(const Model& model, const QString& path)
{
    auto image = decodeImage(path.toStdString());
    return image ? model.prepare(*image)->input : Tensor();
}

// Shows `w` at 1280 x 800 with fmnist-vit-d4 and `images` open, the first traced.
bool openWithImages(MainWindow& w, const QStringList& images)
{
    w.resize(1280, 800);
    w.show();
    QSignalSpy modelReady(&w, &MainWindow::modelReady);
    QSignalSpy imageReady(&w, &MainWindow::imageReady);
    w.openModel(QStringLiteral("builtin:fmnist-vit-d4"));
    if (!modelReady.wait(20000))
        return false;
    w.addImages(images);
    return imageReady.wait(20000) && w.current();
}

} // namespace

class HeadsTest : public QObject {
    Q_OBJECT
private slots:
    // The samples in class folders ("t-shirt" names no class of Fashion-MNIST's): the set's ablation is the engine's
    // per image, its accuracy change counts the nine images of known class, the figure has data and the tiles show it.
    void imageSetAblationShowsOnTheTilesAndInTheFigure()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QStringList paths;
        for (const QString& path : fashionFiles()) {
            const QString folder = QFileInfo(path).completeBaseName().mid(10); // test-0000-ankle-boot
            QDir(dir.path()).mkpath(folder);
            const QString copy = dir.path() + "/" + folder + "/" + QFileInfo(path).fileName();
            QVERIFY(QFile::copy(path, copy));
            paths << copy;
        }
        MainWindow w;
        QVERIFY(openWithImages(w, paths));
        QSignalSpy finished(&w, &MainWindow::setFinished);
        w.setSetAblation(true);
        w.analyseImageSet();
        QVERIFY(finished.wait(60000));
        QVERIFY(finished.last().at(0).toBool());
        const auto summary = w.setSummary();
        QVERIFY(summary);
        QCOMPARE(int(summary->ablation.size()), 16);
        std::map<std::pair<int, int>, double> kl;
        const auto model = w.model()->local;
        for (const QString& path : w.images()->paths()) {
            auto a = headAblation(*model, inputOf(*model, path));
            QVERIFY(a);
            for (const auto& h : a->heads)
                kl[{ h.layer, h.head }] += h.kl / 10;
        }
        for (const auto& r : summary->ablation) {
            QCOMPARE(r.kl.n, int64_t(10));
            QCOMPARE(r.accuracy.n, int64_t(9));
            QVERIFY2(std::fabs(r.kl.mean - kl[{ r.layer, r.head }]) <= 1e-6 * std::max(1e-3, kl[{ r.layer, r.head }]),
                     qPrintable(QStringLiteral("layer %1 head %2").arg(r.layer).arg(r.head)));
        }
        QVERIFY(figureHasData(Figure::HeadAblation, w.setPanel()->data()));
        QCOMPARE(QString::fromStdString(w.setPanel()->data().series.front().ablationMode), QStringLiteral("zero"));

        QVERIFY(w.current());
        const QImage before = w.tiles()->grab().toImage();
        bool offered = false; // "Head importance" is offered once the set's ablation is there (issue 44, walk item f)
        for (auto* box : w.findChildren<QCheckBox*>())
            offered = offered || (box->text() == QStringLiteral("Head importance") && box->isEnabled());
        QVERIFY(offered);
        w.setHeadImportance(true);
        QVERIFY(w.tiles()->hasImportance());
        QVERIFY(differingPixels(before, w.tiles()->grab().toImage()) > 20);
        const auto at = w.tiles()->tileAt(QPoint(40, 40));
        QVERIFY(at && at->second >= 0);
        QVERIFY2(w.tiles()->hoverText(QPoint(40, 40)).contains("ablated over 10 images: KL"), qPrintable(w.tiles()->hoverText(QPoint(40, 40))));
        w.setHeadImportance(false);
        QVERIFY(!w.tiles()->hasImportance());
    }

    // Ablating a head on the current image: the footer says what the prediction becomes, as the engine computes it; on
    // another image the line is gone (never a stale answer); restoring clears it.
    void ablatingAHeadShowsThePredictionItLeaves()
    {
        MainWindow w;
        QVERIFY(openWithImages(w, fashionFiles().mid(0, 2)));
        QSignalSpy imageReady(&w, &MainWindow::imageReady);
        QSignalSpy shown(&w, &MainWindow::ablationShown);
        w.ablateHead(1, 2);
        QTRY_VERIFY_WITH_TIMEOUT(w.footer(0)->ablationText().startsWith("Layer 1 head 2 ablated:"), 20000);
        QVERIFY(shown.count() > 0);
        auto a = headAblation(*w.model()->local, inputOf(*w.model()->local, w.current()->path), AblationMode::Zero, {}, 0, { HeadRef { 1, 2 } });
        QVERIFY(a);
        const QString kl = QStringLiteral("KL %1").arg(a->heads.front().kl, 0, 'g', 3);
        QVERIFY2(w.footer(0)->ablationText().contains(kl), qPrintable(w.footer(0)->ablationText() + " / " + kl));
        const QString label = QString::fromStdString(w.model()->info().labels[size_t(a->heads.front().predicted)]);
        QVERIFY2(w.footer(0)->ablationText().contains("→ " + label), qPrintable(w.footer(0)->ablationText()));

        w.selectImage(1);
        QVERIFY(imageReady.wait(20000));
        QCOMPARE(w.current()->path, w.images()->paths().at(1));
        QCOMPARE(w.footer(0)->ablationText(), QString());
        // From the tile's context menu: layer 1, head 0's tile, then "Restore every head".
        const QPoint tile(40, 40);
        QCOMPARE(w.tiles()->tileAt(tile), (std::optional<std::pair<int, int>>({ 1, 0 })));
        auto menu = w.tiles()->tileMenu(tile);
        QVERIFY(menu);
        QCOMPARE(menu->actions().size(), 1);
        menu->actions().front()->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(w.footer(0)->ablationText().startsWith("Layer 1 head 0 ablated:"), 20000);
        menu = w.tiles()->tileMenu(tile);
        QCOMPARE(menu->actions().size(), 2);
        menu->actions().back()->trigger();
        QCOMPARE(w.footer(0)->ablationText(), QString());
        QVERIFY(!w.tiles()->tileMenu(QPoint(2, 2))); // the labels: no menu
    }

    // The dock maps the selected head over the strip's images as the engine does; a click on a point makes its image and
    // token the query; the mean of heads has no map.
    void queryKeyMapFollowsTheHeadAndClicks()
    {
        MainWindow w;
        const QStringList files = fashionFiles().mid(0, 3);
        QVERIFY(openWithImages(w, files));
        auto* dock = w.findChild<QDockWidget*>("queryKeyDock");
        QVERIFY(dock);
        dock->raise();
        QTRY_VERIFY_WITH_TIMEOUT(w.queryKeyView()->isVisible(), 5000);
        w.setHead(HeadView::Mean);
        QVERIFY(w.queryKeyView()->message().startsWith("Choose a head"));
        w.setLayer(2);
        w.setHead(HeadChoice::single(1));
        QTRY_VERIFY_WITH_TIMEOUT(w.queryKeyView()->map() && w.queryKeyView()->map()->head == 1, 20000);
        const auto map = w.queryKeyView()->map();
        std::vector<Tensor> inputs;
        for (const QString& f : files)
            inputs.push_back(inputOf(*w.model()->local, f));
        auto engine = queryKeyMap(*w.model()->local, inputs, 2, 1);
        QVERIFY(engine);
        QCOMPARE(map->points.size(), engine->points.size());
        for (size_t i = 0; i < map->points.size(); ++i)
            QCOMPARE(map->points[i].x, engine->points[i].x);

        // Coloured by patch row: another picture of the same map.
        const QImage byKind = w.queryKeyView()->grab().toImage();
        w.queryKeyView()->setColouring(QueryKeyColouring::Row);
        QVERIFY(differingPixels(byKind, w.queryKeyView()->grab().toImage()) > 100);
        w.queryKeyView()->setColouring(QueryKeyColouring::Kind);

        // The query of the third image's token 7.
        size_t index = 0;
        while (!(map->points[index].image == 2 && map->points[index].token == 7 && !map->points[index].key))
            ++index;
        const QPoint at = w.queryKeyView()->pointPosition(index).toPoint();
        QVERIFY(w.queryKeyView()->hoverText(at).contains(QFileInfo(files[2]).completeBaseName()));
        // A click takes the point nearest it (another may overlap the one aimed at): its image and token.
        const auto hit = w.queryKeyView()->pointAt(at);
        QVERIFY(hit.has_value());
        const QueryKeyPoint taken = map->points[*hit];
        QTest::mouseClick(w.queryKeyView(), Qt::LeftButton, {}, at);
        QTRY_VERIFY_WITH_TIMEOUT(w.current() && w.current()->path == w.images()->paths().at(taken.image), 20000);
        QCOMPARE(w.query(), taken.token);

        // By t-SNE: the engine's, seeded as the engine seeds it.
        w.setQueryKeyMethod(QueryKeyMethod::Tsne);
        QTRY_VERIFY_WITH_TIMEOUT(w.queryKeyView()->map() && w.queryKeyView()->map()->method == QueryKeyMethod::Tsne, 60000);
        QueryKeyOptions tsne;
        tsne.method = QueryKeyMethod::Tsne;
        auto engineTsne = queryKeyMap(*w.model()->local, inputs, 2, 1, tsne);
        QVERIFY(engineTsne);
        QCOMPARE(w.queryKeyView()->map()->points.front().x, engineTsne->points.front().x);
    }

    // A Swin block's map is of its stage's tokens (docs/analyses.md, "Hierarchical models"): the engine's, the query's
    // patch ringed as its stage token, and a click on a point makes that token's top-left patch the query.
    void aSwinsQueryKeyMapIsOfItsStagesTokens()
    {
        MainWindow w;
        const QStringList files = fashionFiles().mid(0, 2);
        QVERIFY(showWithImages(w, QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/golden/swin/timm_swin"), files));
        auto* dock = w.findChild<QDockWidget*>("queryKeyDock");
        QVERIFY(dock);
        dock->raise();
        QTRY_VERIFY_WITH_TIMEOUT(w.queryKeyView()->isVisible(), 5000);
        w.setQuery(5 * 16 + 6); // patch (5, 6) of the first grid: token (2, 3) of stage 2's 8 x 8
        w.setLayer(3);
        w.setHead(HeadChoice::single(3)); // stage 2 has four heads
        QTRY_VERIFY_WITH_TIMEOUT(w.queryKeyView()->map() && w.queryKeyView()->map()->layer == 3 && w.queryKeyView()->map()->head == 3, 20000);
        const auto map = w.queryKeyView()->map();
        QCOMPARE(map->stage, 1);
        QCOMPARE(map->tokens, 64);
        std::vector<Tensor> inputs;
        for (const QString& f : files)
            inputs.push_back(inputOf(*w.model()->local, f));
        auto engine = queryKeyMap(*w.model()->local, inputs, 3, 3);
        QVERIFY2(engine, engine.ok() ? "" : engine.message().c_str());
        QCOMPARE(map->points.size(), engine->points.size());
        for (size_t i = 0; i < map->points.size(); ++i)
            QCOMPARE(map->points[i].y, engine->points[i].y);
        QCOMPARE(w.queryKeyView()->highlight(), (std::optional<std::pair<int, int>>({ 0, 2 * 8 + 3 })));

        // The second image's key of token (6, 1): its top-left patch (12, 2) becomes the query.
        size_t index = 0;
        while (!(map->points[index].image == 1 && map->points[index].token == 6 * 8 + 1 && map->points[index].key))
            ++index;
        const QPoint at = w.queryKeyView()->pointPosition(index).toPoint();
        const auto hit = w.queryKeyView()->pointAt(at);
        QVERIFY(hit.has_value());
        const QueryKeyPoint taken = map->points[*hit];
        QTest::mouseClick(w.queryKeyView(), Qt::LeftButton, {}, at);
        QTRY_VERIFY_WITH_TIMEOUT(w.current() && w.current()->path == w.images()->paths().at(taken.image), 20000);
        QCOMPARE(w.query(), (taken.row * 2) * 16 + taken.col * 2);
        QTRY_COMPARE_WITH_TIMEOUT(w.queryKeyView()->highlight(), (std::optional<std::pair<int, int>>({ taken.image, taken.token })), 20000);
    }

    // An unreadable image in the strip: the map leaves it out; selected after a good one, nothing of the good one's
    // ablation or query stays (the footer's line, the ringed query).
    void anUnreadableImageLeavesNothingOfTheOneBefore()
    {
        QTemporaryDir dir;
        QFile bad(dir.filePath("broken.png"));
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write("this is not a PNG");
        bad.close();
        MainWindow w;
        QVERIFY(openWithImages(w, { fashionFiles()[0], bad.fileName(), fashionFiles()[1] }));
        auto* dock = w.findChild<QDockWidget*>("queryKeyDock");
        QVERIFY(dock);
        dock->raise();
        w.setLayer(1);
        w.setHead(HeadChoice::single(2));
        QTRY_VERIFY_WITH_TIMEOUT(w.queryKeyView()->map(), 20000);
        QCOMPARE(w.queryKeyView()->map()->images, 2);
        QCOMPARE(w.queryKeyView()->highlight(), (std::optional<std::pair<int, int>>({ 0, w.query() })));
        w.ablateHead(1, 2);
        QTRY_VERIFY_WITH_TIMEOUT(w.footer(0)->ablationText().startsWith("Layer 1 head 2 ablated:"), 20000);

        QSignalSpy errors(&w, &MainWindow::errorShown);
        w.selectImage(1);
        QVERIFY(errors.wait(20000));
        QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), 20000);
        QCOMPARE(w.footer(0)->ablationText(), QString());
        QVERIFY(w.tiles()->isEmpty());
        QVERIFY(!w.queryKeyView()->highlight().has_value());
    }

    // The executable's options for pictures of these views (scripts/screenshots.sh): the set ablated, a head ablated, the
    // dock raised; any error the window shows would exit with 1.
    void screenshotOptionsDriveTheViews()
    {
        QTemporaryDir dir;
        const QString shot = dir.filePath("heads.png");
        QCOMPARE(runWindow(dir.path(), { "builtin:fmnist-vit-d4", fashionFiles()[0], fashionFiles()[1], "--analyse-set", "--set-ablation",
                                         "--layer", "2", "--head", "1", "--ablate", "1,0", "--query-key-map", "--screenshot", shot }),
                 0);
        const QImage picture(shot);
        QVERIFY(!picture.isNull());
        QVERIFY(distinctColours(picture) > 50);
    }
};

static const int registered = registerTest<HeadsTest>();

#include "HeadsTest.moc"
