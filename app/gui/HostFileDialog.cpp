#include "gui/HostFileDialog.h"

#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QLocale>
#include <QPushButton>
#include <QStyle>
#include <QVBoxLayout>

using attnscope::RemoteBackend;

namespace {
constexpr int kFolderRole = Qt::UserRole + 1;
// A host path (POSIX, whatever this machine is) of `name` in `folder`.
QString join(const QString& folder, const QString& name) { return folder.endsWith(QLatin1Char('/')) ? folder + name : folder + "/" + name; }
}

HostFileDialog::HostFileDialog(QWidget* parent, const QString& host, Mode mode, Lister lister)
    : QDialog(parent)
    , m_mode(mode)
    , m_lister(std::move(lister))
{
    setWindowTitle(mode == Images ? tr("Open images on %1").arg(host) : tr("Open a model on %1").arg(host));
    resize(640, 480);
    auto* layout = new QVBoxLayout(this);
    auto* top = new QHBoxLayout;
    auto* up = new QPushButton(style()->standardIcon(QStyle::SP_FileDialogToParent), QString(), this);
    up->setToolTip(tr("The folder above"));
    m_path = new QLineEdit(this);
    m_path->setPlaceholderText(tr("a folder on %1 (empty: your home folder there)").arg(host));
    top->addWidget(up);
    top->addWidget(m_path, 1);
    layout->addLayout(top);
    m_list = new QListWidget(this);
    m_list->setSelectionMode(mode == Images ? QAbstractItemView::ExtendedSelection : QAbstractItemView::SingleSelection);
    layout->addWidget(m_list, 1);
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    layout->addWidget(m_status);
    m_buttons = new QDialogButtonBox(QDialogButtonBox::Open | QDialogButtonBox::Cancel, this);
    layout->addWidget(m_buttons);
    m_buttons->button(QDialogButtonBox::Open)->setEnabled(false);

    connect(up, &QPushButton::clicked, this, [this] {
        if (const QString parent = property("parentFolder").toString(); !parent.isEmpty())
            list(parent);
    });
    connect(m_path, &QLineEdit::returnPressed, this, [this] { list(m_path->text().trimmed()); });
    connect(m_list, &QListWidget::itemActivated, this, [this](QListWidgetItem* item) {
        activate(item->text(), item->data(kFolderRole).toBool());
    });
    connect(m_list, &QListWidget::itemSelectionChanged, this,
            [this] { m_buttons->button(QDialogButtonBox::Open)->setEnabled(!m_list->selectedItems().isEmpty()); });
    connect(m_buttons, &QDialogButtonBox::accepted, this, [this] {
        // Open on a lone folder in Images mode goes into it; otherwise the selection is the answer.
        const auto items = m_list->selectedItems();
        if (m_mode == Images && items.size() == 1 && items.front()->data(kFolderRole).toBool())
            list(join(m_folder, items.front()->text()));
        else if (!selectedPaths().isEmpty())
            accept();
    });
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
}

void HostFileDialog::list(const QString& path)
{
    const quint64 asked = ++m_asked;
    m_status->setText(tr("Listing %1 on the host…").arg(path.isEmpty() ? tr("your home folder") : path));
    m_lister(path, [this, asked](const attnscope::Result<RemoteBackend::HostListing>& listing) {
        if (asked == m_asked) // a folder asked for later is the one shown
            showListing(listing);
    });
}

void HostFileDialog::showListing(const attnscope::Result<RemoteBackend::HostListing>& listing)
{
    if (!listing) {
        // What was shown stays; the error says why the folder asked for is not.
        m_status->setText(QString::fromStdString(listing.message()));
        emit listed();
        return;
    }
    m_list->clear();
    m_folder = listing->path;
    m_path->setText(m_folder);
    setProperty("parentFolder", listing->parent);
    int shown = 0;
    for (const auto& e : listing->entries) {
        if (m_mode == Images && !e.folder && !e.image)
            continue; // the images of a folder, and the folders to go into
        auto* item = new QListWidgetItem(style()->standardIcon(e.folder ? QStyle::SP_DirIcon : QStyle::SP_FileIcon), e.name, m_list);
        item->setData(kFolderRole, e.folder);
        if (!e.folder)
            item->setToolTip(QLocale().formattedDataSize(e.size));
        ++shown;
    }
    m_status->setText(listing->total > qint64(listing->entries.size())
                          ? tr("%1: the first %2 of %3 entries").arg(m_folder).arg(listing->entries.size()).arg(listing->total)
                          : tr("%1: %n entries shown", nullptr, shown).arg(m_folder));
    emit listed();
}

void HostFileDialog::activate(const QString& name, bool folder)
{
    if (folder) { // a model's folder is chosen by selecting it and Open
        list(join(m_folder, name));
        return;
    }
    select({ name });
    accept();
}

QStringList HostFileDialog::selectedPaths() const
{
    QStringList paths;
    for (const auto* item : m_list->selectedItems())
        if (m_mode == Model || !item->data(kFolderRole).toBool())
            paths << join(m_folder, item->text());
    return paths; // in Images mode the folders selected are not images: Open on a folder alone goes into it
}

void HostFileDialog::select(const QStringList& names)
{
    m_list->clearSelection();
    for (int i = 0; i < m_list->count(); ++i)
        if (names.contains(m_list->item(i)->text()))
            m_list->item(i)->setSelected(true);
}
