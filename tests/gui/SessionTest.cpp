// Sessions (issue 32, item 6): File -> Save session / Open session round-trips what is open (models with their
// descriptions, images, selection, query, layer, head, drawing, variant, compare model, dock layout); a session whose
// files moved opens what it can and names what it could not; a folder moved whole opens again; a file that is not a
// session says so in one line naming it; the last session is written when the window closes.
#include "GuiTestSupport.h"
#include "gui/AttentionControls.h"
#include "gui/MainWindow.h"
#include "gui/ModelSlot.h"
#include "gui/Session.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QImage>
#include <QListView>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace guitest;
using namespace attnscope;

namespace {

const QString kTimm = QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/golden/fixtures/tv_timm");
// As a session stores them: absolute and clean.
const QString kBoot = QDir::cleanPath(QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/../resources/samples/fashion-mnist/test-0000-ankle-boot.png"));
const QString kPhoto = QDir::cleanPath(kImage);


int currentRow(MainWindow& w) { return w.findChild<QListView*>()->currentIndex().row(); }

} // namespace

class SessionTest : public QObject {
    Q_OBJECT
private slots:
    void aSessionComesBackAsItWasSaved()
    {
        QTemporaryDir dir;
        MainWindow w;
        QVERIFY(showWithImages(w, kTimm, { kTimm + "/image.png", kPhoto, kBoot }));
        QSignalSpy imageReady(&w, &MainWindow::imageReady);
        w.selectImage(1);
        QVERIFY(imageReady.wait(20000));
        QSignalSpy compared(&w, &MainWindow::compareReady);
        w.openCompareModel("builtin:fmnist-vit");
        QVERIFY(compared.wait(20000));
        w.setLayer(2);
        w.setHead(HeadChoice::single(1));
        w.setQuery(5);
        QSignalSpy variant(&w, &MainWindow::variantReady);
        w.runVariant(0.5, 0.25);
        QVERIFY(variant.wait(20000));
        auto* controls = w.findChild<AttentionControls*>();
        controls->setDrawing({ { "opacity", 0.3 }, { "colormap", "magma" }, { "grid", true } });
        const QString path = dir.filePath("session.json");
        QVERIFY(w.saveSession(path));

        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QJsonObject json = QJsonDocument::fromJson(file.readAll()).object();
        QCOMPARE(json.value("attnscope_session").toInt(), 1);
        QCOMPARE(json.value("model").toObject().value("path").toString(), kTimm);
        QCOMPARE(json.value("compare").toObject().value("path").toString(), QString("builtin:fmnist-vit"));

        MainWindow again;
        again.resize(1280, 800);
        again.show();
        QSignalSpy opened(&again, &MainWindow::sessionOpened);
        QVERIFY(again.openSession(path));
        QVERIFY(opened.wait(20000));
        QVERIFY(waitFor([&] { return again.current() && again.current()->path == kPhoto && again.slot(1)->model() && again.variant(); }));
        QCOMPARE(again.slot(0)->path(), kTimm);
        QCOMPARE(again.slot(1)->path(), QString("builtin:fmnist-vit"));
        QCOMPARE(again.images()->paths(), QStringList({ kTimm + "/image.png", kPhoto, kBoot }));
        QCOMPARE(currentRow(again), 1);
        QCOMPARE(again.layer(), 2);
        QVERIFY(again.head() == HeadChoice::single(1));
        QCOMPARE(again.query(), 5);
        QVERIFY(again.slot(0)->variant());
        QCOMPARE(again.slot(0)->variant()->neutrenoLambda, 0.5);
        QCOMPARE(again.slot(0)->variant()->boostT, 0.25);
        const QJsonObject drawing = again.findChild<AttentionControls*>()->drawing();
        QCOMPARE(drawing.value("opacity").toDouble(), 0.3);
        QCOMPARE(drawing.value("colormap").toString(), QString("magma"));
        QCOMPARE(drawing.value("grid").toBool(), true);
        // What is displayed follows: the Query line names token 5's patch at layer 2.
        QVERIFY(waitFor([&] { return again.findChild<AttentionControls*>()->queryText().startsWith("patch ("); }));
        QVERIFY(again.lastError().isEmpty());
    }

    // The window's state is one value (WindowState.h): applied to another window it gives the same state and the same
    // picture, rollout and relevance options included, the head view named (not a number), and the file keeps them.
    void theWindowStateIsOneValueThatComesBack()
    {
        QTemporaryDir dir;
        MainWindow w;
        QVERIFY(showWithImages(w, "builtin:fmnist-vit-d4", { kBoot, kPhoto }));
        w.setLayer(3);
        w.setQuery(7);
        w.setHead(HeadView::Rollout);
        w.setRollout({ HeadFusion::Max, 0.5 });
        const WindowState state = w.state();
        QVERIFY(state.view.head == HeadChoice(HeadView::Rollout));
        QVERIFY(state.view.rollout.fusion == HeadFusion::Max && state.view.rollout.discard == 0.5);
        const QImage shown = w.view()->rendered();

        MainWindow again;
        again.resize(1280, 800);
        again.show();
        QSignalSpy opened(&again, &MainWindow::sessionOpened);
        again.applyState(state);
        QVERIFY(opened.wait(20000));
        QVERIFY(waitFor([&] { return again.current() && again.current()->path == kBoot; }));
        const ViewSelection& v = again.viewSelection();
        QCOMPARE(v.layer, 3);
        QCOMPARE(v.query, 7);
        QVERIFY(v.head == HeadChoice(HeadView::Rollout));
        QVERIFY(v.rollout.fusion == HeadFusion::Max);
        QCOMPARE(v.rollout.discard, 0.5);
        QCOMPARE(again.state().images, state.images);
        QCOMPARE(differingPixels(shown, again.view()->rendered()), 0);
        QVERIFY(again.shownError().isEmpty());

        // The relevance class is state too: a session keeps it, and the relevance shown is of that class.
        QSignalSpy relevanceReady(w.slot(0), &ModelSlot::relevanceReady);
        w.setHead(HeadView::Gae);
        w.setRelevanceClass(3);
        QVERIFY(waitFor([&] { return w.slot(0)->relevance() && w.slot(0)->relevance()->relevance.targetClass == 3; }));
        const QString path = dir.filePath("relevance.json");
        QVERIFY(w.saveSession(path));
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QJsonObject json = QJsonDocument::fromJson(file.readAll()).object();
        QCOMPARE(json.value("head").toInt(), -3);
        QCOMPARE(json.value("relevance_class").toInt(), 3);
        QCOMPARE(json.value("rollout").toObject().value("fusion").toString(), QString("max"));
        MainWindow third;
        QSignalSpy thirdOpened(&third, &MainWindow::sessionOpened);
        QVERIFY(third.openSession(path));
        QVERIFY(thirdOpened.wait(20000));
        QVERIFY(third.head() == HeadChoice(HeadView::Gae));
        QCOMPARE(third.viewSelection().relevanceClass, 3);
        QVERIFY(waitFor([&] { return third.slot(0)->relevance() && third.slot(0)->relevance()->relevance.targetClass == 3; }));
    }

    // Files that moved: the rest opens, and the missing ones are named. A folder moved whole (session and files
    // together) opens by the relative paths.
    void movedFilesAreNamedAndTheRestOpens()
    {
        QTemporaryDir root;
        QDir(root.path()).mkpath("project/images");
        const QString project = root.filePath("project");
        QFile::copy(kImage, project + "/images/cat.png");
        QFile::copy(kBoot, project + "/images/boot.png");
        const QString path = project + "/session.json";
        {
            MainWindow w;
            QVERIFY(showWithImages(w, "builtin:fmnist-vit", { project + "/images/cat.png", project + "/images/boot.png" }));
            QVERIFY(w.saveSession(path));
        }
        QVERIFY(QDir(root.path()).rename("project", "moved"));
        const QString moved = root.filePath("moved");
        QVERIFY(QFile::remove(moved + "/images/cat.png"));
        MainWindow w;
        QSignalSpy opened(&w, &MainWindow::sessionOpened);
        QSignalSpy error(&w, &MainWindow::errorShown);
        QVERIFY(w.openSession(moved + "/session.json"));
        QVERIFY(opened.wait(20000));
        QCOMPARE(w.images()->paths(), QStringList({ moved + "/images/boot.png" }));
        QVERIFY(error.count() >= 1);
        QVERIFY2(w.lastError().contains("session.json: could not open image " + project + "/images/cat.png"), qPrintable(w.lastError()));
        QVERIFY(waitFor([&] { return w.current() && w.current()->path == moved + "/images/boot.png"; }));
    }

    void whatIsNoSessionSaysSo()
    {
        QTemporaryDir dir;
        MainWindow w;
        const QString broken = dir.filePath("broken.json"), other = dir.filePath("other.json"), future = dir.filePath("future.json");
        writeFile(broken, "{\"attnscope_session\": 1, ");
        writeFile(other, "{\"weights\": \"x.pt\"}");
        writeFile(future, "{\"attnscope_session\": 1, \"model\": {\"path\": \"builtin:fmnist-vit\"}, \"colour_scheme\": 3}");
        QVERIFY(!w.openSession(broken));
        QVERIFY2(w.lastError().startsWith(broken + ": not JSON"), qPrintable(w.lastError()));
        QVERIFY(!w.openSession(other));
        QVERIFY2(w.lastError().startsWith(other + ": not an attnscope session"), qPrintable(w.lastError()));
        QVERIFY(!w.openSession(dir.filePath("absent.json")));
        QVERIFY2(w.lastError().startsWith(dir.filePath("absent.json") + ": cannot read"), qPrintable(w.lastError()));
        // A key it does not know is named, and the session opens.
        QSignalSpy opened(&w, &MainWindow::sessionOpened);
        QVERIFY(w.openSession(future));
        QVERIFY(opened.wait(20000)); // said with what its model finds, once the model is open
        QVERIFY2(w.lastError().contains("unknown key colour_scheme"), qPrintable(w.lastError()));
        QCOMPARE(w.shownError(), w.lastError()); // still in the status line: the model loading did not answer it
        QCOMPARE(w.slot(0)->path(), QString("builtin:fmnist-vit"));
    }

    // The executable: `attnscope --open-session FILE` opens the session (--screenshot quits with status 1 on any error the
    // window shows, and pictures the window once the session's image is analysed).
    void theExecutableOpensASession()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath("session.json");
        {
            MainWindow w;
            QVERIFY(showWithImages(w, "builtin:fmnist-vit-d4", { kBoot }));
            w.setLayer(2);
            QVERIFY(w.saveSession(path));
        }
        const QString shot = dir.filePath("window.png");
        QCOMPARE(runWindow(dir.path(), { "--open-session", path, "--screenshot", shot }), 0);
        QVERIFY(!QImage(shot).isNull());
    }

    void theLastSessionIsWrittenOnClose()
    {
        QFile::remove(MainWindow::lastSessionPath());
        {
            MainWindow w;
            QVERIFY(showWithImages(w, "builtin:fmnist-vit", { kBoot }));
            w.setLayer(3);
            w.close();
        }
        QVERIFY(QFile::exists(MainWindow::lastSessionPath()));
        MainWindow w;
        QSignalSpy opened(&w, &MainWindow::sessionOpened);
        QVERIFY(w.openSession(MainWindow::lastSessionPath()));
        QVERIFY(opened.wait(20000));
        QCOMPARE(w.layer(), 3);
        QCOMPARE(w.images()->paths(), QStringList({ kBoot }));
    }
};

static const int registered = registerTest<SessionTest>();

#include "SessionTest.moc"
