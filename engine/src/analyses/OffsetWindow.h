#pragma once

// The offset window of the head centres (docs/analyses.md section 3), shared by the host loops (Analyses.cpp) and the
// device path (BatchedAnalyses.cpp): the interior patch queries, whose (2R+1) x (2R+1) window lies inside the grid, and
// for each the key patch of every window cell, rows dy = -R..R, columns dx = -R..R.

#include "attnscope/Analyses.h"

#include <cstdint>
#include <vector>

namespace attnscope {

struct OffsetWindow {
    std::vector<int64_t> interior; // query patch indices, row-major
    std::vector<int64_t> cellKeys; // [interior.size(), (2R+1)^2] key patch indices
};

inline OffsetWindow offsetWindow(int gridHeight, int gridWidth, int radius)
{
    OffsetWindow w;
    for (int r = radius; r < gridHeight - radius; ++r)
        for (int c = radius; c < gridWidth - radius; ++c) {
            w.interior.push_back(int64_t(r) * gridWidth + c);
            for (int dy = -radius; dy <= radius; ++dy)
                for (int dx = -radius; dx <= radius; ++dx)
                    w.cellKeys.push_back(int64_t(r + dy) * gridWidth + (c + dx));
        }
    return w;
}

// A head's offset map and what is read off it (docs/analyses.md section 3): `m` holds, per cell (dy, dx) of the window,
// the sum over the `interior` queries of a_q(q + delta); M is their mean. Sets the map, its peak, mass, bandwidth and
// 50% / 90% contour levels (all NaN without interior queries). Analyses.cpp.
void summariseOffsetMap(HeadCentre& hc, std::vector<double> m, size_t interior, int radius);

} // namespace attnscope
