#pragma once

// Shared pieces of the window tests: the fixtures, pixel comparisons, and a registry so that several QtTest
// classes run from one binary (tests/gui/main.cpp).

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QObject>
#include <QProcess>
#include <QSet>
#include <QSignalSpy>
#include <QString>
#include <QTest>

#include <functional>
#include <memory>
#include <vector>

namespace guitest {

inline const QString kFixture = QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/golden/fixtures/tv_grid16");
inline const QString kImage = QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/../resources/samples/photos/chelsea.png");
// The samples folder: photos/ (the four photos) and fashion-mnist/ (ten Fashion-MNIST images). A folder of images is
// read recursively, so this folder given whole is all 14.
inline const QString kSamples = QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/../resources/samples");

inline int differingPixels(const QImage& a, const QImage& b)
{
    if (a.size() != b.size())
        return a.width() * a.height();
    int n = 0;
    for (int y = 0; y < a.height(); ++y)
        for (int x = 0; x < a.width(); ++x)
            n += a.pixel(x, y) != b.pixel(x, y);
    return n;
}

// A figure is "not blank" when it decodes and has a fair number of distinct colours (text, lines, fills).
inline int distinctColours(const QImage& image)
{
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 2)
        for (int x = 0; x < image.width(); x += 2)
            colours.insert(image.pixel(x, y));
    return int(colours.size());
}

// `count` distinct copies of the sample image in `dir` (a set long enough to cancel half way).
inline QStringList copiesOfSample(const QString& dir, int count)
{
    QStringList paths;
    for (int i = 0; i < count; ++i) {
        const QString path = QDir(dir).filePath(QStringLiteral("copy-%1.png").arg(i, 4, 10, QLatin1Char('0')));
        QFile::copy(QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/../resources/samples/fashion-mnist/test-0000-ankle-boot.png"), path);
        paths << path;
    }
    return paths;
}

// Shows `w` (a MainWindow) at 1280x800, the small screen of issue 32, opens `model`, adds `images` and waits for the
// first image's trace; false if the model or that trace did not come.
template <class Window>
bool showWithImages(Window& w, const QString& model, const QStringList& images)
{
    w.resize(1280, 800);
    w.show();
    QSignalSpy modelReady(&w, &Window::modelReady);
    QSignalSpy imageReady(&w, &Window::imageReady);
    w.openModel(model);
    if (!modelReady.wait(20000))
        return false;
    w.addImages(images);
    return imageReady.wait(20000);
}

// The bytes of `path` (empty when it cannot be read).
inline QByteArray readAll(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Writes `bytes` to `path` (a test's own file: a session, a broken image).
inline void writeFile(const QString& path, const QByteArray& bytes)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(bytes);
}

// Runs the event loop until `condition` holds (true) or `timeoutMs` passes (false).
inline bool waitFor(const std::function<bool()>& condition, int timeoutMs = 30000)
{
    QElapsedTimer timer;
    timer.start();
    while (!condition()) {
        if (timer.elapsed() > timeoutMs)
            return false;
        QTest::qWait(20);
    }
    return true;
}

#ifdef ATTNSCOPE_WINDOW
// Runs the attnscope executable with `args` on the `platform` QPA platform (offscreen by default) with a settings folder
// of its own under `dir`; its exit code, or -1 when it crashed or did not finish within two minutes.
inline int runWindow(const QString& dir, const QStringList& args, const QString& platform = QStringLiteral("offscreen"))
{
    QProcess window;
    window.setProcessChannelMode(QProcess::ForwardedChannels);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", platform);
    env.insert("XDG_CONFIG_HOME", QDir(dir).filePath("config"));
    window.setProcessEnvironment(env);
    window.start(QStringLiteral(ATTNSCOPE_WINDOW), args);
    if (!window.waitForFinished(120000) || window.exitStatus() != QProcess::NormalExit)
        return -1;
    return window.exitCode();
}
#endif

using Factory = std::function<std::unique_ptr<QObject>()>;
inline std::vector<Factory>& registry()
{
    static std::vector<Factory> tests;
    return tests;
}
template <typename T>
int registerTest()
{
    registry().push_back([] { return std::make_unique<T>(); });
    return 0;
}

} // namespace guitest
