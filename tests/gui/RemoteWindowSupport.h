#pragma once

// What the window's remote tests share (RemoteWindowTest.cpp, RemoteRunsWindowTest.cpp): ssh's stand-in and a cache
// of the test's own, a window's engine on "localhost", waiting for a window to settle, and comparing what a run wrote.
#include "GuiTestSupport.h"
#include "gui/AttentionControls.h"
#include "gui/MainWindow.h"
#include "gui/ModelSlot.h"
#include "gui/RemoteBackend.h"
#include "gui/HostFileDialog.h"

#include <figures/FigurePanel.h>
#include <io/ImageListModel.h>
#include <view/QueryKeyMapView.h>
#include <view/ViewFooter.h>

#include <csignal>

#include <QDockWidget>
#include <QDirIterator>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QListWidget>
#include <QProgressBar>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QtTest>



namespace remotewindow {

using namespace guitest;


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

inline std::unique_ptr<attnscope::EngineBackend> remoteEngine(const std::string& cli = ATTNSCOPE_CLI)
{
    return std::make_unique<attnscope::RemoteBackend>(attnscope::remote::Endpoint { "localhost", cli });
}

// Every job done and every answer drawn.
inline bool settled(MainWindow& w)
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

// Every data file of output folder `a` (CSVs and statistics, the runs' included) is in `b`, byte for byte; how many
// were compared, or -1 (said) at the first that differs.
inline int sameDataFiles(const QString& a, const QString& b)
{
    QDirIterator it(a, { "*.csv", "stats.json" }, QDir::Files, QDirIterator::Subdirectories);
    int compared = 0;
    while (it.hasNext()) {
        const QString path = it.next();
        const QString relative = QDir(a).relativeFilePath(path);
        if (readAll(QDir(b).filePath(relative)) != readAll(path)) {
            qWarning("%s differs: %s", qPrintable(relative), qPrintable(QDir(b).filePath(relative)));
            return -1;
        }
        ++compared;
    }
    return compared;
}

// The image set's summary made over the link is the local one, to the bit: its images, token similarity and SNR.
inline void compareSummaries(const attnscope::AnalysisSummary& l, const attnscope::AnalysisSummary& r)
{
    QCOMPARE(r.images, l.images);
    QCOMPARE(r.tokenSimilarity.size(), l.tokenSimilarity.size());
    for (size_t i = 0; i < l.tokenSimilarity.size(); ++i) {
        QCOMPARE(r.tokenSimilarity[i].value.mean, l.tokenSimilarity[i].value.mean);
        QCOMPARE(r.tokenSimilarity[i].value.sd, l.tokenSimilarity[i].value.sd);
    }
    QCOMPARE(r.snr.size(), l.snr.size());
    for (size_t i = 0; i < l.snr.size(); ++i)
        QCOMPARE(r.snr[i].snrDb.mean, l.snr[i].snrDb.mean);
}


} // namespace remotewindow
