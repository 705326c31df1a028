#pragma once

#include <cstdio>
#include <string>

namespace attnscope {

// Writes to "<path>.tmp-<pid>" and renames onto `path` in commit(), so an interrupted write never leaves a
// half-written file under the final name. Destroyed without commit(), the temporary file is removed.
// Throws LoadError on I/O errors.
class AtomicFile {
public:
    explicit AtomicFile(std::string path);
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    void write(const void* data, size_t size);
    void write(const std::string& text) { write(text.data(), text.size()); }
    void commit();

private:
    std::string m_path;
    std::string m_tempPath;
    std::FILE* m_file = nullptr;
};

// Writes a whole text file atomically.
void writeFileAtomically(const std::string& path, const std::string& contents);

} // namespace attnscope
