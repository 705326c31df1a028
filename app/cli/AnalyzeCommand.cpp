#include "Commands.h"
#include "Progress.h"

#include <attnscope/Files.h>
#include <attnscope/Model.h>
#include <attnscope/Npy.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <numeric>

namespace fs = std::filesystem;

namespace {

std::atomic<bool> g_interrupted { false };

extern "C" void onInterrupt(int) { g_interrupted = true; }

std::string csvField(const std::string& s)
{
    if (s.find_first_of(",\"\n") == std::string::npos)
        return s;
    std::string q = "\"";
    for (char c : s)
        q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

std::string formatFloat(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

// Top-5 classes by softmax probability.
void appendPredictions(std::string& csv, const std::string& image, const attnscope::Tensor& logits,
                       const std::vector<std::string>& labels)
{
    const int64_t k = logits.numel();
    const float* z = logits.data();
    const float zmax = *std::max_element(z, z + k);
    std::vector<double> p(static_cast<size_t>(k));
    double sum = 0;
    for (int64_t i = 0; i < k; ++i)
        sum += p[size_t(i)] = std::exp(double(z[i]) - zmax);
    std::vector<int> order(static_cast<size_t>(k));
    std::iota(order.begin(), order.end(), 0);
    const int top = int(std::min<int64_t>(5, k));
    std::partial_sort(order.begin(), order.begin() + top, order.end(), [&](int a, int b) { return p[size_t(a)] > p[size_t(b)]; });
    for (int r = 0; r < top; ++r) {
        const int c = order[size_t(r)];
        csv += csvField(image) + "," + std::to_string(r + 1) + "," + std::to_string(c) + ","
            + csvField(size_t(c) < labels.size() ? labels[size_t(c)] : std::to_string(c)) + "," + formatFloat(p[size_t(c)] / sum) + "\n";
    }
}

bool dumpTensors(const std::string& dir, const attnscope::Trace& t, std::string& error)
{
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
        error = dir + ": cannot create (" + ec.message() + ")";
        return false;
    }
    const auto write = [&](const std::string& name, const attnscope::Tensor& tensor) {
        auto r = attnscope::writeNpy((fs::path(dir) / name).string(), tensor);
        if (!r)
            error = r.message();
        return bool(r);
    };
    if (!write("logits.npy", t.logits))
        return false;
    for (int l = 1; l <= t.depth; ++l)
        if (!write("attn_L" + std::to_string(l) + ".npy", t.attention[size_t(l)]))
            return false;
    for (int l = 0; l <= t.depth; ++l)
        if (!write("block_L" + std::to_string(l) + ".npy", t.blocks[size_t(l)]))
            return false;
    return true;
}

} // namespace

void AnalyzeCommand::addTo(CLI::App& app)
{
    app.add_option("--model", model, "model file, folder, description .json or builtin:NAME")->required();
    app.add_option("--description", description, "model description (rename rules and architecture switches)");
    app.add_option("--images", images, "image files, folders (recursive) or list files")->required();
    app.add_option("--out", out, "output folder")->capture_default_str();
    app.add_option("--device", device, "auto, cpu, cuda or cuda:<i>")->capture_default_str();
    app.add_flag("--dump-tensors", dumpTensors, "write logits, attention maps and block outputs as .npy");
    app.add_option("--threads", threads, "CPU threads for the forward (0: the engine's default)");
    app.add_option("--neutreno", neutreno, "NeuTRENO lambda at inference (default: what the model was trained with)");
    app.add_option("--boost", boost, "Boost t at inference (default: what the model was trained with)");
}

int AnalyzeCommand::run() const
{
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    attnscope::setNumThreads(threads);
    attnscope::LoadOptions options;
    options.device = device;
    options.descriptionPath = description;
    auto loaded = attnscope::Model::load(model, options);
    if (!loaded)
        return fail(loaded.message());
    const attnscope::Model& m = **loaded;
    const double loadSeconds = std::chrono::duration<double>(clock::now() - start).count();

    auto paths = attnscope::expandImagePaths(images);
    if (!paths)
        return fail(paths.message());
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec)
        return fail(out + ": cannot create output folder (" + ec.message() + ")");
    const auto stems = attnscope::uniqueImageStems(*paths);

    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);
    attnscope::RunOptions run;
    run.record.attention = dumpTensors;
    run.record.blocks = dumpTensors;
    run.isCancelled = [] { return g_interrupted.load(); };
    run.neutrenoLambda = neutreno;
    run.boostT = boost;

    const bool classify = m.config().numClasses > 0 && !m.config().headIsProjection;
    std::string predictions = "image,rank,class,label,prob\n";
    nlohmann::json imageList = nlohmann::json::array();
    Progress progress("analyze", int(paths->size()));
    int done = 0;
    for (size_t i = 0; i < paths->size() && !g_interrupted; ++i) {
        const std::string& path = (*paths)[i];
        auto image = attnscope::decodeImage(path);
        if (!image)
            return fail(image.message());
        auto prepared = m.prepare(*image);
        if (!prepared)
            return fail(path + ": " + prepared.message());
        auto trace = m.run(prepared->input, run);
        if (!trace) {
            if (g_interrupted)
                break;
            return fail(path + ": " + trace.message());
        }
        if (classify)
            appendPredictions(predictions, path, trace->logits, m.info().labels);
        if (dumpTensors) {
            std::string error;
            if (!::dumpTensors((fs::path(out) / "tensors" / stems[i]).string(), *trace, error))
                return fail(error);
        }
        auto sha = attnscope::sha256File(path);
        imageList.push_back({ { "path", path }, { "sha256", sha ? *sha : "" }, { "stem", stems[i] } });
        progress.update(++done);
    }
    progress.finish();

    if (classify) {
        auto w = attnscope::writeTextFile((fs::path(out) / "predictions.csv").string(), predictions);
        if (!w)
            return fail(w.message());
    }
    const auto& info = m.info();
    auto weightsSha = attnscope::sha256File(info.weightsPath);
    nlohmann::json manifest = {
        { "tool", "attnscope" }, { "version", attnscope::version() },
        { "model", { { "path", info.path }, { "weights", info.weightsPath }, { "sha256", weightsSha ? *weightsSha : "" },
                     { "naming", info.naming }, { "family", info.family }, { "config_source", info.configSource },
                     { "layers", info.config.depth }, { "heads", info.config.numHeads }, { "width", info.config.width },
                     { "patch_size", info.config.patchSize }, { "classes", info.config.numClasses },
                     { "attention", toString(info.config.attention) },
                     { "trained_neutreno_lambda", info.config.neutrenoLambda }, { "trained_boost_t", info.config.boostT } } },
        { "images", imageList },
        { "options", { { "device", info.device }, { "dump_tensors", dumpTensors }, { "threads", threads },
                       { "description", description },
                       { "neutreno_lambda", neutreno.value_or(info.config.neutrenoLambda) },
                       { "boost_t", boost.value_or(info.config.boostT) } } },
        { "complete", !g_interrupted.load() },
        { "timings", { { "load_seconds", loadSeconds },
                       { "total_seconds", std::chrono::duration<double>(clock::now() - start).count() } } },
    };
    auto w = attnscope::writeTextFile((fs::path(out) / "manifest.json").string(), manifest.dump(2) + "\n");
    if (!w)
        return fail(w.message());
    if (g_interrupted) {
        std::fprintf(stderr, "attnscope-cli: interrupted after %d of %zu images; results so far in %s\n", done, paths->size(), out.c_str());
        return 130;
    }
    std::fprintf(stderr, "attnscope-cli: %d images analysed; results in %s\n", done, out.c_str());
    return 0;
}
