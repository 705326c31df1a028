#pragma once

#include "OutputFolder.h"

#include <attnscope/Result.h>
#include <attnscope/Summary.h>

#include <string>
#include <vector>

// The figures of an output folder (figures/), drawn by the same plot builders as the GUI, headless.
attnscope::Result<std::vector<std::string>> parseFigureFormats(const std::string& commaSeparated);

// The layers x heads maps of `query` (by default -1: the CLS token, or the centre patch of a model without prefix
// tokens), the head mean of each layer and the rollout.
attnscope::AttentionGrid attentionGridOf(const attnscope::Trace& trace, const attnscope::Image& shown, const std::string& model,
                                         const std::string& image, int query = -1);
// Its data: layer,head,row,col,attention (head "mean"; layer "rollout").
std::string attentionGridCsv(const attnscope::AttentionGrid& grid);

// Writes every figure the runs have data for, in each format, each with a CSV of the plotted data; returns an
// error message or "".
std::string writeFigures(const std::string& outDir, const std::vector<RunOutput>& runs, const attnscope::AttentionGrid* grid,
                         const attnscope::LogitDecomposition* decomposition, const std::vector<std::string>& formats);
