#pragma once

// Colormaps as 256-entry tables. The perceptually uniform ones (viridis, magma, inferno: van der Walt & Smith
// 2015; cividis: Nuñez et al., PLoS ONE 13(7) 2018) are interpolated from 33 samples of their published
// definitions; greys and the diverging cool-warm map are computed from their definitions (see Colormap.cpp).

#include <QColor>
#include <QString>
#include <array>
#include <optional>
#include <vector>

class QCPColorGradient;

namespace attnscope {

enum class Colormap {
    Viridis,
    Magma,
    Inferno,
    Cividis,
    Greys, // black (low) to white (high), linear in CIE L*
    CoolWarm, // diverging, blue - white - red (Moreland 2009): for signed values centred on 0
};

using ColormapTable = std::array<QRgb, 256>;

// The table of `map`, built once (thread-safe).
const ColormapTable& colormapTable(Colormap map);
// Entry for t in [0, 1] (clamped; NaN gives entry 0).
QRgb colormapColor(Colormap map, double t);

QString colormapName(Colormap map); // "viridis", ...
std::optional<Colormap> colormapFromName(const QString& name);
std::vector<Colormap> allColormaps();

// The map as a QCustomPlot gradient (256 levels, linear RGB interpolation between the table entries).
QCPColorGradient colorGradient(Colormap map);

// A range of data values mapped onto a colormap: low -> entry 0, high -> entry 255.
struct ValueRange {
    double low = 0.0;
    double high = 1.0;
};

} // namespace attnscope
