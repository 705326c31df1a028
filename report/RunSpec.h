#pragma once

// A dataset run's options, each written once (issue 44): the RunSpec holds their values with their defaults, and
// runOptions() is the table every door is made from or checked against. attnscope-cli analyze registers its flags from
// the table; Python's attnscope.analyze passes its keywords by the table's names, and a test fails when its signature
// lacks one or states another default; the window's "Export all" fills a RunSpec; the manifest records each option
// under the table's key, and the resume identity is the table's options so marked. applyRunSpec checks a RunSpec and
// turns it into a ReportRequest in one place, so that every door accepts and refuses the same things with the same
// one-line reasons.

#include "Report.h"

#include <attnscope/Analyses.h>
#include <attnscope/Result.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

struct RunSpec {
    std::string analyses = "similarity,attention,centres,snr";
    std::vector<std::string> noise; // empty with snr: gaussian:sigma=8
    int draws = 1;
    uint64_t seed = 0;
    std::optional<double> neutreno, boost; // a variant run beside the model as trained
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
    bool dumpTensors = false;
    bool strict = false; // stop at the first unreadable image instead of skipping it
    bool fresh = false;  // discard an unfinished run in the output folder instead of resuming it
    double checkpointSeconds = 5.0;
};

// One option of the table: its field of RunSpec (and so its type and default), how each door spells it, where the
// manifest records it and whether a resumed run must have the same value.
struct RunOption {
    using Field = std::variant<std::string RunSpec::*, std::vector<std::string> RunSpec::*, int RunSpec::*, uint64_t RunSpec::*,
                               double RunSpec::*, bool RunSpec::*, std::optional<double> RunSpec::*>;
    const char* cli;      // "grid-images": attnscope-cli analyze --grid-images
    const char* python;   // "grid_images": attnscope.analyze(grid_images=...)
    const char* manifest; // the key under the manifest's "options"; "" where the manifest records it elsewhere or not
    bool identity;        // part of the resume identity: a rerun with another value starts afresh or is refused
    const char* help;
    Field field;
};

const std::vector<RunOption>& runOptions();
const RunOption* runOptionNamed(const std::string& cliName);

// The spec as JSON by Python's names (the remote engine's report_start, docs/remote.md): every option with its value
// (an unset optional as null), and back: a key the table has not, or a value of another type, is an Error naming it.
nlohmann::json runSpecToJson(const RunSpec& spec);
attnscope::Result<RunSpec> runSpecFromJson(const nlohmann::json& value);

// How the door spells an option in its messages: "--grid-images" for the CLI, "grid_images" for Python. Called with
// the CLI's spelling without dashes ("grid-images").
using OptionSpelling = std::function<std::string(const std::string& cliName)>;

// Checks `spec` and sets request.options, analysesText, batch, the grids', the relevance's, the variant's, strict,
// resume and the checkpoints' fields. The class and layer ranges and tf32 are checked against request.model, when it
// is set (a door may check the rest before loading the model). The Error is the message to show, naming the option as
// `spell` writes it.
attnscope::Status applyRunSpec(const RunSpec& spec, const OptionSpelling& spell, ReportRequest& request);

// Every option of the table as a run resolved it, by its CLI name: `noise` as the run records its perturbations,
// `batch` and `analysesOnDevice` as the device chose them. The manifest's "options" and the resume identity are read
// from it.
nlohmann::json resolvedRunOptions(const ReportRequest& request, const nlohmann::json& noise, int64_t batch, bool analysesOnDevice);
