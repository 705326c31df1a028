#pragma once

#include "plots/Colormap.h"

#include <attnscope/Analyses.h>
#include <attnscope/Image.h>

#include <QImage>
#include <QWidget>

#include <optional>
#include <vector>

namespace attnscope {

// The image the model saw with an attention map blended over it; a click on a patch asks for it as the query.
class AttentionView : public QWidget {
    Q_OBJECT
public:
    explicit AttentionView(QWidget* parent = nullptr);

    void setImage(const Image& shown, int gridH, int gridW, int numPrefixTokens);
    void setMap(const AttentionMap& map);
    void setQuery(int query);
    void setOpacity(double opacity);
    void setColormap(Colormap colormap);
    void setShowGrid(bool show);
    void setCaption(const QString& caption); // drawn above the image (the model, in compare mode)
    void setValueCaption(const QString& caption); // the colour bar's: "attention" unless set
    // Patches (x = column, y = row) outlined over the map, e.g. the high-norm tokens; none by default.
    void setMarkedPatches(std::vector<QPoint> patches);
    const std::vector<QPoint>& markedPatches() const { return m_marked; }
    void clear();
    // Clears the view and says why in its place (an image that could not be read: its one-line error).
    void showMessage(const QString& message);
    QString message() const { return m_message; }
    // What the empty view says when there is neither an image nor a message ("Open a model and an image" unless set).
    void setPlaceholder(const QString& text);
    QString shownText() const { return m_rendered.isNull() ? (m_message.isEmpty() ? m_placeholder : m_message) : QString(); }

    const QImage& rendered() const { return m_rendered; }
    int renders() const { return m_renders; } // how many times the overlay was rendered (a click: once)
    const std::optional<AttentionMap>& map() const { return m_map; }
    QString caption() const { return m_caption; }
    // The overlay with its caption and colour bar, as exported ("Export view").
    QImage composed(double scale = 2.0) const;
    // The patch (row, col) under a point in widget coordinates, if any.
    std::optional<QPoint> patchAt(const QPoint& widgetPos) const;
    // What hovering a point shows: the patch's token, its (row, col) and the map's value there ("" off the image).
    QString hoverText(const QPoint& widgetPos) const;
    QRect imageRect() const;

signals:
    void queryRequested(int token);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    QSize sizeHint() const override { return { 480, 480 }; }

private:
    void rerender();
    QRect barRect(const QRect& image) const;

    Image m_shown;
    std::optional<AttentionMap> m_map;
    int m_gridH = 0, m_gridW = 0, m_prefix = 0, m_query = 0;
    std::vector<QPoint> m_marked;
    void paintMarked(QPainter& p, const QRect& image) const;
    double m_opacity = 0.6;
    Colormap m_colormap = Colormap::Viridis;
    bool m_showGrid = false;
    QString m_caption;
    QString m_valueCaption = tr("attention");
    QString m_message; // shown in place of the image while there is none
    int m_renders = 0;
    QString m_placeholder = tr("Open a model and an image");
    QImage m_rendered;
};

} // namespace attnscope
