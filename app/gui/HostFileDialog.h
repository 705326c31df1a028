#pragma once

// The remote file dialog (docs/remote.md): the host's folders and files, listed by the host itself (list_dir through
// the window's worker), to open images or a model that are on the host and not on this machine.

#include "gui/RemoteBackend.h"

#include <QDialog>

#include <functional>

class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QListWidget;

class HostFileDialog : public QDialog {
    Q_OBJECT
public:
    // Images: several image files; Model: one file or folder (a checkpoint, a model's folder).
    enum Mode { Images, Model };
    // Asks the host for a folder's listing and calls `done` with it, later, on the GUI thread.
    using Lister = std::function<void(const QString& path, std::function<void(attnscope::Result<attnscope::RemoteBackend::HostListing>)> done)>;
    HostFileDialog(QWidget* parent, const QString& host, Mode mode, Lister lister);

    // Lists `path` ("" the host's home folder); listed() when its entries are shown, or the error is.
    void list(const QString& path);
    QString folder() const { return m_folder; }
    // The host paths chosen: the selected entries (in Model mode, a selected folder is the model's).
    QStringList selectedPaths() const;
    // Selects the entries named (for tests and for typing a name).
    void select(const QStringList& names);

signals:
    void listed();

private:
    void showListing(const attnscope::Result<attnscope::RemoteBackend::HostListing>& listing);
    void activate(const QString& name, bool folder);

    Mode m_mode;
    Lister m_lister;
    QString m_folder;
    QLineEdit* m_path;
    QListWidget* m_list;
    QLabel* m_status;
    QDialogButtonBox* m_buttons;
    quint64 m_asked = 0; // the listing last asked for: an older answer is not shown
};
