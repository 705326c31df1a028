#pragma once

// The window's "Query-key map" dock (docs/analyses.md section 9): one head's queries and keys over the strip's images
// as a scatter. Hovering a point names its image, kind and patch; clicking one asks for that image and token as the
// query.

#include <figures/QueryKeyFigure.h>

#include <QStringList>
#include <QWidget>

#include <memory>
#include <optional>
#include <utility>

namespace attnscope {

class QueryKeyMapView : public QWidget {
    Q_OBJECT
public:
    explicit QueryKeyMapView(QWidget* parent = nullptr);

    // The map and the names of its images (by QueryKeyPoint::image); null: none, the message shown instead.
    void setMap(std::shared_ptr<const QueryKeyMap> map, const QStringList& images);
    void setMessage(const QString& message); // no map: why ("computing…", "choose a head")
    void setColouring(QueryKeyColouring colouring);
    void setHighlight(std::optional<std::pair<int, int>> imageAndToken); // the current image's query, ringed
    const std::optional<std::pair<int, int>>& highlight() const { return m_highlight; }
    const std::shared_ptr<const QueryKeyMap>& map() const { return m_map; }
    QString message() const { return m_message; }
    // Where point `index` of the map is drawn, and what hovering a position says (for tests and tooltips).
    QPointF pointPosition(size_t index) const;
    std::optional<size_t> pointAt(const QPoint& pos) const; // the point a click there takes
    QString hoverText(const QPoint& pos) const;
    QSize sizeHint() const override { return { 360, 360 }; }
    QSize minimumSizeHint() const override { return { 160, 160 }; }

signals:
    void pointClicked(int image, int token);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    ScatterFrame frame() const;

    std::shared_ptr<const QueryKeyMap> m_map;
    QStringList m_images;
    QString m_message;
    QueryKeyColouring m_colouring = QueryKeyColouring::Kind;
    std::optional<std::pair<int, int>> m_highlight;
};

} // namespace attnscope
