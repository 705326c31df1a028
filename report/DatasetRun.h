#pragma once

// The analysis half of writeReport (Report.h) as one object whose steps are named members, read top to bottom:
//   plan()      the runs (the model, its variant, the compared model), this shard's images, the journal a killed run
//               resumes from (its identity: the option table's options so marked, report/RunSpec.h), and the figures of
//               the images a resumed run has behind it;
//   pipeline()  the images through every run in batches, read ahead on CPU threads, two batches in flight (the device
//               works on one while the host writes the other), checkpoints every few seconds;
//   outputs()   the query-key maps, predictions.csv, each run's CSVs and statistics, and the manifest (all but the image
//               list, which finishReport streams in from the journal).
// Each step returns an Error that names the file; the object lives for one run.

#include "BatchPrefetch.h"
#include "FigureDrawing.h"
#include "OutputFolder.h"
#include "Report.h"
#include "RunJournal.h"

#include <attnscope/AnalysisRun.h>
#include <attnscope/Analyses.h>
#include <attnscope/Model.h>
#include <attnscope/QueryKey.h>
#include <attnscope/Result.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct ReportResults {
    ReportOutcome outcome;
    std::vector<RunOutput> outputs;
    std::vector<NamedGrid> grids;
    std::vector<NamedRelevance> relevances;
    std::vector<NamedTokenNorms> norms;
    std::optional<attnscope::LogitDecomposition> decomposition;
    std::optional<attnscope::QueryKeyFigure> queryKey;
    nlohmann::json manifest;             // all but the images,
    std::shared_ptr<RunJournal> journal; // the images, which finishReport writes into it
    double analysisSeconds = 0;
    // Where the run's time went (manifest "timings"): waiting for the read-ahead batch of images (decoding, hashing,
    // preparing, perturbing and staging them on CPU threads), and the forwards with their analyses, copies back
    // included; the rest of analysisSeconds is the host's bookkeeping between batches (statistics, journal, figures).
    double waitingForImagesSeconds = 0;
    double forwardSeconds = 0;
};

class DatasetRun {
public:
    DatasetRun(const ReportRequest& request, std::function<bool()> isCancelled, std::function<void(int done, int total)> progress);

    // plan(), pipeline(), outputs().
    attnscope::Result<std::shared_ptr<ReportResults>> run();

private:
    using Clock = std::chrono::steady_clock;
    struct Run {
        std::shared_ptr<const attnscope::Model> model;
        std::unique_ptr<attnscope::AnalysisRun> analysis;
        RunOutput output;
    };
    // A batch queued on every run's device, waiting to be finished and written out.
    struct InFlight {
        PrefetchedBatch batch;
        std::vector<attnscope::PendingBatch> runs;
    };

    attnscope::Status plan();
    void addRun(std::shared_ptr<const attnscope::Model> model, const std::string& label, attnscope::AnalysisOptions options);
    attnscope::Status openJournal();
    attnscope::Status pipeline();
    attnscope::Status finishBatch(InFlight& done);
    attnscope::Status checkpoint();
    // The per-image figures of the first images (attention grid, token norms, relevance, decomposition): each from a
    // forward of its own, so that they do not depend on which images shared its batch, nor on a resume.
    attnscope::Status addFigures(size_t index, const attnscope::Model::Prepared& prepared, const std::string& path);
    // The image as the outputs name it (ReportRequest::imageNames), and every image's.
    const std::string& nameOf(size_t index) const;
    const std::vector<std::string>& names() const;
    // "PATH: " or "images A to B: ", by the images' names, before a message about a batch.
    std::string batchName(const std::vector<PrefetchedImage>& items) const;
    attnscope::Result<std::shared_ptr<ReportResults>> outputs();
    nlohmann::json manifest(const nlohmann::json& runList, const nlohmann::json& queryKeyRecord) const;
    bool cancelled() const { return m_isCancelled && m_isCancelled(); }
    const attnscope::Model& primary() const { return *m_runs.front().model; }

    const ReportRequest& m_request;
    const attnscope::AnalysisOptions& m_base; // m_request.options
    std::function<bool()> m_isCancelled;
    std::function<void(int done, int total)> m_progress;
    Clock::time_point m_start = Clock::now();
    bool m_dumping = false; // --dump-tensors: every run's tensors

    // plan()
    std::vector<Run> m_runs;
    std::vector<std::string> m_stems; // of every image of the request, unique
    std::vector<size_t> m_mine;       // the images of this shard
    size_t m_batch = 0;
    std::string m_weightsSha; // of the model's weights, "" when they cannot be read
    nlohmann::json m_resolved; // the option table's options as this run resolved them
    std::shared_ptr<RunJournal> m_journal;
    RunCheckpoint m_state;
    ReportOutcome m_outcome;

    // The first images' figures (addFigures).
    std::vector<NamedGrid> m_grids;
    std::vector<NamedRelevance> m_relevances;
    std::vector<NamedTokenNorms> m_norms;
    std::optional<attnscope::LogitDecomposition> m_decomposition;
    int m_gridsWanted = 0;
    size_t m_relevancesWanted = 0, m_normsWanted = 0;

    // pipeline()
    Clock::time_point m_lastCheckpoint = Clock::now();
    double m_waiting = 0, m_forwards = 0;
};
