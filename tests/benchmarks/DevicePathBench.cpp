// Proxies of the GPU path that a CPU can measure (issue 33, item 3), for `make bench`. Prints one JSON object:
//
// - "read_ahead": the host's cost per image of the read-ahead a GPU run waits on (report/BatchPrefetch: decode, hash,
//   prepare, stage the perturbed copies), on one thread, for 224x224 PNG and JPEG files. (The copy into page-locked
//   memory is made only when the model is on a GPU; it is not in this number.) 2000 img/s on the 14 reading threads of
//   a 16-core GPU machine needs at most 7 ms.
// - "operators": the ATen operators the device path dispatches for one batch (AnalysisRun::addStaged with the
//   analyses on the model's device, here the CPU), counted by a RecordFunction observer, by phase (the engine names
//   them: attnscope::forward, then attnscope::snr, centres, attention_similarity, token_similarity, norms and copy_back
//   inside attnscope::analyses), for batches of 2, 4 and 16 images (a batch of 1 takes 45 fewer: size-1 dimensions take
//   shortcuts). On a GPU each is at least one kernel launch (views aside): fewer is faster, and a count that grows with
//   the batch is a per-image loop. "transfers" are the
//   operators given a device to move to (aten::to with a Device: uploads of constants and the copy back); "syncs" the
//   operators that make a GPU's host wait (aten::_local_scalar_dense behind item(), nonzero, masked_select, unique).
//
//   device_path_bench [--shape vit_small] [--images 48] [--batches 2,4,16]
#include "BenchModels.h"

#include <BatchPrefetch.h>
#include <attnscope/AnalysisRun.h>

#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <unistd.h>

using namespace attnscope;
using namespace attnscope::bench;
namespace fs = std::filesystem;

namespace {

// What the observer counts, by phase (the innermost attnscope:: user scope open on the thread; "other" outside them).
struct Counts {
    std::map<std::string, int64_t> operators, transfers, syncs;
    std::map<std::string, int64_t> byName; // every operator, for the top of the list
};

std::mutex g_mutex;
Counts g_counts;
thread_local std::vector<std::string> t_phases;

bool isSync(const std::string& name)
{
    return name == "aten::_local_scalar_dense" || name == "aten::nonzero" || name == "aten::masked_select"
        || name.rfind("aten::unique", 0) == 0 || name.rfind("aten::_unique", 0) == 0;
}

std::unique_ptr<at::ObserverContext> onStart(const at::RecordFunction& fn)
{
    const std::string name = fn.name();
    if (fn.scope() == at::RecordScope::USER_SCOPE) {
        if (name.rfind("attnscope::", 0) == 0)
            t_phases.push_back(name.substr(11));
        return nullptr;
    }
    const std::string phase = t_phases.empty() ? "other" : t_phases.back();
    bool transfer = false;
    if (name == "aten::to" || name == "aten::_to_copy")
        for (const c10::IValue& input : fn.inputs())
            transfer = transfer || input.isDevice();
    std::lock_guard<std::mutex> lock(g_mutex);
    ++g_counts.operators[phase];
    ++g_counts.byName[name];
    if (transfer)
        ++g_counts.transfers[phase];
    if (isSync(name))
        ++g_counts.syncs[phase];
    return nullptr;
}

void onEnd(const at::RecordFunction& fn, at::ObserverContext*)
{
    if (fn.scope() == at::RecordScope::USER_SCOPE && std::string(fn.name()).rfind("attnscope::", 0) == 0 && !t_phases.empty())
        t_phases.pop_back();
}

std::string json(const std::map<std::string, int64_t>& m)
{
    std::ostringstream out;
    out << "{";
    const char* sep = "";
    int64_t total = 0;
    for (const auto& [k, v] : m) {
        out << sep << "\"" << k << "\": " << v;
        total += v;
        sep = ", ";
    }
    out << sep << "\"total\": " << total << "}";
    return out.str();
}

// `count` files of the sample image at 224x224 (a distinct crop each) in `dir`, as PNG or JPEG.
std::vector<std::string> writeImages(const fs::path& dir, const std::string& suffix, int count)
{
    std::vector<std::string> paths;
    const Image& sample = sampleImage();
    for (int i = 0; i < count; ++i) {
        Image crop;
        crop.width = crop.height = 224;
        crop.channels = sample.channels;
        crop.pixels.resize(size_t(224) * 224 * size_t(sample.channels));
        const int dx = i % std::max(1, sample.width - 224), dy = (3 * i) % std::max(1, sample.height - 224);
        for (int y = 0; y < 224; ++y)
            for (int x = 0; x < 224; ++x)
                for (int c = 0; c < sample.channels; ++c)
                    crop.pixels[(size_t(y) * 224 + size_t(x)) * size_t(sample.channels) + size_t(c)]
                        = sample.pixels[(size_t(std::min(y + dy, sample.height - 1)) * size_t(sample.width) + size_t(std::min(x + dx, sample.width - 1)))
                                            * size_t(sample.channels)
                                        + size_t(c)];
        const std::string path = (dir / ("img-" + std::to_string(i) + suffix)).string();
        if (auto w = writeImage(path, crop); !w) {
            std::fprintf(stderr, "device_path_bench: %s\n", w.message().c_str());
            std::exit(1);
        }
        paths.push_back(path);
    }
    return paths;
}

// Milliseconds per image of reading `paths` ahead as a report does, on one thread.
double readAheadMs(const Model& model, const AnalysisRun& run, const std::vector<std::string>& paths)
{
    std::vector<size_t> indices(paths.size());
    for (size_t i = 0; i < indices.size(); ++i)
        indices[i] = i;
    const auto start = std::chrono::steady_clock::now();
    BatchPrefetch prefetch({ &model }, { &run }, { 0 }, paths, indices, 16, 1);
    size_t read = 0;
    for (PrefetchedBatch b = prefetch.next(); !b.end(); b = prefetch.next()) {
        if (!b.error.empty() || !b.skipped.empty()) {
            std::fprintf(stderr, "device_path_bench: %s\n", b.error.empty() ? b.skipped.front().error.c_str() : b.error.c_str());
            std::exit(1);
        }
        read += b.images.size();
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return ms / double(std::max<size_t>(1, read));
}

} // namespace

int main(int argc, char** argv)
{
    std::string shapeName = "vit_small", batchList = "2,4,16";
    int images = 48;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string key = argv[i], value = argv[i + 1];
        if (key == "--shape")
            shapeName = value;
        else if (key == "--images")
            images = std::max(16, std::stoi(value));
        else if (key == "--batches")
            batchList = value;
        else {
            std::fprintf(stderr, "device_path_bench: unknown option %s\n", key.c_str());
            return 2;
        }
    }
    const Shape* shape = findShape(shapeName);
    if (!shape) {
        std::fprintf(stderr, "device_path_bench: unknown shape %s\n", shapeName.c_str());
        return 2;
    }
    setNumThreads(1); // one core: the read-ahead's cost per thread, and operators counted without a team
    auto model = loadShape(*shape);
    AnalysisOptions options;
    options.perturbations.push_back(*Perturbation::parse("gaussian:sigma=8"));
    options.analysesOnDevice = true;
    AnalysisRun run(model, options);

    // The read-ahead, on one thread.
    const fs::path dir = fs::temp_directory_path() / ("attnscope-device-path-bench-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::map<std::string, double> readAhead;
    for (const std::string suffix : { ".png", ".jpg" })
        readAhead[suffix.substr(1)] = readAheadMs(*model, run, writeImages(dir, suffix, images));
    fs::remove_all(dir);

    // The operators of one batch, by batch size.
    std::vector<int> batches;
    std::stringstream list(batchList);
    for (std::string item; std::getline(list, item, ',');)
        batches.push_back(std::max(1, std::stoi(item)));
    std::ostringstream perBatch;
    const char* sep = "";
    std::map<std::string, int64_t> topOfLargest;
    for (int b : batches) {
        const StreamBatch inputs = streamBatch(*model, b);
        auto staged = run.stage(inputs.images, inputs.indices);
        if (!staged) {
            std::fprintf(stderr, "device_path_bench: %s\n", staged.message().c_str());
            return 1;
        }
        AnalysisRun counted(model, options);
        if (auto warm = counted.addStaged(*staged); !warm) { // first use: lazily made tables
            std::fprintf(stderr, "device_path_bench: %s\n", warm.message().c_str());
            return 1;
        }
        {
            std::lock_guard<std::mutex> lock(g_mutex);
            g_counts = {};
        }
        auto handle = at::addGlobalCallback(at::RecordFunctionCallback(&onStart, &onEnd).needsInputs(true));
        const auto added = counted.addStaged(*staged);
        at::removeCallback(handle);
        if (!added) {
            std::fprintf(stderr, "device_path_bench: %s\n", added.message().c_str());
            return 1;
        }
        std::lock_guard<std::mutex> lock(g_mutex);
        perBatch << sep << "\"" << b << "\": {\"operators\": " << json(g_counts.operators) << ", \"transfers\": "
                 << json(g_counts.transfers) << ", \"syncs\": " << json(g_counts.syncs) << "}";
        sep = ", ";
        topOfLargest = g_counts.byName;
    }
    std::vector<std::pair<int64_t, std::string>> top;
    for (const auto& [name, n] : topOfLargest)
        top.emplace_back(-n, name);
    std::sort(top.begin(), top.end());
    std::ostringstream topJson;
    for (size_t i = 0; i < std::min<size_t>(12, top.size()); ++i)
        topJson << (i ? ", " : "") << "\"" << top[i].second << "\": " << -top[i].first;
    std::printf("{\"shape\": \"%s\", \"read_ahead_ms_per_image\": {\"png\": %.3f, \"jpeg\": %.3f}, \"read_ahead_threads\": 1, "
                "\"image_size\": 224, \"operators_per_batch\": {%s}, \"top_operators_at_largest_batch\": {%s}}\n",
                shape->name, readAhead["png"], readAhead["jpg"], perBatch.str().c_str(), topJson.str().c_str());
    return 0;
}
