#pragma once

// Export sizes (logical pixels) at which each figure's layout is balanced: the GUI's "export" and the CLI use them
// unless asked for another size. PNGs come out at twice these (FigureExport.h).

#include <QSize>
#include <algorithm>

namespace attnscope {

// Token similarity, SNR, attention distance: one axis rect.
inline QSize lineFigureSize() { return { 760, 500 }; }
// Three panels side by side.
inline QSize snrDiagnosticsFigureSize() { return { 1250, 440 }; }
// Four square heatmaps and a colour bar.
inline QSize logitDecompositionFigureSize() { return { 1300, 400 }; }

// Square panels of ~160 px, six to a row at most (buildHeadCentresPlot's arrangement).
inline QSize headCentresFigureSize(int layers)
{
    layers = std::max(1, layers);
    const int rows = (layers + 5) / 6;
    const int columns = (layers + rows - 1) / rows;
    const int panelWidth = 160 + 31, panelHeight = 160 + 44;
    return { std::max(560, 16 + columns * panelWidth), 62 + rows * panelHeight + 62 };
}

} // namespace attnscope
