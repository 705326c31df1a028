// "Export all" writes the CLI's folder (byte for byte the CLI's CSVs), the image strip's item model keeps Qt's
// contract, and the window survives garbage drops, closing and switching models in the middle of a run.
#include "GuiTestSupport.h"
#include "gui/MainWindow.h"
#include <QFile>
#include <QDir>
#include <QProgressBar>

#include <QAbstractItemModelTester>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMimeData>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QUrl>
#include <QtTest>

using namespace guitest;
using namespace attnscope;

namespace {

void drop(QWidget* target, const QStringList& paths)
{
    QMimeData mime;
    QList<QUrl> urls;
    for (const auto& p : paths)
        urls << QUrl::fromLocalFile(p);
    mime.setUrls(urls);
    QDropEvent event(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    static_cast<QObject*>(target)->event(&event); // straight to the handler: QApplication routes drops through the drag manager
    QVERIFY(event.isAccepted());
}

} // namespace

class ExportAndFaultsTest : public QObject {
    Q_OBJECT
private slots:
    void exportAllWritesWhatTheCliWrites()
    {
        MainWindow w;
        QSignalSpy modelReady(&w, &MainWindow::modelReady);
        QSignalSpy compareReady(&w, &MainWindow::compareReady);
        QSignalSpy imageReady(&w, &MainWindow::imageReady);
        w.openModel(QStringLiteral("builtin:fmnist-vit-d4"));
        QVERIFY(modelReady.wait(20000));
        w.openCompareModel(QStringLiteral("builtin:fmnist-neutreno-d4"));
        QVERIFY(compareReady.wait(20000));
        const QString images = kSamples + "/fashion-mnist";
        w.addImages({ images });
        QVERIFY(imageReady.count() > 0 || imageReady.wait(20000));
        QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), 30000); // the image's analysis tells whether the decomposition applies
        w.runVariant(0.6, 0);

        QTemporaryDir gui, cli;
        QSignalSpy exported(&w, &MainWindow::exportFinished);
        w.exportAll(gui.path());
        QVERIFY(exported.wait(120000));
        QCOMPARE(exported.last().at(0).toBool(), true);

        const QJsonObject manifest = QJsonDocument::fromJson(readAll(gui.filePath("manifest.json"))).object();
        QCOMPARE(manifest["complete"].toBool(), true);
        QCOMPARE(manifest["images"].toArray().size(), 10);
        QCOMPARE(manifest["runs"].toArray().size(), 3); // the model, its variant, the compared model
        for (const char* f : { "figures/token_similarity.png", "figures/snr.svg", "figures/head_centres.pdf", "figures/attention_grid.png",
                               "figures/logit_decomposition.png", "figures/attention_distance.csv", "predictions.csv" })
            QVERIFY2(QFileInfo(gui.filePath(f)).size() > 100, f);
        QVERIFY(distinctColours(QImage(gui.filePath("figures/attention_grid.png"))) > 50);

        QProcess process;
        process.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        process.start(QStringLiteral(ATTNSCOPE_CLI),
                      { "analyze", "--model", "builtin:fmnist-vit-d4", "--compare", "builtin:fmnist-neutreno-d4", "--neutreno", "0.6", "--boost", "0",
                        "--images", images, "--out", cli.path(), "--analyses", "similarity,attention,centres,snr,decomposition",
                        "--formats", "png" });
        QVERIFY(process.waitForFinished(300000));
        QCOMPARE(process.exitCode(), 0);
        // The same numbers: every CSV of the output folder, the runs' included, byte for byte.
        QDirIterator it(cli.path(), { "*.csv" }, QDir::Files, QDirIterator::Subdirectories);
        int compared = 0;
        while (it.hasNext()) {
            const QString path = it.next();
            const QString relative = QDir(cli.path()).relativeFilePath(path);
            QVERIFY2(readAll(gui.filePath(relative)) == readAll(path), qPrintable(relative));
            ++compared;
        }
        QVERIFY(compared >= 15);
    }

    void imageStripModelKeepsTheContract()
    {
        ImageListModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QTemporaryDir dir;
        QFile bad(dir.filePath("not-an-image.png"));
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write("plain text");
        bad.close();
        QStringList paths = copiesOfSample(dir.path(), 5);
        paths << bad.fileName();
        model.addPaths(paths);
        model.addPaths(paths.mid(0, 2)); // already listed: nothing added
        QCOMPARE(model.rowCount(), 6);
        QCOMPARE(model.data(model.index(0), Qt::DisplayRole).toString(), QStringLiteral("copy-0000.png"));
        QCOMPARE(model.data(model.index(5), ImageListModel::PathRole).toString(), bad.fileName());
        // Thumbnails arrive in the background, also for the file that is not an image (a crossed box).
        QSignalSpy loaded(&model, &ImageListModel::thumbnailLoaded);
        for (int r = 0; r < model.rowCount(); ++r)
            model.data(model.index(r), Qt::DecorationRole);
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 6, 20000);
        QCOMPARE(model.data(model.index(0), Qt::DecorationRole).value<QPixmap>().width(), 64);
        model.clear();
        QCOMPARE(model.rowCount(), 0);
        model.addPaths(paths.mid(0, 1));
        QCOMPARE(model.rowCount(), 1);
    }

    void garbageDropsShowErrorsAndTheWindowCarriesOn()
    {
        QTemporaryDir dir;
        const auto write = [&](const QString& name, const QByteArray& bytes) {
            QFile f(dir.filePath(name));
            f.open(QIODevice::WriteOnly);
            f.write(bytes);
            return f.fileName();
        };
        MainWindow w;
        QSignalSpy modelReady(&w, &MainWindow::modelReady);
        QSignalSpy errors(&w, &MainWindow::errorShown);
        w.openModel(QStringLiteral("builtin:fmnist-vit-d4"));
        QVERIFY(modelReady.wait(20000));
        drop(&w, { write("garbage.safetensors", QByteArray(4096, '\xff')) });
        QTRY_VERIFY2_WITH_TIMEOUT(w.lastError().contains("garbage.safetensors"), qPrintable(w.lastError()), 20000);
        QVERIFY(w.model()); // the model stays
        drop(&w, { write("empty.png", {}), write("text.jpg", "this is not a JPEG"), dir.filePath("missing.png") });
        QTRY_VERIFY_WITH_TIMEOUT(w.lastError().contains("empty.png"), 20000); // the first dropped image is shown: its error
        w.selectImage(1);
        QTRY_VERIFY_WITH_TIMEOUT(w.lastError().contains("text.jpg"), 20000);
        QSignalSpy imageReady(&w, &MainWindow::imageReady);
        drop(&w, { kSamples + "/fashion-mnist/test-0001-pullover.png" });
        w.selectImage(w.images()->rowCount() - 1);
        QVERIFY(imageReady.wait(20000));
        QVERIFY(!w.view()->rendered().isNull());
    }

    void closingAndSwitchingModelsMidRun()
    {
        QTemporaryDir dir;
        // Enough that the run is still going when the window is closed: the set runs about 700 images/s here.
        const QStringList many = copiesOfSample(dir.path(), 3000);
        {
            auto* w = new MainWindow;
            QSignalSpy modelReady(w, &MainWindow::modelReady);
            w->openModel(QStringLiteral("builtin:fmnist-vit-d4"));
            QVERIFY(modelReady.wait(20000));
            w->addImages(many);
            w->analyseImageSet();
            QTest::qWait(300);
            QVERIFY(w->busy());
            QElapsedTimer timer;
            timer.start();
            w->close();
            delete w; // the worker is cancelled and joined, not leaked
            QVERIFY2(timer.elapsed() < 5000, qPrintable(QString::number(timer.elapsed())));
        }
        MainWindow w;
        QSignalSpy modelReady(&w, &MainWindow::modelReady);
        QSignalSpy finished(&w, &MainWindow::setFinished);
        w.openModel(QStringLiteral("builtin:fmnist-vit-d4"));
        QVERIFY(modelReady.wait(20000));
        w.addImages(many);
        w.analyseImageSet();
        QTest::qWait(300);
        QVERIFY(w.busy());
        w.openModel(QStringLiteral("builtin:fmnist-bilateral-d4")); // switching models cancels the run
        QVERIFY(finished.wait(20000));
        QCOMPARE(finished.last().at(0).toBool(), false);
        QTRY_VERIFY_WITH_TIMEOUT(w.model() && w.model()->info().path == "builtin:fmnist-bilateral-d4", 20000);
        QTRY_VERIFY_WITH_TIMEOUT(w.current() && w.current()->trace.depth > 0, 20000);
        QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), 20000);
    }

    // An image of the set that cannot be read is skipped and listed (the bar counts it, its tooltip names it), not a
    // dialog per file, and the set finishes with the others.
    void imageSetSkipsUnreadableFiles()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QStringList paths;
        for (const QString& name : QDir(QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/../resources/samples/fashion-mnist")).entryList(QDir::Files))
            paths << QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/../resources/samples/fashion-mnist/") + name;
        const QString broken = dir.filePath(QStringLiteral("broken.png"));
        QVERIFY(QFile::copy(QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/data/bad/image_truncated.png"), broken));
        paths.insert(3, broken);
        MainWindow w;
        QSignalSpy modelReady(&w, &MainWindow::modelReady);
        QSignalSpy finished(&w, &MainWindow::setFinished);
        QSignalSpy errors(&w, &MainWindow::errorShown);
        w.openModel(QStringLiteral("builtin:fmnist-vit-d4"));
        QVERIFY(modelReady.wait(20000));
        w.addImages(paths);
        w.analyseImageSet();
        QVERIFY(finished.wait(60000));
        QCOMPARE(finished.last().at(0).toBool(), true);
        auto* bar = w.findChild<QProgressBar*>();
        QVERIFY(bar);
        QVERIFY2(bar->toolTip().contains(QStringLiteral("broken.png")), qPrintable(bar->toolTip()));
        QCOMPARE(errors.count(), 0);
    }
};

static const int registered = registerTest<ExportAndFaultsTest>();
#include "ExportAndFaultsTest.moc"
