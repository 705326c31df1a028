#include "BatchPrefetch.h"

#include <attnscope/Files.h>
#include <attnscope/Image.h>

#include <algorithm>
#include <atomic>
#include <thread>

BatchPrefetch::BatchPrefetch(std::vector<const attnscope::Model*> models, const std::vector<std::string>& paths,
                             std::vector<size_t> indices, size_t batch, int threads)
    : m_models(std::move(models))
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

std::vector<PrefetchedImage> BatchPrefetch::read(size_t begin) const
{
    const size_t count = std::min(m_batch, m_indices.size() - begin);
    std::vector<PrefetchedImage> out(count);
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
    return out;
}

std::vector<PrefetchedImage> BatchPrefetch::next()
{
    std::vector<PrefetchedImage> batch;
    if (m_pending.valid())
        batch = m_pending.get();
    else if (m_next < m_indices.size()) { // the first batch: nothing was read ahead
        batch = read(m_next);
        m_next += batch.size();
    }
    if (m_next < m_indices.size()) {
        const size_t begin = m_next;
        m_next += std::min(m_batch, m_indices.size() - begin);
        m_pending = std::async(std::launch::async, [this, begin] { return read(begin); });
    }
    return batch;
}
