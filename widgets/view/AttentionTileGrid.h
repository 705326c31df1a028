#pragma once

#include "plots/Colormap.h"

#include <attnscope/Analyses.h>
#include <attnscope/Model.h>
#include <attnscope/Summary.h>

#include <QImage>
#include <QWidget>

#include <memory>
#include <vector>

class QMenu;

namespace attnscope {

// The layers x heads thumbnails of the current query's attention (plus a head-mean column); clicking a tile selects
// that layer and head. With head importance set (an image set's head ablation, docs/analyses.md section 8), a bar under
// each head's tile shows its mean KL on a log scale and the heads that flip the most predictions are numbered; a head's
// context menu asks to ablate it on the current image.
class AttentionTileGrid : public QWidget {
    Q_OBJECT
public:
    explicit AttentionTileGrid(QWidget* parent = nullptr);

    // Every layer's and head's row of one query (Analyses.h: QueryRows), over the preprocessed image.
    void setRows(const QueryRows& rows, const Image& shown);
    void clear(); // no tiles: no image, or the image could not be run
    bool isEmpty() const { return m_tiles.empty(); }
    void setSelection(int layer, int head);
    void setColormap(Colormap colormap);
    // The ablation result to show (empty: none) and what it is of ("200 images"), for the bars and the hover text.
    void setImportance(std::vector<HeadAblationRow> rows, const QString& source);
    bool hasImportance() const { return !m_importance.empty(); }
    // The head ablated on the current image, crossed out (layer 0: none).
    void setAblatedHead(int layer, int head);
    // The context menu of the tile at `pos` (a head's: ablate it, restore every head); null elsewhere.
    std::unique_ptr<QMenu> tileMenu(const QPoint& pos);
    QSize sizeHint() const override;        // every tile at full size
    QSize minimumSizeHint() const override; // every tile at the smallest size drawn; below it the dock scrolls
    int tileSize() const { return m_tile; }  // the side tiles are drawn at: as large as fits, up to full size
    // The (layer, head) of the tile under a point; head -1 is the mean column.
    std::optional<std::pair<int, int>> tileAt(const QPoint& pos) const;
    // What hovering a point shows: the tile's layer and head, and the patch under it with its token and attention.
    QString hoverText(const QPoint& pos) const;

signals:
    void tileClicked(int layer, int head);
    // From a head's context menu: ablate it on the current image (layer 0: restore every head).
    void ablationRequested(int layer, int head);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void contextMenuEvent(QContextMenuEvent* event) override;

private:
    QRect tileRect(int layerIndex, int column) const;
    int fittingTile(const QSize& area) const;

    std::vector<std::vector<QImage>> m_tiles; // [layer - 1][head], the mean last
    std::vector<std::vector<Tensor>> m_maps;  // the tiles' patch maps [gh, gw], alike
    int m_gridH = 0, m_gridW = 0, m_prefix = 0;
    int m_depth = 0; // rows past it: the attention-pool head's map, "pool"
    std::vector<WindowBlock> m_windows; // a Swin's blocks: its rows' stages and heads
    int m_layer = 1, m_head = -1;
    Colormap m_colormap = Colormap::Viridis;
    int m_tile = 56;
    std::vector<HeadAblationRow> m_importance;
    QString m_importanceSource;
    std::vector<const HeadAblationRow*> m_mostImportant;
    double m_klLow = 0, m_klHigh = 1;
    int m_ablatedLayer = 0, m_ablatedHead = 0;
};

} // namespace attnscope
