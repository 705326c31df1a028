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

std::optional<SessionModel> sessionModel(const ModelSlot& slot)
{
    if (!slot.model())
        return std::nullopt;
    const auto& info = slot.model()->info();
    SessionModel m { slot.path(), slot.description() };
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

Session MainWindow::currentSession() const
{
    Session s;
    s.model = sessionModel(*m_slots[0]);
    s.compare = sessionModel(*m_slots[1]);
    s.images = m_images->paths();
    s.selected = m_imageList->currentIndex().isValid() ? m_imageList->currentIndex().row() : -1;
    s.query = m_query;
    s.layer = m_layer;
    s.head = m_head;
    if (const auto& v = m_slots[0]->variant()) {
        s.neutrenoLambda = v->neutrenoLambda;
        s.boostT = v->boostT;
    }
    s.perturbation = QString::fromStdString(m_controls->perturbation().spec());
    s.drawing = m_controls->drawing();
    s.imageFigure = QString::fromStdString(figureFileName(m_imagePanel->figure()));
    s.setFigure = QString::fromStdString(figureFileName(m_setPanel->figure()));
    s.dockLayout = saveState();
    return s;
}

bool MainWindow::saveSession(const QString& path)
{
    QString error;
    if (!QDir().mkpath(QFileInfo(path).absolutePath()) || !writeSession(path, currentSession(), &error)) {
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
    QStringList problems;
    if (!missing.isEmpty())
        problems << tr("%1: could not open %2 (moved or deleted)").arg(QFileInfo(path).fileName(), missing.join(QStringLiteral("; ")));
    if (!warnings.isEmpty())
        problems << tr("%1: %2").arg(QFileInfo(path).fileName(), warnings.join(QStringLiteral("; ")));
    // What the session has open replaces what the window had: the images first, so that they are there whether or
    // not its model loads.
    closeCompare();
    clearImages();
    if (!session->dockLayout.isEmpty())
        restoreState(session->dockLayout);
    m_controls->setDrawing(session->drawing);
    if (auto p = Perturbation::parse(session->perturbation.toStdString()); p && !session->perturbation.isEmpty())
        m_controls->setPerturbation(*p);
    if (const auto f = figureNamed(session->imageFigure))
        m_imagePanel->setFigure(*f);
    if (const auto f = figureNamed(session->setFigure))
        m_setPanel->setFigure(*f);
    session->problems = problems;
    if (session->model) {
        m_pendingSession = std::make_shared<Session>(*session); // its problems said with those its model finds
        statusBar()->showMessage(tr("Opening the session %1…").arg(path));
        m_slots[0]->load(session->model->path, session->model->description, session->model->inputHeight, session->model->inputWidth);
    }
    m_images->addPaths(session->images);
    if (!session->model)
        selectImage(std::max(session->selected, 0));
    if (!session->model && !problems.isEmpty())
        showError(problems.join(QStringLiteral("; ")));
    return true;
}

void MainWindow::applyPendingSession()
{
    if (!m_pendingSession)
        return;
    const std::shared_ptr<Session> s = std::move(m_pendingSession);
    if (!s->model || s->model->path != m_slots[0]->path())
        return; // another model was opened meanwhile
    if (s->compare)
        m_slots[1]->load(s->compare->path, s->compare->description, s->compare->inputHeight, s->compare->inputWidth);
    // What the file holds but this model has not is said, field by field, and the nearest thing it has is shown.
    const ModelConfig& c = m_slots[0]->model()->config();
    const int lastLayer = c.depth + (c.pooling == Pooling::AttentionPool ? 1 : 0);
    const int tokens = c.numPrefixTokens() + c.gridHeight() * c.gridWidth();
    QStringList problems, found;
    if (s->layer < 1 || s->layer > lastLayer)
        found << tr("layer: %1 is not one of the model's layers 1 to %2 (%3 shown)").arg(s->layer).arg(lastLayer).arg(std::clamp(s->layer, 1, lastLayer));
    if (s->head < -5 || s->head >= c.numHeads)
        found << tr("head: %1 is not one of the model's heads 0 to %2 nor a view -1 to -5 (the mean of heads shown)").arg(s->head).arg(c.numHeads - 1);
    if (s->query < 0 || s->query >= tokens)
        found << tr("query: %1 is not one of the model's tokens 0 to %2 (%3 used)").arg(s->query).arg(tokens - 1).arg(m_query);
    setLayer(std::clamp(s->layer, 1, lastLayer));
    setHead(s->head < -5 || s->head >= c.numHeads ? -1 : s->head);
    if (s->query >= 0 && s->query < tokens)
        m_query = s->query;
    problems = s->problems;
    if (!found.isEmpty())
        problems << tr("%1: %2").arg(QFileInfo(s->file).fileName(), found.join(QStringLiteral("; ")));
    if (!problems.isEmpty())
        showError(problems.join(QStringLiteral("; ")));
    if (s->neutrenoLambda && s->boostT)
        runVariant(*s->neutrenoLambda, *s->boostT);
    selectImage(std::max(s->selected, 0));
    refreshMaps();
    emit sessionOpened();
}
