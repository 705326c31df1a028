// The window on a remote engine (docs/remote.md): the same window, its jobs answered by `attnscope-cli serve --stdio`
// reached through ssh's stand-in (tests/remote/local-ssh.sh, which runs the command on this machine). What it draws
// must be what the window on its own engine draws, pixel for pixel; what does not run over the link yet is said.
#include "GuiTestSupport.h"
#include "gui/MainWindow.h"
#include "gui/ModelSlot.h"
#include "gui/RemoteBackend.h"

#include <QLabel>
#include <QTemporaryDir>
#include <QtTest>

using namespace guitest;

namespace {

// The test's own cache folder (the host's received files, the client's hashes) and ssh's stand-in, for this process
// and the server it starts.
struct RemoteEnvironment {
    QTemporaryDir cache;
    RemoteEnvironment()
    {
        qputenv("XDG_CACHE_HOME", cache.path().toLocal8Bit());
        qputenv("ATTNSCOPE_SSH", ATTNSCOPE_TEST_SOURCE_DIR "/remote/local-ssh.sh");
    }
    ~RemoteEnvironment()
    {
        qunsetenv("XDG_CACHE_HOME");
        qunsetenv("ATTNSCOPE_SSH");
    }
};

std::unique_ptr<attnscope::EngineBackend> remoteEngine(const std::string& cli = ATTNSCOPE_CLI)
{
    return std::make_unique<attnscope::RemoteBackend>(attnscope::remote::Endpoint { "localhost", cli });
}

// Every job done and every answer drawn.
bool settled(MainWindow& w)
{
    QElapsedTimer timer;
    timer.start();
    while (timer.elapsed() < 20000) {
        QTest::qWait(20);
        if (!w.busy()) {
            QTest::qWait(20); // the last answer's queued signal, drawn
            if (!w.busy())
                return true;
        }
    }
    return false;
}

} // namespace

class RemoteWindowTest : public QObject {
    Q_OBJECT
private slots:
    void theRemoteEngineDrawsWhatTheLocalOneDraws()
    {
        RemoteEnvironment environment;
        MainWindow local;
        MainWindow remote(nullptr, remoteEngine());
        // A model on the host (builtin), an image on this machine (sent once, by its sha256).
        QVERIFY(showWithImages(local, QStringLiteral("builtin:fmnist-vit"), { kImage }));
        QVERIFY(showWithImages(remote, QStringLiteral("builtin:fmnist-vit"), { kImage }));
        QVERIFY(remote.current() && remote.current()->remoteTrace > 0);
        QCOMPARE(remote.model()->info().labels, local.model()->info().labels);
        QCOMPARE(remote.model()->config().depth, local.model()->config().depth);

        struct Selection {
            int query, layer;
            HeadChoice head;
        };
        // Heads, the mean, the rollout (made on the host), the token norms (counted there), the class relevance (GAE and
        // Grad-CAM, a backward pass there).
        const Selection selections[] = { { 0, 1, HeadChoice::single(0) },         { 30, 3, HeadChoice(HeadView::Mean) },
                                         { 17, 2, HeadChoice(HeadView::Rollout) }, { 45, 4, HeadChoice::single(2) },
                                         { 45, 3, HeadChoice(HeadView::TokenNorms) }, { 45, 3, HeadChoice(HeadView::Gae) },
                                         { 45, 3, HeadChoice(HeadView::GradCam) } };
        for (const auto& s : selections) {
            for (MainWindow* w : { &local, &remote }) {
                w->setQuery(s.query);
                w->setLayer(s.layer);
                w->setHead(s.head);
                QVERIFY(settled(*w));
            }
            const QString where = QStringLiteral("query %1 layer %2 head %3").arg(s.query).arg(s.layer).arg(headChoiceKey(s.head));
            QVERIFY2(remote.view()->map(), qPrintable(where));
            QVERIFY2(differingPixels(local.view()->rendered(), remote.view()->rendered()) == 0, qPrintable(where));
            QVERIFY2(differingPixels(local.tiles()->grab().toImage(), remote.tiles()->grab().toImage()) == 0, qPrintable(where));
        }
        // The prediction is the host's logits, the same as here.
        QCOMPARE(remote.footer(0)->grab().toImage().size(), local.footer(0)->grab().toImage().size());
        const auto& a = local.current()->trace.logits;
        const auto& b = remote.current()->trace.logits;
        QCOMPARE(a.numel(), b.numel());
        QVERIFY(std::equal(a.data(), a.data() + a.numel(), b.data()));

        // The status bar names the host, its device and build, and the link's round trip.
        auto* device = remote.findChild<QLabel*>("deviceLabel");
        QVERIFY(device);
        QVERIFY2(device->text().startsWith("localhost · ") && device->text().contains("LibTorch") && device->text().endsWith(" ms"),
                 qPrintable(device->text()));
        // The image's analyses: the host's statistics cross exactly, so the curves and the figure are the local ones.
        QVERIFY(local.slot(0)->analysis() && remote.slot(0)->analysis());
        const auto& la = local.slot(0)->analysis()->summary;
        const auto& ra = remote.slot(0)->analysis()->summary;
        QVERIFY(!la.tokenSimilarity.empty() && !la.snr.empty() && !la.headCentres.empty() && !la.tokenNorms.empty());
        QCOMPARE(ra.tokenSimilarity.size(), la.tokenSimilarity.size());
        for (size_t i = 0; i < la.tokenSimilarity.size(); ++i)
            QCOMPARE(ra.tokenSimilarity[i].value.mean, la.tokenSimilarity[i].value.mean);
        QCOMPARE(ra.snr.size(), la.snr.size());
        for (size_t i = 0; i < la.snr.size(); ++i)
            QCOMPARE(ra.snr[i].snrDb.mean, la.snr[i].snrDb.mean);
        QCOMPARE(ra.headCentres.size(), la.headCentres.size());
        for (size_t i = 0; i < la.headCentres.size(); ++i)
            QCOMPARE(ra.headCentres[i].offsetMap, la.headCentres[i].offsetMap);
        QCOMPARE(differingPixels(local.imagePanel()->grab().toImage(), remote.imagePanel()->grab().toImage()), 0);
        const auto& ld = local.slot(0)->analysis()->decomposition;
        const auto& rd = remote.slot(0)->analysis()->decomposition;
        QVERIFY(ld && rd && ld->tp.numel() == rd->tp.numel() && ld->tp.numel() > 0);
        QVERIFY(std::equal(ld->tp.data(), ld->tp.data() + ld->tp.numel(), rd->tp.data()));
        QVERIFY(remote.shownError().isEmpty());

        // What does not run over the link yet is said, not left blank or run here.
        remote.ablateHead(1, 0);
        QVERIFY(settled(remote));
        QVERIFY2(remote.shownError().contains("does not run over the remote link yet"), qPrintable(remote.shownError()));
    }

    void anUnreachableEngineIsSaidAndTheWindowStays()
    {
        RemoteEnvironment environment;
        MainWindow w(nullptr, remoteEngine("/nonexistent/attnscope-cli"));
        w.resize(1280, 800);
        w.show();
        w.openModel(QStringLiteral("builtin:fmnist-vit"));
        QVERIFY(settled(w));
        QVERIFY(!w.model());
        QVERIFY2(w.shownError().contains("localhost: the engine is unreachable") && w.shownError().contains("/nonexistent/attnscope-cli"),
                 qPrintable(w.shownError()));
        auto* device = w.findChild<QLabel*>("deviceLabel");
        QVERIFY(device);
        QCOMPARE(device->text(), QStringLiteral("localhost · unreachable"));
    }
};

static const int registered = registerTest<RemoteWindowTest>();
#include "RemoteWindowTest.moc"
