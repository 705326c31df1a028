// `attnscope [MODEL] [IMAGES...]`: what the window opens from its arguments. The first minute of a new user is
// `attnscope photo.jpg`: the default model with that photo, not the photo taken for a model.
#include "gui/LaunchArguments.h"
#include "gui/WindowState.h"

#include "GuiTestSupport.h"

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QSettings>
#include <QtTest>

using namespace guitest;

namespace {

const QString kDefault = QStringLiteral("builtin:fmnist-vit");

QString write(const QString& path, const QByteArray& bytes)
{
    QFile f(path);
    f.open(QIODevice::WriteOnly);
    f.write(bytes);
    return path;
}

} // namespace

class LaunchArgumentsTest : public QObject {
    Q_OBJECT
private slots:
    void modelThenImages()
    {
        auto a = splitLaunchArguments({});
        QCOMPARE(a.model, kDefault);
        QVERIFY(a.images.isEmpty());
        a = splitLaunchArguments({ "builtin:fmnist-neutreno" });
        QCOMPARE(a.model, QStringLiteral("builtin:fmnist-neutreno"));
        a = splitLaunchArguments({ kFixture, kImage, kSamples }); // a model folder (model.safetensors, config.json)
        QCOMPARE(a.model, kFixture);
        QCOMPARE(a.images, QStringList({ kImage, kSamples }));
        for (const QString model :
            { kFixture + "/model.safetensors", QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/engine/data/pt/flatten.pt"),
                QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/../docs/examples/cifar10-vit-tintn.json") }) {
            a = splitLaunchArguments({ model, kImage });
            QCOMPARE(a.model, model);
            QCOMPARE(a.images, QStringList({ kImage }));
        }
    }

    void imagesAloneOpenTheDefaultModel()
    {
        const QString jpeg = kSamples + "/photos/rocket.jpg";
        const QString fashion = kSamples + "/fashion-mnist";
        for (const QStringList& args : { QStringList { kImage }, QStringList { jpeg, kImage }, QStringList { kSamples },
                 QStringList { fashion, jpeg } }) {
            const auto a = splitLaunchArguments(args);
            QCOMPARE(a.model, kDefault);
            QCOMPARE(a.images, args);
        }
    }

    void decidesByContentWhereTheSuffixSaysNothing()
    {
        QTemporaryDir dir;
        // A photo saved without a suffix, and one with an upper-case suffix, are images.
        const QString photo = write(dir.filePath("photo"), readAll(kImage));
        const QString upper = write(dir.filePath("ROCKET.JPG"), readAll(kSamples + "/photos/rocket.jpg"));
        QCOMPARE(splitLaunchArguments({ photo }).images, QStringList({ photo }));
        QCOMPARE(splitLaunchArguments({ upper }).model, kDefault);
        // Anything else stays the model, so that the loader names it with what is wrong.
        const QString text = write(dir.filePath("notes"), "not a model, not an image");
        QCOMPARE(splitLaunchArguments({ text, kImage }).model, text);
        const QString bare = write(dir.filePath("weights"), readAll(kFixture + "/model.safetensors"));
        QCOMPARE(splitLaunchArguments({ bare }).model, bare);
        // A missing file: an image by its suffix (reported as a missing image), otherwise a missing model.
        QCOMPARE(
            splitLaunchArguments({ dir.filePath("missing.jpg") }).images, QStringList({ dir.filePath("missing.jpg") }));
        QCOMPARE(splitLaunchArguments({ dir.filePath("missing-model") }).model, dir.filePath("missing-model"));
    }

    void foldersByWhatTheyHold()
    {
        QTemporaryDir dir;
        QDir(dir.path()).mkpath("photos/2024");
        write(dir.filePath("photos/2024/cat.png"), readAll(kImage));
        QCOMPARE(splitLaunchArguments({ dir.filePath("photos") }).model, kDefault); // images below, no model
        // Model files beside images: a model folder (its images are not opened as the set).
        QDir(dir.path()).mkpath("vit");
        write(dir.filePath("vit/model.safetensors"), readAll(kFixture + "/model.safetensors"));
        write(dir.filePath("vit/example.png"), readAll(kImage));
        QCOMPARE(splitLaunchArguments({ dir.filePath("vit") }).model, dir.filePath("vit"));
        QDir(dir.path()).mkpath("empty");
        QCOMPARE(
            splitLaunchArguments({ dir.filePath("empty") }).model, dir.filePath("empty")); // "no model in this folder"
    }

    // A head or a named view: one number in a session file and on --head (docs/sessions.md), a name on --head too.
    void headChoicesRoundTripTheirSpellings()
    {
        for (int n = -5; n < 12; ++n) {
            const auto c = headFromNumber(n);
            QVERIFY(c);
            QCOMPARE(headNumber(*c), n);
            QVERIFY(parseHeadChoice(headChoiceKey(*c)) == *c);
            QVERIFY(parseHeadChoice(QString::number(n)) == *c);
        }
        QVERIFY(!headFromNumber(-6));
        QVERIFY(parseHeadChoice(" GradCam ") == HeadChoice(HeadView::GradCam));
        QVERIFY(headFromNumber(3)->isSingle() && headFromNumber(3)->head == 3);
        QVERIFY(HeadChoice(HeadView::Gae).isRelevance() && !HeadChoice(HeadView::Rollout).isRelevance());
        for (const char* bad : { "", "head", "2.5", "-7", "means" })
            QVERIFY2(!parseHeadChoice(QLatin1String(bad)), bad);
        QCOMPARE(headChoiceText(HeadChoice::single(2)), QString("head 2"));
        QCOMPARE(headChoiceText(HeadView::TokenNorms), QString("token norms"));
    }

    // The screenshot's options are checked before a window opens: one line naming the option and status 2, no crash.
    void wrongViewOptionsAreSaidNotThrown()
    {
        QTemporaryDir dir;
        for (const auto& [args, said] : { std::pair { QStringList { "--head", "bogus" }, QString("--head bogus: neither a head number nor mean") },
                                          { QStringList { "--figure", "99" }, QString("--figure 99: not a figure 0 to") },
                                          { QStringList { "--set-figure", "x" }, QString("--set-figure x: not a figure 0 to 8") } }) {
            QProcess window;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            env.insert("QT_QPA_PLATFORM", "offscreen");
            env.insert("XDG_CONFIG_HOME", dir.filePath("config"));
            window.setProcessEnvironment(env);
            window.start(QStringLiteral(ATTNSCOPE_WINDOW), args + QStringList { "--screenshot", dir.filePath("x.png") });
            QVERIFY(window.waitForFinished(60000));
            QCOMPARE(window.exitStatus(), QProcess::NormalExit);
            QCOMPARE(window.exitCode(), 2);
            const QString err = QString::fromUtf8(window.readAllStandardError());
            QVERIFY2(err.contains(said), qPrintable(err));
            QVERIFY(!QFile::exists(dir.filePath("x.png")));
        }
    }

    // The executable itself: `attnscope photo.png` shows the photo through the default model (--screenshot quits
    // with status 1 on any error the window shows, such as the photo taken for a model).
    void photoAloneOpensTheWindowOnIt()
    {
        QTemporaryDir dir;
        const QString shot = dir.filePath("first-minute.png");
        QCOMPARE(runWindow(dir.path(), { kSamples + "/fashion-mnist/test-0000-ankle-boot.png", "--screenshot", shot }), 0);
        const QImage picture(shot);
        QVERIFY(!picture.isNull());
        QVERIFY(distinctColours(picture) > 50);
    }

    // File -> Connect to remote engine...: the hosts offered are the last eight connected to, the latest first, once
    // each; the window it starts is `attnscope --remote HOST MODEL IMAGES`, which opens on that host's engine (here
    // ssh's stand-in, the screenshot of the image it traced there).
    void aRemoteEngineIsOfferedAndOpenedInANewWindow()
    {
        QSettings().remove("remoteHosts");
        for (int i = 0; i < 10; ++i)
            rememberRemoteHost(QStringLiteral("node-%1").arg(i));
        rememberRemoteHost(QStringLiteral("node-3"));
        const QStringList hosts = recentRemoteHosts();
        QCOMPARE(hosts.size(), 8);
        QCOMPARE(hosts.front(), QStringLiteral("node-3"));
        QCOMPARE(hosts.count(QStringLiteral("node-3")), 1);
        QCOMPARE(hosts[1], QStringLiteral("node-9"));
        QSettings().remove("remoteHosts");

        const QString image = kSamples + "/fashion-mnist/test-0000-ankle-boot.png";
        const QStringList args = remoteWindowArguments(QStringLiteral("localhost:" ATTNSCOPE_CLI), QStringLiteral("builtin:fmnist-vit"), { image });
        QCOMPARE(args, (QStringList { "--remote", "localhost:" ATTNSCOPE_CLI, "builtin:fmnist-vit", image }));
        QTemporaryDir dir;
        qputenv("ATTNSCOPE_SSH", ATTNSCOPE_TEST_SOURCE_DIR "/remote/local-ssh.sh");
        qputenv("XDG_CACHE_HOME", dir.filePath("cache").toLocal8Bit());
        const QString shot = dir.filePath("remote.png");
        const int status = runWindow(dir.path(), args + QStringList { "--screenshot", shot });
        qunsetenv("ATTNSCOPE_SSH");
        qunsetenv("XDG_CACHE_HOME");
        QCOMPARE(status, 0);
        QVERIFY(distinctColours(QImage(shot)) > 50);
        // The window remembers the host it was started on, in its own settings.
        QSettings started(dir.filePath("config/attnscope/attnscope.conf"), QSettings::IniFormat);
        QCOMPARE(started.value("remoteHosts").toStringList().value(0), QStringLiteral("localhost:" ATTNSCOPE_CLI));
    }
};

static const int registered = registerTest<LaunchArgumentsTest>();
#include "LaunchArgumentsTest.moc"
