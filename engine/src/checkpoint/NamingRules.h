#pragma once

// The renaming tools of CheckpointNaming.cpp, for the layouts read elsewhere (SwinCheckpoint.cpp): ordered regex rules
// over tensor names, and the fusing of separate q, k, v tensors into one.
#include "checkpoint/SafeTensors.h"

#include <initializer_list>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace attnscope::naming {

bool has(const TensorMap& t, const std::string& key);
// The first of `prefixes` ("vit.", "") under which `suffix` is a tensor's name.
std::optional<std::string> prefixOf(
    const TensorMap& t, const std::string& suffix, std::initializer_list<const char*> prefixes);

// One rule: names matching `pattern` get `replacement` (std::regex_replace), or are dropped.
struct Rule {
    std::regex pattern;
    std::string replacement;
    bool drop = false;
};
// Applies ordered rules to every key (the first that matches); keys matching no rule keep their name.
TensorMap applyRules(TensorMap in, const std::vector<Rule>& rules);
Rule rename(const std::string& pattern, const std::string& replacement);
Rule drop(const std::string& pattern);
// Fuses `<stem>.{q,k,v}<suffix>` triples into `<target>` (rows q|k|v); a missing key bias beside q and v biases is
// zero.
void fuseQkv(TensorMap& t, const std::string& q, const std::string& k, const std::string& v, const std::string& target,
    const std::string& path);

} // namespace attnscope::naming
