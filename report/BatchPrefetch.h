#pragma once

// The images of a report, read one batch ahead of the forward on CPU threads: decoded, hashed, prepared for each
// model and staged for each run (perturbed copies made, inputs stacked), so that the device (a GPU above all) does not
// wait for the host between batches.

#include <attnscope/AnalysisRun.h>
#include <attnscope/Model.h>

#include <cstddef>
#include <future>
#include <string>
#include <vector>

struct PrefetchedImage {
    size_t index = 0; // position in the whole image list
    std::string path;
    std::string sha256;
    std::string error; // "path: reason" when the image cannot be used
    std::vector<attnscope::Model::Prepared> prepared; // one per model, in the order given
};

struct PrefetchedBatch {
    std::vector<PrefetchedImage> images;        // those that could be read, in order
    std::vector<PrefetchedImage> skipped;       // those that could not, each with its error
    std::vector<attnscope::StagedBatch> staged; // one per run, of `images`
    std::string error;                          // staging's error (it concerns the whole batch)
    bool end() const { return images.empty() && skipped.empty() && error.empty(); }
};
class BatchPrefetch {
public:
    // `indices`: the images of `paths` to read, in order, `batch` at a time, over `threads` threads; each run is
    // staged with its model's preparation (`modelOfRun`: an index into `models`).
    BatchPrefetch(std::vector<const attnscope::Model*> models, std::vector<const attnscope::AnalysisRun*> runs,
                  std::vector<size_t> modelOfRun, const std::vector<std::string>& paths, std::vector<size_t> indices, size_t batch,
                  int threads);
    ~BatchPrefetch();
    BatchPrefetch(const BatchPrefetch&) = delete;
    BatchPrefetch& operator=(const BatchPrefetch&) = delete;

    // The next batch, in order (empty after the last); reading the one after it starts before this returns.
    PrefetchedBatch next();

private:
    PrefetchedBatch read(size_t begin) const;

    std::vector<const attnscope::Model*> m_models;
    std::vector<const attnscope::AnalysisRun*> m_runs;
    std::vector<size_t> m_modelOfRun;
    const std::vector<std::string>& m_paths;
    std::vector<size_t> m_indices;
    size_t m_batch;
    int m_threads;
    size_t m_next = 0;
    std::future<PrefetchedBatch> m_pending;
};
