// widgets_tests: the QtTest classes of tests/widgets, run in one process with one QApplication (QCustomPlot needs
// it). Headless: the offscreen platform unless QT_QPA_PLATFORM says otherwise.

#include <worker/RuntimeDir.h>

#include <QApplication>
#include <QtTest>
#include <memory>

QObject* makeColormapTest();
QObject* makeOutlineTest();
QObject* makeAttentionOverlayTest();
QObject* makeFigureExportTest();
QObject* makePlotBuildersTest();
QObject* makeEngineWorkerTest();

int main(int argc, char** argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    attnscope::ensureRuntimeDir(); // no QStandardPaths warning where XDG_RUNTIME_DIR is unset
    QApplication app(argc, argv);
    int failed = 0;
    for (auto make :
        { makeColormapTest, makeOutlineTest, makeAttentionOverlayTest, makeFigureExportTest, makePlotBuildersTest,
          makeEngineWorkerTest }) {
        std::unique_ptr<QObject> test(make());
        failed += QTest::qExec(test.get(), argc, argv) != 0;
    }
    return failed == 0 ? 0 : 1;
}
