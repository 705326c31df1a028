#pragma once

#include <attnscope/Model.h>
#include <attnscope/Statistics.h>
#include <attnscope/Summary.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

// One run's results in an output folder: the CSVs of docs/design.md section 7, the mergeable statistics (stats.json),
// and the run's description for `merge`. The first run of an analysis goes to the folder itself, further runs (the
// compared model, the variant) to runs/<slug>/.
struct RunOutput {
    std::string label;  // "fmnist-vit", "fmnist-vit (NeuTRENO 0.6)"
    std::string folder; // relative to the output folder: "" or "runs/<slug>"
    nlohmann::json model;
    nlohmann::json options;
    attnscope::StatsTable stats;
    int64_t images = 0;
    int radius = 3;
    int patchSize = 0;
};

// What run.json says of the run's model (RunOutput::model): its name (the run's label), files, family and shape, and a
// Swin's stage of every block (block_stages, 1-based: the CSVs' stage column).
nlohmann::json runModelRecord(const attnscope::ModelInfo& info, const std::string& label);

// Writes stats.json and the CSVs of one run.
attnscope::Status writeRunOutput(const std::string& outDir, const RunOutput& run);
attnscope::AnalysisSummary summaryOf(const RunOutput& run);
std::string slugOf(const std::string& label);
