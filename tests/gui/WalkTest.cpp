// The window walk of issue 44: what a new user met at 1280x800, each asserted gone on what the window shows.
// Errors are state (one line in the status bar, once, until what failed succeeds; no box), long texts elide instead of
// widening the window, right-click copies what is looked at, the window fits its screen with its frame, a session's
// wrong fields are named one by one, Delete selects what it shows, head importance is offered only with something to
// show, and the texts say what the model says.
#include "gui/AttentionControls.h"
#include "GuiTestSupport.h"
#include "gui/LaunchArguments.h"
#include "gui/MainWindow.h"

#include <view/AttentionView.h>
#include <io/DialogFolder.h>
#include <io/ElidedLabel.h>
#include <figures/FigurePanel.h>
#include <qcustomplot.h>

#include <QAction>
#include <QCheckBox>
#include <QClipboard>
#include <QDockWidget>
#include <QGuiApplication>
#include <QItemSelectionModel>
#include <QListView>
#include <QMessageBox>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QToolTip>
#include <QtTest>

using namespace guitest;
using namespace attnscope;

namespace {

const QString kBoot = kSamples + "/fashion-mnist/test-0000-ankle-boot.png";
const QString kTrouser = kSamples + "/fashion-mnist/test-0002-trouser.png";

QAction* actionNamed(QWidget* widget, const QString& text)
{
    for (QAction* a : widget->actions())
        if (a->text() == text)
            return a;
    return nullptr;
}

QMap<QString, int> dockWidths(MainWindow& w)
{
    QMap<QString, int> widths;
    for (auto* dock : w.findChildren<QDockWidget*>())
        if (dock->isVisible())
            widths[dock->objectName()] = dock->width();
    return widths;
}

} // namespace

class WalkTest : public QObject {
    Q_OBJECT
private slots:
    // Item a and "errors are state": an unreadable image with a long path, in compare mode, says so once in the status
    // line (its trace, its analyses and the compared model's run all stop on it), in the view, and elided in the image
    // dock's header; no box opens; the window and its docks keep their widths. The good image clears the line.
    void anUnreadableImageSaysSoOnceAndWidensNothing()
    {
        QTemporaryDir dir;
        const QString deep = dir.filePath(QString(60, 'd') + "/" + QString(60, 'e') + "/" + QString(60, 'f'));
        QVERIFY(QDir().mkpath(deep));
        const QString bad = deep + "/a-photo-whose-name-is-also-long-and-goes-on-for-a-while.jpg";
        writeFile(bad, "not a JPEG at all");
        MainWindow w;
        QVERIFY(showWithImages(w, QStringLiteral("builtin:fmnist-vit-d4"), { kBoot, bad }));
        QSignalSpy compareReady(&w, &MainWindow::compareReady);
        w.openCompareModel(QStringLiteral("builtin:fmnist-vit-d4"));
        QVERIFY(compareReady.wait(20000));
        QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), 30000);
        const int width = w.width();
        const auto docks = dockWidths(w);

        QSignalSpy errors(&w, &MainWindow::errorShown);
        w.selectImage(1);
        QVERIFY(errors.wait(20000));
        QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), 20000);
        QTest::qWait(100);
        QCOMPARE(errors.count(), 1);
        QVERIFY2(w.shownError().contains(bad), qPrintable(w.shownError()));
        QVERIFY(w.findChildren<QMessageBox*>().isEmpty());
        QVERIFY2(!w.statusBar()->currentMessage().startsWith("Running"), qPrintable(w.statusBar()->currentMessage()));
        QVERIFY2(w.view()->shownText().contains("a-photo-whose-name"), qPrintable(w.view()->shownText()));
        QVERIFY2(w.imagePanel()->status().contains(bad), qPrintable(w.imagePanel()->status()));
        QCOMPARE(w.width(), width);
        QVERIFY(w.width() <= 1280);
        for (auto it = docks.begin(); it != docks.end(); ++it)
            QVERIFY2(std::abs(w.findChild<QDockWidget*>(it.key())->width() - it.value()) <= 2,
                     qPrintable(QStringLiteral("%1: %2 -> %3").arg(it.key()).arg(it.value()).arg(w.findChild<QDockWidget*>(it.key())->width())));
        auto* errorLabel = w.statusBar()->findChild<ElidedLabel*>("errorLabel");
        QVERIFY(errorLabel && errorLabel->isVisible() && errorLabel->isElided());

        QSignalSpy imageReady(&w, &MainWindow::imageReady);
        w.selectImage(0);
        QVERIFY(imageReady.wait(20000));
        QVERIFY2(w.shownError().isEmpty(), qPrintable(w.shownError()));
        QVERIFY(!errorLabel->isVisible());
        w.selectImage(1); // the same file again: said again, once
        QVERIFY(errors.wait(20000));
        QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), 20000);
        QTest::qWait(100);
        QCOMPARE(errors.count(), 2);
        emit errorLabel->clicked(); // dismissed
        QVERIFY(w.shownError().isEmpty());
    }

    // Item b: a right click opens the menu without moving the query (Copy copies the picture looked at); the plots have
    // the same menu, and Copy says that it copied.
    void rightClickCopiesWhatIsShown()
    {
        MainWindow w;
        QVERIFY(showWithImages(w, QStringLiteral("builtin:fmnist-vit-d4"), { kBoot }));
        QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), 30000);
        w.setQuery(5);
        const QImage before = w.view()->composed();
        const QRect r = w.view()->rect();
        QTest::mousePress(w.view(), Qt::RightButton, {}, QPoint(r.width() / 2 + 30, r.height() / 2 + 30));
        QCOMPARE(w.query(), 5);
        QCOMPARE(w.view()->composed(), before);
        const int renders = w.view()->renders();
        QTest::mousePress(w.view(), Qt::LeftButton, {}, QPoint(r.width() / 2 + 30, r.height() / 2 + 30));
        QVERIFY(w.query() != 5); // the left button still picks the query
        QCOMPARE(w.view()->renders(), renders + 1); // and the view renders the new map once

        QCustomPlot* plot = w.imagePanel()->findChild<QCustomPlot*>();
        QVERIFY(plot);
        QCOMPARE(plot->contextMenuPolicy(), Qt::ActionsContextMenu);
        QAction* copy = actionNamed(plot, QStringLiteral("Copy"));
        QVERIFY(copy);
        QGuiApplication::clipboard()->clear();
        copy->trigger();
        QVERIFY(!QGuiApplication::clipboard()->image().isNull());
        QCOMPARE(QToolTip::text(), copyFeedback());
    }

    // Item c: the window opens within the screen's free area, its frame included (placeWithin), wherever it was.
    void theWindowFitsTheScreenWithItsFrame()
    {
        const QRect laptop(0, 0, 1280, 800);
        const QMargins frame(4, 30, 4, 4); // a window manager's title bar and borders
        const QRect placed = placeWithin(laptop, frame, QSize(1280, 860), QPoint(0, 0));
        QVERIFY(laptop.contains(placed.marginsAdded(frame)));
        QCOMPARE(placed.size(), QSize(1272, 766));
        const QRect big = placeWithin(QRect(0, 0, 2560, 1440), frame, QSize(1280, 860), QPoint(2000, 1000)); // saved far right
        QCOMPARE(big.size(), QSize(1280, 860));
        QVERIFY(QRect(0, 0, 2560, 1440).contains(big.marginsAdded(frame)));
        const QRect panel = placeWithin(QRect(0, 28, 1280, 772), {}, QSize(1280, 860), QPoint(0, 0)); // a top panel
        QCOMPARE(panel, QRect(0, 28, 1280, 772));

        MainWindow w;
        w.fitToScreen(QSize(5000, 5000));
        QVERIFY(w.screen()->availableGeometry().contains(w.frameGeometry()));
    }

    // Item d: a session with wrong types names each wrong field and keeps the right ones; values the model has not are
    // named too, and the nearest it has is shown.
    void aSessionSaysWhatWasWrongFieldByField()
    {
        QTemporaryDir dir;
        const QString wrong = dir.filePath("wrong.json");
        writeFile(wrong, R"({"attnscope_session": 1, "model": 42, "images": {"path": "x.png"}, "layer": "three",
                             "selected": "first", "drawing": 5, "figures": {"image": 7}})");
        MainWindow w;
        QVERIFY(w.openSession(wrong));
        const QString said = w.shownError();
        for (const char* expected : { "model: 42 is not a model entry", "images: an object is not a list", "layer: \"three\" is not a whole number",
                                      "selected: \"first\" is not a whole number", "drawing: 5 is not an object", "figures.image: 7 is not a string" })
            QVERIFY2(said.contains(QLatin1String(expected)), qPrintable(said));

        const QString ranges = dir.filePath("ranges.json");
        writeFile(ranges, QStringLiteral(R"({"attnscope_session": 1, "model": {"path": "builtin:fmnist-vit-d4"}, "images": [{"path": "%1"}],
                                             "layer": 40, "head": 9, "query": 999, "drawing": {"opacity": 0.3},
                                             "rollout": {"fusion": "median", "discard": 2}, "relevance_class": 50})")
                              .arg(kBoot)
                              .toUtf8());
        QSignalSpy opened(&w, &MainWindow::sessionOpened);
        QVERIFY(w.openSession(ranges));
        QVERIFY(opened.wait(20000));
        const QString clamped = w.shownError();
        for (const char* expected : { "layer: 40 is not one of the model's layers 1 to 4 (4 shown)", "head: 9 is not one of the model's heads 0 to 3",
                                      "query: 999 is not one of the model's tokens 0 to 49",
                                      "rollout.fusion: \"median\" is not mean, max or min (mean used)",
                                      "rollout.discard: 2 is not a share from 0 to below 1 (0 used)",
                                      "relevance_class: 50 is not one of the model's 10 classes (the predicted class used)" })
            QVERIFY2(clamped.contains(QLatin1String(expected)), qPrintable(clamped));
        QCOMPARE(w.layer(), 4);
        QVERIFY(w.head() == HeadChoice(HeadView::Mean));
        QCOMPARE(w.images()->paths(), QStringList({ kBoot })); // what was right is kept
        QTRY_VERIFY_WITH_TIMEOUT(w.current() != nullptr, 20000);
        QCOMPARE(w.shownError(), clamped); // the image shown does not answer the session's message
    }

    // Item e: after Delete the neighbour shown is also selected, so that a second Delete removes it.
    void deleteSelectsTheNeighbourItShows()
    {
        MainWindow w;
        QVERIFY(showWithImages(w, QStringLiteral("builtin:fmnist-vit-d4"), { kBoot, kTrouser, kSamples + "/fashion-mnist/test-0001-pullover.png" }));
        auto* strip = w.findChild<QListView*>();
        QAction* remove = actionNamed(strip, QStringLiteral("Remove selected images"));
        QVERIFY(remove);
        w.selectImage(1);
        remove->trigger();
        QCOMPARE(w.images()->rowCount(), 2);
        const QModelIndex shown = strip->currentIndex();
        QVERIFY(shown.isValid());
        QCOMPARE(strip->selectionModel()->selectedIndexes(), QModelIndexList({ shown }));
        remove->trigger();
        QCOMPARE(w.images()->rowCount(), 1);
        QCOMPARE(strip->selectionModel()->selectedIndexes().size(), 1);
    }

    // Item f: "Head importance" cannot be ticked before the image set's head ablation is there; asking says why.
    void headImportanceIsOfferedOnlyWithAnAblation()
    {
        MainWindow w;
        QVERIFY(showWithImages(w, QStringLiteral("builtin:fmnist-vit-d4"), { kBoot }));
        QCheckBox* importance = nullptr;
        for (auto* box : w.findChildren<QCheckBox*>())
            if (box->text() == QStringLiteral("Head importance"))
                importance = box;
        QVERIFY(importance);
        QVERIFY(!importance->isEnabled());
        QVERIFY2(importance->toolTip().contains("analyse the image set first"), qPrintable(importance->toolTip()));
        w.setHeadImportance(true);
        QVERIFY(!importance->isChecked());
        QVERIFY2(w.statusBar()->currentMessage().contains("Head ablation"), qPrintable(w.statusBar()->currentMessage()));
    }

    // Item h: at 1280x800 the image set's figures keep their y-axis titles within their axes (the token similarity's ran
    // over its legend): the dock scrolls instead.
    void theImageSetFiguresKeepTheirAxisTitlesAt1280x800()
    {
        MainWindow w;
        QVERIFY(showWithImages(w, QStringLiteral("builtin:fmnist-vit-d4"), { kSamples + "/fashion-mnist" }));
        QSignalSpy finished(&w, &MainWindow::setFinished);
        w.analyseImageSet();
        QVERIFY(finished.wait(60000));
        for (int figure : { 0, 1, 4 }) { // token similarity, SNR, attention distance
            w.showSetFigure(figure);
            QCustomPlot* plot = w.setPanel()->plot();
            plot->replot();
            for (QCPAxisRect* rect : plot->axisRects()) {
                const QCPAxis* y = rect->axis(QCPAxis::atLeft);
                const int title = QFontMetrics(y->labelFont()).horizontalAdvance(y->label());
                QVERIFY2(y->label().isEmpty() || rect->rect().height() >= title,
                         qPrintable(QStringLiteral("figure %1: \"%2\" %3 px over an axis %4 px high").arg(figure).arg(y->label()).arg(title).arg(rect->rect().height())));
            }
        }
    }

    // Item h: what the texts say. The empty view asks for what is missing, the Query line of a relevance map names the
    // class as the model does, and the shortcuts are a table (a long key never runs into its action).
    void theTextsSayWhatTheModelSays()
    {
        MainWindow w;
        w.resize(1280, 800);
        w.show();
        QVERIFY2(w.view()->shownText().startsWith("Open a model"), qPrintable(w.view()->shownText()));
        QSignalSpy modelReady(&w, &MainWindow::modelReady);
        w.openModel(QStringLiteral("builtin:fmnist-vit-d4"));
        QVERIFY(modelReady.wait(20000));
        QVERIFY2(w.view()->shownText().startsWith("Open an image"), qPrintable(w.view()->shownText()));
        QSignalSpy imageReady(&w, &MainWindow::imageReady);
        w.addImages({ kBoot });
        QVERIFY(imageReady.wait(20000));
        w.setHead(HeadView::Gae); // relevance (GAE)
        const auto& labels = w.model()->info().labels;
        QVERIFY(!labels.empty());
        auto* controls = w.findChild<AttentionControls*>();
        QVERIFY(waitFor([&] { return !controls->queryText().startsWith("computing"); }));
        const QString line = controls->queryText();
        QVERIFY2(!line.startsWith("class ") && std::any_of(labels.begin(), labels.end(), [&](const std::string& l) { return line.startsWith(QString::fromStdString(l)); }),
                 qPrintable(line));
        QVERIFY(w.shortcutsText().startsWith("<table"));
    }
};

static const int registered = registerTest<WalkTest>();

#include "WalkTest.moc"
