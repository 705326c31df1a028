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

// The query token a grid asks for: "cls" (-1: the CLS token, or the centre patch without prefix tokens) or "R,C", the
// patch in row R and column C of the grid, from 0. Bounds are checked against a model by gridQueryToken.
attnscope::Status checkGridQuery(const std::string& spec);
attnscope::Result<int> gridQueryToken(const std::string& spec, int gridHeight, int gridWidth, int prefixTokens);

// Writes the CSV of every figure the runs have data for and draws the figures in each format (none: the CSVs only).
attnscope::Status writeFigures(const std::string& outDir, const std::vector<RunOutput>& runs, const ImageFigures& images,
                                 const attnscope::LogitDecomposition* decomposition, const std::vector<std::string>& formats);

// The manifest's "figures": the formats drawn, and in a build that draws none, why ("not_drawn").
nlohmann::json figuresRecord(const std::vector<std::string>& formats);
