// Figures out and help in (issue 32, items 7 and 9): Copy puts the view or the plot on the clipboard, file dialogs
// start where the user last chose something (first the Pictures folder, never the working folder), and Help lists the
// shortcuts and says which versions run where.
#include "GuiTestSupport.h"
#include "gui/MainWindow.h"

#include <io/DialogFolder.h>
#include <view/AttentionTileGrid.h>
#include <view/AttentionView.h>
#include <figures/FigurePanel.h>
#include <attnscope/Analyses.h>
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

    // Hovering the view or a tile names the patch's token, its (row, col) and the attention there (issue 32, item 9).
    void hoveringNamesTheTokenAndItsValue()
    {
        MainWindow w;
        QVERIFY(showWithImages(w, QStringLiteral("builtin:fmnist-vit-d4"), { kSamples + "/fashion-mnist/test-0000-ankle-boot.png" }));
        AttentionView* view = w.view();
        const QRect image = view->imageRect();
        const Trace& t = w.current()->trace;
        // the centre of patch (2, 5)
        const QPoint at(image.left() + (2 * 5 + 1) * image.width() / (2 * t.gridWidth), image.top() + (2 * 2 + 1) * image.height() / (2 * t.gridHeight));
        const QString text = view->hoverText(at);
        const AttentionMap map = attentionMap(t, w.layer(), w.head().isSingle() ? w.head().head : -1, w.query());
        const QString value = QString::number(double(map.patches.data()[2 * t.gridWidth + 5]), 'g', 4);
        QVERIFY2(text.contains(QStringLiteral("token %1 ").arg(t.numPrefixTokens + 2 * t.gridWidth + 5)) && text.contains("patch (2, 5)")
                     && text.contains("attention " + value),
                 qPrintable(text + " / " + value));
        QVERIFY(view->hoverText({ 1, 1 }).isEmpty()); // off the image

        AttentionTileGrid* tiles = w.tiles();
        tiles->resize(tiles->sizeHint());
        QPoint inTile;
        for (int y = 0; y < tiles->height() && inTile.isNull(); ++y)
            for (int x = 0; x < tiles->width(); ++x)
                if (const auto tile = tiles->tileAt({ x, y }); tile && tile->first == 2 && tile->second == 1) {
                    inTile = { x + 2, y + 2 }; // just inside layer 2, head 1: its patch (0, 0)
                    break;
                }
        QVERIFY(!inTile.isNull());
        const QString tileText = tiles->hoverText(inTile);
        const AttentionMap tileMap = attentionMap(t, 2, 1, w.query());
        QVERIFY2(tileText.contains("layer 2 · head 1") && tileText.contains("patch (0, 0)")
                     && tileText.contains("attention " + QString::number(double(tileMap.patches.data()[0]), 'g', 4)),
                 qPrintable(tileText));
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
