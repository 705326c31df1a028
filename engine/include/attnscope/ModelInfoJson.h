#pragma once

#include <attnscope/Model.h>

#include <string>

namespace attnscope {

// A loaded model described as one JSON object (text): what `attnscope-cli info --json` prints and what the remote
// engine's load_model answers (docs/remote.md): architecture, recognition, preprocessing, labels. Besides the values
// people read (the position scheme, the prefix tokens, the attention width) it holds the plain fields they are made
// from, so that modelInfoFromJson gives the ModelInfo back.
std::string modelInfoJson(const ModelInfo& info);

// The inverse of modelInfoJson: a remote model's ModelInfo, as the window holds it. modelInfoJson of the result is the
// text given (the values made from others, such as "grid" or "position", are not read: they follow). A key missing or
// of the wrong type, an enumeration's unknown name: an Error naming the key ("model info: \"pooling\" is ...").
Result<ModelInfo> modelInfoFromJson(const std::string& json);

} // namespace attnscope
