// The rename and drop rules of a model description (docs/model-description.md), applied to tensor names.
#include "checkpoint/ConfigResolver.h"

#include "checkpoint/LoadError.h"

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
    checkKeys(d, { "attnscope_description", "about", "weights", "rename", "drop", "architecture", "preprocessing", "labels" }, "", path);
    if (d.contains("architecture"))
        checkKeys(d["architecture"],
                  { "num_heads", "block_norm", "activation", "layer_norm_eps", "final_norm", "pooling", "image_size",
                    "pos_embed_includes_prefix", "neutreno_lambda", "boost_t" },
                  "architecture.", path);
    if (d.contains("preprocessing"))
        checkKeys(d["preprocessing"], { "input_size", "crop_pct", "crop_mode", "interpolation", "mean", "std" }, "preprocessing.", path);
}

TensorMap applyDescriptionRenames(TensorMap tensors, const json& d, const std::string& path, DescribedNames* names)
{
    std::vector<std::pair<std::regex, std::string>> rules;
    try {
        for (const auto& r : d.value("rename", json::array())) {
            if (!r.is_array() || r.size() != 2 || !r[0].is_string() || !r[1].is_string())
                throw LoadError(path + ": each rename rule must be [\"regex\", \"replacement\"]");
            rules.emplace_back(descriptionRegex(r[0].get<std::string>(), path), r[1].get<std::string>());
        }
        std::vector<std::regex> drops;
        for (const auto& r : d.value("drop", json::array()))
            drops.push_back(descriptionRegex(r.get<std::string>(), path));
        TensorMap out;
        std::map<std::string, std::string> checkpointName; // name after the rules -> name in the file
        for (auto& [name, t] : tensors) {
            bool dropped = false;
            for (const auto& re : drops)
                dropped = dropped || std::regex_search(name, re);
            if (dropped)
                continue;
            std::string key = name;
            for (const auto& [re, replacement] : rules)
                key = std::regex_replace(key, re, replacement);
            if (out.count(key))
                throw LoadError(path + ": rename rules map two tensors onto " + key);
            out[key] = t;
            checkpointName[key] = name;
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
