#pragma once

#include "figures/FigureCatalog.h"

#include <QPointer>
#include <QWidget>

#include <memory>

class QComboBox;
class QCustomPlot;
class QScrollArea;
class QToolButton;

namespace attnscope {

class ElidedLabel;

// A plot dock's contents: a figure chooser, the figure (hover shows values), and an export button that writes the
// figure (PNG at 2x, SVG or PDF) or its data (CSV) through the same catalogue as the CLI.
class FigurePanel : public QWidget {
    Q_OBJECT
public:
    FigurePanel(std::vector<Figure> figures, QWidget* parent = nullptr);

    // `decomposition` is kept alive with the data.
    void setData(std::vector<AnalysisSummary> series, std::shared_ptr<const LogitDecomposition> decomposition = {},
                 LogitDecompositionInfo info = {});
    void setDecompositionHead(int head);
    void setStatus(const QString& text); // the header's line beside the chooser (an error, "not analysed: …")
    QString status() const;
    void setFigure(Figure figure);
    Figure figure() const;
    const std::vector<Figure>& figures() const { return m_figures; } // the chooser's, in its order
    QCustomPlot* plot() const { return m_plot; }
    const FigureData& data() const { return m_data; }
    QWidget* headerWidget() const { return m_header; } // for callers that add their own controls to the row
    // "Enlarge": the figure in a window of its own at its export size (bounded by the screen), rebuilt with the dock's.
    void showLarger();
    QWidget* largerView() const; // that window, or null

    // Writes the current figure at its export size (.png, .svg or .pdf by the suffix), or its data (.csv).
    Status exportFigure(const QString& path);
    Status exportData(const QString& path);

signals:
    void figureChanged(attnscope::Figure figure);
    void exported(const QString& path);
    void exportFailed(const QString& message);

private:
    void rebuild();
    void askExport(bool data);

    std::vector<Figure> m_figures;
    FigureData m_data;
    std::shared_ptr<const LogitDecomposition> m_decomposition;
    QWidget* m_header = nullptr;
    QComboBox* m_chooser = nullptr;
    ElidedLabel* m_status = nullptr;
    QToolButton* m_export = nullptr;
    QScrollArea* m_scroll = nullptr;
    QCustomPlot* m_plot = nullptr;
    // The Enlarge window (a child that deletes itself on close, and is deleted with the panel): guarded pointers, null
    // once it is gone, so that nothing has to run while either is being destroyed (a `destroyed` handler writing these
    // members ran inside the panel's own destruction: UBSan's report of issue 44).
    QPointer<QWidget> m_larger;
    QPointer<QCustomPlot> m_largerPlot;
};

} // namespace attnscope
