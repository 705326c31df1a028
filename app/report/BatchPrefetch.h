#pragma once

// The images of a report, read one batch ahead of the forward on CPU threads: decoded, hashed and prepared for each
// model, so that the device (a GPU above all) does not wait for the decoder between batches.

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

class BatchPrefetch {
public:
    // `indices`: the images of `paths` to read, in order, `batch` at a time, over `threads` threads.
    BatchPrefetch(std::vector<const attnscope::Model*> models, const std::vector<std::string>& paths, std::vector<size_t> indices,
                  size_t batch, int threads);
    ~BatchPrefetch();
    BatchPrefetch(const BatchPrefetch&) = delete;
    BatchPrefetch& operator=(const BatchPrefetch&) = delete;

    // The next batch, in order (empty after the last); reading the one after it starts before this returns.
    std::vector<PrefetchedImage> next();

private:
    std::vector<PrefetchedImage> read(size_t begin) const;

    std::vector<const attnscope::Model*> m_models;
    const std::vector<std::string>& m_paths;
    std::vector<size_t> m_indices;
    size_t m_batch;
    int m_threads;
    size_t m_next = 0;
    std::future<std::vector<PrefetchedImage>> m_pending;
};
