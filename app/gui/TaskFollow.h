#pragma once

// Following one worker task from the GUI thread (export all, a question to the host): exactly one of its ends, each
// delivered once. The signals are connected before `start` posts the task: a task can end before runTask returns, and
// its queued signals are read on this thread once the id is known.

#include <worker/EngineWorker.h>

#include <QObject>

#include <functional>
#include <memory>
#include <vector>

inline void followTask(attnscope::EngineWorker* worker, QObject* context, const std::function<quint64()>& start,
                       std::function<void()> finished, std::function<void(const QString& error)> failed,
                       std::function<void(int done, int total)> progress = {})
{
    using attnscope::EngineWorker;
    auto job = std::make_shared<quint64>(0);
    auto connections = std::make_shared<std::vector<QMetaObject::Connection>>();
    const auto ended = [connections] {
        for (const auto& c : *connections)
            QObject::disconnect(c);
    };
    if (progress)
        connections->push_back(QObject::connect(worker, &EngineWorker::taskProgress, context, [=](quint64 id, int done, int total) {
            if (id == *job)
                progress(done, total);
        }));
    connections->push_back(QObject::connect(worker, &EngineWorker::taskFinished, context, [=](quint64 id) {
        if (id == *job) {
            ended();
            finished();
        }
    }));
    connections->push_back(QObject::connect(worker, &EngineWorker::failed, context, [=](quint64 id, const QString& message) {
        if (id == *job) {
            ended();
            failed(message);
        }
    }));
    connections->push_back(QObject::connect(worker, &EngineWorker::cancelled, context, [=](quint64 id) {
        if (id == *job) {
            ended();
            failed(QObject::tr("cancelled"));
        }
    }));
    *job = start();
}
