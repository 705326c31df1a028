#include "RemoteFiles.h"

#include <attnscope/Files.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attnscope::remote {

namespace fs = std::filesystem;

namespace {

std::string why() { return std::strerror(errno); }

// A folder made for this user alone (0700); one that is there already is left as it is.
Status makeFolder(const std::string& path)
{
    if (::mkdir(path.c_str(), 0700) == 0 || errno == EEXIST) {
        struct stat st {};
        if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
            return Done {};
        return Error { path + ": not a folder" };
    }
    return Error { path + ": cannot make the folder: " + why() };
}

} // namespace

std::string defaultFilesDir()
{
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg && *xdg)
        return std::string(xdg) + "/attnscope/remote-files";
    const char* home = std::getenv("HOME");
    return home && *home ? std::string(home) + "/.cache/attnscope/remote-files" : std::string();
}

bool isSha256(const std::string& text)
{
    if (text.size() != 64)
        return false;
    for (char c : text)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    return true;
}

Status checkFileName(const std::string& name)
{
    std::string shown = name.substr(0, 60);
    for (char& c : shown)
        if (c == '\0' || c == '\n')
            c = '?';
    if (name.empty() || name.size() > 255 || name.find('/') != std::string::npos || name.find("..") != std::string::npos
        || name.find('\0') != std::string::npos || name == ".")
        return Error { "the file name \"" + shown + "\" is not one path component of 1 to 255 bytes without '/' or \"..\"" };
    return Done {};
}

FileStore::FileStore(std::string dir)
    : m_dir(std::move(dir))
{
}

std::string FileStore::find(const std::string& sha256) const
{
    if (m_dir.empty() || !isSha256(sha256))
        return {};
    // The one regular file in <sha256>/ (the first by name, were there more); links are not followed.
    std::error_code ec;
    std::string found;
    for (fs::directory_iterator it(fs::path(m_dir) / sha256, ec), end; !ec && it != end; it.increment(ec))
        if (it->symlink_status(ec).type() == fs::file_type::regular && (found.empty() || it->path().string() < found))
            found = it->path().string();
    return found;
}

uint64_t FileStore::received(const std::string& sha256) const
{
    struct stat st {};
    if (m_dir.empty() || !isSha256(sha256) || ::lstat((m_dir + "/" + sha256 + ".part").c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    return uint64_t(st.st_size);
}

Status FileStore::makeDir() const
{
    if (m_dir.empty())
        return Error { "no folder to keep sent files in (neither XDG_CACHE_HOME nor HOME is set on the host)" };
    std::error_code ec;
    const fs::path parent = fs::path(m_dir).parent_path();
    if (!parent.empty())
        fs::create_directories(parent, ec);
    if (ec)
        return Error { parent.string() + ": cannot make the folder: " + ec.message() };
    return makeFolder(m_dir);
}

Result<std::string> FileStore::put(const std::string& sha256, uint64_t size, uint64_t offset, const uint8_t* data, size_t length,
                                   const std::string& name)
{
    if (!isSha256(sha256))
        return Error { "\"" + sha256.substr(0, 70) + "\" is not a sha256 (64 lowercase hex digits)" };
    if (auto named = checkFileName(name); !named)
        return named.error();
    if (size > kMaxFileBytes || offset > size || length > size - offset)
        return Error { sha256 + ": " + std::to_string(length) + " bytes at offset " + std::to_string(offset) + " do not fit in a file of "
                       + std::to_string(size) + " bytes (at most " + std::to_string(kMaxFileBytes) + ")" };
    if (std::string kept = find(sha256); !kept.empty())
        return kept; // sent before, by this client or another
    if (auto made = makeDir(); !made)
        return made.error();
    const std::string part = m_dir + "/" + sha256 + ".part";
    const int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return Error { part + ": cannot write: " + why() };
    struct stat st {};
    if (offset == 0 && ::ftruncate(fd, 0) != 0) { // a new start: what an interrupted send left goes
        const std::string error = part + ": cannot write: " + why();
        ::close(fd);
        return Error { error };
    }
    if (::fstat(fd, &st) != 0 || uint64_t(st.st_size) != offset) {
        ::close(fd);
        return Error { sha256 + ": a chunk at offset " + std::to_string(offset) + ", but " + std::to_string(uint64_t(st.st_size))
                       + " bytes of it have arrived (send from there)" };
    }
    for (size_t done = 0; done < length;) {
        const ssize_t n = ::pwrite(fd, data + done, length - done, off_t(offset + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            const std::string error = part + ": cannot write: " + why();
            ::close(fd);
            return Error { error };
        }
        done += size_t(n);
    }
    if (::close(fd) != 0)
        return Error { part + ": cannot write: " + why() };
    if (offset + length < size)
        return std::string();
    // The whole file: kept only if it is what its name says, so that a file found by sha256 later is that file.
    auto hash = sha256File(part);
    if (!hash || *hash != sha256) {
        ::unlink(part.c_str());
        return Error { hash ? "the file sent as " + sha256 + " has sha256 " + *hash + " (changed while it was sent?): not kept"
                            : hash.message() };
    }
    const std::string folder = m_dir + "/" + sha256;
    if (auto made = makeFolder(folder); !made)
        return made.error();
    const std::string path = folder + "/" + name;
    if (::rename(part.c_str(), path.c_str()) != 0)
        return Error { path + ": cannot keep the file sent: " + why() };
    return path;
}

} // namespace attnscope::remote
