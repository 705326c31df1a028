#pragma once

// The files a client sends to the server (docs/remote.md, "Files from the client"): a model or an image that is on the
// laptop and not on the GPU node crosses once, in chunks, and is kept on the host by its sha256, so that a second
// window, or the same file opened again, sends nothing. The one place the server writes:
// $XDG_CACHE_HOME/attnscope/remote-files (~/.cache/... without it), made 0700, holding `<sha256>.part` while a file
// arrives and `<sha256>/<name>` once its hash is checked (the name kept for loaders that go by the extension).
//
// A sha256 is used in a path: it is 64 lowercase hex digits or refused; a name is one path component or refused.

#include <attnscope/Result.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace attnscope::remote {

// The largest file a client may send (a ViT-H/14 in float32 is 2.5 GB).
constexpr uint64_t kMaxFileBytes = uint64_t(4) << 30;

// $XDG_CACHE_HOME/attnscope/remote-files, or ~/.cache/attnscope/remote-files; empty when neither is set.
std::string defaultFilesDir();
// 64 lowercase hex digits.
bool isSha256(const std::string& text);
// A file name to keep a sent file under: one path component of 1 to 255 bytes, no '/', no "..", no NUL. An error
// names the name.
Status checkFileName(const std::string& name);

class FileStore {
public:
    explicit FileStore(std::string dir); // made when the first chunk arrives
    const std::string& dir() const { return m_dir; }

    // The file kept under `sha256` (checked), or "" when there is none.
    std::string find(const std::string& sha256) const;
    // The bytes of an unfinished file that have arrived (its part file's size), 0 when none have.
    uint64_t received(const std::string& sha256) const;

    // One chunk of the file `sha256` of `size` bytes, at `offset`: the bytes that have arrived so far (0 starts over).
    // The last one (offset + length == size) checks the whole file's sha256 and keeps it as `<sha256>/<name>`: its
    // path then; "" before. A file already kept answers its path, whatever the chunk. Errors name the sha256.
    Result<std::string> put(const std::string& sha256, uint64_t size, uint64_t offset, const uint8_t* data, size_t length,
                            const std::string& name);

private:
    Status makeDir() const;

    std::string m_dir;
};

} // namespace attnscope::remote
