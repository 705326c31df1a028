#pragma once

#include "attnscope/Result.h"

#include <string>
#include <vector>

namespace attnscope {

// Lowercase hex SHA-256 of a file's contents (for the manifest's provenance).
Result<std::string> sha256File(const std::string& path);

// A number as the CSVs write it: 10 significant digits, "nan" for undefined values, '.' as decimal point.
std::string csvNumber(double value);

// Writes a text file under a temporary name and renames it onto `path`.
Result<bool> writeTextFile(const std::string& path, const std::string& contents);

// Expands image arguments: files as given, folders recursively (sorted), and text files listing one image path
// per line (relative to the list's folder; '#' starts a comment). Unknown paths are an Error.
Result<std::vector<std::string>> expandImagePaths(const std::vector<std::string>& args);

// Short names for images, unique within the list: the file stem, with parent folders prefixed where stems
// collide ("cat_0000"). Used for per-image output folders.
std::vector<std::string> uniqueImageStems(const std::vector<std::string>& paths);

} // namespace attnscope
