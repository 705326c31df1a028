#pragma once

#include "attnscope/Result.h"

#include <stdexcept>

namespace attnscope {

// Raised by every loader of the engine when an input file cannot be read.
// The message is one line and starts with the file path: "<path>: <problem>",
// so callers can show it to the user as it is.
struct LoadError : std::runtime_error {
    using std::runtime_error::runtime_error;
    LoadError(const std::string& message, Error::Missing missingHalf)
        : std::runtime_error(message)
        , missing(missingHalf)
    {
    }
    Error::Missing missing = Error::Missing::Nothing; // Model::load passes it on (Error::missing)
};

} // namespace attnscope
