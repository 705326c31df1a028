#include "EngineWorker.h"

#include <QElapsedTimer>
#include <QMetaObject>

namespace attnscope {

EngineWorker::EngineWorker(QObject* parent)
    : QObject(parent)
{
    qRegisterMetaType<std::shared_ptr<const attnscope::Model>>();
    qRegisterMetaType<std::shared_ptr<const attnscope::ImageTrace>>();
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

quint64 EngineWorker::next(std::atomic<quint64>& latestOfKind)
{
    const quint64 id = ++m_counter;
    latestOfKind = id;
    ++m_pending;
    return id;
}

void EngineWorker::cancelAll()
{
    m_stopping = true;
    m_latestModel = ++m_counter;
    m_latestImage = ++m_counter;
    m_latestSet = ++m_counter;
}

quint64 EngineWorker::analyseSet(std::shared_ptr<const Model> model, const QStringList& paths, AnalysisOptions options, int every)
{
    m_stopping = false;
    const quint64 id = next(m_latestSet);
    QMetaObject::invokeMethod(m_context, [this, id, model, paths, options, every] {
        const auto superseded = [this, id] { return m_latestSet != id; };
        AnalysisRun run(model, options);
        QElapsedTimer timer;
        timer.start();
        const auto summary = [&] {
            auto s = std::make_shared<AnalysisSummary>(summarise(run.statistics(), run.images(), options.radius));
            s->model = model->info().path;
            s->label = s->model;
            s->patchSize = model->config().patchSize;
            return std::shared_ptr<const AnalysisSummary>(std::move(s));
        };
        for (int i = 0; i < paths.size(); ++i) {
            if (superseded()) {
                --m_pending;
                emit cancelled(id);
                return;
            }
            auto image = decodeImage(paths[i].toStdString());
            Result<Model::Prepared> prepared = image ? model->prepare(*image) : Result<Model::Prepared>(image.error());
            Result<bool> added = prepared ? run.addImage(*prepared, i, superseded) : Result<bool>(prepared.error());
            if (!added) {
                --m_pending;
                if (superseded())
                    emit cancelled(id);
                else
                    emit failed(id, paths[i] + QStringLiteral(": ") + QString::fromStdString(added.message()));
                return;
            }
            const double seconds = timer.elapsed() / 1000.0;
            emit setProgress(id, i + 1, int(paths.size()), seconds > 0 ? (i + 1) / seconds : 0.0);
            if ((i + 1) % every == 0 && i + 1 < paths.size())
                emit setAnalysed(id, summary(), false);
        }
        --m_pending;
        emit setAnalysed(id, summary(), true);
    });
    return id;
}

quint64 EngineWorker::loadModel(const QString& path)
{
    m_stopping = false;
    const quint64 id = next(m_latestModel);
    QMetaObject::invokeMethod(m_context, [this, id, path] {
        if (m_latestModel != id) {
            --m_pending;
            emit cancelled(id);
            return;
        }
        auto model = Model::load(path.toStdString());
        --m_pending;
        if (m_latestModel != id)
            emit cancelled(id);
        else if (!model)
            emit failed(id, QString::fromStdString(model.message()));
        else
            emit modelLoaded(id, *model);
    });
    return id;
}

quint64 EngineWorker::traceImage(std::shared_ptr<const Model> model, const QString& imagePath,
                                 std::optional<double> neutrenoLambda, std::optional<double> boostT)
{
    m_stopping = false;
    const quint64 id = next(m_latestImage);
    QMetaObject::invokeMethod(m_context, [this, id, model, imagePath, neutrenoLambda, boostT] {
        const auto superseded = [this, id] { return m_latestImage != id; };
        if (superseded()) {
            --m_pending;
            emit cancelled(id);
            return;
        }
        auto finish = [&](auto&& emitter) {
            --m_pending;
            emitter();
        };
        auto image = decodeImage(imagePath.toStdString());
        if (!image)
            return finish([&] { emit failed(id, QString::fromStdString(image.message())); });
        auto prepared = model->prepare(*image);
        if (!prepared)
            return finish([&] { emit failed(id, imagePath + QStringLiteral(": ") + QString::fromStdString(prepared.message())); });
        RunOptions options;
        options.record = RecordSpec::everything();
        options.isCancelled = superseded;
        options.neutrenoLambda = neutrenoLambda;
        options.boostT = boostT;
        auto trace = model->run(prepared->input, options);
        if (superseded())
            return finish([&] { emit cancelled(id); });
        if (!trace)
            return finish([&] { emit failed(id, imagePath + QStringLiteral(": ") + QString::fromStdString(trace.message())); });
        auto result = std::make_shared<ImageTrace>();
        result->path = imagePath;
        result->shown = std::move(prepared->shown);
        result->trace = std::move(*trace);
        finish([&] { emit imageTraced(id, std::shared_ptr<const ImageTrace>(std::move(result))); });
    });
    return id;
}

} // namespace attnscope
