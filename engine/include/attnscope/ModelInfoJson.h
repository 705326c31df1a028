#pragma once

#include <attnscope/Model.h>

#include <string>

namespace attnscope {

// A loaded model described as one JSON object (text): what `attnscope-cli info --json` prints and what the remote
// engine's load_model answers (docs/remote.md): architecture, recognition, preprocessing, labels.
std::string modelInfoJson(const ModelInfo& info);

} // namespace attnscope
