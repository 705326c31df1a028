#pragma once

// Deterministic, plausible-looking results for exercising the plot builders without a model: token similarity
// rising with depth, local heads early and global heads late, SNR falling with depth, a 14 x 14 attention grid
// over a synthetic image, and a layer-1 logit decomposition with a positional (PP) structure.

#include <attnscope/Analyses.h>
#include <attnscope/Summary.h>
#include <string>

namespace attnscope::testdata {

struct SummaryShape {
    int layers = 12;
    int heads = 6;
    int radius = 3;
    int64_t images = 500;
    double smoothing = 1.0; // how fast token similarity rises; a variant uses another value
};

AnalysisSummary makeSummary(const std::string& model, const std::string& label, const SummaryShape& shape = {});

// A (2R+1)^2 offset map: a Gaussian of width `sigma` (cells) at (dy, dx), holding `mass` in the window.
std::vector<double> gaussianOffsetMap(int radius, double dy, double dx, double sigma, double mass);
// The level t such that the cells with M >= t hold `share` of the map's mass.
double massContour(const std::vector<double>& map, double share);

// `hot` is the token index of the query patch whose maps peak there; grid 14 x 14, one CLS token.
AttentionGrid makeGrid(int layers = 12, int heads = 6, int query = 0);
// A 224 x 224 RGB image with smooth colour gradients and a few shapes.
Image makeImage(int width = 224, int height = 224, int channels = 3);
// A [gh, gw] map with a Gaussian bump at (row, col) on a small uniform floor, summing to 1 - prefixMass.
AttentionMap bumpMap(int gh, int gw, double row, double col, double sigma, double prefixMass = 0.1);

// tt, tp, pt, pp and logits of shape [heads, n, n] with n = 1 + side * side.
LogitDecomposition makeDecomposition(int heads = 4, int side = 14);

} // namespace attnscope::testdata
