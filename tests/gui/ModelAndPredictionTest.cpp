// The user's own checkpoint, the image meeting the model, the prediction (issue 32, items 2 to 4): a checkpoint or a
// description that lacks its other half asks for it and loads the pair (dialog, drag and drop, command line, Recent
// models); the line under the view says what preprocessing did; the top-5 classes under each view match the timm
// reference's logits, follow the image and the variant, and say why when there are none.
#include "GuiTestSupport.h"
#include "gui/LaunchArguments.h"
#include "gui/MainWindow.h"
#include "gui/ModelSlot.h"

#include <attnscope/Npy.h>

#include <QDropEvent>
#include <QLabel>
#include <QMenu>
#include <QMimeData>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

using namespace guitest;
using namespace attnscope;

namespace {

const QString kTimm = QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/golden/fixtures/tv_timm");
// ../shared beside the checkout (or $ATTNSCOPE_SHARED_DIR), as the engine tests read it.
const QString kShared = qEnvironmentVariable("ATTNSCOPE_SHARED_DIR", QStringLiteral(ATTNSCOPE_SHARED_DIR));
const QString kTintn = kShared + "/models/cifar10-vit-tintn/model_final.pt";
const QString kTintnDescription = QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/../docs/examples/cifar10-vit-tintn.json");
const QStringList kCifarClasses { "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck" };

// A chooser that answers the window's file requests with `answer` and records what was asked.
struct Chooser {
    QString answer;
    QStringList captions, filters, folders;
    MainWindow::FileChooser function()
    {
        return [this](const QString& caption, const QString& filter, const QString& folder) {
            captions << caption;
            filters << filter;
            folders << folder;
            return answer;
        };
    }
};


QMenu* recentMenu(MainWindow& w)
{
    for (QMenu* menu : w.findChildren<QMenu*>())
        if (menu->title() == QLatin1String("Recent models"))
            return menu;
    return nullptr;
}

QString modelPanelText(MainWindow& w)
{
    for (QLabel* label : w.findChildren<QLabel*>())
        if (label->text().contains(QLatin1String(" heads ")))
            return label->text();
    return {};
}

} // namespace

class ModelAndPredictionTest : public QObject {
    Q_OBJECT
private slots:
    void init() { QSettings().remove("recentModels"); }

    // A description without "weights" (the shipped example's kind) asks for the checkpoint and loads the pair; the pair
    // is in Recent models, and the description's class names name the prediction.
    void aDescriptionAloneAsksForItsCheckpoint()
    {
        QTemporaryDir dir;
        const QString description = dir.filePath("described.json");
        QFile file(description);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(R"({"attnscope_description": 1, "architecture": {"num_heads": 4},
                       "labels": ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]})");
        file.close();
        QVERIFY(isModelDescription(description));
        QVERIFY(!isModelDescription(kTimm + "/config.json")); // timm's config: "architecture" is a string there

        MainWindow w;
        Chooser chooser { kTimm + "/model.safetensors" };
        w.setFileChooser(chooser.function());
        QSignalSpy ready(&w, &MainWindow::modelReady);
        w.openModel(description);
        QVERIFY2(ready.wait(20000), qPrintable(w.lastError()));
        QCOMPARE(chooser.captions.size(), 1);
        QVERIFY2(chooser.captions.front().contains("described.json") && chooser.filters.front().contains("*.safetensors"),
                 qPrintable(chooser.captions.front()));
        QCOMPARE(chooser.folders.front(), QFileInfo(description).absolutePath()); // beside the half opened (walk item g)
        QCOMPARE(w.slot(0)->path(), kTimm + "/model.safetensors");
        QCOMPARE(w.slot(0)->description(), description);
        QVERIFY2(modelPanelText(w).contains("described by described.json"), qPrintable(modelPanelText(w)));
        // Recent models reopens the pair, not the half.
        QMenu* recent = recentMenu(w);
        QVERIFY(recent);
        QCOMPARE(recent->actions().size(), 1);
        QVERIFY2(recent->actions().front()->text().endsWith("model.safetensors + described.json"), qPrintable(recent->actions().front()->text()));

        w.addImages({ kTimm + "/image.png" });
        QVERIFY(waitFor([&] { return !w.footer(0)->entries().empty(); }));
        QVERIFY2(w.footer(0)->predictionText().contains(w.footer(0)->entries().front().name), qPrintable(w.footer(0)->predictionText()));
        QVERIFY(QStringList({ "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine" })
                    .contains(w.footer(0)->entries().front().name));

        // Reopened from Recent models on a fresh window: no question asked.
        MainWindow again;
        Chooser none;
        again.setFileChooser(none.function());
        QSignalSpy againReady(&again, &MainWindow::modelReady);
        QMenu* againRecent = recentMenu(again);
        QVERIFY(againRecent && !againRecent->actions().isEmpty());
        againRecent->actions().front()->trigger();
        QVERIFY(againReady.wait(20000));
        QVERIFY(none.captions.isEmpty());
        QCOMPARE(again.slot(0)->description(), description);
    }

    // Declining the question leaves the reason in view and no model.
    void decliningLeavesTheReason()
    {
        MainWindow w;
        Chooser declined;
        w.setFileChooser(declined.function());
        QSignalSpy error(&w, &MainWindow::errorShown);
        w.openModel(kTintnDescription);
        QVERIFY(error.wait(20000));
        QCOMPARE(declined.captions.size(), 1);
        QVERIFY2(w.lastError().contains("names no \"weights\" file"), qPrintable(w.lastError()));
        QVERIFY(!w.model());
    }

    // The shared third-party CIFAR-10 ViT: its checkpoint asks for a description, its description for the checkpoint,
    // both dropped together load without a question, and a CIFAR image gets CIFAR class names.
    void theThirdPartyCheckpointPairs()
    {
        if (!QFile::exists(kTintn))
            QSKIP("../shared/models/cifar10-vit-tintn is absent (tests read third-party models from ../shared)");
        {
            MainWindow w;
            Chooser chooser { kTintnDescription };
            w.setFileChooser(chooser.function());
            QSignalSpy ready(&w, &MainWindow::modelReady);
            w.openModel(kTintn);
            QVERIFY(ready.wait(20000));
            QCOMPARE(chooser.captions.size(), 1);
            QVERIFY2(chooser.filters.front().contains("*.json"), qPrintable(chooser.filters.front()));
            QCOMPARE(chooser.folders.front(), QFileInfo(kTintn).absolutePath()); // `attnscope model.pth` asks beside it
            QCOMPARE(w.slot(0)->description(), kTintnDescription);
            const QString image = kShared + "/data/cifar10-test-1000/cat/0000.jpg";
            if (QFile::exists(image)) {
                w.addImages({ image });
                QVERIFY(waitFor([&] { return !w.footer(0)->entries().empty(); }));
                QCOMPARE(int(w.footer(0)->entries().size()), 5);
                QVERIFY(kCifarClasses.contains(w.footer(0)->entries().front().name));
                // A 32x32 colour JPEG is what this model sees.
                QVERIFY2(w.footer(0)->preparationText().contains("as the model sees it"), qPrintable(w.footer(0)->preparationText()));
            }
        }
        {
            MainWindow w;
            Chooser chooser { kTintn };
            w.setFileChooser(chooser.function());
            QSignalSpy ready(&w, &MainWindow::modelReady);
            w.openModel(kTintnDescription);
            QVERIFY(ready.wait(20000));
            QCOMPARE(w.slot(0)->path(), kTintn);
        }
        {
            MainWindow w;
            Chooser none;
            w.setFileChooser(none.function());
            QSignalSpy ready(&w, &MainWindow::modelReady);
            w.openFiles({ kTintnDescription, kTintn }); // what dropEvent opens
            QVERIFY2(ready.wait(20000), qPrintable(w.lastError()));
            QVERIFY(none.captions.isEmpty());
            QCOMPARE(w.slot(0)->path(), kTintn);
            QCOMPARE(w.slot(0)->description(), kTintnDescription);
        }
        const auto launch = splitLaunchArguments({ kTintn, kTintnDescription, kImage });
        QCOMPARE(launch.model, kTintn);
        QCOMPARE(launch.description, kTintnDescription);
        QCOMPARE(launch.images, QStringList({ kImage }));
    }

    // The footer's probabilities are the softmax of the logits timm computed for this model and image (golden
    // logits.npy; the engine matches them to 1e-4 of their largest, so the probabilities to about 1e-4 too); its order
    // is theirs. A variant adds its own line, removed with it.
    void predictionMatchesTheReference()
    {
        MainWindow w;
        QVERIFY(showWithImages(w, kTimm, { kTimm + "/image.png" }));
        auto logits = readNpy((kTimm + "/logits.npy").toStdString());
        QVERIFY(logits.ok());
        const float* z = logits->data();
        const int64_t k = logits->numel();
        double maxLogit = *std::max_element(z, z + k), sum = 0;
        std::vector<double> p(size_t(k), 0.0);
        for (int64_t i = 0; i < k; ++i)
            sum += p[size_t(i)] = std::exp(double(z[i]) - maxLogit);
        const auto& entries = w.footer(0)->entries();
        QCOMPARE(int(entries.size()), 5);
        for (size_t r = 0; r < entries.size(); ++r) {
            const double expected = p[size_t(entries[r].index)] / sum;
            QVERIFY2(std::fabs(entries[r].probability - expected) <= 2e-4, qPrintable(QString("rank %1: %2 vs %3").arg(r).arg(entries[r].probability).arg(expected)));
            if (r > 0)
                QVERIFY(entries[r - 1].probability >= entries[r].probability);
            // The checkpoint's class names (its config's label_names).
            QCOMPARE(entries[r].name, QString::fromStdString(w.model()->info().labels.at(size_t(entries[r].index))));
        }
        QCOMPARE(entries.front().index, int(std::max_element(p.begin(), p.end()) - p.begin()));
        const QString text = w.footer(0)->predictionText();
        QVERIFY2(text.startsWith("Prediction: " + entries.front().name + " ") && text.contains(QString("%1%").arg(100.0 * entries.front().probability, 0, 'f', 1)),
                 qPrintable(text));

        QSignalSpy variant(&w, &MainWindow::variantReady);
        w.runVariant(0.5, 0.25);
        QVERIFY(variant.wait(20000));
        QVERIFY(waitFor([&] { return !w.footer(0)->variantEntries().empty(); }));
        QVERIFY2(w.footer(0)->predictionText().contains("With NeuTRENO 0.5, Boost 0.25: "), qPrintable(w.footer(0)->predictionText()));
        w.runVariant(0, 0);
        QVERIFY(w.footer(0)->variantEntries().empty());
        QVERIFY(!w.footer(0)->predictionText().contains("NeuTRENO"));
    }

    // A colour photo into the grey 28x28 FMNIST model: the line says so, in the compared view too; a model without a
    // classification head says it has none; an unreadable image clears the prediction with the reason.
    void theImageMeetsTheModel()
    {
        MainWindow w;
        QVERIFY(showWithImages(w, kTimm, { kImage }));
        // The engine's line for this photo and model (PreparationTest checks it against what prepare() did).
        const QString line = QString::fromStdString(w.model()->local->describePreparation(451, 300, 3));
        QVERIFY2(line.startsWith("resized 451×300 → "), qPrintable(line));
        QCOMPARE(w.footer(0)->preparationText(), "Input: " + line);
        QVERIFY2(modelPanelText(w).contains("input 3×32×32 (RGB)"), qPrintable(modelPanelText(w)));
        QSignalSpy compared(&w, &MainWindow::compareReady);
        w.openCompareModel("builtin:fmnist-vit");
        QVERIFY(compared.wait(20000));
        QVERIFY(waitFor([&] { return !w.footer(1)->entries().empty(); }));
        const QString grey = QString::fromStdString(w.slot(1)->model()->local->describePreparation(451, 300, 3));
        QVERIFY2(grey.startsWith("converted to grey, resized 451×300 → "), qPrintable(grey));
        QCOMPARE(w.footer(1)->preparationText(), "Input: " + grey);
        QVERIFY2(!w.footer(1)->entries().front().name.startsWith("class "), qPrintable(w.footer(1)->predictionText()));
        w.closeCompare();
        QVERIFY(w.footer(1)->entries().empty());

        QTemporaryDir dir;
        const QString broken = dir.filePath("broken.png");
        QFile file(broken);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("not an image");
        file.close();
        QSignalSpy failed(w.slot(0), &ModelSlot::imageFailed);
        w.addImages({ broken });
        QVERIFY(failed.wait(20000));
        QVERIFY(w.footer(0)->entries().empty());
        QVERIFY2(w.footer(0)->predictionText().contains("could not be run"), qPrintable(w.footer(0)->predictionText()));

        MainWindow headless;
        QVERIFY(showWithImages(headless, QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/golden/fixtures/hf_clip_vision"), { kImage }));
        QVERIFY(headless.footer(0)->entries().empty());
        QVERIFY2(headless.footer(0)->predictionText().contains("no classification head"), qPrintable(headless.footer(0)->predictionText()));
    }
};

static const int registered = registerTest<ModelAndPredictionTest>();

#include "ModelAndPredictionTest.moc"
