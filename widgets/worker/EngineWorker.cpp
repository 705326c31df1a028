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
    return s;
}

} // namespace

struct EngineWorker::SetRun {
    quint64 id = 0;
    int channel = 0;
    std::shared_ptr<const Model> model;
    QStringList paths;
    AnalysisRun run;
    int every = 10;
    int next = 0;
    int batch = 1; // images per forward (defaultBatchSize: 64 on a GPU)
    QElapsedTimer timer;

    SetRun(std::shared_ptr<const Model> m, AnalysisOptions options)
        : model(m)
        , run(std::move(m), std::move(options))
        , batch(defaultBatchSize(*model, run.options()))
    {
    }
};

EngineWorker::EngineWorker(QObject* parent)
    : QObject(parent)
{
    qRegisterMetaType<std::shared_ptr<const attnscope::Model>>();
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

void EngineWorker::finish() { --m_pending; }

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
        options.inputHeight = inputHeight;
        options.inputWidth = inputWidth;
        options.descriptionPath = description.toStdString();
        auto model = Model::load(path.toStdString(), options);
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

quint64 EngineWorker::explainImage(std::shared_ptr<const Model> model, const QString& imagePath, RelevanceOptions options, int channel)
{
    const quint64 id = next(RelevanceJob, channel);
    post([this, id, channel, model, imagePath, options] {
        if (!isLatest(RelevanceJob, channel, id)) {
            finish();
            emit cancelled(id);
            return;
        }
        auto prepared = prepareImage(*model, imagePath);
        if (!prepared) {
            finish();
            emit failed(id, fromStd(prepared.message()));
            return;
        }
        ++m_forwardSets;
        auto relevance = classRelevance(*model, prepared->input, options);
        if (!relevance) {
            finish();
            emit failed(id, imagePath + QStringLiteral(": ") + fromStd(relevance.message()));
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

quint64 EngineWorker::traceImage(std::shared_ptr<const Model> model, const QString& imagePath, std::optional<double> neutrenoLambda,
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
        QString preparation;
        auto prepared = prepareImage(*model, imagePath, &preparation);
        if (!prepared)
            return fail(fromStd(prepared.message()));
        RunOptions options;
        options.record = RecordSpec::everything();
        options.isCancelled = superseded;
        options.neutrenoLambda = neutrenoLambda;
        options.boostT = boostT;
        ++m_forwardSets;
        auto trace = model->run(prepared->input, options);
        if (trace.cancelled() || superseded()) { // stopped in the forward, or a newer request came while it ran
            finish();
            emit cancelled(id);
            return;
        }
        if (!trace)
            return fail(imagePath + QStringLiteral(": ") + fromStd(trace.message()));
        auto result = std::make_shared<ImageTrace>();
        result->path = imagePath;
        result->preparation = preparation;
        result->shown = std::move(prepared->shown);
        result->trace = std::move(*trace);
        finish();
        emit imageTraced(id, std::shared_ptr<const ImageTrace>(std::move(result)));
    });
    return id;
}

quint64 EngineWorker::analyseImage(std::shared_ptr<const Model> model, const QString& imagePath, AnalysisOptions options, int channel)
{
    return analyse(AnalysisJob, std::move(model), imagePath, std::move(options), false, channel);
}

quint64 EngineWorker::traceAndAnalyseImage(std::shared_ptr<const Model> model, const QString& imagePath, AnalysisOptions options,
                                           int channel)
{
    return analyse(ImageJob, std::move(model), imagePath, std::move(options), true, channel);
}

quint64 EngineWorker::analyse(Kind kind, std::shared_ptr<const Model> model, const QString& imagePath, AnalysisOptions options,
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
        QString preparation;
        auto prepared = prepareImage(*model, imagePath, &preparation);
        if (!prepared)
            return fail(fromStd(prepared.message()));
        if (sendTrace) {
            // The view draws any layer, head and tap of the clean forward; the analyses record most of it anyway.
            options.alsoRecord = RecordSpec::everything();
            // Out before the analyses: the heatmap does not wait for the curves (on a ViT-S, 25-40 ms after a
            // forward set of about 240 ms on a busy two-core machine).
            options.cleanTraceReady = [&](size_t, const Trace& clean) {
                if (superseded())
                    return;
                auto result = std::make_shared<ImageTrace>();
                result->path = imagePath;
                result->preparation = preparation;
                result->shown = prepared->shown;
                result->trace = clean; // shares the tensors, which nobody writes
                emit imageTraced(id, std::shared_ptr<const ImageTrace>(std::move(result)));
            };
        }
        AnalysisRun run(model, options);
        ++m_forwardSets;
        if (auto added = run.addImage(*prepared, 0, superseded); !added)
            return added.cancelled() ? fail({}) : fail(imagePath + QStringLiteral(": ") + fromStd(added.message()));
        auto result = std::make_shared<ImageAnalysis>();
        result->path = imagePath;
        result->summary = *summaryOf(run, *model);
        if (options.decomposition) {
            auto d = decomposeLogits(*model, prepared->input);
            if (d)
                result->decomposition = std::make_shared<const LogitDecomposition>(std::move(*d));
            else
                result->decompositionNote = fromStd(d.message());
        }
        if (superseded())
            return fail({});
        finish();
        emit imageAnalysed(id, std::shared_ptr<const ImageAnalysis>(std::move(result)));
    });
    return id;
}

quint64 EngineWorker::analyseSet(std::shared_ptr<const Model> model, const QStringList& paths, AnalysisOptions options, int every,
                                 int channel)
{
    auto run = std::make_shared<SetRun>(std::move(model), std::move(options));
    run->id = next(SetJob, channel);
    run->channel = channel;
    run->paths = paths;
    run->every = std::max(1, every);
    post([this, run] {
        run->timer.start();
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
    const int total = int(run->paths.size());
    if (run->next < total) {
        // One batch of images per step: one forward for all their inputs (a GPU wants many), and the job's queue gets a
        // turn between batches.
        // An image that cannot be read is reported and left out; the set goes on (no dialog per file).
        std::vector<Model::Prepared> prepared;
        std::vector<int64_t> indices;
        const int end = std::min(total, run->next + run->batch);
        for (int i = run->next; i < end; ++i) {
            auto p = prepareImage(*run->model, run->paths[i]);
            if (!p) {
                emit setSkipped(id, fromStd(p.message()));
                continue;
            }
            prepared.push_back(std::move(*p));
            indices.push_back(i);
        }
        Status added = Done {};
        QString failedPath;
        if (!prepared.empty()) {
            std::vector<const Model::Prepared*> images;
            for (const auto& p : prepared)
                images.push_back(&p);
            ++m_forwardSets;
            added = run->run.addImages(images, indices, superseded);
            if (!added)
                failedPath = prepared.size() == 1 ? run->paths[int(indices.front())] + QStringLiteral(": ")
                                                  : tr("images %1 to %2: ").arg(run->paths[int(indices.front())], run->paths[int(indices.back())]);
        }
        if (!added) {
            finish();
            if (added.cancelled())
                emit cancelled(id);
            else
                emit failed(id, failedPath + fromStd(added.message()));
            return;
        }
        const int before = run->next;
        run->next = end;
        const int done = run->next;
        const double seconds = run->timer.elapsed() / 1000.0;
        emit setProgress(id, done, total, seconds > 0 ? done / seconds : 0.0);
        if (done < total) {
            if (done / run->every > before / run->every) // the curves grow every `every` images
                emit setAnalysed(id, summaryOf(run->run, *run->model), false);
            post([this, run] { stepSet(run); }); // behind anything asked meanwhile
            return;
        }
    }
    finish();
    emit setAnalysed(id, summaryOf(run->run, *run->model), true);
}

quint64 EngineWorker::runTask(Task task, int channel)
{
    const quint64 id = next(TaskJob, channel);
    post([this, id, channel, task = std::move(task)] {
        const auto superseded = [this, id, channel] { return !isLatest(TaskJob, channel, id); };
        const QString error = superseded() ? QString() : task(superseded, [this, id](int done, int total) { emit taskProgress(id, done, total); });
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
