// The dataset run of `make bench`: AnalysisRun (all analyses, Gaussian SNR) over a stream of N distinct images,
// as `attnscope-cli analyze` drives it, reporting images/s and the peak RSS (VmHWM) after 100 images and at the
// end. Prints one JSON object. --analyses names them as analyze does ("ablation": head ablation alone), or "forward":
// none, the clean forward of each image only (what the ablation's cost is measured against).
//   dataset_bench [--shape deit_tiny] [--images 1000] [--batch 1] [--threads 0] [--analyses similarity,attention,centres,snr]
#include "BenchModels.h"

#include <attnscope/AnalysisRun.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

using namespace attnscope;
using namespace attnscope::bench;

int main(int argc, char** argv)
{
    std::string shapeName = "deit_tiny";
    int images = 1000, batch = 1, threads = 0;
    std::string analyses = "similarity,attention,centres,snr";
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string key = argv[i], value = argv[i + 1];
        if (key == "--shape")
            shapeName = value;
        else if (key == "--images")
            images = std::stoi(value);
        else if (key == "--batch")
            batch = std::max(1, std::stoi(value));
        else if (key == "--threads")
            threads = std::stoi(value);
        else if (key == "--analyses")
            analyses = value;
        else {
            std::fprintf(stderr, "dataset_bench: unknown option %s\n", key.c_str());
            return 2;
        }
    }
    setNumThreads(threads);
    const Shape* shape = findShape(shapeName);
    if (!shape) {
        std::fprintf(stderr, "dataset_bench: unknown shape %s\n", shapeName.c_str());
        return 2;
    }
    auto model = loadShape(*shape);
    AnalysisOptions options;
    auto names = analyses == "forward" ? Result<std::vector<std::string>>(std::vector<std::string> {}) : AnalysisOptions::parseList(analyses);
    if (!names) {
        std::fprintf(stderr, "dataset_bench: %s\n", names.message().c_str());
        return 2;
    }
    const auto wants = [&](const char* n) { return std::find(names->begin(), names->end(), n) != names->end(); };
    options.similarity = wants("similarity");
    options.attention = wants("attention");
    options.centres = wants("centres");
    options.snr = wants("snr");
    options.ablation = wants("ablation");
    if (options.snr)
        options.perturbations.push_back(*Perturbation::parse("gaussian:sigma=8"));
    AnalysisRun run(model, options);
    const double rssLoaded = peakRssMb();
    double rssAt100 = 0;
    const auto start = std::chrono::steady_clock::now();
    std::vector<Model::Prepared> prepared;
    std::vector<int64_t> indices;
    for (int i = 0; i < images; ++i) {
        auto p = model->prepare(streamImage(i)); // a fresh decode-sized image each time, as from a folder
        if (!p) {
            std::fprintf(stderr, "dataset_bench: %s\n", p.message().c_str());
            return 1;
        }
        prepared.push_back(std::move(*p));
        indices.push_back(i);
        if (int(prepared.size()) == batch || i + 1 == images) {
            std::vector<const Model::Prepared*> ptrs;
            for (const auto& q : prepared)
                ptrs.push_back(&q);
#ifdef ATTNSCOPE_BENCH_BASELINE // the engine before AnalysisRun::addImages
            auto added = run.addImage(*ptrs.front(), indices.front());
#else
            auto added = run.addImages(ptrs, indices);
#endif
            if (!added) {
                std::fprintf(stderr, "dataset_bench: %s\n", added.message().c_str());
                return 1;
            }
            prepared.clear();
            indices.clear();
        }
        if (i + 1 == std::min(100, images))
            rssAt100 = peakRssMb();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rssEnd = peakRssMb();
    const auto summary = summarise(run.statistics(), run.images(), options.radius);
    std::printf("{\"shape\": \"%s\", \"analyses\": \"%s\", \"images\": %d, \"batch\": %d, \"seconds\": %.3f, \"images_per_s\": %.3f, "
                "\"rss_mb_loaded\": %.1f, \"rss_mb_at_100\": %.1f, \"rss_mb_at_end\": %.1f, \"snr_rows\": %zu, "
                "\"intra_op_threads\": %d, \"inter_op_threads\": %d}\n",
                shape->name, analyses.c_str(), images, batch, seconds, images / seconds, rssLoaded, rssAt100, rssEnd, summary.snr.size(),
                threadSetup().intraOp, threadSetup().interOp);
    return 0;
}
