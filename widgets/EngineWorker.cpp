#include "EngineWorker.h"

#include <QMetaObject>

namespace attnscope {

EngineWorker::EngineWorker(QObject* parent)
    : QObject(parent)
{
    qRegisterMetaType<std::shared_ptr<const attnscope::Model>>();
    qRegisterMetaType<std::shared_ptr<const attnscope::ImageTrace>>();
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
