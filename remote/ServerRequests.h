#pragma once

// What the server's methods share (RemoteServer.cpp, RemoteSets.cpp, RemoteTensors.cpp): a trace kept on the host,
// the error a handler throws for a request it cannot answer, and the checked reading of its params.

#include "RemoteServer.h"
#include "RemoteWire.h"

#include <attnscope/Analyses.h>

#include <optional>
#include <string>

namespace attnscope::remote {

using json = nlohmann::json;

struct Server::Traced {
    std::shared_ptr<const Model> model;
    std::string image;
    Trace trace;
    // The last rollout asked of this trace and how it was made: the rollout is a product of depth N x N matrices, and a
    // click after a click asks for the same one.
    std::optional<RolloutOptions> rolloutMadeWith;
    Tensor rollout;
};

// What a handler throws for a request it cannot answer: the error response's code and one line.
struct RequestError {
    int code;
    std::string message;
};

inline const json& field(const json& params, const char* key)
{
    static const json absent;
    if (!params.is_object() || !params.contains(key))
        return absent;
    return params[key];
}

inline int64_t integer(const json& params, const char* key)
{
    const json& v = field(params, key);
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))) // not one that wraps
        throw RequestError { InvalidParams, std::string("\"") + key + "\" is " + (v.is_null() ? "missing" : v.dump().substr(0, 40)) + ", not a whole number" };
    return v.get<int64_t>();
}

inline std::string text(const json& params, const char* key, bool required = true)
{
    const json& v = field(params, key);
    if (v.is_null() && !required)
        return {};
    if (!v.is_string())
        throw RequestError { InvalidParams, std::string("\"") + key + "\" is " + (v.is_null() ? "missing" : v.dump().substr(0, 40)) + ", not a string" };
    return v.get<std::string>();
}

inline std::optional<double> number(const json& params, const char* key)
{
    const json& v = field(params, key);
    if (v.is_null())
        return std::nullopt;
    if (!v.is_number())
        throw RequestError { InvalidParams, std::string("\"") + key + "\" is " + v.dump().substr(0, 40) + ", not a number" };
    return v.get<double>();
}

} // namespace attnscope::remote
