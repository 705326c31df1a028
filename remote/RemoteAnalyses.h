#pragma once

// The analyses over the remote link (docs/remote.md): an image's analysis options as the window asks them, and the
// mergeable statistics and the logit decomposition the host sends back. The statistics cross exactly (each
// RunningStats as its count, mean and M2 in float64), so a summary made here from them is the one the host would make.

#include <attnscope/Analyses.h>
#include <attnscope/AnalysisRun.h>
#include <attnscope/QueryKey.h>
#include <attnscope/Statistics.h>

#include <nlohmann/json.hpp>

namespace attnscope::remote {

// What of AnalysisOptions a request carries: which analyses, their perturbations (as specs), draws, seed, radius,
// outlier ratio, the variant values, the precision, the head ablation's mode and the images' true classes (by their
// index in the set). Callbacks, recorded taps and where the analyses run are the host's business, not sent.
nlohmann::json encodeAnalysisOptions(const AnalysisOptions& options);
// Every key checked (type, range, a perturbation's spec); an Error names the one that is wrong.
Result<AnalysisOptions> decodeAnalysisOptions(const nlohmann::json& value);

nlohmann::json encodeStats(const StatsTable& stats);
Result<StatsTable> decodeStats(const nlohmann::json& value);

nlohmann::json encodeDecomposition(const LogitDecomposition& decomposition);
Result<LogitDecomposition> decodeDecomposition(const nlohmann::json& value);

// A class relevance (GAE and Grad-CAM maps with the class they are of) and a trace's token norms, for the window's
// views of them; float64 values cross as float64, maps as float32 tensors, NaN as NaN.
nlohmann::json encodeRelevance(const Relevance& relevance);
Result<Relevance> decodeRelevance(const nlohmann::json& value);
nlohmann::json encodeTokenNorms(const TokenNorms& norms);
Result<TokenNorms> decodeTokenNorms(const nlohmann::json& value);
// One head's ablation on one image, and a query-key map (its points as columns).
nlohmann::json encodeHeadAblation(const HeadAblation& ablation);
Result<HeadAblation> decodeHeadAblation(const nlohmann::json& value);
nlohmann::json encodeQueryKeyMap(const QueryKeyMap& map);
Result<QueryKeyMap> decodeQueryKeyMap(const nlohmann::json& value);

// A Swin's trace (docs/remote.md, "A Swin"): its blocks (Trace::windows), and a query's maps per block at the block's
// stage grid (QueryRows::windowMaps: each head's, then their mean; NaN outside the window, the padding's share).
nlohmann::json encodeWindows(const std::vector<WindowBlock>& blocks);
Result<std::vector<WindowBlock>> decodeWindows(const nlohmann::json& value);
nlohmann::json encodeWindowMaps(const std::vector<std::vector<AttentionMap>>& maps);
// Checked against the blocks: one list per block, heads + 1 maps in each, every map [h, w] of the block's grid.
Result<std::vector<std::vector<AttentionMap>>> decodeWindowMaps(const nlohmann::json& value, const std::vector<WindowBlock>& blocks);

} // namespace attnscope::remote
