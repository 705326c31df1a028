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
// Three panels side by side with two-line keys under them.
inline QSize tokenNormsFigureSize() { return { 1250, 480 }; }
// Four square heatmaps and a colour bar.
inline QSize logitDecompositionFigureSize() { return { 1300, 400 }; }

// One layers x heads map per model side by side with three caption lines under each, and a colour bar.
inline QSize headAblationFigureSize(int models)
{
    models = std::max(1, models);
    return { std::max(640, 90 + models * 440 + 90), 530 };
}

// Square panels of ~160 px, six to a row at most (buildHeadCentresPlot's arrangement).
inline QSize headCentresFigureSize(int layers)
{
    layers = std::max(1, layers);
    const int rows = (layers + 5) / 6;
    const int columns = (layers + rows - 1) / rows;
    const int panelWidth = 160 + 31, panelHeight = 160 + 44;
    return { std::max(560, 16 + columns * panelWidth), 62 + rows * panelHeight + 62 };
}

// One square panel per layer and head (buildHeadKernelPlot): ~120 px panels for a 4 x 4 model, ~55 px for ViT-B's
// 12 x 12; beyond ~22 layers or heads the panels stay at 30 px and the figure grows instead.
inline QSize headKernelsFigureSize(int layers, int heads)
{
    layers = std::max(1, layers);
    heads = std::max(1, heads);
    const int panel = std::clamp(660 / std::max(layers, heads), 30, 120) + 3;
    // Layer labels on the left, the colour bar on the right; title, subtitle and head labels above, caption below.
    return { std::max(640, 16 + 64 + heads * panel + 104), 68 + 20 + layers * panel + 46 };
}

} // namespace attnscope
