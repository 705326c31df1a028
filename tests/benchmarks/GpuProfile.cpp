// Where one batch's time goes on the device path (issue 33, item 2): AnalysisRun::enqueue and finish with the analyses on
// the model's device, two batches in flight as the report runs them (--in-flight 1: one at a time, addStaged), (ViT-S/16, random weights; similarity, centres, SNR with one Gaussian copy: gpu_bench's analyses)
// under LibTorch's own profiler, Kineto, with its CUDA activities on a GPU. After two warm-up batches, `--batches`
// batches are profiled and the program prints, per batch:
//
// - the device's kernels (and copies, fills): how many, their time, the top by total time;
// - kernel launches (cudaLaunchKernel and its kin) and host synchronisations (cudaStreamSynchronize,
//   cudaDeviceSynchronize, cudaEventSynchronize, a blocking cudaMemcpy) the host made;
// - the device's busy share of the profiled span and its idle gaps (between one kernel's end and the next's start);
// - the engine's phases (attnscope::forward, attnscope::analyses and the analyses inside it) on the host's clock.
//
// On a CPU there are no device activities: it prints the host's operators by time, which tests the program here.
// One JSON object on stdout (--json), or the table (default). Built with LibTorch 2.x only (its profiler API).
//
// --cuda-graph: each batch replayed from a CUDA graph (AnalysisOptions::cudaGraph; the warm-up captures it).
//
//   gpu_profile [--shape vit_small] [--batch 64] [--batches 3] [--in-flight 2] [--cuda-graph] [--top 15] [--json]
//               [--trace FILE.json]
#include "BenchModels.h"

#include <attnscope/AnalysisRun.h>

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

using namespace attnscope;
using namespace attnscope::bench;
namespace prof = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;

namespace {

struct Interval {
    uint64_t start, end;
};

struct Totals {
    int64_t count = 0;
    double us = 0;
};

bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool isLaunch(const std::string& n)
{
    return startsWith(n, "cudaLaunchKernel") || startsWith(n, "cuLaunchKernel") || startsWith(n, "cudaLaunchCooperativeKernel")
        || startsWith(n, "cudaGraphLaunch");
}

bool isSync(const std::string& n)
{
    return n == "cudaStreamSynchronize" || n == "cudaDeviceSynchronize" || n == "cudaEventSynchronize" || n == "cudaMemcpy";
}

std::vector<std::pair<std::string, Totals>> top(const std::map<std::string, Totals>& by, size_t n)
{
    std::vector<std::pair<std::string, Totals>> v(by.begin(), by.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.us > b.second.us; });
    if (v.size() > n)
        v.resize(n);
    return v;
}

std::string quoted(const std::string& s)
{
    std::string out = "\"";
    for (char c : s)
        out += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
    return out + "\"";
}

} // namespace

int main(int argc, char** argv)
{
    std::string shapeName = "vit_small", trace;
    int batch = 64, batches = 3, inFlight = 2;
    size_t topCount = 15;
    bool json = false, cudaGraph = false;
    for (int i = 1; i < argc; ++i) {
        const std::string key = argv[i];
        const auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
        if (key == "--shape")
            shapeName = value();
        else if (key == "--batch")
            batch = std::max(1, std::stoi(value()));
        else if (key == "--batches")
            batches = std::max(1, std::stoi(value()));
        else if (key == "--in-flight")
            inFlight = std::clamp(std::stoi(value()), 1, 2);
        else if (key == "--top")
            topCount = size_t(std::max(1, std::stoi(value())));
        else if (key == "--trace")
            trace = value();
        else if (key == "--cuda-graph")
            cudaGraph = true;
        else if (key == "--json")
            json = true;
        else {
            std::fprintf(stderr, "gpu_profile: unknown option %s\n", key.c_str());
            return 2;
        }
    }
    const Shape* shape = findShape(shapeName);
    if (!shape) {
        std::fprintf(stderr, "gpu_profile: unknown shape %s\n", shapeName.c_str());
        return 2;
    }
    auto model = loadShape(*shape); // on the GPU where there is one (LoadOptions' "auto")
    const bool cuda = model->info().device != "cpu";
    AnalysisOptions options;
    options.perturbations.push_back(*Perturbation::parse("gaussian:sigma=8"));
    options.analysesOnDevice = true;
    options.cudaGraph = cudaGraph;
    AnalysisRun run(model, options);
    const StreamBatch inputs = streamBatch(*model, batch);
    auto staged = run.stage(inputs.images, inputs.indices);
    if (!staged) {
        std::fprintf(stderr, "gpu_profile: %s\n", staged.message().c_str());
        return 1;
    }
    const auto check = [](const Status& s) {
        if (!s) {
            std::fprintf(stderr, "gpu_profile: %s\n", s.message().c_str());
            std::exit(1);
        }
    };
    // With two in flight, batch k + 1 is queued before batch k is waited for (Report.cpp's loop).
    std::optional<PendingBatch> pending;
    const auto addBatch = [&] {
        auto queued = run.enqueue(*staged);
        check(queued ? Status(Done {}) : Status(queued.error()));
        if (inFlight == 1) {
            check(run.finish(*queued));
            return;
        }
        if (pending)
            check(run.finish(*pending));
        pending = std::move(*queued);
    };
    const auto drain = [&] {
        if (pending)
            check(run.finish(*pending));
        pending.reset();
    };
    for (int i = 0; i < 2; ++i) // warm-up: the kernels' first launches, the allocator, the centres' tables
        addBatch();
    drain();
    if (cuda)
        torch::cuda::synchronize();

    const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
    std::set<ActivityType> activities { ActivityType::CPU };
    if (cuda)
        activities.insert(ActivityType::CUDA);
    prof::prepareProfiler(config, activities);
    prof::enableProfiler(config, activities);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < batches; ++i)
        addBatch();
    drain();
    if (cuda)
        torch::cuda::synchronize();
    const double wallUs = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    const auto result = prof::disableProfiler();
    if (!trace.empty())
        result->save(trace); // chrome://tracing or Perfetto

    std::map<std::string, Totals> kernels, hostOps, phases;
    std::vector<Interval> device;
    int64_t launches = 0, syncs = 0;
    for (const auto& e : result->events()) {
        const std::string name = e.name();
        const double us = double(e.durationNs()) / 1e3;
        if (e.deviceType() != c10::DeviceType::CPU) { // a kernel, copy or fill on the device
            kernels[name].count++;
            kernels[name].us += us;
            device.push_back({ e.startNs(), e.endNs() });
        } else if (startsWith(name, "attnscope::")) {
            phases[name].count++;
            phases[name].us += us;
        } else if (isLaunch(name)) {
            ++launches;
        } else if (isSync(name)) {
            ++syncs;
        } else if (name.find("::") != std::string::npos) { // aten::, mkldnn::, ...
            hostOps[name].count++;
            hostOps[name].us += us;
        }
    }
    // The device's busy time: the union of its intervals; idle gaps between them.
    std::sort(device.begin(), device.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
    double busyUs = 0;
    std::vector<double> gaps;
    uint64_t spanStart = device.empty() ? 0 : device.front().start, reach = spanStart;
    for (const auto& iv : device) {
        if (iv.start > reach && reach > spanStart)
            gaps.push_back(double(iv.start - reach) / 1e3);
        if (iv.end > reach) {
            busyUs += double(iv.end - std::max(iv.start, reach)) / 1e3;
            reach = iv.end;
        }
    }
    std::sort(gaps.rbegin(), gaps.rend());
    const double spanUs = device.empty() ? 0 : double(reach - spanStart) / 1e3;
    double idleUs = 0;
    int64_t gapsOver50 = 0;
    for (double g : gaps) {
        idleUs += g;
        gapsOver50 += g > 50;
    }
    const double per = double(batches);
    int64_t kernelCount = 0;
    double kernelUs = 0;
    for (const auto& [name, t] : kernels) {
        kernelCount += t.count;
        kernelUs += t.us;
    }

    // With --cuda-graph: how many batches replayed from a graph (the warm-up's second captures it), or why none did.
    const std::string graphs = !cudaGraph ? std::string()
        : run.cudaGraphNote().empty() ? ", " + std::to_string(run.cudaGraphReplays()) + " batches replayed from a CUDA graph"
                                      : ", " + run.cudaGraphNote();
    if (json) {
        std::printf("{\"shape\": \"%s\", \"batch\": %d, \"batches\": %d, \"in_flight\": %d, \"cuda_graph_replays\": %d, \"device\": %s, \"wall_ms_per_batch\": %.3f, "
                    "\"device_events_per_batch\": %.1f, \"device_busy_ms_per_batch\": %.3f, \"busy_share_of_wall\": %.4f, "
                    "\"launches_per_batch\": %.1f, \"syncs_per_batch\": %.1f, \"idle_gaps_per_batch\": %.1f, "
                    "\"idle_gaps_over_50us_per_batch\": %.1f, \"idle_ms_per_batch\": %.3f, \"top\": [",
                    shape->name, batch, batches, inFlight, run.cudaGraphReplays(), quoted(model->info().device).c_str(), wallUs / per / 1e3, double(kernelCount) / per,
                    busyUs / per / 1e3, wallUs > 0 ? busyUs / wallUs : 0.0, double(launches) / per, double(syncs) / per,
                    double(gaps.size()) / per, double(gapsOver50) / per, idleUs / per / 1e3);
        const char* sep = "";
        for (const auto& [name, t] : top(cuda ? kernels : hostOps, topCount)) {
            std::printf("%s{\"name\": %s, \"per_batch\": %.1f, \"ms_per_batch\": %.3f}", sep, quoted(name).c_str(),
                        double(t.count) / per, t.us / per / 1e3);
            sep = ", ";
        }
        std::printf("], \"phases\": {");
        sep = "";
        for (const auto& [name, t] : phases) {
            std::printf("%s%s: %.3f", sep, quoted(name).c_str(), t.us / per / 1e3);
            sep = ", ";
        }
        std::printf("}}\n");
        return 0;
    }
    std::printf("gpu_profile: %s, batch %d, %d batches profiled after 2 warm-up, %d in flight, device %s%s; per batch:\n",
                shape->name, batch, batches, inFlight, model->info().device.c_str(), graphs.c_str());
    std::printf("  wall %.2f ms (%.0f images/s); the engine's phases on the host's clock:", wallUs / per / 1e3,
                1e6 * batch * per / wallUs);
    for (const auto& [name, t] : phases)
        std::printf(" %s %.2f ms;", name.c_str() + 11, t.us / per / 1e3);
    std::printf("\n");
    if (cuda) {
        std::printf("  device: %.0f kernels/copies/fills, busy %.2f ms = %.0f%% of the wall (%.0f%% of its own span);"
                    " idle gaps %.0f (%.0f over 50 us), %.2f ms in all, the largest %.3f ms\n",
                    double(kernelCount) / per, busyUs / per / 1e3, 100 * busyUs / wallUs,
                    spanUs > 0 ? 100 * busyUs / spanUs : 0.0, double(gaps.size()) / per, double(gapsOver50) / per,
                    idleUs / per / 1e3, gaps.empty() ? 0.0 : gaps.front() / 1e3);
        std::printf("  host: %.0f kernel launches, %.0f synchronisations\n", double(launches) / per, double(syncs) / per);
    }
    std::printf("  top %zu %s (count per batch, ms per batch):\n", topCount,
                cuda ? "device kernels by time" : "host operators by time, each with the operators it calls");
    for (const auto& [name, t] : top(cuda ? kernels : hostOps, topCount))
        std::printf("    %8.3f ms %6.1f x  %s\n", t.us / per / 1e3, double(t.count) / per, name.substr(0, 110).c_str());
    return 0;
}
