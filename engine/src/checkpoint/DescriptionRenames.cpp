// The rename and drop rules of a model description (docs/model-description.md), applied to tensor names.
#include "checkpoint/ConfigResolver.h"

#include "checkpoint/ConfigFields.h"
#include "io/LoadError.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cctype>
#include <regex>
#include <vector>

namespace attnscope {

using nlohmann::json;

namespace {

// std::regex (libstdc++) has no limits of its own: a back-reference number or repetition count past long's
// range overflows a signed integer while it is parsed (UB; "\\666...6" found by tests/fuzz/fuzz_config), a large
// count builds a huge automaton, deep nesting recurses in the compiler, and stacked quantifiers ("u*****", a
// timeout the fuzzer found next) make it exponential. Names of tensors need none of that.
std::regex descriptionRegex(const std::string& pattern, const std::string& path)
{
    const auto refuse = [&](const char* why) {
        throw LoadError(path + ": regular expression \"" + pattern.substr(0, 60) + "\" is too complex for a tensor name ("
                        + why + ")");
    };
    if (pattern.size() > 1000)
        refuse("over 1000 characters");
    int depth = 0;
    bool escaped = false, afterQuantifier = false, lazy = false;
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char ch = pattern[i];
        size_t digits = 0; // a number after \, { or , (back-reference, count)
        while ((ch == '\\' || ch == '{' || ch == ',') && i + 1 + digits < pattern.size() && std::isdigit(uint8_t(pattern[i + 1 + digits])))
            ++digits;
        if (digits > 3)
            refuse("a count or back-reference over 999");
        if (escaped) {
            escaped = afterQuantifier = false;
            continue;
        }
        if (afterQuantifier && (ch == '*' || ch == '+' || ch == '?' || ch == '{')) {
            if (ch != '?' || lazy) // one lazy '?' may follow a quantifier: "*?", "{2}?"
                refuse("a repeated repetition");
            lazy = true;
            continue;
        }
        escaped = ch == '\\';
        depth += ch == '(' ? 1 : ch == ')' ? -1 : 0;
        if (depth > 32)
            refuse("over 32 nested groups");
        afterQuantifier = ch == '*' || ch == '+' || ch == '?' || ch == '}';
        lazy = false;
    }
    return std::regex(pattern);
}

} // namespace

namespace {

size_t editDistance(const std::string& a, const std::string& b)
{
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t above = row[j];
            row[j] = std::min({ row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1) });
            diagonal = above;
        }
    }
    return row[b.size()];
}

void checkKeys(const json& object, const std::vector<std::string>& known, const std::string& prefix, const std::string& path)
{
    if (!object.is_object())
        return;
    for (const auto& [key, value] : object.items()) {
        if (std::find(known.begin(), known.end(), key) != known.end())
            continue;
        const std::string* closest = nullptr;
        size_t best = std::string::npos;
        for (const auto& k : known)
            if (const size_t d = editDistance(key, k); d < best) {
                best = d;
                closest = &k;
            }
        std::string message = path + ": " + prefix + key + ": unknown key";
        if (closest && best <= std::max<size_t>(2, closest->size() / 3))
            message += "; did you mean " + *closest + "?";
        else {
            message += " (";
            for (size_t i = 0; i < known.size(); ++i)
                message += (i ? ", " : "") + known[i];
            message += ")";
        }
        throw LoadError(message);
    }
}

} // namespace

void checkDescriptionKeys(const json& d, const std::string& path)
{
    checkKeys(d, { "attnscope_description", "about", "family", "weights", "weights_key", "concatenate", "rename", "drop", "architecture", "preprocessing", "labels" }, "", path);
    if (d.contains("architecture"))
        checkKeys(d["architecture"],
                  { "num_heads", "block_norm", "activation", "layer_norm_eps", "final_norm", "pooling", "image_size",
                    "pos_embed_includes_prefix", "position", "patch_size", "channels", "patch_order", "neutreno_lambda",
                    "boost_t" },
                  "architecture.", path);
    if (d.contains("preprocessing"))
        checkKeys(d["preprocessing"], { "input_size", "crop_pct", "crop_mode", "interpolation", "mean", "std" }, "preprocessing.", path);
}

namespace {

// The description's "concatenate" rules, before its renames: every tensor whose name matches `from` joins the tensor
// `to` (the match's groups substituted), in the numeric order of `order` (a group, "$2"), along its first dimension:
// per-head query/key/value layers become one projection, head-major as attnscope's q, k and v are
// (docs/model-description.md). `joined` receives, for each new name, the names it was made of.
TensorMap applyConcatenations(TensorMap tensors, const json& d, const std::string& path,
                              std::map<std::string, std::string>& joined)
{
    for (const auto& r : d.value("concatenate", json::array())) {
        if (!r.is_object() || !r.contains("from") || !r.contains("to") || !r.contains("order") || !r["from"].is_string()
            || !r["to"].is_string() || !r["order"].is_string())
            throw LoadError(path + ": each concatenate rule must be {\"from\": \"regex\", \"to\": \"name\", \"order\": \"$N\"}");
        const std::regex from = descriptionRegex(r["from"].get<std::string>(), path);
        const std::string to = r["to"].get<std::string>(), order = r["order"].get<std::string>();
        std::map<std::string, std::map<long, std::string>> groups; // new name -> position -> name in the file
        for (const auto& [name, t] : tensors) {
            std::smatch m;
            if (!std::regex_match(name, m, from))
                continue;
            const std::string target = m.format(to), position = m.format(order);
            if (position.empty() || !std::all_of(position.begin(), position.end(), [](char ch) { return std::isdigit(uint8_t(ch)); })
                || position.size() > 9)
                throw LoadError(path + ": concatenate rule \"" + r["from"].get<std::string>() + "\": order \"" + order
                                + "\" gives \"" + position + "\" for " + name + ", not a number");
            auto& group = groups[target];
            if (!group.emplace(std::stol(position), name).second)
                throw LoadError(path + ": concatenate rule puts " + group.at(std::stol(position)) + " and " + name
                                + " at the same position " + position + " of " + target);
        }
        for (auto& [target, members] : groups) {
            if (tensors.count(target))
                throw LoadError(path + ": concatenate rule makes " + target + ", which the checkpoint already has");
            std::vector<at::Tensor> parts;
            long expected = 0;
            const std::string& first = members.begin()->second;
            for (const auto& [position, name] : members) {
                if (position != expected)
                    throw LoadError(path + ": concatenate rule for " + target + ": position " + std::to_string(expected)
                                    + " is missing (found " + std::to_string(position) + ", " + name + ")");
                ++expected;
                const at::Tensor& t = tensors.at(name);
                if (!t.sizes().equals(tensors.at(first).sizes()) || t.dim() == 0)
                    throw LoadError(path + ": concatenate rule for " + target + " joins tensors of different shapes: "
                                    + first + " " + fields::shapeString(tensors.at(first)) + " and " + name + " " + fields::shapeString(t));
                parts.push_back(t);
            }
            tensors[target] = at::cat(parts, 0);
            joined[target] = first + " .. " + members.rbegin()->second + " (concatenated)";
            for (const auto& [position, name] : members)
                tensors.erase(name);
        }
    }
    return tensors;
}

} // namespace

TensorMap applyDescriptionRenames(TensorMap tensors, const json& d, const std::string& path, DescribedNames* names)
{
    std::vector<std::pair<std::regex, std::string>> rules;
    try {
        // Drop rules first (on the names in the file), then concatenations, then renames.
        std::vector<std::regex> drops;
        for (const auto& r : d.value("drop", json::array()))
            drops.push_back(descriptionRegex(r.get<std::string>(), path));
        for (auto it = tensors.begin(); it != tensors.end();)
            it = std::any_of(drops.begin(), drops.end(), [&](const std::regex& re) { return std::regex_search(it->first, re); })
                ? tensors.erase(it)
                : std::next(it);
        std::map<std::string, std::string> joined; // a concatenation's name -> what it was made of
        tensors = applyConcatenations(std::move(tensors), d, path, joined);
        for (const auto& r : d.value("rename", json::array())) {
            if (!r.is_array() || r.size() != 2 || !r[0].is_string() || !r[1].is_string())
                throw LoadError(path + ": each rename rule must be [\"regex\", \"replacement\"]");
            rules.emplace_back(descriptionRegex(r[0].get<std::string>(), path), r[1].get<std::string>());
        }
        TensorMap out;
        std::map<std::string, std::string> checkpointName; // name after the rules -> name in the file
        for (auto& [name, t] : tensors) {
            std::string key = name;
            for (const auto& [re, replacement] : rules)
                key = std::regex_replace(key, re, replacement);
            if (out.count(key))
                throw LoadError(path + ": rename rules map " + checkpointName.at(key) + " and " + name + " onto " + key
                                + "; to join tensors into one (per-head query, key and value layers, say) write a "
                                  "\"concatenate\" rule (docs/model-description.md)");
            out[key] = t;
            checkpointName[key] = joined.count(name) ? joined.at(name) : name;
        }
        if (names) {
            // toCanonicalNames strips a prefix all names share ("module."): key the record by the names it will see.
            const TensorMap stripped = stripCommonPrefix(out);
            const size_t cut = out.empty() ? 0 : out.begin()->first.size() - stripped.begin()->first.size();
            names->descriptionPath = path;
            for (const auto& [key, name] : checkpointName)
                names->checkpointName[key.substr(cut)] = name;
        }
        return out;
    } catch (const std::regex_error& e) {
        throw LoadError(path + ": invalid regular expression in rename rules (" + e.what() + ")");
    }
}

} // namespace attnscope
