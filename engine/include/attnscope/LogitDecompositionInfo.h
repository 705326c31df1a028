#pragma once

#include <string>

namespace attnscope {

// What LogitDecomposition itself does not carry, for the figure's title and token axes.
struct LogitDecompositionInfo {
    std::string model;
    std::string image;
    int numPrefixTokens = 1; // prefix tokens come first; a line separates them from the patches
};

} // namespace attnscope
