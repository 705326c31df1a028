#include "worker/EngineWorker.h"

#include <QElapsedTimer>
#include <QMetaObject>

namespace attnscope {

namespace {

QString fromStd(const std::string& s) { return QString::fromStdString(s); }

// Decoded and preprocessed for `model`; errors name the file. `preparation`: what preprocessing did to it, for the user.
Result<Model::Prepared> prepareImage(const Model& model, const QString& path, QString* preparation = nullptr)
{
    auto image = decodeImage(path.toStdString());
    if (!image)
        return image.error();
    if (preparation)
        *preparation = fromStd(model.describePreparation(image->width, image->height, image->channels));
    auto prepared = model.prepare(*image);
    if (!prepared)
        return Error { path.toStdString() + ": " + prepared.message() };
    return prepared;
}

std::shared_ptr<AnalysisSummary> summaryOf(const AnalysisRun& run, const Model& model)
{
    auto s = std::make_shared<AnalysisSummary>(summarise(run.statistics(), run.images(), run.options().radius));
    s->model = model.info().path;
    s->label = s->model;
    s->patchSize = model.config().patchSize;
    s->blockStages = blockStagesOf(model.config()); // a Swin's stages: the figures mark the merges
    return s;
}

} // namespace

bool RowsRequest::operator==(const RowsRequest& o) const
{
    const bool sameRollout = rollout.has_value() == o.rollout.has_value()
        && (!rollout || (rollout->fusion == o.rollout->fusion && rollout->discard == o.rollout->discard));
    return query == o.query && sameRollout && normsRatio == o.normsRatio;
}

Result<ImageRows> rowsOfTrace(const EngineModel& model, const ImageTrace& trace, const RowsRequest& request)
{
    const int query = request.query;
    const Trace& t = trace.trace;
    const int tokens = t.numPrefixTokens + t.gridHeight * t.gridWidth;
    if (query < 0 || query >= tokens)
        return Error { trace.path.toStdString() + ": query " + std::to_string(query) + " is not one of its " + std::to_string(tokens) + " tokens" };
    ImageRows out;
    out.of = &trace;
    out.request = request;
    try {
        out.rows = queryRows(t, query);
    } catch (const std::exception& e) {
        return Error { trace.path.toStdString() + ": " + e.what() };
    }
    // A Swin has neither (kNoHierarchicalRollout; token norms not yet): the view says so in their place.
    if (request.rollout && !t.hierarchical())
        out.rollout = rolloutMap(t, attentionRollout(t, *request.rollout), query);
    if (request.normsRatio && !t.hierarchical())
        out.norms = tokenNorms(t, model.config(), *request.normsRatio);
    return out;
}

Result<std::shared_ptr<const EngineModel>> LocalBackend::loadModel(const QString& path, const LoadOptions& options)
{
    auto model = Model::load(path.toStdString(), options);
    if (!model)
        return model.error();
    auto out = std::make_shared<EngineModel>();
    out->local = std::move(*model);
    return std::shared_ptr<const EngineModel>(std::move(out));
}

Result<std::shared_ptr<ImageTrace>> LocalBackend::trace(const EngineModel& model, const QString& imagePath, std::optional<double> neutrenoLambda,
                                                        std::optional<double> boostT, const std::function<bool()>& isCancelled)
{
    QString preparation;
    auto prepared = prepareImage(*model.local, imagePath, &preparation);
    if (!prepared)
        return prepared.error();
    RunOptions options;
    options.record = RecordSpec::everything();
    options.isCancelled = isCancelled;
    options.neutrenoLambda = neutrenoLambda;
    options.boostT = boostT;
    auto trace = model.local->run(prepared->input, options);
    if (!trace)
        return trace.cancelled() ? trace.error() : Error { imagePath.toStdString() + ": " + trace.message() };
    auto result = std::make_shared<ImageTrace>();
    result->path = imagePath;
    result->preparation = preparation;
    result->shown = std::move(prepared->shown);
    result->trace = std::move(*trace);
    return result;
}

Result<ImageRows> LocalBackend::rows(const EngineModel& model, const ImageTrace& trace, const RowsRequest& request)
{
    return rowsOfTrace(model, trace, request);
}

Result<Relevance> LocalBackend::explain(const EngineModel& model, const QString& imagePath, const RelevanceOptions& options)
{
    auto prepared = prepareImage(*model.local, imagePath);
    if (!prepared)
        return prepared.error();
    auto relevance = classRelevance(*model.local, prepared->input, options);
    if (!relevance)
        return Error { imagePath.toStdString() + ": " + relevance.message() };
    return relevance;
}

Result<std::shared_ptr<ImageAnalysis>> LocalBackend::analyse(const EngineModel& model, const QString& imagePath, AnalysisOptions options,
                                                             const Traced& traced, const std::function<bool()>& isCancelled)
{
    QString preparation;
    auto prepared = prepareImage(*model.local, imagePath, &preparation);
    if (!prepared)
        return prepared.error();
    if (traced) {
        // The view draws any layer, head and tap of the clean forward; the analyses record most of it anyway.
        options.alsoRecord = RecordSpec::everything();
        // Out before the analyses: the heatmap does not wait for the curves (on a ViT-S, 25-40 ms after a forward set
        // of about 240 ms on a busy two-core machine).
        options.cleanTraceReady = [&](size_t, const Trace& clean) {
            auto result = std::make_shared<ImageTrace>();
            result->path = imagePath;
            result->preparation = preparation;
            result->shown = prepared->shown;
            result->trace = clean; // shares the tensors, which nobody writes
            traced(std::move(result));
        };
    }
    const bool decomposition = options.decomposition;
    AnalysisRun run(model.local, std::move(options));
    if (auto added = run.addImage(*prepared, 0, isCancelled); !added)
        return added.cancelled() ? added.error() : Error { imagePath.toStdString() + ": " + added.message() };
    auto result = std::make_shared<ImageAnalysis>();
    result->path = imagePath;
    result->summary = *summaryOf(run, *model.local);
    if (decomposition) {
        auto d = decomposeLogits(*model.local, prepared->input);
        if (d)
            result->decomposition = std::make_shared<const LogitDecomposition>(std::move(*d));
        else
            result->decompositionNote = fromStd(d.message());
    }
    if (isCancelled && isCancelled())
        return Error::cancel();
    return result;
}

namespace {

// An image set's run in this process: the AnalysisRun, fed a batch at a time.
class LocalSetRunner : public SetRunner {
public:
    LocalSetRunner(std::shared_ptr<const Model> model, AnalysisOptions options)
        : m_model(model)
        , m_run(std::move(model), std::move(options))
        , m_batch(defaultBatchSize(*m_model, m_run.options()))
    {
    }
    int batchSize() const override { return m_batch; }
    Status add(const QStringList& paths, const std::vector<int64_t>& indices, const std::function<void(QString)>& skipped,
               const std::function<bool()>& isCancelled) override
    {
        std::vector<Model::Prepared> prepared;
        std::vector<int64_t> kept;
        QStringList names;
        for (int i = 0; i < paths.size(); ++i) {
            auto p = prepareImage(*m_model, paths[i]);
            if (!p) {
                skipped(fromStd(p.message()));
                continue;
            }
            prepared.push_back(std::move(*p));
            kept.push_back(indices[size_t(i)]);
            names << paths[i];
        }
        if (prepared.empty())
            return Done {};
        std::vector<const Model::Prepared*> images;
        for (const auto& p : prepared)
            images.push_back(&p);
        auto added = m_run.addImages(images, kept, isCancelled);
        if (!added && !added.cancelled())
            return Error { (names.size() == 1 ? names.front().toStdString() + ": "
                                              : QObject::tr("images %1 to %2: ").arg(names.front(), names.back()).toStdString())
                           + added.message() };
        return added;
    }
    Result<std::shared_ptr<AnalysisSummary>> summary() override { return summaryOf(m_run, *m_model); }

private:
    std::shared_ptr<const Model> m_model;
    AnalysisRun m_run;
    int m_batch;
};

} // namespace

Result<std::unique_ptr<SetRunner>> LocalBackend::startSet(const EngineModel& model, AnalysisOptions options)
{
    return std::unique_ptr<SetRunner>(std::make_unique<LocalSetRunner>(model.local, std::move(options)));
}

Result<HeadAblation> LocalBackend::ablate(const EngineModel& model, const QString& imagePath, HeadRef head,
                                          const std::function<bool()>& isCancelled)
{
    auto prepared = prepareImage(*model.local, imagePath);
    if (!prepared)
        return prepared.error();
    RunOptions run;
    run.isCancelled = isCancelled;
    auto a = headAblation(*model.local, prepared->input, AblationMode::Zero, run, 0, { head });
    if (!a)
        return a.cancelled() ? a.error() : Error { imagePath.toStdString() + ": " + a.message() };
    return a;
}

Result<QueryKeyMap> LocalBackend::queryKeyMap(const EngineModel& model, const QStringList& imagePaths, int layer, int head,
                                              const QueryKeyOptions& options, QStringList& used)
{
    std::vector<Tensor> inputs;
    for (const QString& path : imagePaths) {
        auto prepared = prepareImage(*model.local, path);
        if (!prepared)
            continue; // the strip shows which images cannot be read
        inputs.push_back(prepared->input);
        used << path;
    }
    if (inputs.empty())
        return Error { QObject::tr("none of the strip's first images could be read").toStdString() };
    return attnscope::queryKeyMap(*model.local, inputs, layer, head, options);
}

struct EngineWorker::SetRun {
    quint64 id = 0;
    int channel = 0;
    std::unique_ptr<SetRunner> runner;
    QStringList paths;
    int every = 10;
    int next = 0;
    QElapsedTimer timer;
};

EngineWorker::EngineWorker(QObject* parent, std::unique_ptr<EngineBackend> backend)
    : QObject(parent)
    , m_backend(backend ? std::move(backend) : std::make_unique<LocalBackend>())
    , m_remote(!m_backend->where().isEmpty())
    , m_endpoint(m_backend->endpoint())
    , m_where(m_backend->where())
{
    qRegisterMetaType<std::shared_ptr<const attnscope::EngineModel>>();
    qRegisterMetaType<std::shared_ptr<const attnscope::ImageRows>>();
    qRegisterMetaType<std::shared_ptr<const attnscope::ImageTrace>>();
    qRegisterMetaType<std::shared_ptr<const attnscope::ImageAnalysis>>();
    qRegisterMetaType<std::shared_ptr<const attnscope::ImageRelevance>>();
    qRegisterMetaType<std::shared_ptr<const attnscope::AnalysisSummary>>();
    m_thread.setObjectName(QStringLiteral("attnscope-engine"));
    m_context = new QObject;
    m_context->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_context, &QObject::deleteLater);
    m_thread.start();
}

EngineWorker::~EngineWorker()
{
    cancelAll();
    m_thread.quit();
    m_thread.wait();
}

quint64 EngineWorker::next(Kind kind, int channel)
{
    const quint64 id = ++m_counter;
    {
        std::lock_guard lock(m_mutex);
        m_latest[{ kind, channel }] = id;
    }
    ++m_pending;
    return id;
}

bool EngineWorker::isLatest(Kind kind, int channel, quint64 id) const
{
    std::lock_guard lock(m_mutex);
    auto it = m_latest.find({ kind, channel });
    return it != m_latest.end() && it->second == id;
}

void EngineWorker::cancel(Kind kind, int channel)
{
    std::lock_guard lock(m_mutex);
    m_latest[{ kind, channel }] = ++m_counter;
}

void EngineWorker::cancelAll()
{
    std::lock_guard lock(m_mutex);
    for (auto& [key, id] : m_latest)
        id = ++m_counter;
}

void EngineWorker::post(std::function<void()> work)
{
    QMetaObject::invokeMethod(m_context, std::move(work), Qt::QueuedConnection);
}

void EngineWorker::finish()
{
    --m_pending;
    QString where = m_backend->where(); // on the worker's thread, as every use of the backend
    {
        std::lock_guard lock(m_mutex);
        if (where == m_where)
            return;
        m_where = where;
    }
    emit whereChanged(where);
}

QString EngineWorker::where() const
{
    std::lock_guard lock(m_mutex);
    return m_where;
}

quint64 EngineWorker::loadModel(const QString& path, int channel, int inputHeight, int inputWidth, const QString& description)
{
    const quint64 id = next(ModelJob, channel);
    post([this, id, path, channel, inputHeight, inputWidth, description] {
        const auto superseded = [&] { return !isLatest(ModelJob, channel, id); };
        if (superseded()) {
            finish();
            emit cancelled(id);
            return;
        }
        LoadOptions options;
        options.acceptHierarchical = true; // the window draws a Swin's maps per stage (a remote host accepts it too)
        options.inputHeight = inputHeight;
        options.inputWidth = inputWidth;
        options.descriptionPath = description.toStdString();
        auto model = m_backend->loadModel(path, options);
        finish();
        if (superseded()) {
            emit cancelled(id);
        } else if (!model) {
            if (model.error().missing != Error::Missing::Nothing)
                emit modelIncomplete(id, model.error().missing == Error::Missing::Weights ? MissingWeights : MissingDescription);
            emit failed(id, fromStd(model.message()));
        }
        else
            emit modelLoaded(id, *model);
    });
    return id;
}

quint64 EngineWorker::explainImage(std::shared_ptr<const EngineModel> model, const QString& imagePath, RelevanceOptions options, int channel)
{
    const quint64 id = next(RelevanceJob, channel);
    post([this, id, channel, model, imagePath, options] {
        if (!isLatest(RelevanceJob, channel, id)) {
            finish();
            emit cancelled(id);
            return;
        }
        ++m_forwardSets;
        auto relevance = m_backend->explain(*model, imagePath, options);
        if (!relevance) {
            finish();
            emit failed(id, fromStd(relevance.message()));
            return;
        }
        auto result = std::make_shared<ImageRelevance>();
        result->path = imagePath;
        result->relevance = std::move(*relevance);
        finish();
        emit imageExplained(id, std::shared_ptr<const ImageRelevance>(std::move(result)));
    });
    return id;
}

quint64 EngineWorker::traceImage(std::shared_ptr<const EngineModel> model, const QString& imagePath, std::optional<double> neutrenoLambda,
                                 std::optional<double> boostT, int channel)
{
    const quint64 id = next(ImageJob, channel);
    post([this, id, channel, model, imagePath, neutrenoLambda, boostT] {
        const auto superseded = [this, id, channel] { return !isLatest(ImageJob, channel, id); };
        const auto fail = [&](const QString& message) {
            finish();
            emit failed(id, message);
        };
        if (superseded()) {
            finish();
            emit cancelled(id);
            return;
        }
        ++m_forwardSets;
        auto result = m_backend->trace(*model, imagePath, neutrenoLambda, boostT, superseded);
        if (result.cancelled() || superseded()) { // stopped in the forward, or a newer request came while it ran
            finish();
            emit cancelled(id);
            return;
        }
        if (!result)
            return fail(fromStd(result.message()));
        finish();
        emit imageTraced(id, std::shared_ptr<const ImageTrace>(std::move(*result)));
    });
    return id;
}

quint64 EngineWorker::queryRows(std::shared_ptr<const EngineModel> model, std::shared_ptr<const ImageTrace> trace, RowsRequest request,
                                int channel)
{
    const quint64 id = next(RowsJob, channel);
    post([this, id, channel, model, trace, request] {
        if (!isLatest(RowsJob, channel, id)) {
            finish();
            emit cancelled(id);
            return;
        }
        auto rows = m_backend->rows(*model, *trace, request);
        finish();
        if (!rows)
            emit failed(id, fromStd(rows.message()));
        else
            emit rowsReady(id, std::make_shared<const ImageRows>(std::move(*rows)));
    });
    return id;
}

quint64 EngineWorker::analyseImage(std::shared_ptr<const EngineModel> model, const QString& imagePath, AnalysisOptions options, int channel)
{
    return analyse(AnalysisJob, std::move(model), imagePath, std::move(options), false, channel);
}

quint64 EngineWorker::traceAndAnalyseImage(std::shared_ptr<const EngineModel> model, const QString& imagePath, AnalysisOptions options,
                                           int channel)
{
    return analyse(ImageJob, std::move(model), imagePath, std::move(options), true, channel);
}

quint64 EngineWorker::analyse(Kind kind, std::shared_ptr<const EngineModel> model, const QString& imagePath, AnalysisOptions options,
                              bool sendTrace, int channel)
{
    const quint64 id = next(kind, channel);
    post([this, id, kind, channel, model, imagePath, options = std::move(options), sendTrace]() mutable {
        const auto superseded = [this, id, kind, channel] { return !isLatest(kind, channel, id); };
        const auto fail = [&](const QString& message) {
            finish();
            superseded() ? emit cancelled(id) : emit failed(id, message);
        };
        if (superseded())
            return fail({});
        ++m_forwardSets;
        EngineBackend::Traced traced;
        if (sendTrace)
            traced = [&](std::shared_ptr<ImageTrace> trace) {
                if (!superseded())
                    emit imageTraced(id, std::shared_ptr<const ImageTrace>(std::move(trace)));
            };
        auto result = m_backend->analyse(*model, imagePath, std::move(options), traced, superseded);
        if (!result)
            return result.cancelled() ? fail({}) : fail(fromStd(result.message()));
        if (superseded())
            return fail({});
        finish();
        emit imageAnalysed(id, std::shared_ptr<const ImageAnalysis>(std::move(*result)));
    });
    return id;
}

quint64 EngineWorker::analyseSet(std::shared_ptr<const EngineModel> model, const QStringList& paths, AnalysisOptions options, int every,
                                 int channel)
{
    auto run = std::make_shared<SetRun>();
    run->id = next(SetJob, channel);
    run->channel = channel;
    run->paths = paths;
    run->every = std::max(1, every);
    post([this, run, model, options = std::move(options)]() mutable {
        run->timer.start();
        auto runner = m_backend->startSet(*model, std::move(options));
        if (!runner) {
            finish();
            emit failed(run->id, fromStd(runner.message()));
            return;
        }
        run->runner = std::move(*runner);
        stepSet(run);
    });
    return run->id;
}

void EngineWorker::stepSet(std::shared_ptr<SetRun> run)
{
    const quint64 id = run->id;
    const auto superseded = [this, run] { return !isLatest(SetJob, run->channel, run->id); };
    if (superseded()) {
        finish();
        emit cancelled(id);
        return;
    }
    const auto summary = [&] {
        auto s = run->runner->summary();
        return s ? std::shared_ptr<const AnalysisSummary>(std::move(*s)) : nullptr;
    };
    const int total = int(run->paths.size());
    if (run->next < total) {
        // One batch of images per step: one forward for all their inputs (a GPU wants many), and the job's queue gets a
        // turn between batches. An image that cannot be read is reported and left out; the set goes on (no dialog per file).
        const int end = std::min(total, run->next + std::max(1, run->runner->batchSize()));
        std::vector<int64_t> indices;
        for (int i = run->next; i < end; ++i)
            indices.push_back(i);
        ++m_forwardSets;
        const Status added = run->runner->add(run->paths.mid(run->next, end - run->next), indices,
                                              [this, id](const QString& message) { emit setSkipped(id, message); }, superseded);
        if (!added) {
            finish();
            if (added.cancelled())
                emit cancelled(id);
            else
                emit failed(id, fromStd(added.message()));
            return;
        }
        const int before = run->next;
        run->next = end;
        const int done = run->next;
        const double seconds = run->timer.elapsed() / 1000.0;
        emit setProgress(id, done, total, seconds > 0 ? done / seconds : 0.0);
        if (done < total) {
            if (done / run->every > before / run->every) // the curves grow every `every` images
                if (auto s = summary())
                    emit setAnalysed(id, s, false);
            post([this, run] { stepSet(run); }); // behind anything asked meanwhile
            return;
        }
    }
    auto s = run->runner->summary();
    finish();
    if (!s)
        emit failed(id, fromStd(s.message()));
    else
        emit setAnalysed(id, std::shared_ptr<const AnalysisSummary>(std::move(*s)), true);
}

void EngineWorker::reconnect()
{
    post([this] { m_backend->disconnect(); }); // in order: before whatever is asked after
}

quint64 EngineWorker::runTask(Task task, int channel)
{
    const quint64 id = next(TaskJob, channel);
    post([this, id, channel, task = std::move(task)] {
        const auto superseded = [this, id, channel] { return !isLatest(TaskJob, channel, id); };
        const QString error = superseded() ? QString() : task(*m_backend, superseded, [this, id](int done, int total) { emit taskProgress(id, done, total); });
        finish();
        if (superseded())
            emit cancelled(id);
        else if (!error.isEmpty())
            emit failed(id, error);
        else
            emit taskFinished(id);
    });
    return id;
}

} // namespace attnscope
