#pragma once

#include "OutputFolder.h"

#include <attnscope/Result.h>
#include <attnscope/Summary.h>

#include <string>
#include <vector>

// The figures of an output folder (figures/), drawn by the same plot builders as the GUI, headless.
attnscope::Result<std::vector<std::string>> parseFigureFormats(const std::string& commaSeparated);

// The layers x heads maps of query 0 (the CLS token, or the centre patch of a model without prefix tokens).
attnscope::AttentionGrid attentionGridOf(const attnscope::Trace& trace, const attnscope::Image& shown, const std::string& model,
                                         const std::string& image);

// Writes every figure the runs have data for, in each format, each with a CSV of the plotted data; returns an
// error message or "".
std::string writeFigures(const std::string& outDir, const std::vector<RunOutput>& runs, const attnscope::AttentionGrid* grid,
                         const attnscope::LogitDecomposition* decomposition, const std::vector<std::string>& formats);
