#pragma once

// The options of an analysis as a user writes them (attnscope-cli analyze's flags, attnscope.analyze's keywords),
// checked and turned into a ReportRequest in one place, so that both doors accept and refuse the same things with
// the same one-line reasons.

#include "Report.h"

#include <attnscope/Analyses.h>
#include <attnscope/Result.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

struct AnalyzeArguments {
    std::string analyses = "similarity,attention,centres,snr";
    std::vector<std::string> noise; // empty with snr: gaussian:sigma=8
    int draws = 1;
    uint64_t seed = 0;
    int batch = 0;
    std::string precision = "fp32";
    std::string analysesOn = "auto"; // auto | device | host
    bool cudaGraph = false;          // replay each batch shape's device work from a CUDA graph
    int gridImages = 1;
    std::string query = "cls";
    std::string rollout = "mean";
    double discard = 0.0;
    int targetClass = -1;
    int gradCamLayer = -1;
    double outlierRatio = attnscope::kDefaultOutlierRatio;
    std::string ablation = "zero"; // head ablation's mode: zero | mean
    // The query-key maps ("qkmap"): layer (0: every layer), head (-1: every head), the first images, pca | tsne.
    int qkLayer = 0;
    int qkHead = -1;
    int qkImages = 16;
    std::string qkMethod = "pca";
    double checkpointSeconds = 5.0;
    bool dumpTensors = false;
};

// How the door spells an option in its messages: "--grid-images" for the CLI, "grid_images" for Python. Called with
// the CLI's spelling without dashes ("grid-images").
using OptionSpelling = std::function<std::string(const std::string& cliName)>;

// Checks `arguments` and sets request.options, analysesText, batch, the grids', the relevance's and the checkpoints'
// fields. The class and layer ranges and tf32 are checked against request.model, when it is set (a door may check
// the rest before loading the model). The Error is the message to
// show, naming the option as `spell` writes it.
attnscope::Status applyAnalyzeArguments(const AnalyzeArguments& arguments, const OptionSpelling& spell, ReportRequest& request);
