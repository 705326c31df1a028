#include "io/ImageListModel.h"

#include <QDir>
#include <QFileInfo>

#include <algorithm>
#include <functional>
#include <QImageReader>
#include <QPainter>

namespace attnscope {

ImageListModel::ImageListModel(QObject* parent, int thumbnailSize)
    : QAbstractListModel(parent)
    , m_size(thumbnailSize)
{
    m_pool.setMaxThreadCount(1); // decoding thumbnails must not compete with the engine for the cores
    m_placeholder = QPixmap(m_size, m_size);
    m_placeholder.fill(QColor(0xe6, 0xe6, 0xe6));
}

ImageListModel::~ImageListModel()
{
    m_pool.clear();
    m_pool.waitForDone(); // no decode may post to a model that is gone
}

int ImageListModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(m_paths.size()); }

QVariant ImageListModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const QString& path = m_paths[index.row()];
    switch (role) {
    case Qt::DisplayRole: return QFileInfo(path).fileName();
    case Qt::ToolTipRole:
    case PathRole: return path;
    case Qt::DecorationRole:
        if (auto it = m_thumbnails.constFind(path); it != m_thumbnails.constEnd())
            return *it;
        requestThumbnail(index.row());
        return m_placeholder;
    default: return {};
    }
}

void ImageListModel::requestThumbnail(int row) const
{
    const QString path = m_paths[row];
    if (m_loading.contains(path))
        return;
    m_loading.insert(path);
    if (m_source && !QFileInfo(path).isFile()) {
        m_source(path);
        return;
    }
    auto* self = const_cast<ImageListModel*>(this);
    const int size = m_size;
    m_pool.start([self, path, size] {
        QImageReader reader(path);
        reader.setAutoTransform(true);
        QImage image;
        const QSize full = reader.size();
        if (full.isValid() && qint64(full.width()) * full.height() <= qint64(40) * 1000 * 1000) {
            reader.setScaledSize(full.scaled(size, size, Qt::KeepAspectRatio).expandedTo({ 1, 1 }));
            image = reader.read();
        }
        QMetaObject::invokeMethod(self, [self, path, image] { self->setThumbnail(path, image); }, Qt::QueuedConnection);
    });
}

QImage ImageListModel::crossedBox(int size)
{
    QImage image(size, size, QImage::Format_ARGB32);
    image.fill(QColor(0xf4, 0xe0, 0xe0));
    QPainter p(&image);
    p.setPen(QPen(QColor(0xb0, 0x30, 0x30), 2));
    p.drawLine(8, 8, size - 8, size - 8);
    p.drawLine(size - 8, 8, 8, size - 8);
    return image;
}

void ImageListModel::setThumbnail(const QString& path, const QImage& image)
{
    m_loading.remove(path);
    m_thumbnails.insert(path, QPixmap::fromImage(image.isNull() ? crossedBox(m_size) : image));
    const int row = int(m_paths.indexOf(path));
    if (row >= 0) {
        emit dataChanged(index(row), index(row), { Qt::DecorationRole });
        emit thumbnailLoaded(row);
    }
}

void ImageListModel::addPaths(const QStringList& paths)
{
    QStringList fresh;
    for (const auto& p : paths)
        if (const QString key = QDir::cleanPath(p); !m_known.contains(key)) {
            m_known.insert(key);
            fresh << p;
        }
    if (fresh.isEmpty())
        return;
    beginInsertRows({}, int(m_paths.size()), int(m_paths.size() + fresh.size()) - 1);
    m_paths << fresh;
    endInsertRows();
}

int ImageListModel::rowOf(const QString& path) const
{
    const QString key = QDir::cleanPath(path);
    for (qsizetype i = 0; i < m_paths.size(); ++i)
        if (QDir::cleanPath(m_paths[i]) == key)
            return int(i);
    return -1;
}

void ImageListModel::removeRowsAt(QList<int> rows)
{
    std::sort(rows.begin(), rows.end(), std::greater<int>());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    for (const int row : rows) {
        if (row < 0 || row >= m_paths.size())
            continue;
        beginRemoveRows({}, row, row);
        m_known.remove(QDir::cleanPath(m_paths[row]));
        m_thumbnails.remove(m_paths[row]);
        m_paths.removeAt(row);
        endRemoveRows();
    }
}

void ImageListModel::clear()
{
    beginResetModel();
    m_paths.clear();
    m_known.clear();
    m_thumbnails.clear();
    endResetModel();
}

QString ImageListModel::path(int row) const { return row >= 0 && row < m_paths.size() ? m_paths[row] : QString(); }

} // namespace attnscope
