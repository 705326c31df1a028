// The image strip (issue 32, item 5): each file once, what was just opened selected, the count shown, removing the
// selected images and clearing all, and an image-set run over mixed images saying so before it starts.
#include "GuiTestSupport.h"
#include "gui/MainWindow.h"

#include <figures/FigurePanel.h>

#include <QAction>
#include <QDir>
#include <QLabel>
#include <QListView>
#include <QSignalSpy>
#include <QStatusBar>
#include <QtTest>

using namespace guitest;
using namespace attnscope;

namespace {

QString countText(MainWindow& w) { return w.findChild<QLabel*>("imageCount")->text(); }

QListView* strip(MainWindow& w) { return w.findChild<QListView*>(); }

QAction* stripAction(MainWindow& w, const QString& text)
{
    for (QAction* a : strip(w)->actions())
        if (a->text() == text)
            return a;
    return nullptr;
}

int currentRow(MainWindow& w) { return strip(w)->currentIndex().row(); }

} // namespace

class ImageStripTest : public QObject {
    Q_OBJECT
private slots:
    void eachFileOnceAndWhatWasOpenedIsSelected()
    {
        MainWindow w;
        QSignalSpy modelReady(&w, &MainWindow::modelReady);
        w.openModel(QStringLiteral("builtin:fmnist-vit-d4"));
        QVERIFY(modelReady.wait(20000));
        QCOMPARE(countText(w), QStringLiteral("No images"));
        w.addImages({ kSamples + "/fashion-mnist" });
        QCOMPARE(w.images()->rowCount(), 10);
        QCOMPARE(countText(w), QStringLiteral("10 images"));
        QCOMPARE(currentRow(w), 0);
        // The same file again, by another spelling of its path: listed once, and selected.
        const QString again = kSamples + "/fashion-mnist/../fashion-mnist/" + QFileInfo(w.images()->path(4)).fileName();
        w.addImages({ again });
        QCOMPARE(w.images()->rowCount(), 10);
        QCOMPARE(currentRow(w), 4);
        // The folder again: nothing new.
        w.addImages({ kSamples + "/fashion-mnist" });
        QCOMPARE(w.images()->rowCount(), 10);
        // A new file: added at the end and selected, and it is what the view runs.
        QSignalSpy imageReady(&w, &MainWindow::imageReady);
        w.addImages({ kImage });
        QCOMPARE(w.images()->rowCount(), 11);
        QCOMPARE(countText(w), QStringLiteral("11 images"));
        QCOMPARE(currentRow(w), 10);
        QTRY_VERIFY2_WITH_TIMEOUT(w.current() && QDir::cleanPath(w.current()->path) == QDir::cleanPath(kImage),
                                  qPrintable(w.current() ? w.current()->path : QString("none")), 20000);
    }

    void removeSelectedAndClearAll()
    {
        MainWindow w;
        QVERIFY(showWithImages(w, QStringLiteral("builtin:fmnist-vit-d4"), { kSamples + "/fashion-mnist" }));
        const QString fourth = w.images()->path(3);
        // Rows 0-2 selected, the first of them current: Remove takes them, and the image after them runs.
        QItemSelectionModel* selection = strip(w)->selectionModel();
        selection->select(QItemSelection(w.images()->index(0), w.images()->index(2)), QItemSelectionModel::ClearAndSelect);
        QAction* remove = stripAction(w, QStringLiteral("Remove selected images"));
        QVERIFY(remove);
        QCOMPARE(remove->shortcut(), QKeySequence(QKeySequence::Delete));
        remove->trigger();
        QCOMPARE(w.images()->rowCount(), 7);
        QCOMPARE(countText(w), QStringLiteral("7 images"));
        QCOMPARE(w.images()->path(0), fourth);
        QTRY_VERIFY_WITH_TIMEOUT(w.current() && w.current()->path == fourth, 20000);
        QVERIFY(!w.view()->rendered().isNull());

        QAction* clearAll = stripAction(w, QStringLiteral("Clear all images"));
        QVERIFY(clearAll);
        clearAll->trigger();
        QCOMPARE(w.images()->rowCount(), 0);
        QCOMPARE(countText(w), QStringLiteral("No images"));
        QVERIFY(!w.current());
        QVERIFY(w.view()->rendered().isNull());
        QVERIFY(w.tiles()->isEmpty());
        QVERIFY(w.imagePanel()->data().series.empty());
        QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), 20000);
        QVERIFY(!w.current()); // nothing that was running comes back
    }

    void mixedImagesAreSaidBeforeTheSetRuns()
    {
        MainWindow w;
        QSignalSpy modelReady(&w, &MainWindow::modelReady);
        QSignalSpy finished(&w, &MainWindow::setFinished);
        w.openModel(QStringLiteral("builtin:fmnist-vit-d4"));
        QVERIFY(modelReady.wait(20000));
        w.addImages({ kSamples + "/fashion-mnist", kImage }); // 28x28 grey and a colour photo
        w.analyseImageSet();
        const QString said = w.statusBar()->currentMessage();
        QVERIFY2(said.contains("mixes") && said.contains("2 sizes") && said.contains("28×28") && said.contains("grey and colour"),
                 qPrintable(said));
        QVERIFY(finished.wait(60000));
    }
};

static const int registered = registerTest<ImageStripTest>();
#include "ImageStripTest.moc"
