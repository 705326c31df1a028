// The files of a summary: its CSVs (DESIGN.md, Output directory) and the statistics as exact JSON for shards and merge.
#include "attnscope/AnalysisRun.h"

#include "attnscope/Files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace attnscope {

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
    if (!s.tokenSimilarity.empty()) {
        std::string csv = "layer,tap,tokens,mean,sd,ci95,n\n";
        for (const auto& r : s.tokenSimilarity)
            csv += std::to_string(r.layer) + "," + toString(r.tap) + "," + toString(r.tokens) + "," + csvNumber(r.value.mean) + ","
                + csvNumber(r.value.sd) + "," + csvNumber(r.value.ci95) + "," + std::to_string(r.value.n) + "\n";
        if (!write("token_similarity.csv", csv))
            return fail("token_similarity.csv");
    }
    if (!s.headCentres.empty()) {
        std::string csv = "layer,head,centre_dy,centre_dx,peak_dy,peak_dx,mean_distance_px,bandwidth,prefix_mass,window_mass,n\n";
        for (const auto& r : s.headCentres)
            csv += std::to_string(r.layer) + "," + std::to_string(r.head) + "," + csvNumber(r.centreDy.mean) + "," + csvNumber(r.centreDx.mean)
                + "," + csvNumber(r.peakDy.mean) + "," + csvNumber(r.peakDx.mean) + "," + csvNumber(r.meanDistancePx.mean) + ","
                + csvNumber(r.bandwidth.mean) + "," + csvNumber(r.prefixMass.mean) + "," + csvNumber(r.windowMass.mean) + ","
                + std::to_string(r.centreDy.n) + "\n";
        if (!write("head_centres.csv", csv))
            return fail("head_centres.csv");
    }
    if (!s.attentionSimilarity.empty()) {
        std::string csv = "layer,successive_cos,head_redundancy,n\n";
        for (const auto& r : s.attentionSimilarity)
            csv += std::to_string(r.layer) + "," + csvNumber(r.successiveCos.mean) + "," + csvNumber(r.headRedundancy.mean) + ","
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
    std::vector<std::string> specs;
    for (const auto& r : s.snr)
        if (std::find(specs.begin(), specs.end(), r.perturbation) == specs.end())
            specs.push_back(r.perturbation);
    for (const auto& spec : specs) {
        const std::string suffix = specs.size() == 1 ? "" : "_" + perturbationSlug(spec);
        std::string csv = "layer,tap,snr_db_mean,snr_db_sd,n\n";
        for (const auto& r : s.snr)
            if (r.perturbation == spec)
                csv += std::to_string(r.layer) + "," + toString(r.tap) + "," + csvNumber(r.snrDb.mean) + "," + csvNumber(r.snrDb.sd) + ","
                    + std::to_string(r.snrDb.n) + "\n";
        if (!write("snr" + suffix + ".csv", csv))
            return fail("snr" + suffix + ".csv");
        std::string diag = "layer,alpha,beta,gamma,gain,bound,condition_holds,sensitivity\n";
        for (const auto& r : s.snrDiagnostics)
            if (r.perturbation == spec)
                diag += std::to_string(r.layer) + "," + csvNumber(r.alpha.mean) + "," + csvNumber(r.beta.mean) + "," + csvNumber(r.gamma.mean) + ","
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

} // namespace attnscope
