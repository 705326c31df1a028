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
    if (session->model) {
        m_pendingSession = std::make_shared<Session>(*session);
        statusBar()->showMessage(tr("Opening the session %1…").arg(path));
        m_slots[0]->load(session->model->path, session->model->description, session->model->inputHeight, session->model->inputWidth);
    }
    m_images->addPaths(session->images);
    if (!session->model)
        selectImage(std::max(session->selected, 0));
    if (!problems.isEmpty())
        showError(problems.join(QLatin1Char('\n')));
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
    setLayer(s->layer);
    setHead(s->head);
    m_query = s->query;
    if (s->neutrenoLambda && s->boostT)
        runVariant(*s->neutrenoLambda, *s->boostT);
    selectImage(std::max(s->selected, 0));
    refreshMaps();
    emit sessionOpened();
}
