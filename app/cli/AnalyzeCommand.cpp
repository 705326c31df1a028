#include "Commands.h"
#include "Figures.h"
#include "OutputFolder.h"
#include "Progress.h"

#include <attnscope/AnalysisRun.h>
#include <attnscope/Files.h>
#include <attnscope/Model.h>
#include <attnscope/Npy.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
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
        char prob[32];
        std::snprintf(prob, sizeof prob, "%.6g", p[size_t(c)] / sum);
        csv += csvField(image) + "," + std::to_string(r + 1) + "," + std::to_string(c) + ","
            + csvField(size_t(c) < labels.size() ? labels[size_t(c)] : std::to_string(c)) + "," + prob + "\n";
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

std::string modelName(const std::string& path)
{
    if (path.rfind("builtin:", 0) == 0)
        return path.substr(8);
    fs::path p(path);
    if (p.filename().empty())
        p = p.parent_path();
    return fs::is_directory(p) ? p.filename().string() : p.stem().string();
}

std::string formatNumber(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

struct PreparedRun {
    std::shared_ptr<const attnscope::Model> model;
    std::unique_ptr<attnscope::AnalysisRun> analysis;
    RunOutput output;
};

} // namespace

void AnalyzeCommand::addTo(CLI::App& app)
{
    app.add_option("--model", model, "model file, folder, description .json or builtin:NAME")->required();
    app.add_option("--compare", compare, "a second model, analysed side by side");
    app.add_option("--description", description, "model description (rename rules and architecture switches)");
    app.add_option("--images", images, "image files, folders (recursive) or list files")->required();
    app.add_option("--out", out, "output folder")->capture_default_str();
    app.add_option("--analyses", analyses, "similarity,attention,centres,snr,decomposition")->capture_default_str();
    app.add_option("--noise", noise, "perturbation for the SNR, e.g. gaussian:sigma=8 (several allowed)");
    app.add_option("--draws", draws, "perturbation draws per image")->capture_default_str();
    app.add_option("--seed", seed, "seed of the perturbations")->capture_default_str();
    app.add_option("--neutreno", neutreno, "also run with NeuTRENO lambda (side by side with the model as trained)");
    app.add_option("--boost", boost, "also run with Boost t (side by side with the model as trained)");
    app.add_option("--formats", formats, "figure formats: png,svg,pdf")->capture_default_str();
    app.add_option("--shard", shard, "K/N: analyse every N-th image from the K-th (1-based), for job arrays");
    app.add_option("--device", device, "auto, cpu, cuda or cuda:<i>")->capture_default_str();
    app.add_flag("--dump-tensors", dumpTensors, "write logits, attention maps and block outputs as .npy");
    app.add_option("--threads", threads, "CPU threads for the forward (0: the engine's default)");
}

int AnalyzeCommand::run() const
{
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    attnscope::setNumThreads(threads);

    // --- options
    auto names = attnscope::AnalysisOptions::parseList(analyses);
    if (!names)
        return fail(names.message());
    const auto wants = [&](const char* n) { return std::find(names->begin(), names->end(), n) != names->end(); };
    attnscope::AnalysisOptions base;
    base.similarity = wants("similarity");
    base.attention = wants("attention");
    base.centres = wants("centres");
    base.snr = wants("snr");
    base.decomposition = wants("decomposition");
    base.draws = draws;
    base.seed = seed;
    base.alsoRecord.attention = base.alsoRecord.blocks = dumpTensors;
    for (const auto& spec : noise.empty() && base.snr ? std::vector<std::string> { "gaussian:sigma=8" } : noise) {
        auto p = attnscope::Perturbation::parse(spec);
        if (!p)
            return fail(p.message());
        base.perturbations.push_back(*p);
    }
    int shardIndex = 1, shardCount = 1;
    if (!shard.empty() && (std::sscanf(shard.c_str(), "%d/%d", &shardIndex, &shardCount) != 2 || shardCount < 1
                           || shardIndex < 1 || shardIndex > shardCount))
        return fail("--shard " + shard + ": expected K/N with 1 <= K <= N");
    std::vector<std::string> figureFormats;
    if (auto f = parseFigureFormats(formats); f)
        figureFormats = *f;
    else
        return fail(f.message());

    // --- models and runs
    attnscope::LoadOptions loadOptions;
    loadOptions.device = device;
    loadOptions.descriptionPath = description;
    auto loaded = attnscope::Model::load(model, loadOptions);
    if (!loaded)
        return fail(loaded.message());
    const double loadSeconds = std::chrono::duration<double>(clock::now() - start).count();
    std::vector<PreparedRun> runs;
    const auto addRun = [&](std::shared_ptr<const attnscope::Model> m, const std::string& label, attnscope::AnalysisOptions o) {
        PreparedRun r;
        r.model = m;
        r.output.label = label;
        r.output.folder = runs.empty() ? "" : "runs/" + slugOf(label);
        const auto& i = m->info();
        r.output.model = { { "name", label }, { "path", i.path }, { "weights", i.weightsPath }, { "naming", i.naming },
                           { "family", i.family }, { "layers", i.config.depth }, { "heads", i.config.numHeads },
                           { "width", i.config.width }, { "patch_size", i.config.patchSize }, { "classes", i.config.numClasses },
                           { "attention", toString(i.config.attention) } };
        r.output.options = { { "neutreno_lambda", o.neutrenoLambda.value_or(i.config.neutrenoLambda) },
                             { "boost_t", o.boostT.value_or(i.config.boostT) }, { "seed", o.seed }, { "draws", o.draws } };
        std::string noises;
        for (const auto& p : o.perturbations)
            noises += (noises.empty() ? "" : " ") + p.spec();
        r.output.options["noise"] = o.snr ? noises : "";
        r.output.radius = o.radius;
        r.output.patchSize = i.config.patchSize;
        r.analysis = std::make_unique<attnscope::AnalysisRun>(m, o);
        runs.push_back(std::move(r));
    };
    const std::string name = modelName(model);
    {
        attnscope::AnalysisOptions plain = base;
        addRun(*loaded, name, plain);
    }
    if (neutreno || boost) {
        attnscope::AnalysisOptions variant = base;
        variant.alsoRecord = {};
        variant.neutrenoLambda = neutreno;
        variant.boostT = boost;
        std::string label = name + " (";
        if (neutreno)
            label += "NeuTRENO " + formatNumber(*neutreno);
        if (boost)
            label += std::string(neutreno ? ", " : "") + "Boost " + formatNumber(*boost);
        addRun(*loaded, label + ")", variant);
    }
    if (!compare.empty()) {
        attnscope::LoadOptions compareOptions;
        compareOptions.device = device;
        auto second = attnscope::Model::load(compare, compareOptions);
        if (!second)
            return fail(second.message());
        attnscope::AnalysisOptions other = base;
        other.alsoRecord = {};
        addRun(*second, modelName(compare) == name ? name + " (2)" : modelName(compare), other);
    }

    // --- images
    auto paths = attnscope::expandImagePaths(images);
    if (!paths)
        return fail(paths.message());
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec)
        return fail(out + ": cannot create output folder (" + ec.message() + ")");
    const auto stems = attnscope::uniqueImageStems(*paths);
    std::vector<size_t> mine;
    for (size_t i = 0; i < paths->size(); ++i)
        if (int(i % size_t(shardCount)) == shardIndex - 1)
            mine.push_back(i);

    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);
    const auto cancelled = [] { return g_interrupted.load(); };
    const attnscope::Model& primary = *runs.front().model;
    const bool classify = primary.config().numClasses > 0 && !primary.config().headIsProjection;
    std::string predictions = "image,rank,class,label,prob\n";
    nlohmann::json imageList = nlohmann::json::array();
    std::optional<attnscope::AttentionGrid> grid;
    std::optional<attnscope::LogitDecomposition> decomposition;
    Progress progress("analyze", int(mine.size()));
    int done = 0;
    for (size_t i : mine) {
        if (g_interrupted)
            break;
        const std::string& path = (*paths)[i];
        auto image = attnscope::decodeImage(path);
        if (!image)
            return fail(image.message());
        // A variant run shares its model (and so its preprocessing) with the first run: prepare once per model.
        std::map<const attnscope::Model*, attnscope::Model::Prepared> preparedBy;
        for (size_t r = 0; r < runs.size(); ++r) {
            auto& run = runs[r];
            auto cached = preparedBy.find(run.model.get());
            if (cached == preparedBy.end()) {
                auto p = run.model->prepare(*image);
                if (!p)
                    return fail(path + ": " + p.message());
                cached = preparedBy.emplace(run.model.get(), std::move(*p)).first;
            }
            const attnscope::Model::Prepared* prepared = &cached->second;
            attnscope::Trace trace;
            auto added = run.analysis->addImage(*prepared, int64_t(i), cancelled, r == 0 ? &trace : nullptr);
            if (!added) {
                if (g_interrupted)
                    break;
                return fail(path + ": " + added.message());
            }
            if (r != 0)
                continue;
            if (classify)
                appendPredictions(predictions, path, trace.logits, primary.info().labels);
            if (dumpTensors) {
                std::string error;
                if (!::dumpTensors((fs::path(out) / "tensors" / stems[i]).string(), trace, error))
                    return fail(error);
            }
            if (!grid && !trace.attention.empty() && !trace.attention.back().empty())
                grid = attentionGridOf(trace, prepared->shown, name, stems[i]);
            if (!decomposition && base.decomposition) {
                auto d = attnscope::decomposeLogits(primary, prepared->input);
                if (!d)
                    return fail(d.message());
                decomposition = *d;
            }
        }
        if (g_interrupted)
            break;
        auto sha = attnscope::sha256File(path);
        imageList.push_back({ { "index", i }, { "path", path }, { "sha256", sha ? *sha : "" }, { "stem", stems[i] } });
        progress.update(++done);
    }
    progress.finish();

    // --- outputs
    if (classify) {
        auto w = attnscope::writeTextFile((fs::path(out) / "predictions.csv").string(), predictions);
        if (!w)
            return fail(w.message());
    }
    std::vector<RunOutput> outputs;
    nlohmann::json runList = nlohmann::json::array();
    for (auto& run : runs) {
        run.output.stats = run.analysis->statistics();
        run.output.images = run.analysis->images();
        if (const std::string error = writeRunOutput(out, run.output); !error.empty())
            return fail(error);
        runList.push_back({ { "label", run.output.label }, { "folder", run.output.folder }, { "model", run.output.model },
                            { "options", run.output.options } });
        outputs.push_back(run.output);
    }
    const std::string figureError = writeFigures(out, outputs, grid ? &*grid : nullptr, decomposition ? &*decomposition : nullptr,
                                                 figureFormats);
    if (!figureError.empty())
        return fail(figureError);
    const auto& info = primary.info();
    auto weightsSha = attnscope::sha256File(info.weightsPath);
    nlohmann::json manifest = {
        { "tool", "attnscope" }, { "version", attnscope::version() },
        { "model", { { "path", info.path }, { "weights", info.weightsPath }, { "sha256", weightsSha ? *weightsSha : "" },
                     { "naming", info.naming }, { "family", info.family }, { "config_source", info.configSource },
                     { "layers", info.config.depth }, { "heads", info.config.numHeads }, { "width", info.config.width },
                     { "patch_size", info.config.patchSize }, { "classes", info.config.numClasses },
                     { "attention", toString(info.config.attention) },
                     { "trained_neutreno_lambda", info.config.neutrenoLambda }, { "trained_boost_t", info.config.boostT } } },
        { "runs", runList },
        { "images", imageList },
        { "options", { { "analyses", analyses }, { "noise", runs.front().output.options["noise"] }, { "draws", draws },
                       { "seed", seed }, { "device", info.device }, { "dump_tensors", dumpTensors }, { "threads", threads },
                       { "description", description }, { "compare", compare }, { "formats", formats },
                       { "neutreno_lambda", neutreno ? nlohmann::json(*neutreno) : nlohmann::json() },
                       { "boost_t", boost ? nlohmann::json(*boost) : nlohmann::json() } } },
        { "shard", { { "index", shardIndex }, { "count", shardCount }, { "images_total", paths->size() } } },
        { "complete", !g_interrupted.load() },
        { "timings", { { "load_seconds", loadSeconds },
                       { "total_seconds", std::chrono::duration<double>(clock::now() - start).count() } } },
    };
    auto w = attnscope::writeTextFile((fs::path(out) / "manifest.json").string(), manifest.dump(2) + "\n");
    if (!w)
        return fail(w.message());
    if (g_interrupted) {
        std::fprintf(stderr, "attnscope-cli: interrupted after %d of %zu images; results so far in %s\n", done, mine.size(), out.c_str());
        return 130;
    }
    std::fprintf(stderr, "attnscope-cli: %d images analysed; results in %s\n", done, out.c_str());
    return 0;
}
