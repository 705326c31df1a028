#include "checkpoint/ConfigFields.h"

#include <map>

#include "io/LoadError.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace attnscope::fields {

void fail(const std::string& file, const std::string& problem) { throw LoadError(file + ": " + problem); }

std::string shapeString(const at::Tensor& t)
{
    std::string s = "[";
    for (int64_t i = 0; i < t.dim(); ++i)
        s += (i ? ", " : "") + std::to_string(t.size(i));
    return s + "]";
}

int intField(const json& v, const std::string& path, const std::string& what)
{
    if (v.is_number()) {
        const double d = v.get<double>();
        if (d >= double(std::numeric_limits<int>::min()) && d <= double(std::numeric_limits<int>::max()))
            return v.is_number_float() ? int(d) : int(v.get<int64_t>());
    }
    throw LoadError(path + ": " + what + " " + v.dump() + " is not an integer of a plausible size");
}


int sideField(const json& v, const std::string& path, const std::string& what)
{
    const int side = intField(v, path, what);
    if (side < 1 || side > kMaxSide)
        throw LoadError(path + ": " + what + " " + v.dump() + " is not a size from 1 to " + std::to_string(kMaxSide));
    return side;
}


std::pair<int, int> sizePair(const json& v, const std::string& path, const char* what)
{
    if (v.is_number_integer())
        return { sideField(v, path, what), sideField(v, path, what) };
    if (v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer())
        return { sideField(v[0], path, what), sideField(v[1], path, what) };
    throw LoadError(path + ": " + what + " " + v.dump() + " is neither an integer nor [height, width]");
}

std::string shortNumber(double v)
{
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return text;
}

Activation activationFromName(const std::string& name, const std::string& path)
{
    if (name == "gelu" || name == "gelu_python" || name == "gelu_exact")
        return Activation::Gelu;
    if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast" || name == "gelu_tanh")
        return Activation::GeluTanh;
    if (name == "quick_gelu" || name == "quickgelu")
        return Activation::QuickGelu;
    if (name == "relu")
        return Activation::Relu;
    if (name == "silu" || name == "swish")
        return Activation::Silu;
    throw LoadError(path + ": unknown activation \"" + name + "\" (gelu, gelu_tanh, quick_gelu, relu, silu)");
}

Interpolation interpolationFromName(const std::string& name)
{
    if (name == "nearest")
        return Interpolation::Nearest;
    if (name == "bilinear" || name == "linear" || name == "box" || name == "hamming")
        return Interpolation::Bilinear;
    return Interpolation::Bicubic; // bicubic, and lanczos/random, which bicubic approximates best
}

std::vector<double> doubles(const json& v, const std::string& path, const char* what)
{
    if (!v.is_array() || v.empty())
        throw LoadError(path + ": " + what + " must be a list of numbers");
    std::vector<double> out;
    for (const auto& x : v) {
        if (!x.is_number())
            throw LoadError(path + ": " + what + " must be a list of numbers");
        out.push_back(x.get<double>());
    }
    return out;
}

std::vector<std::string> labelsFromId2Label(const json& config)
{
    std::vector<std::string> labels;
    if (!config.contains("id2label") || !config["id2label"].is_object())
        return labels;
    std::map<int, std::string> byId;
    for (const auto& [k, v] : config["id2label"].items())
        if (v.is_string())
            byId[std::atoi(k.c_str())] = v.get<std::string>();
    for (const auto& [id, name] : byId)
        if (id == int(labels.size()))
            labels.push_back(name);
    return labels;
}

void listUnread(const json& object, const std::vector<std::string>& read, const std::string& prefix,
                std::vector<std::string>& out)
{
    if (!object.is_object())
        return;
    for (const auto& [key, value] : object.items())
        if (std::find(read.begin(), read.end(), key) == read.end())
            out.push_back(prefix + key);
}

} // namespace attnscope::fields
