#pragma once

#include "FigureDrawing.h"
#include "OutputFolder.h"

#include <attnscope/Result.h>
#include <attnscope/Summary.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

// The figures of an output folder (figures/): the CSV of what each plots, written by every build, and the figures
// themselves, drawn by the same plot builders as the GUI where the build has Qt (FigureDrawing.h).
attnscope::Result<std::vector<std::string>> parseFigureFormats(const std::string& commaSeparated);

// The layers x heads maps of `query` (by default -1: the CLS token, or the centre patch of a model without prefix
// tokens), the head mean of each layer and the rollout (made as `rollout` says).
attnscope::AttentionGrid attentionGridOf(const attnscope::Trace& trace, const attnscope::Image& shown, const std::string& model,
                                         const std::string& image, int query = -1, const attnscope::RolloutOptions& rollout = {});
// The query token a grid asks for: "cls" (-1: the CLS token, or the centre patch without prefix tokens) or "R,C", the
// patch in row R and column C of the grid, from 0. Bounds are checked against a model by gridQueryToken.
attnscope::Result<bool> checkGridQuery(const std::string& spec);
attnscope::Result<int> gridQueryToken(const std::string& spec, int gridHeight, int gridWidth, int prefixTokens);

// Its data: layer,head,row,col,attention (head "mean"; layer "rollout").
std::string attentionGridCsv(const attnscope::AttentionGrid& grid);

// Writes the CSV of every figure the runs have data for and draws the figures in each format (none: the CSVs only);
// returns an error message or "".
std::string writeFigures(const std::string& outDir, const std::vector<RunOutput>& runs, const ImageFigures& images,
                         const attnscope::LogitDecomposition* decomposition, const std::vector<std::string>& formats);
// A CSV field: as it is, or quoted (quotes doubled) when it holds a comma, a quote or a newline.
std::string csvField(const std::string& s);
// A relevance figure's data: one row per patch (class, label, probability, Grad-CAM layer, row, col, gae, gradcam).
std::string relevanceCsv(const attnscope::RelevanceFigure& figure);
// A token-norms figure's data: one row per layer and token (layer, token, kind cls|dist|register|patch, row, col (-1 for
// prefix tokens), norm, ratio to the layer's patch median, outlier 0|1, attention received from A_{l+1}).
std::string tokenNormsCsv(const attnscope::TokenNormsFigure& figure);

// The manifest's "figures": the formats drawn, and in a build that draws none, why ("not_drawn").
nlohmann::json figuresRecord(const std::vector<std::string>& formats);
