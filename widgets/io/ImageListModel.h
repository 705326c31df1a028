#pragma once

#include <QAbstractListModel>
#include <QHash>
#include <QPixmap>
#include <QSet>
#include <QThreadPool>

#include <functional>

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
    // Where the thumbnail of a path this machine has not comes from (the window on a remote engine asks its host):
    // called once for such a path, which later gets its thumbnail through setThumbnail. Unset: the crossed box.
    void setThumbnailSource(std::function<void(const QString& path)> source) { m_source = std::move(source); }
    void setThumbnail(const QString& path, const QImage& image); // a null image: the crossed box

signals:
    void thumbnailLoaded(int row);

private:
    void requestThumbnail(int row) const;
    static QImage crossedBox(int size); // a file that is no image, or too large to decode for a thumbnail

    QStringList m_paths;
    QSet<QString> m_known; // the listed paths, cleaned (QDir::cleanPath)
    int m_size;
    mutable QHash<QString, QPixmap> m_thumbnails;
    mutable QSet<QString> m_loading;
    mutable QThreadPool m_pool;
    QPixmap m_placeholder;
    std::function<void(const QString& path)> m_source;
};

} // namespace attnscope
