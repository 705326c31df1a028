// The window on a remote engine (docs/remote.md): the same window, its jobs answered by `attnscope-cli serve --stdio`
// reached through ssh's stand-in (tests/remote/local-ssh.sh, which runs the command on this machine). What it draws
// must be what the window on its own engine draws, pixel for pixel; what does not run over the link yet is said.
#include "RemoteWindowSupport.h"

using namespace remotewindow;

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
        // Another noise: the analyses alone again (the trace is kept; the host keeps no second one), as here.
        for (MainWindow* w : { &local, &remote }) {
            w->setPerturbation(*attnscope::Perturbation::parse("gaussian:sigma=2"));
            QVERIFY(settled(*w));
        }
        QVERIFY(local.slot(0)->analysis() && remote.slot(0)->analysis());
        QCOMPARE(remote.slot(0)->analysis()->summary.snr.size(), local.slot(0)->analysis()->summary.snr.size());
        for (size_t i = 0; i < local.slot(0)->analysis()->summary.snr.size(); ++i)
            QCOMPARE(remote.slot(0)->analysis()->summary.snr[i].snrDb.mean, local.slot(0)->analysis()->summary.snr[i].snrDb.mean);
        QVERIFY(remote.shownError().isEmpty());

        // One head ablated on the image, on the host: the prediction it leaves, as here.
        for (MainWindow* w : { &local, &remote }) {
            w->ablateHead(2, 1);
            QTRY_VERIFY_WITH_TIMEOUT(w->footer(0)->ablationText().startsWith("Layer 2 head 1 ablated:"), 20000);
        }
        QCOMPARE(remote.footer(0)->ablationText(), local.footer(0)->ablationText());

        // The query-key map of one head over the strip, made on the host: the same points.
        for (MainWindow* w : { &local, &remote }) {
            w->addImages({ QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/../resources/samples/fashion-mnist/test-0001-pullover.png") });
            auto* dock = w->findChild<QDockWidget*>("queryKeyDock");
            QVERIFY(dock);
            dock->raise();
            QTRY_VERIFY_WITH_TIMEOUT(w->queryKeyView()->isVisible(), 5000);
            w->setLayer(2);
            w->setHead(HeadChoice::single(1));
            QTRY_VERIFY_WITH_TIMEOUT(w->queryKeyView()->map() && w->queryKeyView()->map()->head == 1, 20000);
        }
        const auto lm = local.queryKeyView()->map(), rm = remote.queryKeyView()->map();
        QCOMPARE(rm->points.size(), lm->points.size());
        QCOMPARE(rm->images, 2);
        for (size_t i = 0; i < lm->points.size(); ++i) {
            QCOMPARE(rm->points[i].x, lm->points[i].x);
            QCOMPARE(rm->points[i].y, lm->points[i].y);
        }
        QCOMPARE(differingPixels(local.queryKeyView()->grab().toImage(), remote.queryKeyView()->grab().toImage()), 0);
    }

    // A Swin on the host (docs/remote.md, "A Swin"): each block's window at its stage grid, the tiles per stage, the
    // rollout and token norms said not to be, the image's curves with their stages and a block's query-key map: the
    // pixels and numbers of the window on its own engine.
    void aSwinDrawsWhatTheLocalOneDraws()
    {
        RemoteEnvironment environment;
        MainWindow local;
        MainWindow remote(nullptr, remoteEngine());
        const QString swin = QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/golden/swin/timm_swin");
        // The model on the host (a folder here is not sent): its copy in the host's home, opened by the host's path.
        QTemporaryDir home;
        QVERIFY(QDir(home.path()).mkpath("models/timm_swin"));
        for (const char* name : { "config.json", "model.safetensors" })
            QVERIFY(QFile::copy(swin + "/" + name, home.filePath(QStringLiteral("models/timm_swin/") + name)));
        qputenv("ATTNSCOPE_LINK_HOME", home.path().toLocal8Bit());
        QVERIFY(showWithImages(local, swin, { kImage }));
        const bool opened = showWithImages(remote, QStringLiteral("models/timm_swin"), { kImage });
        qunsetenv("ATTNSCOPE_LINK_HOME"); // read when the link starts, which it has
        QVERIFY2(opened, qPrintable(remote.shownError()));
        QVERIFY(remote.current() && remote.current()->trace.hierarchical());
        QCOMPARE(remote.current()->trace.windows.size(), local.current()->trace.windows.size());
        struct Selection {
            int query, layer;
            HeadChoice head;
        };
        const Selection selections[] = { { 5 * 16 + 6, 2, HeadChoice::single(1) }, { 5 * 16 + 6, 3, HeadChoice(HeadView::Mean) },
                                         { 255, 4, HeadChoice::single(3) },         { 0, 6, HeadChoice::single(7) },
                                         { 40, 5, HeadChoice(HeadView::Rollout) },   { 40, 5, HeadChoice(HeadView::TokenNorms) } };
        for (const auto& s : selections) {
            for (MainWindow* w : { &local, &remote }) {
                w->setQuery(s.query);
                w->setLayer(s.layer);
                w->setHead(s.head);
                QVERIFY(settled(*w));
            }
            const QString where = QStringLiteral("query %1 layer %2 head %3").arg(s.query).arg(s.layer).arg(headChoiceKey(s.head));
            QVERIFY2(differingPixels(local.view()->rendered(), remote.view()->rendered()) == 0, qPrintable(where));
            QVERIFY2(differingPixels(local.tiles()->grab().toImage(), remote.tiles()->grab().toImage()) == 0, qPrintable(where));
            QCOMPARE(remote.view()->message(), local.view()->message());
            if (s.head.view == HeadView::Rollout || s.head.view == HeadView::TokenNorms)
                QVERIFY2(remote.findChild<AttentionControls*>()->queryText().contains(s.head.view == HeadView::Rollout ? "no rollout of a hierarchical model" : "token norms: not of a Swin"),
                         qPrintable(remote.findChild<AttentionControls*>()->queryText()));
            else
                QVERIFY2(remote.view()->map() && remote.view()->map()->patches.numel() == 256 >> (2 * ((s.layer - 1) / 2)), qPrintable(where));
        }
        QVERIFY(local.slot(0)->analysis() && remote.slot(0)->analysis());
        const auto& la = local.slot(0)->analysis()->summary;
        const auto& ra = remote.slot(0)->analysis()->summary;
        QVERIFY(!la.tokenSimilarity.empty() && !la.snr.empty() && !la.headCentres.empty());
        QCOMPARE(ra.blockStages, la.blockStages);
        QCOMPARE(ra.tokenSimilarity.size(), la.tokenSimilarity.size());
        for (size_t i = 0; i < la.tokenSimilarity.size(); ++i)
            QCOMPARE(ra.tokenSimilarity[i].value.mean, la.tokenSimilarity[i].value.mean);
        QCOMPARE(ra.headCentres.size(), la.headCentres.size());
        for (size_t i = 0; i < la.headCentres.size(); ++i) { // a stage too small for the offset window: NaN on both sides
            const auto &a = ra.headCentres[i].offsetMap, &b = la.headCentres[i].offsetMap;
            QCOMPARE(a.size(), b.size());
            for (size_t j = 0; j < a.size(); ++j)
                QVERIFY2(a[j] == b[j] || (std::isnan(a[j]) && std::isnan(b[j])), qPrintable(QStringLiteral("centres %1, cell %2").arg(i).arg(j)));
        }
        QCOMPARE(differingPixels(local.imagePanel()->grab().toImage(), remote.imagePanel()->grab().toImage()), 0);
        QVERIFY(remote.shownError().isEmpty());
        for (MainWindow* w : { &local, &remote }) {
            auto* dock = w->findChild<QDockWidget*>("queryKeyDock");
            QVERIFY(dock);
            dock->raise();
            QTRY_VERIFY_WITH_TIMEOUT(w->queryKeyView()->isVisible(), 5000);
            w->setLayer(3);
            w->setHead(HeadChoice::single(2));
            QTRY_VERIFY_WITH_TIMEOUT(w->queryKeyView()->map() && w->queryKeyView()->map()->layer == 3 && w->queryKeyView()->map()->head == 2, 20000);
        }
        QCOMPARE(remote.queryKeyView()->map()->stage, 1);
        QCOMPARE(remote.queryKeyView()->highlight(), local.queryKeyView()->highlight());
        QCOMPARE(differingPixels(local.queryKeyView()->grab().toImage(), remote.queryKeyView()->grab().toImage()), 0);
    }

    // The host's own files: the remote file dialog lists the host's folders (its home first) as the host sees them,
    // images only where images are asked for; images that are only on the host (paths this machine has not: relative to
    // the host's home, where the stand-in runs the server) are traced there and their thumbnails in the strip are the
    // host's, the same pixels the strip decodes from the file here.
    void theHostsFilesAreBrowsedAndShownThere()
    {
        RemoteEnvironment environment;
        QTemporaryDir home;
        QVERIFY(QDir(home.path()).mkpath("pictures/more"));
        const QStringList names { "test-0000-ankle-boot.png", "test-0001-pullover.png", "test-0002-trouser.png" };
        for (const QString& name : names)
            QVERIFY(QFile::copy(kSamples + "/fashion-mnist/" + name, home.filePath("pictures/" + name)));
        writeFile(home.filePath("pictures/notes.txt"), "not an image");
        qputenv("ATTNSCOPE_LINK_HOME", home.path().toLocal8Bit());
        MainWindow remote(nullptr, remoteEngine());
        QVERIFY(showWithImages(remote, QStringLiteral("builtin:fmnist-vit-d4"), { "pictures/" + names[0], "pictures/" + names[1] }));
        QVERIFY(settled(remote));
        QVERIFY2(remote.shownError().isEmpty(), qPrintable(remote.shownError()));
        QVERIFY(remote.current()); // traced on the host, from the host's file

        for (int r = 0; r < remote.images()->rowCount(); ++r) // asked (the strip may have asked already, when it was drawn)
            remote.images()->data(remote.images()->index(r), Qt::DecorationRole);
        QTRY_VERIFY_WITH_TIMEOUT(!remote.images()->thumbnailsPending(), 20000);
        attnscope::ImageListModel here;
        here.addPaths({ home.filePath("pictures/" + names[1]) });
        QSignalSpy decoded(&here, &attnscope::ImageListModel::thumbnailLoaded);
        here.data(here.index(0), Qt::DecorationRole);
        QVERIFY(decoded.wait(20000));
        const QImage fromHost = remote.images()->data(remote.images()->index(1), Qt::DecorationRole).value<QPixmap>().toImage();
        const QImage fromFile = here.data(here.index(0), Qt::DecorationRole).value<QPixmap>().toImage();
        QCOMPARE(fromHost.size(), fromFile.size()); // a 28 x 28 image is its own thumbnail: the same pixels
        QCOMPARE(differingPixels(fromHost.convertToFormat(QImage::Format_RGB32), fromFile.convertToFormat(QImage::Format_RGB32)), 0);

        HostFileDialog dialog(&remote, "localhost", HostFileDialog::Images, remote.hostLister());
        QSignalSpy listed(&dialog, &HostFileDialog::listed);
        dialog.list(QString());
        QVERIFY2(listed.wait(20000), qPrintable(dialog.findChild<QLabel*>()->text()));
        QCOMPARE(dialog.folder(), QFileInfo(home.path()).canonicalFilePath()); // the host's home
        dialog.list("pictures");
        QVERIFY2(listed.wait(20000), qPrintable(dialog.findChild<QLabel*>()->text()));
        auto* list = dialog.findChild<QListWidget*>();
        QVERIFY(list);
        QStringList shown;
        for (int i = 0; i < list->count(); ++i)
            shown << list->item(i)->text();
        QCOMPARE(shown, (QStringList { "more" } + names)); // folders first; no notes.txt among images
        dialog.select({ names[0], names[2] });
        QCOMPARE(dialog.selectedPaths(), (QStringList { dialog.folder() + "/" + names[0], dialog.folder() + "/" + names[2] }));
        dialog.list("no-such-folder");
        QVERIFY(listed.wait(20000));
        QCOMPARE(shown.size(), list->count()); // what was shown stays, and the error says why
        QVERIFY(dialog.findChild<QLabel*>()->text().contains("not a folder on the host"));
        qunsetenv("ATTNSCOPE_LINK_HOME");
    }

    // The link drops (the server killed, as a laptop that slept) and cannot be made again (the host unreachable): the
    // window stays with what it had and says the engine is unreachable. Once the host answers, the next click makes the
    // link again, the host loads the model and traces the image anew, and the view is what it was, pixel for pixel.
    // File -> Reconnect does the same at once.
    void aDroppedLinkIsSaidAndTheNextRequestRestoresTheView()
    {
        RemoteEnvironment environment;
        QTemporaryDir dir;
        const QString pids = dir.filePath(QStringLiteral("pids"));
        qputenv("ATTNSCOPE_TEST_SSH_PIDS", pids.toLocal8Bit());
        MainWindow local;
        MainWindow remote(nullptr, remoteEngine());
        QVERIFY(showWithImages(local, QStringLiteral("builtin:fmnist-vit"), { kImage }));
        QVERIFY(showWithImages(remote, QStringLiteral("builtin:fmnist-vit"), { kImage }));
        QVERIFY(settled(remote));
        const auto firstServer = [&] {
            QFile f(pids);
            return f.open(QIODevice::ReadOnly) ? f.readLine().trimmed().toInt() : 0;
        };
        const int server = firstServer();
        QVERIFY(server > 0);
        QCOMPARE(::kill(server, SIGKILL), 0);
        QTest::qWait(200); // the server gone before the next click, as after a laptop's sleep
        const QString refused = dir.filePath(QStringLiteral("no-ssh.sh")); // ssh's stand-in for a host that is gone
        writeFile(refused, "#!/bin/sh\necho 'ssh: connect to host localhost port 22: Connection refused' >&2\nexit 255\n");
        QFile::setPermissions(refused, QFile::ReadOwner | QFile::ExeOwner);
        qputenv("ATTNSCOPE_SSH", refused.toLocal8Bit());

        remote.setQuery(20);
        QVERIFY(settled(remote));
        QVERIFY2(remote.shownError().contains("localhost: the engine is unreachable") && remote.shownError().contains("Connection refused"),
                 qPrintable(remote.shownError()));
        QVERIFY(remote.current()); // the image stays, and the window
        QVERIFY(!remote.view()->map() || remote.view()->map()->patches.numel() == 0); // nothing of query 0's map
        QVERIFY(remote.tiles()->isEmpty());                                          // nor its tiles
        auto* device = remote.findChild<QLabel*>("deviceLabel");
        QVERIFY(device);
        QCOMPARE(device->text(), QStringLiteral("localhost · unreachable"));
        qputenv("ATTNSCOPE_SSH", ATTNSCOPE_TEST_SOURCE_DIR "/remote/local-ssh.sh"); // the host is back

        for (MainWindow* w : { &local, &remote }) {
            w->setQuery(21);
            w->setLayer(3);
            w->setHead(HeadChoice::single(1));
            QVERIFY(settled(*w));
        }
        QVERIFY2(remote.shownError().isEmpty(), qPrintable(remote.shownError()));
        QCOMPARE(differingPixels(local.view()->rendered(), remote.view()->rendered()), 0);
        QCOMPARE(differingPixels(local.tiles()->grab().toImage(), remote.tiles()->grab().toImage()), 0);

        QCOMPARE(::kill(server, 0), -1); // the first server is gone; a second one answered
        const auto servers = [&] {
            QFile f(pids);
            return f.open(QIODevice::ReadOnly) ? f.readAll().trimmed().split('\n') : QList<QByteArray>();
        };
        QCOMPARE(servers().size(), 2);

        // Dropped again; File -> Reconnect brings the host back at once: the image traced again, the view as it was.
        QCOMPARE(::kill(servers().back().toInt(), SIGKILL), 0);
        remote.reconnect(); // at once: the old link is dropped whether or not its end has been seen
        QVERIFY(settled(remote));
        QCOMPARE(servers().size(), 3);
        QVERIFY2(remote.shownError().isEmpty(), qPrintable(remote.shownError()));
        QCOMPARE(differingPixels(local.view()->rendered(), remote.view()->rendered()), 0);
        qunsetenv("ATTNSCOPE_TEST_SSH_PIDS");
    }

    // Compare mode on a host that keeps one trace (serve --max-traces 1): the second model's trace pushes the first's out
    // of the host's LRU, and a click on the first asks the host to trace it again rather than failing; both views are
    // the local window's.
    void aTraceTheHostDroppedIsMadeAgain()
    {
        RemoteEnvironment environment;
        QTemporaryDir dir;
        const QString cli = dir.filePath(QStringLiteral("attnscope-cli"));
        writeFile(cli, "#!/bin/sh\nexec " ATTNSCOPE_CLI " \"$@\" --max-traces 1\n");
        QFile::setPermissions(cli, QFile::ReadOwner | QFile::ExeOwner);
        MainWindow local;
        MainWindow remote(nullptr, remoteEngine(cli.toStdString()));
        for (MainWindow* w : { &local, &remote }) {
            QVERIFY(showWithImages(*w, QStringLiteral("builtin:fmnist-vit"), { kImage }));
            QSignalSpy compareReady(w, &MainWindow::compareReady);
            w->openCompareModel(QStringLiteral("builtin:fmnist-vit-d4"));
            QVERIFY(compareReady.wait(20000));
            QVERIFY(settled(*w));
            w->setQuery(33);
            w->setHead(HeadChoice::single(2));
            QVERIFY(settled(*w));
        }
        QVERIFY2(remote.shownError().isEmpty(), qPrintable(remote.shownError()));
        QVERIFY(remote.view()->map() && remote.compareView()->map());
        QCOMPARE(differingPixels(local.view()->rendered(), remote.view()->rendered()), 0);
        QCOMPARE(differingPixels(local.compareView()->rendered(), remote.compareView()->rendered()), 0);
    }

    // A session saved by a remote window records the host: a window on that host opens it as it was; a window on its
    // own engine says where it belongs and how to open it, and opens nothing of it. A model entry marked as the host's is
    // looked for there, not on this machine.
    void aSessionRecordsTheHost()
    {
        RemoteEnvironment environment;
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("remote-session.json"));
        MainWindow remote(nullptr, remoteEngine());
        QVERIFY(showWithImages(remote, QStringLiteral("builtin:fmnist-vit"), { kImage }));
        remote.setQuery(40);
        remote.setLayer(5);
        remote.setHead(HeadChoice::single(3));
        QVERIFY(settled(remote));
        QVERIFY(remote.saveSession(path));
        QFile saved(path);
        QVERIFY(saved.open(QIODevice::ReadOnly));
        const QJsonObject o = QJsonDocument::fromJson(saved.readAll()).object();
        QCOMPARE(o.value("remote").toString(), QStringLiteral("localhost:" ATTNSCOPE_CLI));
        // `attnscope --open-session` alone starts the window on the session's host (--screenshot exits 1 on any error).
        const QString shot = dir.filePath(QStringLiteral("session.png"));
        QCOMPARE(runWindow(dir.path(), { "--open-session", path, "--screenshot", shot }), 0);
        QVERIFY(distinctColours(QImage(shot)) > 50);

        MainWindow local;
        local.resize(1280, 800);
        local.show();
        QVERIFY(!local.openSession(path));
        QVERIFY2(local.shownError().contains("saved with the engine on localhost:") && local.shownError().contains("--remote"),
                 qPrintable(local.shownError()));
        QVERIFY(!local.model());

        MainWindow again(nullptr, remoteEngine());
        again.resize(1280, 800);
        again.show();
        QSignalSpy opened(&again, &MainWindow::sessionOpened);
        QVERIFY(again.openSession(path));
        QVERIFY(opened.wait(20000));
        QVERIFY(settled(again));
        QCOMPARE(again.query(), 40);
        QCOMPARE(again.layer(), 5);
        QCOMPARE(differingPixels(again.view()->rendered(), remote.view()->rendered()), 0);

        // A model on the host only: its path is kept, and the host's answer said.
        QJsonObject edited = o;
        edited["model"] = QJsonObject { { "path", "/only/on/the/host/model.safetensors" }, { "on_host", true } };
        writeFile(path, QJsonDocument(edited).toJson());
        MainWindow third(nullptr, remoteEngine());
        third.show();
        QVERIFY(third.openSession(path));
        QVERIFY(settled(third));
        QVERIFY2(third.shownError().contains("/only/on/the/host/model.safetensors"), qPrintable(third.shownError()));
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
