#pragma once

// The "qkmap" analysis of an output folder (docs/analyses.md section 9): the query-key maps of the model's heads over
// its first images, written as qkmap.csv (one row per point), qkmap.npy ([heads, 2, images, tokens, 2]: query then key,
// x then y) and qkmap_heads.csv (one row per head: its scale and agreement).

#include "Report.h"

#include <attnscope/QueryKey.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

struct QueryKeyOutput {
    attnscope::QueryKeyFigure figure;
    nlohmann::json record; // the manifest's "query_key"
};

// `paths` are the run's images in order (with their unique stems); the first `request.queryKey.images` that decode are
// used (those that do not are skipped, as the run skips them). Errors name the file or the option.
attnscope::Result<QueryKeyOutput> writeQueryKeyMaps(const ReportRequest& request, const attnscope::Model& model,
                                                   const std::vector<std::string>& paths, const std::vector<std::string>& stems);

// The heads a request asks for, checked against the model: "--qk-layer 13: the model has layers 1..12", the options
// named as given (the CLI's --qk-layer, Python's qk_layer).
attnscope::Result<std::vector<attnscope::HeadRef>> queryKeyHeads(const QueryKeyRequest& request, const attnscope::ModelConfig& config,
                                                                 const std::string& layerOption = "--qk-layer",
                                                                 const std::string& headOption = "--qk-head");
