#include "AnalyzeArguments.h"

#include "Figures.h"
#include "QueryKeyReport.h"

#include <attnscope/Files.h>
#include <attnscope/Perturbation.h>

#include <algorithm>
#include <cmath>

using attnscope::Error;

attnscope::Status applyAnalyzeArguments(const AnalyzeArguments& a, const OptionSpelling& spell, ReportRequest& request)
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
    const AnalyzeArguments plain;
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
    return attnscope::Done {};
}
