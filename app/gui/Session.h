#pragma once

// A session: the window's state (WindowState.h) saved as a JSON file (docs/sessions.md) and opened again. Only its
// file format here; MainWindowSession.cpp reads the window's state and applies one.

#include "gui/WindowState.h"

#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <optional>

// A session file as read: the window's state, where it came from, and what opening it found wrong (said once, when
// the state is applied).
struct Session {
    WindowState state;
    QString file;
    QStringList problems;
};

// The session as JSON, its paths absolute and also relative to `folder` (the session file's), so that a folder moved
// whole, session and files together, opens again.
QJsonObject sessionToJson(const WindowState& state, const QString& folder);
// Writes through a temporary file and a rename: an old session is never half overwritten. false with a one-line `error`.
bool writeSession(const QString& path, const WindowState& state, QString* error);
// nullopt with a one-line `error` naming the file for what is not a session. A model or image whose file is at neither
// its absolute nor its relative path is left out and named in `missing`; keys the format does not have are named in
// `warnings` (not an error: a newer version may write them).
std::optional<Session> readSession(const QString& path, QString* error, QStringList* missing, QStringList* warnings);
