// Figures out and help in (issue 32, items 7 and 9): Copy puts the view or the plot on the clipboard, file dialogs
// start where the user last chose something (first the Pictures folder, never the working folder), and Help lists the
// shortcuts and says which versions run where.
#include "GuiTestSupport.h"
#include "MainWindow.h"

#include <DialogFolder.h>
#include <FigurePanel.h>
#include <attnscope/CpuKernels.h>
#include <attnscope/Model.h>
#include <qcustomplot.h>

#include <QAction>
#include <QClipboard>
#include <QDir>
#include <QGuiApplication>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using namespace guitest;
using namespace attnscope;

namespace {

QAction* copyActionOf(QWidget* widget)
{
    for (QAction* a : widget->actions())
        if (a->shortcut() == QKeySequence(QKeySequence::Copy))
            return a;
    return nullptr;
}

} // namespace

class ClipboardAndHelpTest : public QObject {
    Q_OBJECT
private slots:
    void copyPutsTheViewOrThePlotOnTheClipboard()
    {
        MainWindow w;
        QVERIFY(showWithImages(w, QStringLiteral("builtin:fmnist-vit-d4"), { kSamples + "/fashion-mnist/test-0000-ankle-boot.png" }));
        QClipboard* clipboard = QGuiApplication::clipboard();
        clipboard->clear();
        QAction* copyView = copyActionOf(w.view());
        QVERIFY(copyView);
        QCOMPARE(w.view()->contextMenuPolicy(), Qt::ActionsContextMenu); // right-click "Copy"
        copyView->trigger();
        const QImage view = clipboard->image();
        QVERIFY(!view.isNull());
        QCOMPARE(view.size(), w.view()->composed().size());
        QVERIFY(distinctColours(view) > 20);

        QAction* copyPlot = copyActionOf(w.imagePanel());
        QVERIFY(copyPlot);
        copyPlot->trigger();
        const QImage plot = clipboard->image();
        QVERIFY(!plot.isNull());
        QCOMPARE(plot.size(), w.imagePanel()->plot()->toPixmap().size());
        QVERIFY(differingPixels(view, plot) > 0);
    }

    void dialogsStartWhereTheUserLastChose()
    {
        QSettings().remove("dialogs/lastFolder");
        const QString first = dialogStart("attention.png");
        const QString pictures = QStandardPaths::writableLocation(QStandardPaths::PicturesLocation);
        QVERIFY2(first == QDir(QFileInfo(pictures).isDir() ? pictures : QDir::homePath()).filePath("attention.png"), qPrintable(first));
        QVERIFY(QFileInfo(first).absolutePath() != QDir::currentPath() || QDir::currentPath() == QDir::homePath());
        QTemporaryDir dir;
        rememberDialogChoice(dir.filePath("figure.svg")); // a saved file: its folder
        QCOMPARE(dialogStart("attention.png"), QDir(dir.path()).filePath("attention.png"));
        QDir(dir.path()).mkdir("images");
        rememberDialogChoice(dir.filePath("images")); // a chosen folder: itself
        QCOMPARE(dialogStart(), dir.filePath("images"));
        rememberDialogChoice({}); // a cancelled dialog changes nothing
        QCOMPARE(dialogStart(), dir.filePath("images"));
        QSettings().remove("dialogs/lastFolder");
    }

    void helpListsTheShortcutsAndTheVersions()
    {
        MainWindow w;
        const QString keys = w.shortcutsText();
        for (const char* expected : { "Open model file", "Open images", "Export all", "Next image", "Remove selected images", "Copy",
                                      "Keyboard shortcuts" })
            QVERIFY2(keys.contains(QLatin1String(expected)), qPrintable(keys));
        QVERIFY2(keys.contains(QKeySequence(QKeySequence::Open).toString(QKeySequence::NativeText)), qPrintable(keys));
        const QString about = w.aboutText();
        QVERIFY2(about.contains(QStringLiteral("attnscope ") + QString::fromLatin1(version())), qPrintable(about));
        QVERIFY2(about.contains(QStringLiteral("LibTorch ") + QString::fromStdString(libtorchVersion())), qPrintable(about));
        QVERIFY2(about.contains(QString::fromStdString(cpuKernels().linear)), qPrintable(about));
        QVERIFY2(about.contains("intra-op"), qPrintable(about));
    }
};

static const int registered = registerTest<ClipboardAndHelpTest>();
#include "ClipboardAndHelpTest.moc"
