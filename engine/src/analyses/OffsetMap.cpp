// The offset map's summary of the head centres (docs/analyses.md section 3), shared by a ViT's (Analyses.cpp) and a
// Swin's (WindowMaps.cpp). Built with -ffp-contract=off, as Analyses.cpp (engine/CMakeLists.txt).
#include "analyses/OffsetWindow.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace attnscope {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
} // namespace

// The offset map's summary (docs/analyses.md section 3): M(delta), the mean over the `interior` queries of a_q(q + delta)
// from the sums `m`, its peak, mass, bandwidth and contour levels; NaN without interior queries.
void summariseOffsetMap(HeadCentre& hc, std::vector<double> m, size_t interior, int radius)
{
    const int side = 2 * radius + 1, cells = side * side;
    if (interior == 0) {
        hc.peakDy = hc.peakDx = hc.bandwidth = hc.windowMass = hc.contour50 = hc.contour90 = kNaN;
        hc.offsetMap = Tensor::fromVector({ side, side }, std::vector<float>(size_t(cells), std::nanf("")));
        return;
    }
    // M(delta) = mean over interior q of a_q(q + delta)
    double mass = 0;
    for (double& v : m) {
        v /= double(interior);
        mass += v;
    }
    std::vector<float> map(m.begin(), m.end());
    hc.offsetMap = Tensor::fromVector({ side, side }, std::move(map));
    const int peak = int(std::max_element(m.begin(), m.end()) - m.begin());
    hc.peakDy = double(peak / side - radius);
    hc.peakDx = double(peak % side - radius);
    hc.windowMass = mass;
    // Bandwidth: spread of the offset map around its own centroid (kernel-regression view, seed 004).
    double my = 0, mx = 0;
    for (int c = 0; c < cells; ++c) {
        my += m[size_t(c)] * (c / side - radius);
        mx += m[size_t(c)] * (c % side - radius);
    }
    my /= mass;
    mx /= mass;
    double spread = 0;
    for (int c = 0; c < cells; ++c)
        spread += m[size_t(c)] * (std::pow(c / side - radius - my, 2) + std::pow(c % side - radius - mx, 2));
    hc.bandwidth = std::sqrt(spread / mass);
    // Contour levels: the value of the cell at which the descending cumulative mass reaches the share
    // (Cordonnier et al., Fig. 4/6 draw the 50% and 90% regions).
    std::vector<double> sorted = m;
    std::sort(sorted.rbegin(), sorted.rend());
    for (auto [share, level] : { std::pair<double, double*> { 0.5, &hc.contour50 }, { 0.9, &hc.contour90 } }) {
        int64_t below = 0;
        double cum = 0;
        for (double v : sorted) {
            cum += v;
            below += cum < share * mass;
        }
        *level = sorted[size_t(std::min<int64_t>(below, int64_t(sorted.size()) - 1))];
    }
}

} // namespace attnscope
