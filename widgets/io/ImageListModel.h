#pragma once

#include <QAbstractListModel>
#include <QHash>
#include <QPixmap>
#include <QSet>
#include <QThreadPool>

namespace attnscope {

// The image strip: one row per image file, its name, path (tool tip, Qt::UserRole) and a thumbnail that is
// decoded in the background the first time a view asks for it, so a folder of thousands never stalls the window.
class ImageListModel : public QAbstractListModel {
    Q_OBJECT
public:
    static constexpr int PathRole = Qt::UserRole;

    explicit ImageListModel(QObject* parent = nullptr, int thumbnailSize = 64);
    ~ImageListModel() override;

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

    void addPaths(const QStringList& paths); // appends, skipping files already listed (under any spelling of their path)
    void removeRowsAt(QList<int> rows);      // any order; rows out of range are ignored
    void clear();
    int rowOf(const QString& path) const; // the row of that file, under any spelling of its path; -1: not listed
    QString path(int row) const;
    QStringList paths() const { return m_paths; }
    bool thumbnailsPending() const { return !m_loading.isEmpty(); }

signals:
    void thumbnailLoaded(int row);

private:
    void requestThumbnail(int row) const;

    QStringList m_paths;
    QSet<QString> m_known; // the listed paths, cleaned (QDir::cleanPath)
    int m_size;
    mutable QHash<QString, QPixmap> m_thumbnails;
    mutable QSet<QString> m_loading;
    mutable QThreadPool m_pool;
    QPixmap m_placeholder;
};

} // namespace attnscope
