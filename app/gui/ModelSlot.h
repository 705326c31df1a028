#pragma once

#include <worker/EngineWorker.h>

#include <QObject>

#include <memory>
#include <optional>

// One model of the window (the primary one, or the one it is compared with) and everything computed with it for
// what is open: the current image's trace and analyses, the same with the variant settings, and the image set's
// summaries. Its jobs run on the window's shared worker on channels of their own, so that the two models and
// their variants never supersede each other's work.
class ModelSlot : public QObject {
    Q_OBJECT
public:
    // What failed (failed()): the model's load, the image's run (trace, analyses, variant, relevance) or the image set's.
    // Link: a view's rows that a remote engine did not send (the link dropped); the trace stays.
    enum class Failure { Model, Image, Set, Link };
    Q_ENUM(Failure)

    struct Variant {
        double neutrenoLambda = 0;
        double boostT = 0;
        bool operator==(const Variant& o) const { return neutrenoLambda == o.neutrenoLambda && boostT == o.boostT; }
    };

    ModelSlot(attnscope::EngineWorker* worker, int index, QObject* parent = nullptr);

    // A model file, folder or builtin:NAME, with the description .json to read it with ("" for none, or the one beside it).
    // inputHeight, inputWidth 0, 0: the input size it was trained for.
    void load(QString path, QString description = {}, int inputHeight = 0, int inputWidth = 0);
    void unload();
    // Traces and analyses `imagePath` (and its variant, when one is set), superseding what was running: one job per
    // channel, whose one forward set gives the trace (traceReady, first) and the analyses (analysisReady).
    void showImage(const QString& imagePath);
    void clearImage(); // no image: its jobs cancelled, its trace, analyses and relevance gone
    // Unset: no variant. Reruns the variant of the current image.
    void setVariant(std::optional<Variant> variant);
    void setAnalysisOptions(attnscope::AnalysisOptions options); // for the image and the set; reruns the image's
    // Unset: no relevance. Set: the current image's class relevance is computed (relevanceReady), and again for every
    // image shown after, until unset.
    void setRelevance(std::optional<attnscope::RelevanceOptions> options);
    // With `ablation`, each head of each layer is also ablated on every image (docs/analyses.md section 8); the images
    // in a folder named after one of the model's classes count towards the accuracy change.
    void analyseSet(const QStringList& paths, bool ablation = false);
    void cancelSet();
    void cancelAll();

    const std::shared_ptr<const attnscope::EngineModel>& model() const { return m_model; }
    // What the loaded model was opened from: the path given and the description paired with it ("" for none).
    QString path() const { return m_path; }
    QString description() const { return m_description; }
    QString name() const;         // "fmnist-vit": what curves and folders are called
    QString variantLabel() const; // "fmnist-vit (NeuTRENO 0.6, Boost 0.3)"
    const std::optional<Variant>& variant() const { return m_variant; }
    const attnscope::AnalysisOptions& analysisOptions() const { return m_options; }
    const std::shared_ptr<const attnscope::ImageTrace>& trace() const { return m_trace; }
    const std::shared_ptr<const attnscope::ImageTrace>& variantTrace() const { return m_variantTrace; }
    // What a view asks of the current trace (RowsRequest: a query's rows, the rollout's, the token norms): a trace held
    // here answers at once; a remote one's are asked of the host, null until rowsReady() (docs/remote.md).
    std::shared_ptr<const attnscope::ImageRows> rows(const attnscope::RowsRequest& request);
    const std::shared_ptr<const attnscope::ImageAnalysis>& analysis() const { return m_analysis; }
    // The current image's relevance, once computed (null while it runs, or when none is asked).
    const std::shared_ptr<const attnscope::ImageRelevance>& relevance() const { return m_relevance; }
    const std::shared_ptr<const attnscope::ImageAnalysis>& variantAnalysis() const { return m_variantAnalysis; }
    const std::shared_ptr<const attnscope::AnalysisSummary>& setSummary() const { return m_setSummary; }
    const std::shared_ptr<const attnscope::AnalysisSummary>& variantSetSummary() const { return m_variantSetSummary; }
    bool setRunning() const { return m_setJob != 0 || m_variantSetJob != 0; }

    // The curves this slot contributes to a plot: the model's own, then its variant, labelled.
    std::vector<attnscope::AnalysisSummary> imageSeries() const;
    std::vector<attnscope::AnalysisSummary> setSeries() const;

signals:
    void modelLoaded();
    void traceReady();
    void variantTraceReady();
    void analysisReady();
    void relevanceReady();
    void rowsReady(); // the rows a view asked of a remote trace are here
    void setProgress(int done, int total, double imagesPerSecond);
    void setUpdated(bool complete);
    void setCancelled();
    void setFailed(const QString& message); // the run stopped on an error (failed() says it too)
    void setSkipped(const QString& message); // an image of the set that could not be read
    void failed(const QString& message, ModelSlot::Failure what);
    // Instead of failed(): the model could not load because `path` lacks its other half (EngineWorker::Missing: the weights
    // for a description that names none, a description for a checkpoint no convention names). The window asks for it.
    void needsOtherHalf(const QString& path, const QString& description, int missing, const QString& message);
    // After failed(): the image could not be run (its trace, analyses and relevance are cleared), or only its analyses
    // or its variant's (those are cleared).
    void imageFailed(const QString& message);
    void analysisFailed(const QString& message);

private:
    int channel(int offset) const { return m_index * 4 + offset; } // 0 image, 1 variant image, 2 set, 3 variant set
    // Channel offset 0 (the model's own) or 1 (its variant): the image's trace and analyses, one job, one forward set.
    void cancelImageJobs(); // the image's trace, analysis and relevance jobs, of both channels
    void runImage(int offset);
    void reanalyse(int offset); // the analysis options changed
    void runVariant();
    void runRelevance();
    attnscope::AnalysisOptions optionsFor(int offset) const;
    std::vector<attnscope::AnalysisSummary> labelled(const attnscope::AnalysisSummary* own,
                                                     const attnscope::AnalysisSummary* variant) const;

    attnscope::EngineWorker* m_worker;
    int m_index;
    std::shared_ptr<const attnscope::EngineModel> m_model;
    std::optional<Variant> m_variant;
    attnscope::AnalysisOptions m_options;
    QString m_imagePath;
    std::shared_ptr<const attnscope::ImageTrace> m_trace, m_variantTrace;
    std::shared_ptr<const attnscope::ImageAnalysis> m_analysis, m_variantAnalysis;
    std::optional<attnscope::RelevanceOptions> m_relevanceOptions;
    std::shared_ptr<const attnscope::ImageRelevance> m_relevance;
    quint64 m_relevanceJob = 0;
    std::shared_ptr<const attnscope::ImageRows> m_rows; // the last rows of m_trace the views drew
    struct RowsAsked {
        const attnscope::ImageTrace* trace = nullptr;
        attnscope::RowsRequest request;
        quint64 job = 0;
    } m_rowsAsked; // of a remote trace, on their way
    std::shared_ptr<const attnscope::AnalysisSummary> m_setSummary, m_variantSetSummary;
    QString m_path, m_description;               // of the loaded model
    QString m_loadingPath, m_loadingDescription; // of the model job
    int m_missing = 0;                           // of the model job, once modelIncomplete said
    quint64 m_modelJob = 0, m_traceJob = 0, m_variantTraceJob = 0, m_analysisJob = 0, m_variantAnalysisJob = 0;
    quint64 m_setJob = 0, m_variantSetJob = 0;
};
