// The worker's contract (docs/contributing.md section 5): jobs run off the GUI thread, one at a time; a new job
// supersedes the pending one of its kind and channel only; every job ends in exactly one terminal signal; an image-set
// run lets interactive jobs in between its images.

#include <worker/EngineWorker.h>

#include <QSignalSpy>
#include <QtTest>

#include <atomic>
#include <chrono>
#include <thread>

#include <map>

using namespace attnscope;

namespace {

const QString kModel = QStringLiteral("builtin:fmnist-vit-d4");
const QString kImage = QStringLiteral(ATTNSCOPE_TEST_SOURCE_DIR "/../resources/samples/fashion-mnist/test-0000-ankle-boot.png");

// Counts the terminal signals of each job.
struct Terminals {
    std::map<quint64, int> count;
    std::map<quint64, QString> kind;
    explicit Terminals(EngineWorker& w)
    {
        const auto note = [this](quint64 job, const char* what) {
            ++count[job];
            kind[job] = what;
        };
        QObject::connect(&w, &EngineWorker::modelLoaded, &w, [note](quint64 j, auto) { note(j, "model"); });
        QObject::connect(&w, &EngineWorker::imageTraced, &w, [note](quint64 j, auto) { note(j, "traced"); });
        QObject::connect(&w, &EngineWorker::imageAnalysed, &w, [note](quint64 j, auto) { note(j, "analysed"); });
        QObject::connect(&w, &EngineWorker::setAnalysed, &w, [note](quint64 j, auto, bool complete) {
            if (complete)
                note(j, "set");
        });
        QObject::connect(&w, &EngineWorker::taskFinished, &w, [note](quint64 j) { note(j, "task"); });
        QObject::connect(&w, &EngineWorker::failed, &w, [note](quint64 j, const QString&) { note(j, "failed"); });
        QObject::connect(&w, &EngineWorker::cancelled, &w, [note](quint64 j) { note(j, "cancelled"); });
    }
};

std::shared_ptr<const EngineModel> loadModel(EngineWorker& worker)
{
    std::shared_ptr<const EngineModel> model;
    QObject::connect(&worker, &EngineWorker::modelLoaded, &worker, [&](quint64, std::shared_ptr<const EngineModel> m) { model = m; });
    worker.loadModel(kModel);
    QElapsedTimer timer;
    timer.start();
    while (!model && timer.elapsed() < 20000)
        QTest::qWait(20);
    return model; // callers check
}

} // namespace

class EngineWorkerTest : public QObject {
    Q_OBJECT
private slots:
    void everyJobEndsOnceAndOnlyItsKindAndChannelSupersede()
    {
        EngineWorker worker;
        Terminals t(worker);
        auto model = loadModel(worker);
        QVERIFY(model);
        // A task holds the worker until everything below is queued: a trace of this model takes a millisecond, so
        // without it the first trace could start (and finish) before the next one supersedes it.
        std::atomic<bool> started { false }, release { false };
        worker.runTask([&](EngineBackend&, const auto&, const auto&) {
            started = true;
            while (!release)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            return QString();
        });
        QTRY_VERIFY_WITH_TIMEOUT(started, 20000);
        std::vector<quint64> jobs;
        for (int i = 0; i < 5; ++i)
            jobs.push_back(worker.traceImage(model, kImage, {}, {}, 0)); // only the last survives
        const quint64 other = worker.traceImage(model, kImage, 0.6, 0.3, 1); // another channel: not superseded
        AnalysisOptions options;
        options.perturbations = { *Perturbation::parse("gaussian:sigma=8") };
        const quint64 analysis = worker.analyseImage(model, kImage, options, 0);
        const quint64 broken = worker.traceImage(model, QStringLiteral("/nonexistent/image.png"), {}, {}, 2);
        const quint64 task = worker.runTask([](EngineBackend&, const auto&, const auto& progress) {
            progress(1, 1);
            return QString();
        });
        release = true;
        QTRY_VERIFY_WITH_TIMEOUT(!worker.busy(), 30000);
        QTest::qWait(50); // the last queued signals
        for (size_t i = 0; i + 1 < jobs.size(); ++i) {
            QCOMPARE(t.count[jobs[i]], 1);
            QCOMPARE(t.kind[jobs[i]], QStringLiteral("cancelled"));
        }
        QCOMPARE(t.kind[jobs.back()], QStringLiteral("traced"));
        QCOMPARE(t.kind[other], QStringLiteral("traced"));
        QCOMPARE(t.kind[analysis], QStringLiteral("analysed"));
        QCOMPARE(t.kind[broken], QStringLiteral("failed"));
        QCOMPARE(t.kind[task], QStringLiteral("task"));
        for (const auto& [job, n] : t.count)
            QCOMPARE(n, 1);
    }

    // A view's rows asked as a job (what a remote trace's views do) are what the trace held here gives at once, bit for
    // bit, with the rollout's row and the token norms when asked; a query outside the trace fails naming the image.
    void aRowsJobAnswersWhatTheTraceGives()
    {
        EngineWorker worker;
        auto model = loadModel(worker);
        QVERIFY(model);
        std::shared_ptr<const ImageTrace> trace;
        connect(&worker, &EngineWorker::imageTraced, this, [&](quint64, std::shared_ptr<const ImageTrace> t) { trace = t; });
        worker.traceImage(model, kImage);
        QTRY_VERIFY_WITH_TIMEOUT(trace, 30000);
        std::map<quint64, std::shared_ptr<const ImageRows>> answers;
        std::map<quint64, QString> failures;
        connect(&worker, &EngineWorker::rowsReady, this, [&](quint64 j, std::shared_ptr<const ImageRows> r) { answers[j] = r; });
        connect(&worker, &EngineWorker::failed, this, [&](quint64 j, const QString& m) { failures[j] = m; });
        RowsRequest request;
        request.query = 7;
        request.rollout = RolloutOptions { HeadFusion::Max, 0.5 };
        request.normsRatio = 2.0;
        const quint64 job = worker.queryRows(model, trace, request, 0);
        const quint64 wrong = worker.queryRows(model, trace, RowsRequest { 9999, {}, {} }, 1);
        QTRY_VERIFY_WITH_TIMEOUT(answers.count(job) && failures.count(wrong), 30000);
        QVERIFY2(failures[wrong].contains(kImage) && failures[wrong].contains("9999"), qPrintable(failures[wrong]));
        const ImageRows& r = *answers[job];
        QCOMPARE(r.of, trace.get());
        QVERIFY(r.request == request);
        const Trace& t = trace->trace;
        for (int l = 1; l <= t.depth; ++l)
            for (int h = -1; h < t.numHeads; ++h) {
                const AttentionMap a = attentionMap(t, l, h, 7), b = attentionMap(r.rows, l, h);
                QVERIFY(std::equal(a.patches.data(), a.patches.data() + a.patches.numel(), b.patches.data()));
                QCOMPARE(a.prefixMass, b.prefixMass);
            }
        const AttentionMap rollout = rolloutMap(t, attentionRollout(t, *request.rollout), 7);
        QVERIFY(std::equal(rollout.patches.data(), rollout.patches.data() + rollout.patches.numel(), r.rollout.patches.data()));
        const TokenNorms norms = tokenNorms(t, model->config(), 2.0);
        QCOMPARE(r.norms.layers.size(), norms.layers.size());
        QCOMPARE(r.norms.layers.back().norms, norms.layers.back().norms);
    }

    // One image job gives the trace and the analyses from one forward set: the trace first (not terminal), then the
    // analyses, which end the job; it supersedes its own kind on its channel and leaves analysis-only jobs alone.
    void anImageJobTracesThenAnalysesFromOneForwardSet()
    {
        EngineWorker worker;
        auto model = loadModel(worker);
        QVERIFY(model);
        AnalysisOptions options;
        options.perturbations = { *Perturbation::parse("gaussian:sigma=8") };
        std::map<quint64, QStringList> events;
        std::shared_ptr<const ImageTrace> trace;
        connect(&worker, &EngineWorker::imageTraced, this, [&](quint64 j, std::shared_ptr<const ImageTrace> t) {
            events[j] << "traced";
            trace = t;
        });
        connect(&worker, &EngineWorker::imageAnalysed, this, [&](quint64 j, auto) { events[j] << "analysed"; });
        connect(&worker, &EngineWorker::failed, this, [&](quint64 j, const QString&) { events[j] << "failed"; });
        connect(&worker, &EngineWorker::cancelled, this, [&](quint64 j) { events[j] << "cancelled"; });

        const quint64 before = worker.forwardSets();
        const quint64 job = worker.traceAndAnalyseImage(model, kImage, options, 0);
        QTRY_VERIFY_WITH_TIMEOUT(!worker.busy(), 30000);
        QTest::qWait(50);
        QCOMPARE(events[job], QStringList({ "traced", "analysed" }));
        QCOMPARE(worker.forwardSets() - before, quint64(1));
        // The trace the view needs: every tap of the clean forward, as a trace-only job records it.
        QVERIFY(trace && trace->path == kImage);
        const Trace& t = trace->trace;
        QCOMPARE(int(t.attention.size()), t.depth + 1);
        for (int l = 1; l <= t.depth; ++l)
            QVERIFY(!t.attention[l].empty() && !t.attnBranch[l].empty() && !t.residual[l].empty()
                    && !t.blocks[l].empty());
        const auto combined = trace;
        const quint64 traced = worker.traceImage(model, kImage);
        QTRY_VERIFY_WITH_TIMEOUT(events[traced] == QStringList({ "traced" }), 30000);
        const Tensor& a = combined->trace.attention[t.depth];
        const Tensor& b = trace->trace.attention[t.depth];
        QCOMPARE(a.shape(), b.shape());
        for (int64_t i = 0; i < a.numel(); ++i) // one forward alone or beside the perturbed one: float rounding apart
            QVERIFY(std::abs(a.data()[i] - b.data()[i]) < 1e-5f);

        // Superseded by its kind on its channel only; every job ends once.
        std::vector<quint64> jobs;
        for (int i = 0; i < 3; ++i)
            jobs.push_back(worker.traceAndAnalyseImage(model, kImage, options, 0));
        const quint64 reanalysis = worker.analyseImage(model, kImage, options, 0);
        const quint64 variant = worker.traceAndAnalyseImage(model, kImage, options, 1);
        const quint64 broken = worker.traceAndAnalyseImage(model, QStringLiteral("/nonexistent/image.png"), options, 2);
        QTRY_VERIFY_WITH_TIMEOUT(!worker.busy(), 30000);
        QTest::qWait(50);
        for (size_t i = 0; i + 1 < jobs.size(); ++i)
            QVERIFY(events[jobs[i]] == QStringList({ "cancelled" })
                    || events[jobs[i]] == QStringList({ "traced", "cancelled" }));
        QCOMPARE(events[jobs.back()], QStringList({ "traced", "analysed" }));
        QCOMPARE(events[reanalysis], QStringList({ "analysed" }));
        QCOMPARE(events[variant], QStringList({ "traced", "analysed" }));
        QCOMPARE(events[broken], QStringList({ "failed" }));
    }

    void aSetRunLetsClicksThroughAndCancels()
    {
        EngineWorker worker;
        Terminals t(worker);
        auto model = loadModel(worker);
        QVERIFY(model);
        QStringList paths; // long enough to be still running after the click: about 1.5 ms an image here
        for (int i = 0; i < 2000; ++i)
            paths << kImage;
        AnalysisOptions options;
        options.perturbations = { *Perturbation::parse("gaussian:sigma=8") };
        int progress = 0;
        connect(&worker, &EngineWorker::setProgress, this, [&](quint64, int done, int, double) { progress = done; });
        const quint64 set = worker.analyseSet(model, paths, options, 50, 2);
        QTRY_VERIFY_WITH_TIMEOUT(progress >= 3, 20000);
        // A click in the middle of the run: traced long before the set is done.
        const quint64 click = worker.traceImage(model, kImage);
        QTRY_VERIFY_WITH_TIMEOUT(t.count[click] == 1, 20000);
        QCOMPARE(t.kind[click], QStringLiteral("traced"));
        QVERIFY(t.count[set] == 0 && progress < 2000);
        worker.cancel(EngineWorker::SetJob, 2);
        QTRY_COMPARE_WITH_TIMEOUT(t.count[set], 1, 20000);
        QCOMPARE(t.kind[set], QStringLiteral("cancelled"));
        QVERIFY(!worker.busy());
    }

    void destroyingTheWorkerMidRunReturns()
    {
        QElapsedTimer timer;
        {
            EngineWorker worker;
            auto model = loadModel(worker);
            QVERIFY(model);
            QStringList paths;
            for (int i = 0; i < 300; ++i)
                paths << kImage;
            worker.analyseSet(model, paths, {}, 50);
            QTest::qWait(200);
            timer.start();
        }
        QVERIFY(timer.elapsed() < 5000);
    }
};

QObject* makeEngineWorkerTest() { return new EngineWorkerTest; }

#include "EngineWorkerTest.moc"
