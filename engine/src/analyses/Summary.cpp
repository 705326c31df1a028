// Summary.h: a run's statistics turned into the rows of the CSVs and figures, the CSVs themselves (docs/design.md
// section 7, "Output files"), and the statistics as exact JSON for shards and merge.
#include "attnscope/Summary.h"

#include "analyses/StatKeys.h"
#include "attnscope/Files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>
#include <tuple>

namespace attnscope {

namespace {

using keys::split;

Estimate estimate(const StatsTable& stats, const std::string& key)
{
    auto it = stats.find(key);
    if (it == stats.end())
        return { std::nan(""), std::nan(""), std::nan(""), 0 };
    return { it->second.mean(), it->second.sd(), it->second.ci95(), it->second.count() };
}

Tap tapFromName(const std::string& s) { return s == "attn" ? Tap::Attn : s == "residual" ? Tap::Residual : Tap::Block; }

} // namespace

std::string perturbationSlug(const std::string& spec)
{
    std::string slug;
    for (char c : spec)
        slug += std::isalnum(static_cast<unsigned char>(c)) || c == '.' ? c : '-';
    return slug;
}

Result<std::vector<std::string>> writeSummaryCsvs(const std::string& dir, const AnalysisSummary& s)
{
    namespace fs = std::filesystem;
    std::vector<std::string> written;
    const auto write = [&](const std::string& name, const std::string& text) -> bool {
        const std::string path = (fs::path(dir) / name).string();
        auto r = writeTextFile(path, text);
        if (r)
            written.push_back(path);
        return bool(r);
    };
    const auto fail = [&](const std::string& name) { return Error { (fs::path(dir) / name).string() + ": cannot write" }; };
    // A hierarchical model's rows say their stage after the layer.
    const bool staged = !s.blockStages.empty();
    const auto layerCells = [&](int layer) {
        return std::to_string(layer) + "," + (staged ? std::to_string(s.stageOf(layer)) + "," : std::string());
    };
    const std::string layerHeader = staged ? "layer,stage," : "layer,";
    if (!s.tokenSimilarity.empty()) {
        std::string csv = layerHeader + "tap,tokens,mean,sd,ci95,n\n";
        for (const auto& r : s.tokenSimilarity)
            csv += layerCells(r.layer) + toString(r.tap) + "," + toString(r.tokens) + "," + csvNumber(r.value.mean) + ","
                + csvNumber(r.value.sd) + "," + csvNumber(r.value.ci95) + "," + std::to_string(r.value.n) + "\n";
        if (!write("token_similarity.csv", csv))
            return fail("token_similarity.csv");
    }
    if (!s.headCentres.empty()) {
        std::string csv = layerHeader + "head,centre_dy,centre_dx,peak_dy,peak_dx,mean_distance_px,bandwidth,prefix_mass,window_mass,n\n";
        for (const auto& r : s.headCentres)
            csv += layerCells(r.layer) + std::to_string(r.head) + "," + csvNumber(r.centreDy.mean) + "," + csvNumber(r.centreDx.mean)
                + "," + csvNumber(r.peakDy.mean) + "," + csvNumber(r.peakDx.mean) + "," + csvNumber(r.meanDistancePx.mean) + ","
                + csvNumber(r.bandwidth.mean) + "," + csvNumber(r.prefixMass.mean) + "," + csvNumber(r.windowMass.mean) + ","
                + std::to_string(r.centreDy.n) + "\n";
        if (!write("head_centres.csv", csv))
            return fail("head_centres.csv");
    }
    if (!s.attentionSimilarity.empty()) {
        std::string csv = layerHeader + "successive_cos,head_redundancy,n\n";
        for (const auto& r : s.attentionSimilarity)
            csv += layerCells(r.layer) + csvNumber(r.successiveCos.mean) + "," + csvNumber(r.headRedundancy.mean) + ","
                + std::to_string(std::max(r.successiveCos.n, r.headRedundancy.n)) + "\n";
        if (!write("attention_similarity.csv", csv))
            return fail("attention_similarity.csv");
    }
    if (!s.tokenNorms.empty()) {
        std::string csv = "layer,outliers_mean,outliers_sd,patch_median,max_ratio,cls_ratio,register_ratio,outlier_attention,"
                          "prefix_attention,n\n";
        for (const auto& r : s.tokenNorms)
            csv += std::to_string(r.layer) + "," + csvNumber(r.outliers.mean) + "," + csvNumber(r.outliers.sd) + ","
                + csvNumber(r.patchMedian.mean) + "," + csvNumber(r.maxRatio.mean) + "," + csvNumber(r.clsRatio.mean) + ","
                + csvNumber(r.registerRatio.mean) + "," + csvNumber(r.outlierAttention.mean) + "," + csvNumber(r.prefixAttention.mean)
                + "," + std::to_string(r.outliers.n) + "\n";
        if (!write("token_norms.csv", csv))
            return fail("token_norms.csv");
    }
    if (!s.ablation.empty()) {
        std::string csv = layerHeader + "head,dlogit_mean,dlogit_sd,dlogit_ci95,dprob_mean,dprob_sd,dprob_ci95,kl_mean,kl_sd,kl_ci95,flip_share,n,acc_change,acc_change_ci95,"
                          "labelled\n";
        for (const auto& r : s.ablation) {
            csv += layerCells(r.layer) + std::to_string(r.head);
            for (const Estimate* e : { &r.dlogit, &r.dprob, &r.kl })
                csv += "," + csvNumber(e->mean) + "," + csvNumber(e->sd) + "," + csvNumber(e->ci95);
            csv += "," + csvNumber(r.flipShare) + "," + std::to_string(r.kl.n) + ",";
            csv += r.accuracy.n > 0 ? csvNumber(r.accuracy.mean) + "," + csvNumber(r.accuracy.ci95) : std::string("nan,nan");
            csv += "," + std::to_string(r.accuracy.n) + "\n";
        }
        if (!write("ablation.csv", csv))
            return fail("ablation.csv");
    }
    std::vector<std::string> specs;
    for (const auto& r : s.snr)
        if (std::find(specs.begin(), specs.end(), r.perturbation) == specs.end())
            specs.push_back(r.perturbation);
    for (const auto& spec : specs) {
        const std::string suffix = specs.size() == 1 ? "" : "_" + perturbationSlug(spec);
        std::string csv = layerHeader + "tap,snr_db_mean,snr_db_sd,n\n";
        for (const auto& r : s.snr)
            if (r.perturbation == spec)
                csv += layerCells(r.layer) + toString(r.tap) + "," + csvNumber(r.snrDb.mean) + "," + csvNumber(r.snrDb.sd) + ","
                    + std::to_string(r.snrDb.n) + "\n";
        if (!write("snr" + suffix + ".csv", csv))
            return fail("snr" + suffix + ".csv");
        std::string diag = layerHeader + "alpha,beta,gamma,gain,bound,condition_holds,sensitivity\n";
        for (const auto& r : s.snrDiagnostics)
            if (r.perturbation == spec)
                diag += layerCells(r.layer) + csvNumber(r.alpha.mean) + "," + csvNumber(r.beta.mean) + "," + csvNumber(r.gamma.mean) + ","
                    + csvNumber(r.gain.mean) + "," + csvNumber(r.bound.mean) + "," + csvNumber(r.conditionShare) + ","
                    + csvNumber(r.sensitivity.mean) + "\n";
        if (!write("snr_diagnostics" + suffix + ".csv", diag))
            return fail("snr_diagnostics" + suffix + ".csv");
    }
    return written;
}

std::string statisticsToJson(const StatsTable& stats)
{
    // [n, mean, M2] per key; doubles printed with 17 significant digits round-trip exactly.
    std::string out = "{\n";
    bool first = true;
    for (const auto& [key, s] : stats) {
        out += (first ? "  " : ",\n  ") + nlohmann::json(key).dump() + ": " + s.toJson();
        first = false;
    }
    return out + "\n}\n";
}

Result<StatsTable> statisticsFromJson(const std::string& text)
{
    StatsTable out;
    try {
        const auto j = nlohmann::json::parse(text);
        for (const auto& [key, v] : j.items()) {
            if (!v.is_array() || v.size() != 3)
                return Error { "statistics entry " + key + " is not [n, mean, m2]" };
            out[key] = RunningStats::fromParts(v[0].get<int64_t>(), v[1].get<double>(), v[2].get<double>());
        }
    } catch (const nlohmann::json::exception& e) {
        return Error { std::string("invalid statistics JSON (") + e.what() + ")" };
    }
    return out;
}

AnalysisSummary summarise(const StatsTable& stats, int64_t images, int radius)
{
    AnalysisSummary s;
    s.images = images;
    std::set<std::tuple<int, int, int>> ts;          // layer, tap, tokens
    std::set<std::pair<int, int>> hc;                // layer, head
    std::set<int> as;
    std::set<std::tuple<std::string, int, int>> snr; // spec, layer, tap
    std::set<std::pair<std::string, int>> snrd;
    std::set<int> tn;
    std::set<std::pair<int, int>> ab; // layer, head
    for (const auto& [key, value] : stats) {
        const auto p = split(key, '/');
        if (p[0] == "ts" && p.size() == 4)
            ts.insert({ std::stoi(p[1]), int(tapFromName(p[2])), p[3] == "all" ? 0 : 1 });
        else if (p[0] == "hc" && p.size() == 4)
            hc.insert({ std::stoi(p[1]), std::stoi(p[2]) });
        else if (p[0] == "as" && p.size() == 3)
            as.insert(std::stoi(p[1]));
        else if (p[0] == "snr" && p.size() == 4)
            snr.insert({ p[1], std::stoi(p[2]), int(tapFromName(p[3])) });
        else if (p[0] == "snrd" && p.size() == 4)
            snrd.insert({ p[1], std::stoi(p[2]) });
        else if (p[0] == "tn" && p.size() == 3)
            tn.insert(std::stoi(p[1]));
        else if (p[0] == "ab" && p.size() == 4)
            ab.insert({ std::stoi(p[1]), std::stoi(p[2]) });
    }
    for (const auto& [layer, tap, tokens] : ts) {
        const Tap t = Tap(tap);
        const TokenSet set = tokens == 0 ? TokenSet::All : TokenSet::Patches;
        s.tokenSimilarity.push_back({ layer, t, set,
                                      estimate(stats, keys::tokenSimilarity(layer, t, set)) });
    }
    std::sort(s.tokenSimilarity.begin(), s.tokenSimilarity.end(), [](const auto& a, const auto& b) {
        return std::tie(a.tap, a.layer, a.tokens) < std::tie(b.tap, b.layer, b.tokens);
    });
    const int side = 2 * radius + 1;
    for (const auto& [layer, head] : hc) {
        HeadCentreRow r { layer, head, {}, {}, {}, {}, {}, {}, {}, {}, {}, radius, 0, 0 };
        Estimate* fields[] = { &r.centreDy, &r.centreDx, &r.peakDy, &r.peakDx, &r.meanDistancePx, &r.bandwidth, &r.prefixMass, &r.windowMass };
        for (size_t i = 0; i < std::size(keys::kCentreFields); ++i)
            *fields[i] = estimate(stats, keys::headCentre(layer, head, keys::kCentreFields[i]));
        double mass = 0;
        for (int i = 0; i < side * side; ++i) {
            const Estimate e = estimate(stats, keys::offsetMapCell(layer, head, i));
            r.offsetMap.push_back(e.n ? e.mean : std::nan(""));
            mass += e.n ? e.mean : 0;
        }
        // Contours of the mean map (Cordonnier et al. Fig. 4/6): the level whose cells hold 50% / 90% of the mass.
        std::vector<double> sorted;
        for (double v : r.offsetMap)
            if (std::isfinite(v))
                sorted.push_back(v);
        std::sort(sorted.rbegin(), sorted.rend());
        r.contour50 = r.contour90 = std::nan("");
        double cum = 0;
        for (double v : sorted) {
            cum += v;
            if (std::isnan(r.contour50) && cum >= 0.5 * mass)
                r.contour50 = v;
            if (std::isnan(r.contour90) && cum >= 0.9 * mass)
                r.contour90 = v;
        }
        if (!sorted.empty() && std::isnan(r.contour90))
            r.contour90 = sorted.back();
        if (!sorted.empty() && std::isnan(r.contour50))
            r.contour50 = sorted.back();
        s.headCentres.push_back(std::move(r));
    }
    for (int layer : as)
        s.attentionSimilarity.push_back({ layer, estimate(stats, keys::attentionSimilarity(layer, "successive_cos")),
                                          estimate(stats, keys::attentionSimilarity(layer, "head_redundancy")) });
    for (const auto& [spec, layer, tap] : snr)
        s.snr.push_back({ spec, layer, Tap(tap), estimate(stats, keys::snr(spec, layer, Tap(tap))) });
    std::sort(s.snr.begin(), s.snr.end(), [](const auto& a, const auto& b) {
        return std::tie(a.perturbation, a.tap, a.layer) < std::tie(b.perturbation, b.tap, b.layer);
    });
    for (const auto& [spec, layer] : snrd) {
        const auto field = [&](const char* name) { return estimate(stats, keys::snrDiagnostic(spec, layer, name)); };
        SnrDiagnosticsRow r;
        r.perturbation = spec;
        r.layer = layer;
        r.alpha = field("alpha");
        r.beta = field("beta");
        r.gamma = field("gamma");
        r.gain = field("gain");
        r.bound = field("bound");
        r.sensitivity = field("sensitivity");
        r.conditionShare = field("condition").mean;
        s.snrDiagnostics.push_back(r);
    }
    for (int layer : tn) {
        TokenNormRow r;
        r.layer = layer;
        Estimate* fields[] = { &r.outliers, &r.patchMedian, &r.maxRatio, &r.clsRatio, &r.registerRatio, &r.outlierAttention, &r.prefixAttention };
        for (size_t i = 0; i < std::size(keys::kNormFields); ++i)
            *fields[i] = estimate(stats, keys::tokenNorm(layer, keys::kNormFields[i]));
        s.tokenNorms.push_back(r);
    }
    for (const auto& [layer, head] : ab) {
        HeadAblationRow r;
        r.layer = layer;
        r.head = head;
        r.dlogit = estimate(stats, keys::ablation(layer, head, "dlogit"));
        r.dprob = estimate(stats, keys::ablation(layer, head, "dprob"));
        r.kl = estimate(stats, keys::ablation(layer, head, "kl"));
        r.flipShare = estimate(stats, keys::ablation(layer, head, "flip")).mean;
        r.accuracy = estimate(stats, keys::ablation(layer, head, keys::kAccuracyChange));
        s.ablation.push_back(r);
    }
    return s;
}

std::vector<int> blockStagesOf(const ModelConfig& config)
{
    std::vector<int> stages;
    for (const WindowBlock& b : windowBlocks(config))
        stages.push_back(b.stage + 1);
    return stages;
}

} // namespace attnscope
