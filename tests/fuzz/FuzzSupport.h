#pragma once
// Helpers shared by the harnesses: the engine's readers take paths, so inputs go through an in-memory file.

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace attnscope::fuzz {

// One memfd per harness process, rewritten for every input; its /proc/self/fd path is a regular file that can
// be opened and mapped like one on disk, without touching the disk.
class MemFile {
public:
    explicit MemFile(const char* name)
        : m_fd(memfd_create(name, MFD_CLOEXEC))
    {
        if (m_fd < 0) {
            std::perror("memfd_create");
            std::abort();
        }
        m_path = "/proc/self/fd/" + std::to_string(m_fd);
    }
    const std::string& write(const uint8_t* data, size_t size)
    {
        if (ftruncate(m_fd, 0) != 0 || (size && pwrite(m_fd, data, size, 0) != ssize_t(size))) {
            std::perror("memfd write");
            std::abort();
        }
        return m_path;
    }
    const std::string& path() const { return m_path; }

private:
    int m_fd;
    std::string m_path;
};

// A harness's verdict on an input it accepted but got wrong: print why and abort, which libFuzzer (and the
// replay driver) reports as a crash with the input saved.
[[noreturn]] inline void fail(const std::string& why)
{
    std::fprintf(stderr, "harness check failed: %s\n", why.c_str());
    std::abort();
}

} // namespace attnscope::fuzz
