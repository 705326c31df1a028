#pragma once

// An analysis written as an output folder (docs/design.md section 7): predictions, the CSVs and statistics of
// every run (the model, its variant, the compared model), figures with their data, tensors on request, and the
// manifest. `attnscope-cli analyze` and the window's "Export all" both call writeReport, so what they write is
// the same by construction.

#include <attnscope/AnalysisRun.h>
#include <attnscope/Model.h>
#include <attnscope/QueryKey.h>
#include <attnscope/Result.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// The query-key maps of an output folder (docs/analyses.md section 9): of the model's heads (layer 0: every layer; head
// -1: every head) over its first `images` images.
struct QueryKeyRequest {
    bool enabled = false;
    int layer = 0;
    int head = -1;
    int images = 16;
    attnscope::QueryKeyOptions options;
};

struct ReportRequest {
    std::shared_ptr<const attnscope::Model> model;
    std::string modelName;                           // curve and folder label: "fmnist-vit"
    std::shared_ptr<const attnscope::Model> compare; // optional second model
    std::string compareName;
    std::vector<std::string> images; // image files, in order
    // What the outputs say of each image (predictions, the manifest, its files' stems, messages, the class its folder
    // names): where the user has it, when `images` are copies kept elsewhere (a remote engine's cache of the files a
    // laptop sent, docs/remote.md); empty: `images` themselves.
    std::vector<std::string> imageNames;
    std::string out;
    attnscope::AnalysisOptions options; // the analyses, perturbations, draws, seed; tensors to dump
    std::optional<double> neutreno, boost; // a variant run beside the model's own
    std::vector<std::string> formats;      // figure formats: png, svg, pdf
    int shardIndex = 1, shardCount = 1;
    // What the manifest records of how the run was asked for.
    std::string analysesText, formatsText, description, compareSpec;
    int threads = 0;
    int inputHeight = 0, inputWidth = 0; // --input-size, which the models were loaded at (0: their trained sizes)
    int batch = 0; // images per forward; 0: attnscope::defaultBatchSize
    // The attention grid figures: of the first `gridImages` images, for the query `gridQuery` (Figures.h:
    // gridQueryToken), their rollout made as `rollout` says.
    int gridImages = 1;
    std::string gridQuery = "cls";
    attnscope::RolloutOptions rollout;
    // With options.relevance, the class relevance of the same first images (at least one): of `relevance.targetClass`
    // (-1: each image's predicted class), Grad-CAM on block output `relevance.gradCamLayer` (-1: X_{L-1}).
    attnscope::RelevanceOptions relevance;
    QueryKeyRequest queryKey; // the "qkmap" analysis
    // An image that cannot be read (corrupt, truncated, not an image) is skipped, reported through `skipped` (one line:
    // the file and why) and listed in the manifest; with `strict` the run stops at the first instead.
    bool strict = false;
    std::function<void(const std::string& message)> skipped;
    // A run killed or cancelled before it finished leaves its journal in the folder (RunJournal.h); with `resume` the
    // same run into the same folder continues from its last checkpoint, and a different run there is an Error saying
    // what differs. Without, an earlier journal is discarded. Checkpoints are written every `checkpointSeconds`.
    bool resume = false;
    double checkpointSeconds = 5.0;
    std::function<void(int at, int total)> resumed; // told once, when a run resumes after `at` of its images
    double loadSeconds = 0;
};

struct ReportOutcome {
    int done = 0;  // images analysed
    int skipped = 0; // images that could not be read
    int total = 0; // images of this shard
    int resumedAt = 0; // images (analysed or skipped) behind the run it resumed; 0 for a fresh run
    bool complete = false;
    std::string note; // what the user should know of how the run went ("" when nothing): e.g. why no CUDA graph replayed
};

// Analyses the images and writes the folder; every file through a temporary name. When `isCancelled` turns true
// the images so far are written as a partial result (manifest "complete": false). Errors name the file.
attnscope::Result<ReportOutcome> writeReport(const ReportRequest& request, const std::function<bool()>& isCancelled,
                                             const std::function<void(int done, int total)>& progress);

// writeReport in two halves, for the window: the analysis and every data file (any thread), then the figures and
// the manifest, which is written last (the thread of the QApplication: figures are drawn with QCustomPlot).
struct ReportResults;
attnscope::Result<std::shared_ptr<ReportResults>> analyseReport(const ReportRequest& request, const std::function<bool()>& isCancelled,
                                                                const std::function<void(int done, int total)>& progress);
attnscope::Result<ReportOutcome> finishReport(const ReportRequest& request, const ReportResults& results);

// The labels of a report's runs beside the model's own: its variant ("fmnist-vit (NeuTRENO 0.6, Boost 0)") and the
// compared model (its name, or "NAME (2)" when that is the model's).
std::string variantRunLabel(const std::string& name, std::optional<double> neutreno, std::optional<double> boost);
std::string compareRunLabel(const std::string& compareName, const std::string& name);

// "builtin:fmnist-vit" -> "fmnist-vit", "/m/vit.safetensors" -> "vit", "/m/folder/" -> "folder".
std::string modelNameOf(const std::string& path);
