// MainWindow's sessions: what is open saved to a JSON file (Session.h, docs/sessions.md) and opened again, and the
// last session, written when the window closes.
#include "gui/MainWindow.h"

#include "gui/Session.h"

#include <attnscope/FigureData.h>

#include <QAction>
#include <QDir>
#include <QFileInfo>
#include <QListView>
#include <QStandardPaths>
#include <QStatusBar>

#include <algorithm>

using namespace attnscope;

namespace {

std::optional<Figure> figureNamed(const QString& name)
{
    for (Figure f : allFigures())
        if (QString::fromStdString(figureFileName(f)) == name)
            return f;
    return std::nullopt;
}

std::optional<ModelState> modelState(const ModelSlot& slot)
{
    if (!slot.model())
        return std::nullopt;
    const auto& info = slot.model()->info();
    ModelState m { slot.path(), slot.description() };
    if (info.config.imageHeight != info.trainedHeight || info.config.imageWidth != info.trainedWidth) {
        m.inputHeight = info.config.imageHeight;
        m.inputWidth = info.config.imageWidth;
    }
    return m;
}

} // namespace

QString MainWindow::lastSessionPath()
{
    return QDir(QStandardPaths::writableLocation(QStandardPaths::AppConfigLocation)).filePath("last-session.json");
}

WindowState MainWindow::state() const
{
    WindowState s;
    s.remote = m_worker->endpoint();
    s.model = modelState(*m_slots[0]);
    s.compare = modelState(*m_slots[1]);
    s.images = m_images->paths();
    s.selected = m_imageList->currentIndex().isValid() ? m_imageList->currentIndex().row() : -1;
    s.view = m_view;
    if (const auto& v = m_slots[0]->variant()) {
        s.neutrenoLambda = v->neutrenoLambda;
        s.boostT = v->boostT;
    }
    s.perturbation = QString::fromStdString(m_controls->perturbation().spec());
    s.drawing = m_controls->drawing();
    s.imageFigure = QString::fromStdString(figureFileName(m_imagePanel->figure()));
    s.setFigure = QString::fromStdString(figureFileName(m_setDock->panel()->figure()));
    s.dockLayout = saveState();
    return s;
}

bool MainWindow::saveSession(const QString& path)
{
    QString error;
    if (!QDir().mkpath(QFileInfo(path).absolutePath()) || !writeSession(path, state(), &error)) {
        showError(error.isEmpty() ? tr("%1: cannot create its folder").arg(path) : error);
        return false;
    }
    statusBar()->showMessage(tr("Saved the session to %1").arg(path), 5000);
    return true;
}

bool MainWindow::openSession(const QString& path)
{
    QString error;
    QStringList missing, warnings;
    auto session = readSession(path, &error, &missing, &warnings);
    if (!session) {
        showError(error);
        return false;
    }
    // A session is opened where its engine ran: a remote one by a window on that host (main.cpp starts one for
    // --open-session), never as this window's, whose paths and models would be another machine's.
    if (session->state.remote != m_worker->endpoint()) {
        const QString name = QFileInfo(path).fileName();
        showError(session->state.remote.isEmpty()
                      ? tr("%1 was saved with the engine on this machine; open it from a window without --remote").arg(name)
                      : tr("%1 was saved with the engine on %2: open it with attnscope --remote %2 --open-session %3")
                            .arg(name, session->state.remote, path));
        return false;
    }
    QStringList problems;
    if (!missing.isEmpty())
        problems << tr("%1: could not open %2 (moved or deleted)").arg(QFileInfo(path).fileName(), missing.join(QStringLiteral("; ")));
    if (!warnings.isEmpty())
        problems << tr("%1: %2").arg(QFileInfo(path).fileName(), warnings.join(QStringLiteral("; ")));
    statusBar()->showMessage(tr("Opening the session %1…").arg(path));
    applyState(session->state, path, problems);
    return true;
}

void MainWindow::applyState(const WindowState& state, const QString& source, const QStringList& problems)
{
    // The state replaces what the window had: the images first, so that they are there whether or not its model loads.
    closeCompare();
    clearImages();
    if (!state.dockLayout.isEmpty())
        restoreState(state.dockLayout);
    m_controls->setDrawing(state.drawing);
    if (auto p = Perturbation::parse(state.perturbation.toStdString()); p && !state.perturbation.isEmpty())
        m_controls->setPerturbation(*p);
    if (const auto f = figureNamed(state.imageFigure))
        m_imagePanel->setFigure(*f);
    if (const auto f = figureNamed(state.setFigure))
        m_setDock->panel()->setFigure(*f);
    if (state.model) {
        // The view selection is the model's to check: applied once it is loaded, its problems said with those it finds.
        m_pendingSession = std::make_shared<Session>(Session { state, source, problems });
        m_slots[0]->load(state.model->path, state.model->description, state.model->inputHeight, state.model->inputWidth);
    }
    m_images->addPaths(state.images);
    if (!state.model)
        selectImage(std::max(state.selected, 0));
    if (!state.model && !problems.isEmpty())
        showError(problems.join(QStringLiteral("; ")));
}

void MainWindow::applyPendingSession()
{
    if (!m_pendingSession)
        return;
    const std::shared_ptr<Session> pending = std::move(m_pendingSession);
    const WindowState& s = pending->state;
    if (!s.model || s.model->path != m_slots[0]->path())
        return; // another model was opened meanwhile
    if (s.compare)
        m_slots[1]->load(s.compare->path, s.compare->description, s.compare->inputHeight, s.compare->inputWidth);
    // What the state holds but this model has not is said, field by field, and the nearest thing it has is shown.
    const ModelConfig& c = m_slots[0]->model()->config();
    const int lastLayer = c.depth + (c.pooling == Pooling::AttentionPool ? 1 : 0);
    const int tokens = c.numPrefixTokens() + c.gridHeight() * c.gridWidth();
    const ViewSelection& v = s.view;
    QStringList found;
    if (v.layer < 1 || v.layer > lastLayer)
        found << tr("layer: %1 is not one of the model's layers 1 to %2 (%3 shown)").arg(v.layer).arg(lastLayer).arg(std::clamp(v.layer, 1, lastLayer));
    const bool headFits = !v.head.isSingle() || v.head.head < c.numHeads;
    if (!headFits)
        found << tr("head: %1 is not one of the model's heads 0 to %2 (the mean of heads shown)").arg(v.head.head).arg(c.numHeads - 1);
    if (v.query < 0 || v.query >= tokens)
        found << tr("query: %1 is not one of the model's tokens 0 to %2 (%3 used)").arg(v.query).arg(tokens - 1).arg(m_view.query);
    if (v.relevanceClass >= c.numClasses)
        found << tr("relevance_class: %1 is not one of the model's %2 classes (the predicted class used)").arg(v.relevanceClass).arg(c.numClasses);
    ViewSelection applied = v;
    applied.layer = std::clamp(v.layer, 1, lastLayer);
    applied.head = headFits ? v.head : HeadChoice();
    applied.query = v.query >= 0 && v.query < tokens ? v.query : m_view.query;
    applied.relevanceClass = v.relevanceClass < c.numClasses ? v.relevanceClass : -1;
    setViewSelection(applied);
    QStringList problems = pending->problems;
    if (!found.isEmpty())
        problems << tr("%1: %2").arg(pending->file.isEmpty() ? tr("state") : QFileInfo(pending->file).fileName(), found.join(QStringLiteral("; ")));
    if (!problems.isEmpty())
        showError(problems.join(QStringLiteral("; ")));
    if (s.neutrenoLambda && s.boostT)
        runVariant(*s.neutrenoLambda, *s.boostT);
    selectImage(std::max(s.selected, 0));
    emit sessionOpened();
}
