#include "gui/ModelSlot.h"

#include <attnscope/Datasets.h>

#include <QFileInfo>

using namespace attnscope;

ModelSlot::ModelSlot(EngineWorker* worker, int index, QObject* parent)
    : QObject(parent)
    , m_worker(worker)
    , m_index(index)
{
    m_options.decomposition = true;
    m_options.norms = true; // cheap beside the forward: the "High-norm tokens" figure of the image and the set
    m_options.perturbations = { *Perturbation::parse("gaussian:sigma=8") };

    connect(worker, &EngineWorker::modelLoaded, this, [this](quint64 job, std::shared_ptr<const EngineModel> model) {
        if (job != m_modelJob)
            return;
        m_modelJob = 0;
        cancelAll();
        m_model = std::move(model);
        m_path = m_loadingPath;
        m_description = m_loadingDescription;
        m_variant.reset();
        m_trace = m_variantTrace = nullptr;
        m_rows = nullptr; // rows of the trace before (a new one may reuse its address)
        m_rowsAsked = {};
        m_analysis = m_variantAnalysis = nullptr;
        m_setSummary = m_variantSetSummary = nullptr;
        m_relevance = nullptr;
        emit modelLoaded();
    });
    connect(worker, &EngineWorker::modelIncomplete, this, [this](quint64 job, int missing) {
        if (job == m_modelJob)
            m_missing = missing;
    });
    connect(worker, &EngineWorker::imageTraced, this, [this](quint64 job, std::shared_ptr<const ImageTrace> result) {
        if (job == m_traceJob) {
            m_traceJob = 0;
            m_trace = std::move(result);
            m_rows = nullptr; // rows of the trace before (a new one may reuse its address)
            m_rowsAsked = {};
            emit traceReady();
        } else if (job == m_variantTraceJob) {
            m_variantTraceJob = 0;
            m_variantTrace = std::move(result);
            emit variantTraceReady();
        }
    });
    connect(worker, &EngineWorker::imageAnalysed, this, [this](quint64 job, std::shared_ptr<const ImageAnalysis> result) {
        if (job == m_analysisJob) {
            m_analysisJob = 0;
            m_analysis = std::move(result);
        } else if (job == m_variantAnalysisJob) {
            m_variantAnalysisJob = 0;
            m_variantAnalysis = std::move(result);
        } else {
            return;
        }
        emit analysisReady();
    });
    connect(worker, &EngineWorker::rowsReady, this, [this](quint64 job, std::shared_ptr<const ImageRows> rows) {
        if (job != m_rowsAsked.job)
            return;
        m_rowsAsked = {};
        if (m_trace && rows->of == m_trace.get()) {
            m_rows = std::move(rows);
            emit rowsReady();
        }
    });
    connect(worker, &EngineWorker::imageExplained, this, [this](quint64 job, std::shared_ptr<const ImageRelevance> result) {
        if (job != m_relevanceJob)
            return;
        m_relevanceJob = 0;
        m_relevance = std::move(result);
        emit relevanceReady();
    });
    connect(worker, &EngineWorker::setProgress, this, [this](quint64 job, int done, int total, double rate) {
        if (job == m_setJob)
            emit setProgress(done, total, rate);
    });
    connect(worker, &EngineWorker::setSkipped, this, [this](quint64 job, const QString& message) {
        if (job == m_setJob)
            emit setSkipped(message);
    });
    connect(worker, &EngineWorker::setAnalysed, this, [this](quint64 job, std::shared_ptr<const AnalysisSummary> s, bool complete) {
        if (job == m_setJob) {
            m_setSummary = std::move(s);
            if (complete)
                m_setJob = 0;
        } else if (job == m_variantSetJob) {
            m_variantSetSummary = std::move(s);
            if (complete)
                m_variantSetJob = 0;
        } else {
            return;
        }
        emit setUpdated(!setRunning());
    });
    connect(worker, &EngineWorker::failed, this, [this](quint64 job, const QString& message) {
        // What the failed job was to bring goes with it: nothing of the image before may stay on screen as this one's.
        const bool image = job == m_traceJob, variantImage = job == m_variantTraceJob;
        const bool analysis = job == m_analysisJob, variantAnalysis = job == m_variantAnalysisJob;
        if (job == m_rowsAsked.job) {
            m_rowsAsked = {};
            emit failed(message, Failure::Link);
            return;
        }
        if (job == m_modelJob && m_missing != 0) {
            m_modelJob = 0;
            emit needsOtherHalf(m_loadingPath, m_loadingDescription, m_missing, message);
            return;
        }
        // An image job is both the trace job and the analysis job of its channel.
        quint64* jobs[] = { &m_modelJob, &m_traceJob, &m_variantTraceJob, &m_analysisJob, &m_variantAnalysisJob, &m_setJob, &m_variantSetJob,
                            &m_relevanceJob };
        bool ours = false;
        const bool setJob = job == m_setJob || job == m_variantSetJob;
        const Failure what = job == m_modelJob ? Failure::Model : setJob ? Failure::Set : Failure::Image;
        for (quint64* j : jobs)
            if (*j == job) {
                *j = 0;
                ours = true;
                if (j == &m_setJob || j == &m_variantSetJob)
                    cancelSet();
                if (j == &m_relevanceJob)
                    m_relevance = nullptr;
            }
        if (image) {
            m_trace = nullptr;
            m_rows = nullptr; // rows of the trace before (a new one may reuse its address)
            m_rowsAsked = {};
            m_relevance = nullptr;
        }
        if (image || analysis)
            m_analysis = nullptr;
        if (variantImage)
            m_variantTrace = nullptr;
        if (variantImage || variantAnalysis)
            m_variantAnalysis = nullptr;
        if (ours)
            emit failed(message, what);
        if (setJob && !setRunning()) // the run is over: the set dock says so and ends it
            emit setFailed(message);
        if (image)
            emit imageFailed(message);
        else if (analysis || variantImage || variantAnalysis)
            emit analysisFailed(message);
    });
    connect(worker, &EngineWorker::cancelled, this, [this](quint64 job) {
        if (job == m_setJob || job == m_variantSetJob) {
            (job == m_setJob ? m_setJob : m_variantSetJob) = 0;
            if (!setRunning())
                emit setCancelled();
        }
    });
}

void ModelSlot::load(QString path, QString description, int inputHeight, int inputWidth) // copies: they may be our own members
{
    m_loadingPath = path;
    m_loadingDescription = description;
    m_missing = 0;
    m_modelJob = m_worker->loadModel(path, channel(0), inputHeight, inputWidth, description);
}

std::shared_ptr<const ImageRows> ModelSlot::rows(const RowsRequest& request)
{
    if (!m_trace || !m_model)
        return nullptr;
    if (m_rows && m_rows->of == m_trace.get() && m_rows->request == request)
        return m_rows;
    if (m_trace->remoteTrace == 0) {
        auto rows = rowsOfTrace(*m_model, *m_trace, request);
        m_rows = rows ? std::make_shared<const ImageRows>(std::move(*rows)) : nullptr;
        return m_rows;
    }
    if (m_rowsAsked.job == 0 || m_rowsAsked.trace != m_trace.get() || !(m_rowsAsked.request == request))
        m_rowsAsked = { m_trace.get(), request, m_worker->queryRows(m_model, m_trace, request, channel(0)) };
    return nullptr;
}

void ModelSlot::unload()
{
    cancelAll();
    m_modelJob = 0;
    m_model = nullptr;
    m_path.clear();
    m_description.clear();
    m_variant.reset();
    m_trace = m_variantTrace = nullptr;
    m_rows = nullptr; // rows of the trace before (a new one may reuse its address)
    m_rowsAsked = {};
    m_analysis = m_variantAnalysis = nullptr;
    m_setSummary = m_variantSetSummary = nullptr;
}

QString ModelSlot::name() const
{
    if (!m_model)
        return {};
    const QString path = QString::fromStdString(m_model->info().path);
    if (path.startsWith(QLatin1String("builtin:")))
        return path.mid(8);
    const QFileInfo info(path);
    return info.isDir() ? info.fileName() : info.completeBaseName();
}

QString ModelSlot::variantLabel() const
{
    if (!m_variant)
        return name();
    return tr("%1 (NeuTRENO %2, Boost %3)").arg(name()).arg(m_variant->neutrenoLambda).arg(m_variant->boostT);
}

void ModelSlot::showImage(const QString& imagePath)
{
    if (!m_model)
        return;
    m_imagePath = imagePath;
    runImage(0);
    runVariant();
    runRelevance();
}

void ModelSlot::clearImage()
{
    cancelImageJobs();
    m_imagePath.clear();
    m_trace = m_variantTrace = nullptr;
    m_rows = nullptr; // rows of the trace before (a new one may reuse its address)
    m_rowsAsked = {};
    m_analysis = m_variantAnalysis = nullptr;
    m_relevance = nullptr;
}

void ModelSlot::setRelevance(std::optional<RelevanceOptions> options)
{
    const bool same = options && m_relevanceOptions && options->targetClass == m_relevanceOptions->targetClass
        && options->gradCamLayer == m_relevanceOptions->gradCamLayer;
    if (same || (!options && !m_relevanceOptions))
        return;
    m_relevanceOptions = options;
    runRelevance();
}

void ModelSlot::runRelevance()
{
    m_relevance = nullptr;
    if (!m_model || m_imagePath.isEmpty() || !m_relevanceOptions) {
        m_worker->cancel(EngineWorker::RelevanceJob, channel(0));
        m_relevanceJob = 0;
        return;
    }
    m_relevanceJob = m_worker->explainImage(m_model, m_imagePath, *m_relevanceOptions, channel(0));
}

void ModelSlot::setVariant(std::optional<Variant> variant)
{
    if (variant == m_variant)
        return;
    m_variant = variant;
    runVariant();
}

void ModelSlot::setAnalysisOptions(AnalysisOptions options)
{
    m_options = std::move(options);
    if (!m_model || m_imagePath.isEmpty())
        return;
    reanalyse(0);
    if (m_variant)
        reanalyse(1);
}

AnalysisOptions ModelSlot::optionsFor(int offset) const
{
    AnalysisOptions o = m_options;
    if (offset == 0)
        return o;
    o.decomposition = false; // layer 1's logits do not depend on the variant
    if (m_variant) {
        o.neutrenoLambda = m_variant->neutrenoLambda;
        o.boostT = m_variant->boostT;
    }
    return o;
}

void ModelSlot::runImage(int offset)
{
    m_worker->cancel(EngineWorker::AnalysisJob, channel(offset)); // a rerun of the analyses of what this replaces
    const quint64 job = m_worker->traceAndAnalyseImage(m_model, m_imagePath, optionsFor(offset), channel(offset));
    (offset == 0 ? m_traceJob : m_variantTraceJob) = job;
    (offset == 0 ? m_analysisJob : m_variantAnalysisJob) = job;
}

void ModelSlot::reanalyse(int offset)
{
    // The trace does not depend on the analysis options. While it is still to come, the job that brings it is
    // asked again with the new options (still one forward set); once it is here, only the analyses are rerun and
    // the image job's own analyses, with the old options, are dropped.
    if ((offset == 0 ? m_traceJob : m_variantTraceJob) != 0)
        return runImage(offset);
    m_worker->cancel(EngineWorker::ImageJob, channel(offset));
    (offset == 0 ? m_analysisJob : m_variantAnalysisJob)
        = m_worker->analyseImage(m_model, m_imagePath, optionsFor(offset), channel(offset));
}

void ModelSlot::runVariant()
{
    m_variantTrace = nullptr;
    m_variantAnalysis = nullptr;
    if (!m_variant) {
        m_worker->cancel(EngineWorker::ImageJob, channel(1));
        m_worker->cancel(EngineWorker::AnalysisJob, channel(1));
        m_variantTraceJob = m_variantAnalysisJob = 0;
        emit variantTraceReady();
        emit analysisReady();
        return;
    }
    if (!m_model || m_imagePath.isEmpty())
        return;
    runImage(1); // NeuTRENO and Boost change the trace as well as the analyses
}

void ModelSlot::analyseSet(const QStringList& paths, bool ablation)
{
    if (!m_model || paths.isEmpty())
        return;
    const int every = std::max(1, int(paths.size()) / 20);
    AnalysisOptions o = m_options;
    o.decomposition = false;
    o.ablation = ablation && m_model->config().numClasses > 0 && !m_model->config().headIsProjection;
    if (o.ablation) {
        std::vector<std::string> files;
        for (const QString& path : paths)
            files.push_back(path.toStdString());
        o.trueClasses = classesOfFolders(files, m_model->info().labels);
    }
    m_setSummary = m_variantSetSummary = nullptr;
    m_setJob = m_worker->analyseSet(m_model, paths, o, every, channel(2));
    m_variantSetJob = m_variant ? m_worker->analyseSet(m_model, paths, optionsFor(1), every, channel(3)) : 0;
}

void ModelSlot::cancelSet()
{
    m_worker->cancel(EngineWorker::SetJob, channel(2));
    m_worker->cancel(EngineWorker::SetJob, channel(3));
}

void ModelSlot::cancelImageJobs()
{
    for (int offset : { 0, 1 }) {
        m_worker->cancel(EngineWorker::ImageJob, channel(offset));
        m_worker->cancel(EngineWorker::AnalysisJob, channel(offset));
    }
    m_worker->cancel(EngineWorker::RelevanceJob, channel(0));
    m_traceJob = m_variantTraceJob = m_analysisJob = m_variantAnalysisJob = m_relevanceJob = 0;
}

void ModelSlot::cancelAll()
{
    cancelImageJobs();
    cancelSet();
}

std::vector<AnalysisSummary> ModelSlot::labelled(const AnalysisSummary* own, const AnalysisSummary* variant) const
{
    std::string noise;
    for (const auto& p : m_options.perturbations)
        noise += (noise.empty() ? "" : " ") + p.spec();
    const std::string options = noise.empty() ? "" : noise + ", seed " + std::to_string(m_options.seed);
    std::vector<AnalysisSummary> series;
    for (const AnalysisSummary* s : { own, m_variant ? variant : nullptr }) {
        if (!s)
            continue;
        series.push_back(*s);
        series.back().model = name().toStdString();
        series.back().label = (s == own ? name() : variantLabel()).toStdString();
        series.back().options = options;
        if (!s->ablation.empty())
            series.back().ablationMode = toString(AblationMode::Zero);
    }
    return series;
}

std::vector<AnalysisSummary> ModelSlot::imageSeries() const
{
    return labelled(m_analysis ? &m_analysis->summary : nullptr, m_variantAnalysis ? &m_variantAnalysis->summary : nullptr);
}

std::vector<AnalysisSummary> ModelSlot::setSeries() const { return labelled(m_setSummary.get(), m_variantSetSummary.get()); }
