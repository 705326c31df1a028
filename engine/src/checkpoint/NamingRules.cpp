// The renaming tools of the checkpoint readers (NamingRules.h).
#include "checkpoint/NamingRules.h"

#include "io/LoadError.h"

#include <ATen/ATen.h>

namespace attnscope {

namespace naming {

bool has(const TensorMap& t, const std::string& key) { return t.count(key) != 0; }

// Finds the base prefix ("vit.", "deit.", "" ...) under which `suffix` exists.
std::optional<std::string> prefixOf(const TensorMap& t, const std::string& suffix, std::initializer_list<const char*> prefixes)
{
    for (const char* p : prefixes)
        if (has(t, std::string(p) + suffix))
            return std::string(p);
    return std::nullopt;
}

// Applies ordered regex rules to every key; keys matching no rule keep their name. A rule with an empty
// replacement drops the tensor.
TensorMap applyRules(TensorMap in, const std::vector<Rule>& rules)
{
    TensorMap out;
    for (auto& [name, tensor] : in) {
        std::string key = name;
        bool dropped = false;
        for (const auto& r : rules) {
            if (std::regex_search(key, r.pattern)) {
                if (r.drop) {
                    dropped = true;
                    break;
                }
                key = std::regex_replace(key, r.pattern, r.replacement);
            }
        }
        if (!dropped)
            out[key] = tensor;
    }
    return out;
}

Rule rename(const std::string& pattern, const std::string& replacement) { return { std::regex(pattern), replacement, false }; }
Rule drop(const std::string& pattern) { return { std::regex(pattern), {}, true }; }

// Fuses `<stem>.{q,k,v}<suffix>` triples into `<target>` (rows q|k|v, docs/models.md, "Fused q, k, v").
void fuseQkv(TensorMap& t, const std::string& q, const std::string& k, const std::string& v, const std::string& target,
             const std::string& path)
{
    std::vector<std::string> toErase;
    TensorMap fused;
    for (const auto& [name, tensor] : t) {
        const auto pos = name.find(q);
        if (pos == std::string::npos)
            continue;
        const std::string kName = name.substr(0, pos) + k + name.substr(pos + q.size());
        const std::string vName = name.substr(0, pos) + v + name.substr(pos + q.size());
        // BEiT has query and value biases and no key bias: the key's is zero, as its forward makes it.
        const bool keyBiasZero = !has(t, kName) && has(t, vName) && name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
        if ((!has(t, kName) && !keyBiasZero) || !has(t, vName))
            throw LoadError(path + ": " + name + " has no matching " + kName + " and " + vName);
        const at::Tensor key = keyBiasZero ? at::zeros_like(tensor) : t.at(kName);
        fused[name.substr(0, pos) + target + name.substr(pos + q.size())] = at::cat({ tensor, key, t.at(vName) }, 0);
        toErase.insert(toErase.end(), { name, kName, vName });
    }
    for (const auto& n : toErase)
        t.erase(n);
    t.insert(fused.begin(), fused.end());
}

} // namespace naming

} // namespace attnscope
