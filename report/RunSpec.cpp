#include "RunSpec.h"

#include "Figures.h"
#include "QueryKeyReport.h"

#include <attnscope/Files.h>
#include <attnscope/Perturbation.h>

#include <algorithm>
#include <cmath>
#include <limits>

using attnscope::Error;

namespace {

// Every option of a dataset run, once. The CLI's flags and help, Python's keywords, the manifest's keys and the resume
// identity come from here (RunSpec.h).
const std::vector<RunOption> kOptions {
    { "analyses", "analyses", "analyses", true, "similarity,attention,centres,snr,decomposition,relevance,norms,ablation,qkmap", &RunSpec::analyses },
    { "noise", "noise", "noise", true,
      "perturbation for the SNR (several allowed): gaussian:sigma=S, saltpepper:fraction=F, blur:sigma=S, jpeg:quality=Q, "
      "fgsm:eps=E, pgd:eps=E[,steps=T] (S and E in 0..255 pixel units)",
      &RunSpec::noise },
    { "draws", "draws", "draws", true, "perturbation draws per image", &RunSpec::draws },
    { "seed", "seed", "seed", true, "seed of the perturbations", &RunSpec::seed },
    { "neutreno", "neutreno", "neutreno_lambda", true, "also run with NeuTRENO lambda (side by side with the model as trained)", &RunSpec::neutreno },
    { "boost", "boost", "boost_t", true, "also run with Boost t (side by side with the model as trained)", &RunSpec::boost },
    { "batch", "batch", "batch", true, "images per forward (0: 64 on a GPU, enough for the CPU's threads on a CPU)", &RunSpec::batch },
    { "precision", "precision", "precision", true, "fp32 (TF32 off: the reference numbers), tf32 (CUDA) or bf16", &RunSpec::precision },
    { "analyses-on", "analyses_on", "analyses_on", true,
      "where the analyses run: device (batched tensor operations where the forward ran), host (float64 loops per image) or "
      "auto (the device on a GPU, the host on a CPU)",
      &RunSpec::analysesOn },
    { "cuda-graph", "cuda_graph", "cuda_graph", false,
      "on a GPU: capture each batch shape's forward and analyses once as a CUDA graph and replay it (the same numbers, far "
      "fewer launches)",
      &RunSpec::cudaGraph },
    { "grid-images", "grid_images", "grid_images", false, "attention grids (layers x heads) of the first N images (0: none)", &RunSpec::gridImages },
    { "query", "query", "query", false, "the grids' query: cls (the CLS token, or the centre patch without one) or ROW,COL (a patch, from 0)",
      &RunSpec::query },
    { "rollout", "rollout", "rollout", false, "head fusion of the grids' rollout: mean (Abnar & Zuidema), max or min", &RunSpec::rollout },
    { "discard", "discard", "discard", false, "share of each layer's fused attention the rollout discards first, lowest first (0 to <1)",
      &RunSpec::discard },
    { "class", "target_class", "class", false, "relevance: the class explained (-1: each image's predicted class)", &RunSpec::targetClass },
    { "gradcam-layer", "gradcam_layer", "gradcam_layer", false, "relevance: the block output X_l Grad-CAM reads (-1: X_{L-1})",
      &RunSpec::gradCamLayer },
    { "outlier-ratio", "outlier_ratio", "outlier_ratio", true,
      "norms: a patch token whose norm exceeds this times the median patch norm of its layer is a high-norm outlier", &RunSpec::outlierRatio },
    { "ablation", "ablation", "ablation", true, "ablation: what an ablated head's output becomes, zero or mean (of its rows over the tokens)",
      &RunSpec::ablation },
    // Recorded under the manifest's "query_key", with what the maps found.
    { "qk-layer", "qk_layer", "", false, "qkmap: the layer whose heads are mapped (0: every layer)", &RunSpec::qkLayer },
    { "qk-head", "qk_head", "", false, "qkmap: the head mapped (-1: every head)", &RunSpec::qkHead },
    { "qk-images", "qk_images", "", false, "qkmap: the first N images, every token of each", &RunSpec::qkImages },
    { "qk-method", "qk_method", "", false, "qkmap: pca (exact, signs fixed) or tsne (exact, perplexity 30, seeded with --seed)", &RunSpec::qkMethod },
    { "dump-tensors", "dump_tensors", "dump_tensors", true, "write logits, attention maps and block outputs as .npy", &RunSpec::dumpTensors },
    // How the run goes, not what it computes: not recorded.
    { "strict", "strict", "", false, "stop at the first image that cannot be read (default: skip it, list it, exit with 3)", &RunSpec::strict },
    { "fresh", "fresh", "", false, "start again, discarding what an unfinished run left in --out (default: resume it)", &RunSpec::fresh },
    { "checkpoint-seconds", "checkpoint_seconds", "", false, "seconds between the checkpoints a rerun resumes from", &RunSpec::checkpointSeconds },
};

} // namespace

const std::vector<RunOption>& runOptions() { return kOptions; }

const RunOption* runOptionNamed(const std::string& cliName)
{
    for (const RunOption& o : kOptions)
        if (cliName == o.cli)
            return &o;
    return nullptr;
}

nlohmann::json runSpecToJson(const RunSpec& spec)
{
    nlohmann::json out = nlohmann::json::object();
    for (const RunOption& o : kOptions)
        std::visit(
            [&](auto member) {
                const auto& v = spec.*member;
                if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::optional<double>>)
                    out[o.python] = v ? nlohmann::json(*v) : nlohmann::json();
                else
                    out[o.python] = v;
            },
            o.field);
    return out;
}

attnscope::Result<RunSpec> runSpecFromJson(const nlohmann::json& value)
{
    if (!value.is_object())
        return Error { "the run's options are " + value.dump().substr(0, 40) + ", not an object" };
    RunSpec spec;
    for (const auto& [key, v] : value.items()) {
        const auto o = std::find_if(kOptions.begin(), kOptions.end(), [&](const RunOption& o) { return key == o.python; });
        if (o == kOptions.end())
            return Error { "no run option \"" + key.substr(0, 60) + "\"" };
        std::string wrong;
        std::visit(
            [&](auto member) {
                auto& field = spec.*member;
                using T = std::decay_t<decltype(field)>;
                if constexpr (std::is_same_v<T, std::optional<double>>) {
                    if (v.is_null())
                        field = std::nullopt;
                    else if (v.is_number())
                        field = v.get<double>();
                    else
                        wrong = "a number or null";
                } else if constexpr (std::is_same_v<T, bool>) {
                    v.is_boolean() ? void(field = v.get<bool>()) : void(wrong = "true or false");
                } else if constexpr (std::is_same_v<T, std::string>) {
                    v.is_string() ? void(field = v.get<std::string>()) : void(wrong = "a string");
                } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
                    const bool ok = v.is_array() && std::all_of(v.begin(), v.end(), [](const auto& e) { return e.is_string(); });
                    ok ? void(field = v.get<std::vector<std::string>>()) : void(wrong = "a list of strings");
                } else if constexpr (std::is_floating_point_v<T>) {
                    v.is_number() ? void(field = v.get<double>()) : void(wrong = "a number");
                } else if constexpr (std::is_same_v<T, uint64_t>) {
                    v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0) ? void(field = v.get<uint64_t>())
                                                                                                : void(wrong = "a non-negative integer");
                } else {
                    const bool ok = v.is_number_integer() && v.get<int64_t>() >= std::numeric_limits<int>::min()
                        && v.get<int64_t>() <= std::numeric_limits<int>::max();
                    ok ? void(field = v.get<int>()) : void(wrong = "an integer");
                }
            },
            o->field);
        if (!wrong.empty())
            return Error { "the run option \"" + key + "\" is " + v.dump().substr(0, 40) + ", not " + wrong };
    }
    return spec;
}

attnscope::Status applyRunSpec(const RunSpec& a, const OptionSpelling& spell, ReportRequest& request)
{
    auto names = attnscope::AnalysisOptions::parseList(a.analyses);
    if (!names)
        return names.error();
    const auto wants = [&](const char* n) { return std::find(names->begin(), names->end(), n) != names->end(); };
    attnscope::AnalysisOptions base;
    base.similarity = wants("similarity");
    base.attention = wants("attention");
    base.centres = wants("centres");
    base.snr = wants("snr");
    base.decomposition = wants("decomposition");
    base.relevance = wants("relevance");
    base.norms = wants("norms");
    base.ablation = wants("ablation");
    auto ablation = attnscope::parseAblationMode(a.ablation);
    if (!ablation)
        return Error { spell("ablation") + ": " + ablation.message() };
    base.ablationMode = *ablation;
    // The query-key maps' options are checked whether or not the analysis runs, and given without it they are a mistake.
    auto qkMethod = attnscope::parseQueryKeyMethod(a.qkMethod);
    if (!qkMethod)
        return Error { spell("qk-method") + ": " + qkMethod.message() };
    if (a.qkImages < 1)
        return Error { spell("qk-images") + " " + std::to_string(a.qkImages) + ": expected 1 or more" };
    const RunSpec plain;
    if (!wants("qkmap") && (a.qkLayer != plain.qkLayer || a.qkHead != plain.qkHead || a.qkImages != plain.qkImages || a.qkMethod != plain.qkMethod))
        return Error { spell("qk-layer") + ", " + spell("qk-head") + ", " + spell("qk-images") + " and " + spell("qk-method")
                       + " are options of the qkmap analysis, which the analyses do not include" };
    request.queryKey.enabled = wants("qkmap");
    request.queryKey.layer = a.qkLayer;
    request.queryKey.head = a.qkHead;
    request.queryKey.images = a.qkImages;
    request.queryKey.options.method = *qkMethod;
    request.queryKey.options.seed = a.seed;
    if (request.model) {
        auto heads = queryKeyHeads(request.queryKey, request.model->config(), spell("qk-layer"), spell("qk-head"));
        if (!heads)
            return heads.error();
    }
    if (!(a.outlierRatio > 1.0) || !std::isfinite(a.outlierRatio))
        return Error { spell("outlier-ratio") + " " + attnscope::csvNumber(a.outlierRatio) + ": expected a number above 1" };
    base.outlierRatio = a.outlierRatio;
    if (a.draws < 1)
        return Error { spell("draws") + " " + std::to_string(a.draws) + ": expected 1 or more" };
    base.draws = a.draws;
    if (a.batch < 0)
        return Error { spell("batch") + " " + std::to_string(a.batch) + ": expected 0 (the device's default) or a positive count" };
    auto precision = attnscope::parsePrecision(a.precision);
    if (!precision)
        return Error { spell("precision") + ": " + precision.message() };
    base.precision = *precision;
    if (a.gridImages < 0)
        return Error { spell("grid-images") + " " + std::to_string(a.gridImages) + ": expected 0 or more" };
    if (auto q = checkGridQuery(a.query); !q)
        return q.error();
    auto fusion = attnscope::parseHeadFusion(a.rollout);
    if (!fusion)
        return Error { spell("rollout") + ": " + fusion.message() };
    if (!(a.discard >= 0.0 && a.discard < 1.0))
        return Error { spell("discard") + " " + std::to_string(a.discard) + ": expected a share from 0 up to (not including) 1" };
    if (a.analysesOn == "device" || a.analysesOn == "host")
        base.analysesOnDevice = a.analysesOn == "device";
    else if (a.analysesOn != "auto")
        return Error { spell("analyses-on") + " " + a.analysesOn + ": expected auto, device or host" };
    base.cudaGraph = a.cudaGraph;
    if (a.cudaGraph && request.model && request.model->info().device.rfind("cuda", 0) != 0)
        return Error { spell("cuda-graph") + ": needs a CUDA device (the model runs on " + request.model->info().device + ")" };
    if (a.cudaGraph && a.analysesOn == "host")
        return Error { spell("cuda-graph") + ": needs the analyses on the device (not --analyses-on host)" };
    if (a.cudaGraph && a.dumpTensors)
        return Error { spell("cuda-graph") + ": cannot go with --dump-tensors (a graph keeps the taps inside it)" };
    base.seed = a.seed;
    base.alsoRecord.attention = base.alsoRecord.blocks = a.dumpTensors;
    for (const auto& spec : a.noise.empty() && base.snr ? std::vector<std::string> { "gaussian:sigma=8" } : a.noise) {
        auto p = attnscope::Perturbation::parse(spec);
        if (!p)
            return p.error();
        base.perturbations.push_back(*p);
    }
    if (!(a.checkpointSeconds >= 0))
        return Error { spell("checkpoint-seconds") + " " + std::to_string(a.checkpointSeconds) + ": expected 0 (after every batch) or more" };
    if (base.relevance && request.model) {
        const auto& c = request.model->config();
        if (a.targetClass < -1 || (c.numClasses > 0 && a.targetClass >= c.numClasses))
            return Error { spell("class") + " " + std::to_string(a.targetClass) + ": the model has classes 0.." + std::to_string(c.numClasses - 1) };
        if (a.gradCamLayer < -1 || a.gradCamLayer > c.depth)
            return Error { spell("gradcam-layer") + " " + std::to_string(a.gradCamLayer) + ": the model's block outputs are 0.." + std::to_string(c.depth) };
    }
    if (base.precision == attnscope::Precision::Tf32 && request.model && request.model->info().device == "cpu")
        return Error { spell("precision") + " tf32 needs a CUDA device (the model runs on the CPU; tf32 is a setting of CUDA's matrix units)" };

    request.options = base;
    request.analysesText = a.analyses;
    request.batch = a.batch;
    request.gridImages = a.gridImages;
    request.gridQuery = a.query;
    request.rollout = { *fusion, a.discard };
    request.relevance.targetClass = a.targetClass;
    request.relevance.gradCamLayer = a.gradCamLayer;
    request.checkpointSeconds = a.checkpointSeconds;
    request.neutreno = a.neutreno;
    request.boost = a.boost;
    request.strict = a.strict;
    request.resume = !a.fresh;
    return attnscope::Done {};
}

nlohmann::json resolvedRunOptions(const ReportRequest& request, const nlohmann::json& noise, int64_t batch, bool analysesOnDevice)
{
    const attnscope::AnalysisOptions& o = request.options;
    const auto optional = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
    return {
        { "analyses", request.analysesText },
        { "noise", noise },
        { "draws", o.draws },
        { "seed", o.seed },
        { "neutreno", optional(request.neutreno) },
        { "boost", optional(request.boost) },
        { "batch", batch },
        { "precision", attnscope::toString(o.precision) },
        { "analyses-on", analysesOnDevice ? "device" : "host" },
        { "cuda-graph", o.cudaGraph },
        { "grid-images", request.gridImages },
        { "query", request.gridQuery },
        { "rollout", attnscope::toString(request.rollout.fusion) },
        { "discard", request.rollout.discard },
        { "class", request.relevance.targetClass },
        { "gradcam-layer", request.relevance.gradCamLayer },
        { "outlier-ratio", o.outlierRatio },
        { "ablation", o.ablation ? nlohmann::json(attnscope::toString(o.ablationMode)) : nlohmann::json() },
        { "qk-layer", request.queryKey.layer },
        { "qk-head", request.queryKey.head },
        { "qk-images", request.queryKey.images },
        { "qk-method", attnscope::toString(request.queryKey.options.method) },
        { "dump-tensors", o.alsoRecord.attention || o.alsoRecord.blocks },
        { "strict", request.strict },
        { "fresh", !request.resume },
        { "checkpoint-seconds", request.checkpointSeconds },
    };
}
