#pragma once

#include <attnscope/AnalysisRun.h>
#include <attnscope/Model.h>

#include <QObject>
#include <QString>
#include <QThread>

#include <atomic>
#include <memory>
#include <optional>

namespace attnscope {

// One image as the GUI shows it: the preprocessed image, its trace with every tap, and where it came from.
struct ImageTrace {
    QString path;
    Image shown;
    Trace trace;
};

// Runs engine work off the GUI thread (STYLE.md: one worker, jobs one at a time). A new request of a kind
// supersedes the pending one of that kind: the superseded job is cancelled (the engine polls between blocks)
// and reports `cancelled`. Every job ends in exactly one of finished / failed / cancelled, delivered as queued
// signals carrying immutable results.
class EngineWorker : public QObject {
    Q_OBJECT
public:
    explicit EngineWorker(QObject* parent = nullptr);
    ~EngineWorker() override;

    // Returns the job id.
    quint64 loadModel(const QString& path);
    // Variant values unset: the model's own (ANALYSES.md section 6).
    quint64 traceImage(std::shared_ptr<const Model> model, const QString& imagePath,
                       std::optional<double> neutrenoLambda = {}, std::optional<double> boostT = {});
    // Streams `paths` through an AnalysisRun; reports progress and a partial summary every `every` images, and
    // the final summary as setAnalysed(..., true).
    quint64 analyseSet(std::shared_ptr<const Model> model, const QStringList& paths, AnalysisOptions options, int every = 10);
    void cancelSet() { m_latestSet = ++m_counter; }
    void cancelAll();
    bool busy() const { return m_pending.load() > 0; }

signals:
    void modelLoaded(quint64 job, std::shared_ptr<const attnscope::Model> model);
    void imageTraced(quint64 job, std::shared_ptr<const attnscope::ImageTrace> result);
    void setProgress(quint64 job, int done, int total, double imagesPerSecond);
    void setAnalysed(quint64 job, std::shared_ptr<const attnscope::AnalysisSummary> summary, bool complete);
    void failed(quint64 job, QString message);
    void cancelled(quint64 job);

private:
    quint64 next(std::atomic<quint64>& latestOfKind);

    QThread m_thread;
    QObject* m_context = nullptr; // lives in m_thread; jobs run there, in order
    std::atomic<quint64> m_counter { 0 };
    std::atomic<quint64> m_latestModel { 0 };
    std::atomic<quint64> m_latestImage { 0 };
    std::atomic<quint64> m_latestSet { 0 };
    std::atomic<int> m_pending { 0 };
    std::atomic<bool> m_stopping { false };
};

} // namespace attnscope

Q_DECLARE_METATYPE(std::shared_ptr<const attnscope::Model>)
Q_DECLARE_METATYPE(std::shared_ptr<const attnscope::ImageTrace>)
Q_DECLARE_METATYPE(std::shared_ptr<const attnscope::AnalysisSummary>)
