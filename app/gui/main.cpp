// attnscope: the desktop window. `attnscope [MODEL] [IMAGE|FOLDER...]`, or `attnscope IMAGE|FOLDER...` with the
// default model (LaunchArguments.h).
#include "gui/LaunchArguments.h"
#include "gui/MainWindow.h"
#include "gui/RemoteBackend.h"
#include "gui/Session.h"

#include <worker/RuntimeDir.h>

#include <attnscope/Model.h>

#include <QApplication>
#include <QFileInfo>
#include <QScreen>
#include <QStatusBar>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QDockWidget>
#include <QTimer>

#include <cstdio>
#include <memory>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace {
// Milliseconds since this process started (the kernel's start time, 10 ms resolution), for --time-startup.
double msSinceProcessStart()
{
    std::ifstream in("/proc/self/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), {});
    const auto close = stat.rfind(')'); // the command name may hold spaces
    std::istringstream rest(stat.substr(close + 2));
    std::string field;
    for (int i = 3; i <= 22 && rest >> field; ++i) { } // field 22: starttime in clock ticks since boot
    timespec now {};
    clock_gettime(CLOCK_BOOTTIME, &now);
    return (double(now.tv_sec) + now.tv_nsec * 1e-9) * 1e3 - std::stod(field) * 1e3 / double(sysconf(_SC_CLK_TCK));
}
// --time-select N: the latency a user feels when clicking an image (warm: the model loaded, the first image done).
// Each selection is timed to its heatmap drawn (imageReady, then a repaint) and to its analysis (the analysisReady
// that leaves the worker idle); the next selection starts `pauseMs` after the worker went idle (OpenMP's threads
// sleep after a while, so a long pause times what a user who looks at the result meets).
// The engine: this process's (null), the --remote host's, or, for a session saved with a remote engine and opened
// without --remote, that host's. `error`: a --remote that names no host.
std::unique_ptr<attnscope::EngineBackend> engineFor(std::optional<QString> remote, const QString& sessionPath, QString* error)
{
    if (!remote && !sessionPath.isEmpty()) {
        QString unread;
        QStringList missing, warnings;
        if (auto saved = readSession(sessionPath, &unread, &missing, &warnings))
            remote = saved->state.remote; // its problems are said when the window opens it
    }
    if (!remote || remote->isEmpty())
        return nullptr;
    auto endpoint = attnscope::remote::parseEndpoint(remote->toStdString());
    if (!endpoint) {
        *error = QObject::tr("--remote %1: %2").arg(*remote, QString::fromStdString(endpoint.message()));
        return nullptr;
    }
    rememberRemoteHost(*remote); // File -> Connect to remote engine... offers it next time
    return std::make_unique<attnscope::RemoteBackend>(*endpoint);
}

void timeSelections(MainWindow& window, int count, int pauseMs)
{
    struct Timing {
        QElapsedTimer timer;
        int started = 0; // selections made so far; 0: waiting for the startup image
        bool heatmapSeen = false;
        double heatmapMs = 0;
        QString rows;
        quint64 forwardSets = 0;
    };
    auto t = std::make_shared<Timing>(); // held by the connections below, which live as long as the window
    const auto selectNext = [&window, t, count] {
        if (t->started == count) {
            std::printf("{\"selections\": [%s]}\n", qPrintable(t->rows));
            std::fflush(stdout);
            QApplication::quit();
            return;
        }
        ++t->started;
        t->heatmapSeen = false;
        t->forwardSets = window.forwardSets();
        t->timer.start();
        window.selectImage(0);
    };
    QObject::connect(&window, &MainWindow::imageReady, &window, [&window, t] {
        if (t->started == 0 || t->heatmapSeen)
            return;
        window.repaint(); // the heatmap painted, not only scheduled
        t->heatmapSeen = true;
        t->heatmapMs = t->timer.nsecsElapsed() * 1e-6;
    });
    QObject::connect(&window, &MainWindow::analysisReady, &window, [&window, t, selectNext, pauseMs] {
        if (window.busy())
            return; // the analysis of another channel, or the variant reset at the selection
        if (t->started > 0) {
            const double analysisMs = t->timer.nsecsElapsed() * 1e-6;
            t->rows += QStringLiteral("%1{\"heatmap_ms\": %2, \"analysis_ms\": %3, \"forward_sets\": %4}")
                           .arg(t->rows.isEmpty() ? "" : ", ")
                           .arg(t->heatmapMs, 0, 'f', 1)
                           .arg(analysisMs, 0, 'f', 1)
                           .arg(window.forwardSets() - t->forwardSets);
        }
        QTimer::singleShot(pauseMs, &window, selectNext); // the plots settle; a user looks at them
    });
}

} // namespace

int main(int argc, char** argv)
{
    attnscope::ensureRuntimeDir(); // before Qt looks for it (RuntimeDir.h)
    QApplication app(argc, argv);
    QApplication::setApplicationName("attnscope");
    QApplication::setOrganizationName("attnscope");
    QApplication::setApplicationVersion(attnscope::version());
    QApplication::setWindowIcon(QIcon::fromTheme("attnscope"));
    QCommandLineParser parser;
    parser.setApplicationDescription("A microscope for attention in vision transformers");
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument("model", "model file, folder, description .json or builtin:NAME (default builtin:fmnist-vit; "
                                          "when the first argument is an image or a folder of images, the default model opens with them; a checkpoint may be "
                                          "followed by the model description .json to read it with)",
                                 "[MODEL]");
    parser.addPositionalArgument("images", "images or folders to open", "[IMAGES...]");
    QCommandLineOption compare("compare", "a second model, side by side", "MODEL");
    QCommandLineOption screenshot("screenshot", "save a picture of the window to FILE once the first image is analysed, then quit", "FILE");
    QCommandLineOption layer("layer", "layer to show (1-based)", "L");
    QCommandLineOption head("head", "head to show: its number, or mean, rollout, gae (relevance), gradcam, norms (token norms); -1 to -5 name those five too", "H");
    QCommandLineOption query("query", "query token (0 = CLS)", "TOKEN");
    QCommandLineOption variant("variant", "also run with NeuTRENO lambda and Boost t", "LAMBDA,T");
    QCommandLineOption figure("figure", "figure of the image dock: 0 token similarity ... 5 logit decomposition, 6 attention similarity, 7 head kernels, 8 high-norm tokens", "N");
    QCommandLineOption set("analyse-set", "analyse the image set (before the screenshot)");
    QCommandLineOption setFigure("set-figure", "figure of the image-set dock (raised): 0 token similarity ... 4 distance, 5 attention similarity, 6 head kernels, 7 high-norm tokens, 8 head ablation", "N");
    QCommandLineOption lastSession("last-session", "reopen the session the window last closed with (File -> Reopen last session)");
    // Not "--session": QGuiApplication takes -session for X11 session management and removes it from the arguments.
    QCommandLineOption session("open-session", "open a saved session (File -> Save session as)", "FILE");
    QCommandLineOption timeStartup("time-startup", "print the milliseconds from process start to the first heatmap, then quit");
    QCommandLineOption timeSelect("time-select",
                                  "once the first image is analysed, select it again N times, PAUSE ms apart (default 50); print the "
                                  "milliseconds from each selection to its heatmap drawn and to its analysis, then quit",
                                  "N[,PAUSE]");
    QCommandLineOption setAblation("set-ablation", "with --analyse-set: also ablate every head, and show the head importance on the tiles");
    QCommandLineOption ablate("ablate", "ablate head H of layer L on the first image (before the screenshot)", "L,H");
    QCommandLineOption queryKey("query-key-map", "raise the Query-key map dock (before the screenshot)");
    QCommandLineOption remoteEngine("remote",
                                    "run the engine on HOST through your ssh (docs/remote.md): models and images on this machine are sent once, "
                                    "other paths are the host's; PATH: where attnscope-cli is there",
                                    "[USER@]HOST[:PATH]");
    parser.addOptions({ remoteEngine, lastSession, session, compare, screenshot, layer, head, query, variant, figure, set, setFigure, timeStartup, timeSelect,
                        setAblation, ablate, queryKey });
    parser.process(app);
    // The screenshot's view selection, checked before any window: a wrong value is said, never thrown or guessed.
    const auto fail = [](const QString& message) {
        std::fprintf(stderr, "attnscope: %s\n", qPrintable(message));
        return 2;
    };
    const std::optional<HeadChoice> headChoice = parser.isSet(head) ? parseHeadChoice(parser.value(head)) : HeadChoice();
    if (!headChoice)
        return fail(QObject::tr("--head %1: neither a head number nor mean, rollout, gae, gradcam, norms").arg(parser.value(head)));
    for (const auto& [option, count] : { std::pair { &figure, attnscope::allFigures().size() }, { &setFigure, size_t(9) } }) {
        bool ok = true;
        const int n = parser.isSet(*option) ? parser.value(*option).toInt(&ok) : 0;
        if (!ok || n < 0 || size_t(n) >= count)
            return fail(QObject::tr("--%1 %2: not a figure 0 to %3").arg(option->names().front(), parser.value(*option)).arg(count - 1));
    }
    QString error;
    auto backend = engineFor(parser.isSet(remoteEngine) ? std::optional(parser.value(remoteEngine)) : std::nullopt,
                             parser.isSet(session) ? parser.value(session) : parser.isSet(lastSession) ? MainWindow::lastSessionPath() : QString(),
                             &error);
    if (!error.isEmpty())
        return fail(error);
    const LaunchArguments launch = splitLaunchArguments(parser.positionalArguments());
    MainWindow window(nullptr, std::move(backend));
    // 1280 x 860, or the screen's free area when that is smaller (a 1280 x 800 laptop): never larger than the screen,
    // its title bar included; measured again once a window manager has framed it.
    const QSize wanted(1280, 860);
    window.fitToScreen(wanted);
    window.show();
    QTimer::singleShot(300, &window, [&window, wanted] { window.fitToScreen(wanted); });
    if (parser.isSet(session) || parser.isSet(lastSession)) {
        window.openSession(parser.isSet(session) ? parser.value(session) : MainWindow::lastSessionPath());
    } else {
        window.openModel(launch.model, launch.description);
        if (parser.isSet(compare))
            window.openCompareModel(parser.value(compare));
        window.addImages(launch.images);
        if (parser.positionalArguments().isEmpty() && QFileInfo::exists(MainWindow::lastSessionPath()))
            window.statusBar()->showMessage(QObject::tr("Where you left off: File → Reopen last session (Ctrl+Shift+R)"), 15000);
    }
    if (parser.isSet(timeStartup)) // `make bench`: cold start to the first heatmap drawn
        QObject::connect(&window, &MainWindow::imageReady, &window, [&] {
            window.repaint(); // the heatmap painted, not only scheduled
            std::printf("{\"since_process_start_ms\": %.1f}\n", msSinceProcessStart());
            std::fflush(stdout);
            app.quit();
        });
    if (parser.isSet(timeSelect))
        timeSelections(window, parser.value(timeSelect).section(',', 0, 0).toInt(),
                       parser.value(timeSelect).section(',', 1, 1).isEmpty() ? 50 : parser.value(timeSelect).section(',', 1, 1).toInt());
    if (parser.isSet(screenshot)) {
        // `make screenshots`: drive the window to a state, wait for the engine to finish, picture it, quit.
        QObject::connect(&window, &MainWindow::imageReady, &window, [&] {
            static bool once = false;
            if (std::exchange(once, true))
                return;
            if (parser.isSet(variant)) {
                const QStringList v = parser.value(variant).split(',');
                window.runVariant(v.value(0).toDouble(), v.value(1).toDouble());
            }
            if (parser.isSet(setAblation))
                window.setSetAblation(true);
            if (parser.isSet(set))
                window.analyseImageSet();
            auto* poll = new QTimer(&window);
            QObject::connect(poll, &QTimer::timeout, &window, [&, poll] {
                if (window.busy())
                    return;
                poll->stop();
                if (parser.isSet(layer))
                    window.setLayer(parser.value(layer).toInt());
                if (parser.isSet(head))
                    window.setHead(*headChoice);
                if (parser.isSet(query))
                    window.setQuery(parser.value(query).toInt());
                if (parser.isSet(figure))
                    window.imagePanel()->setFigure(attnscope::allFigures().at(size_t(parser.value(figure).toInt())));
                if (parser.isSet(setFigure))
                    window.showSetFigure(parser.value(setFigure).toInt());
                if (parser.isSet(setAblation))
                    window.setHeadImportance(true);
                if (parser.isSet(ablate))
                    window.ablateHead(parser.value(ablate).section(',', 0, 0).toInt(), parser.value(ablate).section(',', 1, 1).toInt());
                if (parser.isSet(queryKey))
                    if (auto* dock = window.findChild<QDockWidget*>("queryKeyDock"))
                        dock->raise();
                // What those asked for (an ablation, a map) is done before the picture.
                auto* settle = new QTimer(&window);
                QObject::connect(settle, &QTimer::timeout, &window, [&, settle] {
                    if (window.busy())
                        return;
                    settle->stop();
                    QTimer::singleShot(300, &window, [&] {
                        window.grab().save(parser.value(screenshot));
                        app.quit();
                    });
                });
                QTimer::singleShot(200, settle, [settle] { settle->start(100); });
            });
            poll->start(100);
        });
        QObject::connect(&window, &MainWindow::errorShown, &app, [&](const QString& m) {
            qCritical("attnscope: %s", qPrintable(m));
            app.exit(1);
        });
    }
    return app.exec();
}
