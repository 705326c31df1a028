// The desktop window driven as a user would, offscreen: open a model and an image, see the overlay, click a
// patch, change head, export, survive a broken model file.
#include "GuiTestSupport.h"
#include "gui/AttentionControls.h"
#include "gui/MainWindow.h"
#include "gui/ModelSlot.h"

#include <figures/FigurePanel.h>
#include <QComboBox>
#include <QLineEdit>
#include <QStatusBar>
#include <attnscope/Analyses.h>
#include <attnscope/Image.h>

#include <QImage>
#include <cmath>
#include <QLabel>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace guitest;

// Shows `w` with the tv_grid16 fixture and the sample photo open, both done.
bool openFixtureWithImage(MainWindow& w)
{
    w.resize(1200, 800);
    w.show();
    QSignalSpy modelReady(&w, &MainWindow::modelReady);
    QSignalSpy imageReady(&w, &MainWindow::imageReady);
    w.openModel(kFixture);
    if (!modelReady.wait(20000) || !w.model())
        return false;
    w.addImages({ kImage });
    return imageReady.wait(20000) && w.current();
}

class MainWindowTest : public QObject {
    Q_OBJECT
private slots:
    void opensModelAndImageAndFollowsClicks()
    {
        MainWindow w;
        QVERIFY(openFixtureWithImage(w));
        // The status bar says where the engine runs: this machine's CPU (a GPU's name and batch where there is one).
        auto* device = w.findChild<QLabel*>("deviceLabel");
        QVERIFY(device);
        if (w.model()->info().device == "cpu")
            QVERIFY2(device->text().startsWith("CPU · "), qPrintable(device->text()));
        else
            QVERIFY2(device->text().contains(QString::fromStdString(w.model()->info().device)), qPrintable(device->text()));
        QVERIFY(w.current());
        const QImage first = w.view()->rendered();
        QVERIFY(!first.isNull());
        QCOMPARE(w.query(), 0); // CLS by default

        // Click the patch in the lower-right quarter: it becomes the query and the map changes.
        const QRect r = w.view()->imageRect();
        QVERIFY(r.isValid());
        const QPoint target(r.left() + r.width() * 3 / 4, r.top() + r.height() * 3 / 4);
        QTest::mouseClick(w.view(), Qt::LeftButton, {}, target);
        const auto patch = w.view()->patchAt(target);
        QVERIFY(patch.has_value());
        QCOMPARE(w.query(), 1 + patch->y() * 16 + patch->x());
        const QImage clicked = w.view()->rendered();
        QVERIFY(differingPixels(first, clicked) > 50);

        w.setLayer(1);
        w.setHead(HeadChoice::single(0));
        const QImage head0 = w.view()->rendered();
        w.setHead(HeadChoice::single(3));
        QVERIFY(differingPixels(head0, w.view()->rendered()) > 50);

        // The rollout view follows its head fusion and discard share (the controls of the Attention dock).
        w.setHead(HeadView::Rollout);
        auto* controls = w.findChild<AttentionControls*>();
        QVERIFY(controls);
        const QImage meanRollout = w.view()->rendered();
        w.setRollout({ attnscope::HeadFusion::Max, 0.9 });
        QVERIFY(differingPixels(meanRollout, w.view()->rendered()) > 50);
        w.setRollout({});
        QCOMPARE(differingPixels(meanRollout, w.view()->rendered()), 0);
        // The dock's fusion box, as a user edits it, changes the window's state and the map; the state moves the box.
        QComboBox* fusionBox = nullptr;
        for (auto* box : controls->findChildren<QComboBox*>())
            if (box->accessibleName() == QLatin1String("Rollout head fusion"))
                fusionBox = box;
        QVERIFY(fusionBox && fusionBox->isEnabled());
        fusionBox->setCurrentIndex(fusionBox->findData(int(attnscope::HeadFusion::Max)));
        QVERIFY(w.viewSelection().rollout.fusion == attnscope::HeadFusion::Max);
        QVERIFY(differingPixels(meanRollout, w.view()->rendered()) > 50);
        w.setRollout({});
        QCOMPARE(fusionBox->currentData().toInt(), int(attnscope::HeadFusion::Mean));

        // A tile of the layers x heads grid selects its layer and head.
        w.tiles()->resize(w.tiles()->sizeHint());
        QPoint tile;
        for (int y = 0; y < w.tiles()->height() && tile.isNull(); y += 4)
            for (int x = 0; x < w.tiles()->width(); x += 4)
                if (auto t = w.tiles()->tileAt({ x, y }); t && t->first == 2 && t->second == 1) {
                    tile = { x + 8, y + 8 };
                    break;
                }
        QVERIFY(!tile.isNull());
        const QImage before = w.view()->rendered();
        QTest::mouseClick(w.tiles(), Qt::LeftButton, {}, tile);
        QVERIFY(differingPixels(before, w.view()->rendered()) > 50);

        // A variant reruns in the background and its curve joins the plot.
        QSignalSpy variantReady(&w, &MainWindow::variantReady);
        w.runVariant(0.6, 0.3);
        QVERIFY(variantReady.wait(20000));
        QVERIFY(w.variant());
        QVERIFY(w.variant()->trace.neutrenoLambda == 0.6);

        QTemporaryDir dir;
        const QString exported = dir.filePath("view.png");
        QVERIFY(w.exportView(exported));
        QImage back(exported);
        QVERIFY(!back.isNull());
        QVERIFY(back.width() > 10);
    }

    // The relevance views: GAE and Grad-CAM of the predicted class, computed on the worker, then of a chosen class;
    // the map shown is the engine's (classRelevance) for that image and class.
    void relevanceViewsShowTheClassRelevance()
    {
        MainWindow w;
        QVERIFY(openFixtureWithImage(w));
        const QImage attention = w.view()->rendered();
        auto* controls = w.findChild<AttentionControls*>();
        QVERIFY(controls);

        QSignalSpy relevanceReady(w.slot(0), &ModelSlot::relevanceReady);
        w.setHead(HeadView::Gae);
        QVERIFY(relevanceReady.wait(20000));
        QVERIFY(w.slot(0)->relevance());
        const attnscope::Relevance& shown = w.slot(0)->relevance()->relevance;
        auto decoded = attnscope::decodeImage(kImage.toStdString());
        QVERIFY(decoded);
        auto prepared = w.model()->local->prepare(*decoded);
        QVERIFY(prepared);
        auto expected = attnscope::classRelevance(*w.model()->local, prepared->input);
        QVERIFY(expected);
        QCOMPARE(shown.targetClass, expected->targetClass);
        QVERIFY(w.view()->map());
        const attnscope::Tensor& map = w.view()->map()->patches;
        QCOMPARE(map.numel(), expected->gae.numel());
        for (int64_t i = 0; i < map.numel(); ++i)
            QVERIFY(std::abs(map.data()[i] - expected->gae.data()[i]) <= 1e-6f * (1 + std::abs(expected->gae.data()[i])));
        const QImage gae = w.view()->rendered();
        QVERIFY(differingPixels(attention, gae) > 50);

        w.setHead(HeadView::GradCam); // Grad-CAM comes from the same result: no new job
        QCOMPARE(w.view()->map()->patches.data()[0], expected->gradCam.data()[0]);
        QVERIFY(differingPixels(gae, w.view()->rendered()) > 50);

        // Another class: a new job, and its map.
        QComboBox* classBox = nullptr;
        for (auto* box : controls->findChildren<QComboBox*>())
            if (box->accessibleName() == QLatin1String("Relevance class"))
                classBox = box;
        QVERIFY(classBox && classBox->isEnabled());
        const int other = expected->targetClass == 3 ? 4 : 3;
        classBox->setCurrentIndex(classBox->findData(other));
        QVERIFY(relevanceReady.wait(20000));
        QCOMPARE(w.slot(0)->relevance()->relevance.targetClass, other);
        w.setHead(HeadView::Mean);
        QVERIFY(!classBox->isEnabled());
    }

    // "token norms" under Head: the norms of the layer's patch tokens as the map, its high-norm outliers outlined, the
    // Query line with the median and the count; the image dock's High-norm tokens figure has the image's data.
    void tokenNormsViewShowsTheLayersNormsAndOutliers()
    {
        MainWindow w;
        QVERIFY(openFixtureWithImage(w)); // tv_grid16: 3 layers, 16 x 16 patches
        attnscope::AnalysisOptions options = w.slot(0)->analysisOptions();
        options.outlierRatio = 1.2; // random weights: this cut flags a few tokens (TokenNormsGolden)
        w.slot(0)->setAnalysisOptions(options);
        w.setLayer(2);
        w.setHead(HeadView::TokenNorms);
        const attnscope::Trace& t = w.current()->trace;
        const attnscope::TokenNorms expected = attnscope::tokenNorms(t, w.model()->config(), 1.2);
        const attnscope::TokenNormLayer& layer = expected.layers.at(2);
        QVERIFY(!layer.outliers.empty());
        QVERIFY(w.view()->map());
        const attnscope::Tensor& map = w.view()->map()->patches;
        QCOMPARE(map.numel(), int64_t(16 * 16));
        for (int64_t i = 0; i < map.numel(); ++i)
            QVERIFY(std::abs(map.data()[i] - layer.norms[size_t(1 + i)]) <= 1e-5 * layer.norms[size_t(1 + i)]);
        const auto& marked = w.view()->markedPatches();
        QCOMPARE(marked.size(), layer.outliers.size());
        QCOMPARE(marked.front(), QPoint((layer.outliers.front() - 1) % 16, (layer.outliers.front() - 1) / 16));
        auto* controls = w.findChild<AttentionControls*>();
        QVERIFY(controls);
        bool described = false;
        for (auto* label : controls->findChildren<QLabel*>())
            described = described || label->text().startsWith(QStringLiteral("X2 · median %1 · %2 outlier(s)").arg(layer.patchMedian, 0, 'g', 3).arg(layer.outliers.size()));
        QVERIFY(described);
        w.imagePanel()->setFigure(attnscope::Figure::TokenNorms);
        QTRY_VERIFY_WITH_TIMEOUT(attnscope::figureHasData(attnscope::Figure::TokenNorms, w.imagePanel()->data()), 20000);
        w.setHead(HeadView::Mean);
        QVERIFY(w.view()->markedPatches().empty());
    }

    // The Input size field loads the model again at another size (position table resampled) and the image is traced on
    // the new grid; a size that is no multiple of the patch is refused in the status bar and changes nothing.
    void inputSizeFieldRunsTheModelAtAnotherSize()
    {
        MainWindow w;
        QVERIFY(openFixtureWithImage(w)); // tv_grid16: 32 x 32 in patches of 2
        QCOMPARE(w.current()->trace.gridHeight, 16);
        QLineEdit* field = nullptr;
        for (auto* edit : w.findChildren<QLineEdit*>())
            if (edit->accessibleName() == QLatin1String("Input size"))
                field = edit;
        QVERIFY(field);
        QVERIFY(field->placeholderText().startsWith(QStringLiteral("32,32")));

        QSignalSpy modelReady(&w, &MainWindow::modelReady);
        QSignalSpy imageReady(&w, &MainWindow::imageReady);
        field->setText(QStringLiteral("40,24"));
        emit field->editingFinished();
        QVERIFY(modelReady.wait(20000));
        QVERIFY(imageReady.wait(20000));
        QCOMPARE(w.model()->config().imageHeight, 40);
        QCOMPARE(w.model()->info().trainedHeight, 32);
        QCOMPARE(w.current()->trace.gridHeight, 20);
        QCOMPARE(w.current()->trace.gridWidth, 12);
        QCOMPARE(field->text(), QStringLiteral("40,24"));

        field->setText(QStringLiteral("33,33"));
        emit field->editingFinished();
        QVERIFY(w.statusBar()->currentMessage().contains(QStringLiteral("not a multiple of the model's patch size 2")));
        QCOMPARE(field->text(), QStringLiteral("40,24"));
        QVERIFY(!modelReady.wait(500));
    }

    void brokenModelShowsAnErrorAndTheAppCarriesOn()
    {
        QTemporaryDir dir;
        QFile broken(dir.filePath("broken.safetensors"));
        QVERIFY(broken.open(QIODevice::WriteOnly));
        broken.write("\x08\x00\x00\x00\x00\x00\x00\x00{not json", 17);
        broken.close();
        MainWindow w;
        QSignalSpy modelReady(&w, &MainWindow::modelReady);
        QSignalSpy error(&w, &MainWindow::errorShown);
        w.openModel(kFixture);
        QVERIFY(modelReady.wait(20000));
        w.openModel(broken.fileName());
        QVERIFY(error.wait(20000));
        QVERIFY(w.lastError().contains("broken.safetensors"));
        QVERIFY(w.model()); // the previous model stays
        QSignalSpy imageReady(&w, &MainWindow::imageReady);
        w.addImages({ kImage });
        QVERIFY(imageReady.wait(20000));
        QVERIFY(!w.view()->rendered().isNull());
    }

    void imageSetRunsAndCancels()
    {
        MainWindow w;
        QSignalSpy modelReady(&w, &MainWindow::modelReady);
        w.openModel(kFixture);
        QVERIFY(modelReady.wait(20000));
        QTemporaryDir copies;
        w.addImages(copiesOfSample(copies.path(), 400));
        QSignalSpy finished(&w, &MainWindow::setFinished);
        w.analyseImageSet();
        // Cancel once the first partial results (every 20 images) are in, however fast the build is.
        QTRY_VERIFY_WITH_TIMEOUT(w.setSummary() != nullptr, 60000);
        w.cancelImageSet();
        QVERIFY(finished.wait(20000));
        QCOMPARE(finished.last().at(0).toBool(), false); // cancelled half way
        QVERIFY(w.setSummary()); // partial results stay
        QVERIFY(w.setSummary()->images > 0 && w.setSummary()->images < 400);

        MainWindow small;
        QSignalSpy smallReady(&small, &MainWindow::modelReady);
        small.openModel(kFixture);
        QVERIFY(smallReady.wait(20000));
        small.addImages({ QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/../resources/samples") });
        QSignalSpy done(&small, &MainWindow::setFinished);
        small.analyseImageSet();
        QVERIFY(done.wait(60000));
        QCOMPARE(done.last().at(0).toBool(), true);
        QVERIFY(small.setSummary());
        QCOMPARE(small.setSummary()->images, int64_t(14));
        QVERIFY(!small.setSummary()->tokenSimilarity.empty());
        // "Export" writes the CLI's CSVs and every image-set figure, through the same code as the CLI.
        QTemporaryDir out;
        QVERIFY(small.exportImageSet(out.path()));
        for (const char* f : { "token_similarity.csv", "head_centres.csv", "snr.csv", "snr_diagnostics.csv", "token_similarity.png",
                               "snr_diagnostics.pdf", "head_centres.svg", "attention_distance.png" })
            QVERIFY2(QFileInfo(QDir(out.path()).filePath(f)).size() > 100, f);
        QVERIFY(!QImage(QDir(out.path()).filePath("head_centres.png")).isNull());
        for (int i = 0; i < 5; ++i)
            small.showSetFigure(i);
    }

    // One forward set (Model::runBatch: the clean input and its perturbed copy) per selected image and channel: the
    // heatmap's trace and the curves come from the same forwards. It used to be two (a trace job, then an
    // analysis job that ran the clean forward again). The worker counts the forward sets its jobs start.
    void eachSelectionRunsOneForwardSetPerChannel()
    {
        MainWindow w;
        QSignalSpy modelReady(&w, &MainWindow::modelReady);
        w.openModel(QStringLiteral("builtin:fmnist-vit-d4"));
        QVERIFY(modelReady.wait(20000));
        w.addImages({ kSamples + "/fashion-mnist/test-0000-ankle-boot.png", kSamples + "/photos/coffee.png" });
        QCOMPARE(w.images()->rowCount(), 2);
        const QString boot = w.images()->path(0), coffee = w.images()->path(1); // as the strip keeps them
        const ModelSlot* slot = w.slot(0);
        const auto settled = [&](const QString& path, bool variant) {
            const auto has = [&](const auto& result) { return result && result->path == path; };
            return !w.busy() && has(slot->trace()) && has(slot->analysis())
                && (!variant || (has(slot->variantTrace()) && has(slot->variantAnalysis())));
        };
        QTRY_VERIFY_WITH_TIMEOUT(settled(boot, false), 30000);

        QString analysedWhenShown; // the heatmap comes first: the curves are still the previous image's
        connect(&w, &MainWindow::imageReady, this, [&] { analysedWhenShown = slot->analysis()->path; });
        quint64 before = w.forwardSets();
        w.selectImage(1);
        QTRY_VERIFY_WITH_TIMEOUT(settled(coffee, false), 30000);
        QCOMPARE(w.forwardSets() - before, quint64(1));
        QCOMPARE(analysedWhenShown, boot);
        QVERIFY(!slot->analysis()->summary.snr.empty()); // the perturbed input went through as well

        // A variant is one channel more: one forward set when it is set, two per selection.
        before = w.forwardSets();
        w.runVariant(0.6, 0.3);
        QTRY_VERIFY_WITH_TIMEOUT(settled(coffee, true), 30000);
        QCOMPARE(w.forwardSets() - before, quint64(1));
        QCOMPARE(slot->variantTrace()->trace.neutrenoLambda, 0.6);
        before = w.forwardSets();
        w.selectImage(0);
        QTRY_VERIFY_WITH_TIMEOUT(settled(boot, true), 30000);
        QCOMPARE(w.forwardSets() - before, quint64(2));

        // Another perturbation reruns the curves (the clean forward is part of their set), not the heatmap.
        QSignalSpy imageReady(&w, &MainWindow::imageReady);
        before = w.forwardSets();
        w.setPerturbation(*attnscope::Perturbation::parse("blur:sigma=1.5"));
        const auto blurred = [](const auto& analysis) {
            return analysis && !analysis->summary.snr.empty()
                && analysis->summary.snr.front().perturbation == "blur:sigma=1.5";
        };
        QTRY_VERIFY_WITH_TIMEOUT(!w.busy() && blurred(slot->analysis()) && blurred(slot->variantAnalysis()), 30000);
        QCOMPARE(w.forwardSets() - before, quint64(2));
        QCOMPARE(imageReady.count(), 0);

        // The adversarial entries of the noise menu give curves too (they once failed on every image).
        QSignalSpy failed(&w, &MainWindow::errorShown);
        for (const char* spec : { "fgsm:eps=8", "pgd:eps=8,steps=20" }) {
            w.setPerturbation(*attnscope::Perturbation::parse(spec));
            const auto attacked = [spec](const auto& analysis) {
                return analysis && !analysis->summary.snr.empty() && analysis->summary.snr.front().perturbation == spec;
            };
            QTRY_VERIFY_WITH_TIMEOUT(!w.busy() && attacked(slot->analysis()), 30000);
            for (const auto& row : slot->analysis()->summary.snr)
                QVERIFY2(std::isfinite(row.snrDb.mean), spec);
        }
        QCOMPARE(failed.count(), 0);
    }

    void supersededImageIsDropped()
    {
        MainWindow w;
        QSignalSpy modelReady(&w, &MainWindow::modelReady);
        w.openModel(kFixture);
        QVERIFY(modelReady.wait(20000));
        QSignalSpy imageReady(&w, &MainWindow::imageReady);
        w.addImages({ kImage, QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/../resources/samples/photos/coffee.png") });
        w.selectImage(1); // supersedes the first image's job
        QVERIFY(imageReady.wait(20000));
        QTest::qWait(300);
        QVERIFY(w.current());
        QVERIFY(w.current()->path.endsWith("coffee.png"));
    }
};

static const int registered = registerTest<MainWindowTest>();
#include "MainWindowTest.moc"
