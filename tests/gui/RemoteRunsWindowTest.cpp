// The window on a remote engine, its long runs (docs/remote.md): image sets and Export all on the host, equal to the
// window's own runs, and going on after a dropped link.
#include "RemoteWindowSupport.h"

#include <attnscope/Summary.h>

using namespace remotewindow;

class RemoteRunsWindowTest : public QObject {
    Q_OBJECT
private slots:
    // An image set runs on the host a batch at a time, the images sent once each: its statistics are the local run's,
    // to the bit, and a file that cannot be read is named by this machine's path, the run going on.
    void anImageSetRunsOnTheHostAsItRunsHere()
    {
        RemoteEnvironment environment;
        QTemporaryDir dir;
        QStringList paths;
        for (const char* name : { "test-0000-ankle-boot.png", "test-0001-pullover.png", "test-0002-trouser.png", "test-0004-shirt.png",
                                  "test-0006-coat.png", "test-0008-sandal.png" })
            paths << QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/../resources/samples/fashion-mnist/") + name;
        const QString broken = dir.filePath(QStringLiteral("broken.png"));
        QVERIFY(QFile::copy(QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/data/bad/image_truncated.png"), broken));
        paths.insert(2, broken);
        MainWindow local;
        MainWindow remote(nullptr, remoteEngine());
        for (MainWindow* w : { &local, &remote }) {
            QVERIFY(showWithImages(*w, QStringLiteral("builtin:fmnist-vit-d4"), paths));
            QSignalSpy finished(w, &MainWindow::setFinished);
            w->analyseImageSet();
            QVERIFY(finished.wait(60000));
            QCOMPARE(finished.last().at(0).toBool(), true);
        }
        const auto& l = *local.setSummary();
        const auto& r = *remote.setSummary();
        QCOMPARE(r.images, int64_t(6));
        compareSummaries(l, r);
        if (QTest::currentTestFailed())
            return;
        auto* bar = remote.findChild<QProgressBar*>();
        QVERIFY(bar);
        QVERIFY2(bar->toolTip().contains(broken), qPrintable(bar->toolTip()));
        // Both panels drawn from their last data: a plot's replot is queued, and under load it may not have run yet.
        QVERIFY(settled(local) && settled(remote));
        QCOMPARE(differingPixels(local.setPanel()->grab().toImage(), remote.setPanel()->grab().toImage()), 0);
    }

    // Export all over the link: the host's attnscope-cli writes the CLI's output folder and it comes here, file by file;
    // its numbers are the local window's export, byte for byte (compare mode, the variant: three runs). "On the host"
    // leaves the folder where it was written.
    void exportAllOverTheLinkWritesWhatTheLocalWindowWrites()
    {
        RemoteEnvironment environment;
        MainWindow local;
        MainWindow remote(nullptr, remoteEngine());
        QTemporaryDir here, there, onHost;
        for (MainWindow* w : { &local, &remote }) {
            QVERIFY(showWithImages(*w, QStringLiteral("builtin:fmnist-vit-d4"), { kSamples + "/fashion-mnist" }));
            QSignalSpy compareReady(w, &MainWindow::compareReady);
            w->openCompareModel(QStringLiteral("builtin:fmnist-neutreno-d4"));
            QVERIFY(compareReady.wait(20000));
            QVERIFY(settled(*w));
            w->runVariant(0.6, 0);
            QVERIFY(settled(*w));
            QSignalSpy exported(w, &MainWindow::exportFinished);
            w->exportAll(w == &local ? here.path() : there.path());
            QVERIFY(exported.wait(120000));
            QVERIFY2(exported.last().at(0).toBool(), qPrintable(w->shownError()));
        }
        const QJsonObject manifest = QJsonDocument::fromJson(readAll(there.filePath("manifest.json"))).object();
        QCOMPARE(manifest["complete"].toBool(), true);
        QCOMPARE(manifest["images"].toArray().size(), 10);
        QCOMPARE(manifest["runs"].toArray().size(), 3); // the model, its variant, the compared model
        for (const char* f : { "figures/token_similarity.png", "figures/snr.svg", "figures/head_centres.pdf", "figures/attention_grid.png",
                               "figures/logit_decomposition.png", "predictions.csv" })
            QVERIFY2(QFileInfo(there.filePath(f)).size() > 100, f);
        QVERIFY(!QFileInfo::exists(there.filePath(".attnscope-run"))); // a complete run leaves no journal
        QVERIFY(sameDataFiles(here.path(), there.path()) >= 15);
        QVERIFY(sameDataFiles(there.path(), here.path()) >= 15); // and nothing more

        QSignalSpy exported(&remote, &MainWindow::exportFinished);
        remote.exportAll(QString(), onHost.path()); // the host is this machine: its folder is readable here
        QVERIFY(exported.wait(120000));
        QVERIFY2(exported.last().at(0).toBool(), qPrintable(remote.shownError()));
        QVERIFY(sameDataFiles(here.path(), onHost.path()) >= 15);
        QVERIFY(remote.statusBar()->currentMessage().contains("localhost:" + onHost.path()));
        // What was staged on the host for the first export went once it was here.
        QCOMPARE(QDir(qEnvironmentVariable("XDG_CACHE_HOME") + "/attnscope/remote-exports").entryList(QDir::NoDotAndDotDot | QDir::AllEntries).size(), 0);
    }

    // The link drops while the host runs Export all: the window makes it again, and the host's run resumes from its
    // journal rather than starting again; what arrives is what an uninterrupted run writes.
    void aDroppedLinkMidExportResumesFromTheHostsJournal()
    {
        RemoteEnvironment environment;
        QTemporaryDir images, here, there, pidsDir;
        const QStringList paths = copiesOfSample(images.path(), 2000);
        const QString pids = pidsDir.filePath(QStringLiteral("pids"));
        qputenv("ATTNSCOPE_TEST_SSH_PIDS", pids.toLocal8Bit());
        MainWindow local;
        MainWindow remote(nullptr, remoteEngine());
        for (MainWindow* w : { &local, &remote }) {
            QVERIFY(showWithImages(*w, QStringLiteral("builtin:fmnist-vit-d4"), { images.path() }));
            QVERIFY(settled(*w));
        }
        QSignalSpy exported(&remote, &MainWindow::exportFinished);
        remote.exportAll(there.path());
        // Killed once the host has checkpointed (every second over a link; the host is this machine, its journal in the
        // test's cache) and before it is done.
        const QString staging = qEnvironmentVariable("XDG_CACHE_HOME") + "/attnscope/remote-exports";
        QVERIFY(waitFor([&] {
            for (const QString& run : QDir(staging).entryList(QDir::Dirs | QDir::NoDotAndDotDot))
                if (QFileInfo::exists(staging + "/" + run + "/.attnscope-run/checkpoint.json"))
                    return true;
            return !exported.isEmpty();
        }, 60000));
        QVERIFY2(exported.isEmpty(), qPrintable("the export ended before the link could be dropped (give it more images): " + remote.shownError()
                                                + remote.statusBar()->currentMessage()));
        QFile f(pids);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(::kill(f.readLine().trimmed().toInt(), SIGKILL), 0);
        QVERIFY(exported.wait(180000));
        QVERIFY2(exported.last().at(0).toBool(), qPrintable(remote.shownError()));
        qunsetenv("ATTNSCOPE_TEST_SSH_PIDS");
        const QJsonObject manifest = QJsonDocument::fromJson(readAll(there.filePath("manifest.json"))).object();
        QCOMPARE(manifest["complete"].toBool(), true);
        QCOMPARE(manifest["images"].toArray().size(), 2000);
        QVERIFY2(manifest["resumed_at"].toInt() > 0, "the host's run started again instead of resuming");

        QSignalSpy localExported(&local, &MainWindow::exportFinished);
        local.exportAll(here.path());
        QVERIFY(localExported.wait(180000));
        QVERIFY(sameDataFiles(here.path(), there.path()) >= 5);
    }

    // The link drops in the middle of an image set (the server killed): the next step makes it again and the run goes on
    // on the new server from the statistics the last answer brought; the summary is the local run's, to the bit.
    void anImageSetCutByADroppedLinkGoesOn()
    {
        RemoteEnvironment environment;
        QTemporaryDir images, pidsDir;
        QStringList paths;
        const QStringList samples = QDir(kSamples + "/fashion-mnist").entryList({ "*.png" });
        for (int i = 0; i < 300; ++i) {
            const QString path = images.filePath(QStringLiteral("image-%1.png").arg(i, 3, 10, QLatin1Char('0')));
            QVERIFY(QFile::copy(kSamples + "/fashion-mnist/" + samples[i % samples.size()], path));
            paths << path;
        }
        const QString pids = pidsDir.filePath(QStringLiteral("pids"));
        qputenv("ATTNSCOPE_TEST_SSH_PIDS", pids.toLocal8Bit());
        MainWindow local;
        MainWindow remote(nullptr, remoteEngine());
        for (MainWindow* w : { &local, &remote }) {
            QVERIFY(showWithImages(*w, QStringLiteral("builtin:fmnist-vit-d4"), paths));
            QVERIFY(settled(*w));
        }
        QSignalSpy localFinished(&local, &MainWindow::setFinished);
        local.analyseImageSet();
        QVERIFY(localFinished.wait(120000));
        QSignalSpy finished(&remote, &MainWindow::setFinished);
        remote.analyseImageSet();
        auto* bar = remote.findChild<QProgressBar*>();
        QVERIFY(bar);
        QVERIFY(waitFor([&] { return bar->value() > 0 || !finished.isEmpty(); }, 60000));
        QVERIFY2(finished.isEmpty() && bar->value() < 300, "the run ended before the link could be dropped: give it more images");
        QFile f(pids);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(::kill(f.readLine().trimmed().toInt(), SIGKILL), 0);
        QVERIFY(finished.wait(120000));
        QVERIFY2(finished.last().at(0).toBool(), qPrintable(remote.shownError()));
        qunsetenv("ATTNSCOPE_TEST_SSH_PIDS");
        QFile again(pids);
        QVERIFY(again.open(QIODevice::ReadOnly));
        QCOMPARE(again.readAll().trimmed().split('\n').size(), 2); // a second server finished the run
        const auto& l = *local.setSummary();
        const auto& r = *remote.setSummary();
        QCOMPARE(r.images, int64_t(300));
        compareSummaries(l, r);
        if (QTest::currentTestFailed())
            return;
    }

    // The host goes for good in the middle of an image set: the run stops once the link cannot be made again, the
    // window says why, and the set dock ends the run (Analyse again) rather than waiting for it forever.
    void anImageSetWhoseHostIsGoneEndsSayingSo()
    {
        RemoteEnvironment environment;
        QTemporaryDir images, dir;
        const QStringList paths = copiesOfSample(images.path(), 300);
        const QString pids = dir.filePath(QStringLiteral("pids"));
        qputenv("ATTNSCOPE_TEST_SSH_PIDS", pids.toLocal8Bit());
        MainWindow remote(nullptr, remoteEngine());
        QVERIFY(showWithImages(remote, QStringLiteral("builtin:fmnist-vit-d4"), paths));
        QVERIFY(settled(remote));
        QSignalSpy finished(&remote, &MainWindow::setFinished);
        remote.analyseImageSet();
        auto* bar = remote.findChild<QProgressBar*>();
        QVERIFY(bar);
        QVERIFY(waitFor([&] { return bar->value() > 0 || !finished.isEmpty(); }, 60000));
        QVERIFY2(finished.isEmpty(), "the run ended before the host could go: give it more images");
        const QString refused = dir.filePath(QStringLiteral("no-ssh.sh"));
        writeFile(refused, "#!/bin/sh\necho 'ssh: connect to host localhost port 22: Connection refused' >&2\nexit 255\n");
        QFile::setPermissions(refused, QFile::ReadOwner | QFile::ExeOwner);
        qputenv("ATTNSCOPE_SSH", refused.toLocal8Bit());
        QFile f(pids);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(::kill(f.readLine().trimmed().toInt(), SIGKILL), 0);
        QVERIFY(finished.wait(60000));
        QCOMPARE(finished.last().at(0).toBool(), false);
        QVERIFY2(remote.shownError().contains("the engine is unreachable"), qPrintable(remote.shownError()));
        QVERIFY2(bar->text().contains("stopped at"), qPrintable(bar->text()));
        qunsetenv("ATTNSCOPE_TEST_SSH_PIDS");
    }

};

static const int registered = registerTest<RemoteRunsWindowTest>();
#include "RemoteRunsWindowTest.moc"
