// One binary for every window test class (tests/gui/*Test.cpp register themselves).
#include "GuiTestSupport.h"

#include <QApplication>
#include <QtTest>

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QCoreApplication::setOrganizationName("attnscope-tests");
    QCoreApplication::setApplicationName("attnscope-tests");
    int failures = 0;
    for (const auto& make : guitest::registry()) {
        auto test = make();
        failures += QTest::qExec(test.get(), argc, argv);
    }
    return failures == 0 ? 0 : 1;
}
