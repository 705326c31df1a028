#pragma once

// A session: what the window has open, saved as a JSON file (docs/sessions.md) and opened again. Only data and
// its file format here; MainWindowSession.cpp reads the window into one and applies one to it.

#include <QByteArray>
#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <optional>

struct SessionModel {
    QString path;        // a file, folder or builtin:NAME
    QString description; // the description .json paired with it ("" for none)
    int inputHeight = 0, inputWidth = 0; // 0, 0: the size it was trained for
};

struct Session {
    std::optional<SessionModel> model, compare;
    QStringList images; // the strip, in order
    int selected = -1;  // row of images; -1 none
    int query = 0, layer = 1, head = -1;
    std::optional<double> neutrenoLambda, boostT; // the variant; unset: none
    QString perturbation;                          // Perturbation::spec()
    QJsonObject drawing;                           // AttentionControls::drawing(): opacity, colour map, patch grid
    QString imageFigure, setFigure;                // figureFileName() of each dock's figure
    QByteArray dockLayout;                         // QMainWindow::saveState()
    QString file;                                  // the file it was read from (not written)
    QStringList problems;                          // what opening it found wrong, said once, when it is applied
};

// The session as JSON, its paths absolute and also relative to `folder` (the session file's), so that a folder moved
// whole, session and files together, opens again.
QJsonObject sessionToJson(const Session& session, const QString& folder);
// Writes through a temporary file and a rename: an old session is never half overwritten. false with a one-line `error`.
bool writeSession(const QString& path, const Session& session, QString* error);
// nullopt with a one-line `error` naming the file for what is not a session. A model or image whose file is at neither
// its absolute nor its relative path is left out and named in `missing`; keys the format does not have are named in
// `warnings` (not an error: a newer version may write them).
std::optional<Session> readSession(const QString& path, QString* error, QStringList* missing, QStringList* warnings);
