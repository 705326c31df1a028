#include "io/AtomicFile.h"

#include "io/LoadError.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace attnscope {

AtomicFile::AtomicFile(std::string path)
    : m_path(std::move(path))
    , m_tempPath(m_path + ".tmp-" + std::to_string(::getpid()))
{
    m_file = std::fopen(m_tempPath.c_str(), "wb");
    if (!m_file)
        throw LoadError(m_path + ": cannot write (" + std::strerror(errno) + ")");
}

AtomicFile::~AtomicFile()
{
    if (m_file) {
        std::fclose(m_file);
        std::remove(m_tempPath.c_str());
    }
}

void AtomicFile::write(const void* data, size_t size)
{
    if (size && std::fwrite(data, 1, size, m_file) != size)
        throw LoadError(m_path + ": write failed (" + std::strerror(errno) + ")");
}

void AtomicFile::commit()
{
    // No fsync: rename after a complete write already protects against a killed process, which is the
    // failure this guards against; fsync per file would slow tensor dumps of large runs.
    const bool flushed = std::fflush(m_file) == 0;
    const bool closed = std::fclose(m_file) == 0;
    m_file = nullptr;
    if (!flushed || !closed || std::rename(m_tempPath.c_str(), m_path.c_str()) != 0) {
        const std::string reason = std::strerror(errno);
        std::remove(m_tempPath.c_str());
        throw LoadError(m_path + ": cannot write (" + reason + ")");
    }
}

void writeFileAtomically(const std::string& path, const std::string& contents)
{
    AtomicFile f(path);
    f.write(contents);
    f.commit();
}

} // namespace attnscope
