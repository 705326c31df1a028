#pragma once

// The keys of a run's statistics (StatsTable): one spelling for the host and the device paths that add to them
// (AnalysisRun.cpp, BatchedAnalyses.cpp) and for summarise, which reads them back.

#include "attnscope/Analyses.h"

#include <sstream>
#include <string>
#include <vector>

namespace attnscope::keys {

// "a/b/c" -> { "a", "b", "c" }: a key's parts (and a comma-separated list's)
inline std::vector<std::string> split(const std::string& s, char sep)
{
    std::vector<std::string> parts;
    std::stringstream in(s);
    std::string part;
    while (std::getline(in, part, sep))
        parts.push_back(part);
    return parts;
}

// "ts/<layer>/<tap>/<tokens>"
inline std::string tokenSimilarity(int layer, Tap tap, TokenSet tokens)
{
    return "ts/" + std::to_string(layer) + "/" + toString(tap) + "/" + toString(tokens);
}
// "as/<layer>/<field>": successive_cos | head_redundancy
inline std::string attentionSimilarity(int layer, const char* field) { return "as/" + std::to_string(layer) + "/" + field; }
// "hc/<layer>/<head>/<field>", fields in this order:
constexpr const char* kCentreFields[] = { "centre_dy", "centre_dx", "peak_dy", "peak_dx", "mean_distance_px",
                                          "bandwidth", "prefix_mass", "window_mass" };
inline std::string headCentre(int layer, int head, const char* field)
{
    return "hc/" + std::to_string(layer) + "/" + std::to_string(head) + "/" + field;
}
// "hcmap/<layer>/<head>/<cell>": the offset map, cells row-major
inline std::string offsetMapCell(int layer, int head, int cell)
{
    return "hcmap/" + std::to_string(layer) + "/" + std::to_string(head) + "/" + std::to_string(cell);
}
// "snr/<perturbation>/<layer>/<tap>"
inline std::string snr(const std::string& spec, int layer, Tap tap)
{
    return "snr/" + spec + "/" + std::to_string(layer) + "/" + toString(tap);
}
// "snrd/<perturbation>/<layer>/<field>", fields in this order (condition: 1 when it holds, else 0):
constexpr const char* kDiagnosticFields[] = { "alpha", "beta", "gamma", "gain", "bound", "condition", "sensitivity" };
inline std::string snrDiagnostic(const std::string& spec, int layer, const char* field)
{
    return "snrd/" + spec + "/" + std::to_string(layer) + "/" + field;
}

// "tn/<layer>/<field>": token norms of X_l (Analyses.h section 7), fields in this order:
constexpr const char* kNormFields[] = { "outliers", "patch_median", "max_ratio", "cls_ratio", "register_ratio",
                                        "outlier_attention", "prefix_attention" };
inline std::string tokenNorm(int layer, const char* field) { return "tn/" + std::to_string(layer) + "/" + field; }

// "ab/<layer>/<head>/<field>": head ablation (Analyses.h section 8), fields in this order (flip: 1 or 0):
constexpr const char* kAblationFields[] = { "dlogit", "dprob", "kl", "flip" };
// "ab/<layer>/<head>/dacc", of the images of known class only: [ablated prediction right] - [clean prediction right].
constexpr const char* kAccuracyChange = "dacc";
inline std::string ablation(int layer, int head, const char* field)
{
    return "ab/" + std::to_string(layer) + "/" + std::to_string(head) + "/" + field;
}

} // namespace attnscope::keys
