#include "BatchPrefetch.h"

#include <attnscope/Files.h>
#include <attnscope/Image.h>

#include <algorithm>
#include <atomic>
#include <thread>

BatchPrefetch::BatchPrefetch(std::vector<const attnscope::Model*> models, std::vector<const attnscope::AnalysisRun*> runs,
                             std::vector<size_t> modelOfRun, const std::vector<std::string>& paths, std::vector<size_t> indices,
                             size_t batch, int threads)
    : m_models(std::move(models))
    , m_runs(std::move(runs))
    , m_modelOfRun(std::move(modelOfRun))
    , m_paths(paths)
    , m_indices(std::move(indices))
    , m_batch(std::max<size_t>(1, batch))
    , m_threads(std::max(1, threads))
{
}

BatchPrefetch::~BatchPrefetch()
{
    if (m_pending.valid())
        m_pending.wait();
}

PrefetchedBatch BatchPrefetch::read(size_t begin) const
{
    const size_t count = std::min(m_batch, m_indices.size() - begin);
    PrefetchedBatch batch;
    std::vector<PrefetchedImage>& out = batch.images;
    out.resize(count);
    std::atomic<size_t> nextItem { 0 };
    const auto work = [&] {
        for (size_t k; (k = nextItem++) < count;) {
            PrefetchedImage& item = out[k];
            item.index = m_indices[begin + k];
            item.path = m_paths[item.index];
            auto image = attnscope::decodeImage(item.path);
            if (!image) {
                item.error = image.message();
                continue;
            }
            for (const attnscope::Model* model : m_models) {
                auto prepared = model->prepare(*image);
                if (!prepared) {
                    item.error = item.path + ": " + prepared.message();
                    break;
                }
                item.prepared.push_back(std::move(*prepared));
            }
            auto sha = attnscope::sha256File(item.path);
            item.sha256 = sha ? *sha : "";
        }
    };
    std::vector<std::thread> helpers;
    for (int t = 1; t < std::min<int>(m_threads, int(count)); ++t)
        helpers.emplace_back(work);
    work();
    for (auto& h : helpers)
        h.join();
    // An image that cannot be read is set aside with its reason; the others go on.
    std::vector<PrefetchedImage> good;
    for (auto& item : out)
        (item.error.empty() ? good : batch.skipped).push_back(std::move(item));
    out = std::move(good);
    if (out.empty())
        return batch;
    const size_t readable = out.size();
    std::vector<int64_t> indices;
    for (const auto& item : out)
        indices.push_back(int64_t(item.index));
    for (size_t r = 0; r < m_runs.size(); ++r) {
        std::vector<const attnscope::Model::Prepared*> prepared;
        for (const auto& item : out)
            prepared.push_back(&item.prepared[m_modelOfRun[r]]);
        auto staged = m_runs[r]->stage(prepared, indices);
        if (!staged) {
            batch.error = (readable == 1 ? out.front().path : "images " + out.front().path + " to " + out.back().path) + ": " + staged.message();
            return batch;
        }
        batch.staged.push_back(std::move(*staged));
    }
    return batch;
}

PrefetchedBatch BatchPrefetch::next()
{
    PrefetchedBatch batch;
    if (m_pending.valid())
        batch = m_pending.get();
    else if (m_next < m_indices.size()) { // the first batch: nothing was read ahead
        batch = read(m_next);
        m_next += batch.images.size() + batch.skipped.size();
    }
    if (m_next < m_indices.size()) {
        const size_t begin = m_next;
        m_next += std::min(m_batch, m_indices.size() - begin);
        m_pending = std::async(std::launch::async, [this, begin] { return read(begin); });
    }
    return batch;
}
