// One binary for every window test class (tests/gui/*Test.cpp register themselves).
#include "GuiTestSupport.h"

#include <worker/RuntimeDir.h>

#include <QApplication>
#include <QtTest>

int main(int argc, char** argv)
{
    attnscope::ensureRuntimeDir(); // no QStandardPaths warning where XDG_RUNTIME_DIR is unset
    QApplication app(argc, argv);
    QCoreApplication::setOrganizationName("attnscope-tests");
    QCoreApplication::setApplicationName("attnscope-tests");
    int failures = 0;
    // Test functions named on the command line run in the classes that have them.
    QStringList wanted;
    for (int i = 1; i < argc; ++i)
        if (argv[i][0] != '-')
            wanted << QString::fromLocal8Bit(argv[i]).section(':', 0, 0);
    for (const auto& make : guitest::registry()) {
        auto test = make();
        bool has = wanted.isEmpty();
        for (int m = 0; m < test->metaObject()->methodCount() && !has; ++m)
            has = wanted.contains(QString::fromLatin1(test->metaObject()->method(m).name()));
        if (has)
            failures += QTest::qExec(test.get(), argc, argv);
    }
    return failures == 0 ? 0 : 1;
}
