#pragma once

#include "attnscope/Result.h"

#include <memory>
#include <string>
#include <vector>

namespace attnscope {

// Lowercase hex SHA-256 of a file's contents (for the manifest's provenance).
Result<std::string> sha256File(const std::string& path);
// sha256File of a large file (a model's weights) remembered across runs by its absolute path, size, modification time
// (ns) and inode, in $XDG_CACHE_HOME/attnscope/sha256 (~/.cache without it): hashing an 88 MB ViT-S/16 takes a
// quarter of a second, a lookup nothing. As with make, a file rewritten in place within the same nanosecond at the
// same size would keep its old hash. Without a writable cache folder it hashes every time.
Result<std::string> sha256FileCached(const std::string& path);

// A number as the CSVs write it: 10 significant digits, "nan" for undefined values, '.' as decimal point.
std::string csvNumber(double value);
// A CSV field: as it is, or quoted (quotes doubled) when it holds a comma, a quote or a newline.
std::string csvField(const std::string& s);

// Writes a text file under a temporary name and renames it onto `path`.
Status writeTextFile(const std::string& path, const std::string& contents);

// A text file written piece by piece (a long run's predictions) under the temporary name writeTextFile uses, renamed
// onto its path by commit(). Destroyed without commit() (an error, a cancelled run), the temporary goes and `path`
// keeps what it had. Every error names the file.
class TextFileWriter {
public:
    static Result<std::unique_ptr<TextFileWriter>> open(const std::string& path);
    ~TextFileWriter();
    Status append(const std::string& text);
    Status commit();

    struct Impl;

private:
    explicit TextFileWriter(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

// Removes, under `dir` (recursively), what killed runs left of their outputs: `<file>.tmp-<pid>` (the engine's
// atomic writes) whose process is gone, and `<file>.XXXXXX` (Qt's QSaveFile, the figures) not written to for
// `quietSeconds`. Only names of the kinds a run writes (.csv .json .npy .png .svg .pdf before the suffix) are
// touched, so that a run sharing the folder (another shard) keeps the files it is writing. Returns how many went.
int removeStaleTemporaries(const std::string& dir, double quietSeconds = 60.0);

// Whether a file name has the suffix of an image that a folder of images contributes (png, jpg, jpeg, bmp, tif,
// tiff, webp, pgm, ppm, pbm, pnm, jp2, exr, hdr; any case): the rule of expandImagePaths and of the window.
bool hasImageSuffix(const std::string& path);

// Expands image arguments: files as given, folders recursively (sorted), and text files listing one image path
// per line (relative to the list's folder; '#' starts a comment). Unknown paths are an Error.
Result<std::vector<std::string>> expandImagePaths(const std::vector<std::string>& args);

// Short names for images, unique within the list: the file stem, with parent folders prefixed where stems
// collide ("cat_0000"). Used for per-image output folders.
std::vector<std::string> uniqueImageStems(const std::vector<std::string>& paths);

} // namespace attnscope
