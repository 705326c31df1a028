#pragma once

// Drawing the figures of an output folder as PNG, SVG or PDF. CMake builds one of two implementations:
// FigureDrawing.cpp in the Qt build (ATTNSCOPE_GUI=ON: the GUI's plot builders, QCustomPlot, offscreen) and
// FigureDrawingHeadless.cpp in the headless build (ATTNSCOPE_GUI=OFF: no Qt linked, nothing drawn). The figures'
// CSVs do not come through here: writeFigures (Figures.h) writes them in both builds.

#include <attnscope/FigureData.h>
#include <attnscope/QueryKey.h>
#include <attnscope/Summary.h>
#include <optional>
#include <string>
#include <vector>

// An attention grid with the name its files take: attention_grid, or attention_grid_<image stem> when there are several.
struct NamedGrid {
    std::string name;
    attnscope::AttentionGrid grid;
};
struct NamedRelevance {
    std::string name; // "relevance" or "relevance_<stem>"
    attnscope::RelevanceFigure figure;
};
struct NamedTokenNorms {
    std::string name; // "token_norms" or "token_norms_<stem>"
    attnscope::TokenNormsFigure figure;
};
// The per-image figures of a report beside its dataset plots, and the query-key maps of its first images.
struct ImageFigures {
    std::vector<NamedGrid> grids;
    std::vector<NamedRelevance> relevances;
    std::vector<NamedTokenNorms> norms;
    std::optional<attnscope::QueryKeyFigure> queryKey;
};

// "" where this build draws figures; otherwise why it cannot, as a phrase ("figures need the Qt build ...").
std::string figureDrawingUnavailable();

// The figure formats of `analyze` and `merge` when --formats is not given: "png" where figures can be drawn, ""
// (the data only) where they cannot.
std::string defaultFigureFormats();

// Draws every figure of `data` that has data and the per-image figures (attention grids, relevance, token norms) into
// `dir` as <name>.<format> for each format; an error names the file.
attnscope::Status drawFigures(const std::string& dir, const attnscope::FigureData& data, const ImageFigures& images,
    const std::vector<std::string>& formats);
