#include "attnscope/Files.h"

#include "io/AtomicFile.h"
#include "io/LoadError.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace attnscope {

namespace fs = std::filesystem;

namespace {

// FIPS 180-4 SHA-256.
class Sha256 {
public:
    void update(const uint8_t* data, size_t n)
    {
        m_length += n;
        while (n > 0) {
            const size_t take = std::min(n, size_t(64) - m_used);
            std::copy(data, data + take, m_block.begin() + long(m_used));
            m_used += take;
            data += take;
            n -= take;
            if (m_used == 64) {
                compress(m_block.data());
                m_used = 0;
            }
        }
    }
    std::string hex()
    {
        const uint64_t bits = m_length * 8;
        const uint8_t one = 0x80, zero = 0;
        update(&one, 1);
        while (m_used != 56)
            update(&zero, 1);
        for (int i = 7; i >= 0; --i) {
            const uint8_t b = uint8_t(bits >> (8 * i));
            update(&b, 1);
        }
        std::string out;
        char buf[9];
        for (uint32_t h : m_state) {
            std::snprintf(buf, sizeof buf, "%08x", h);
            out += buf;
        }
        return out;
    }

private:
    static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
    void compress(const uint8_t* p)
    {
        static constexpr uint32_t k[64] = {
            0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
            0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
            0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
            0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
            0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
            0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
            0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
            0xc67178f2
        };
        uint32_t w[64];
        for (int i = 0; i < 16; ++i)
            w[i] = uint32_t(p[4 * i]) << 24 | uint32_t(p[4 * i + 1]) << 16 | uint32_t(p[4 * i + 2]) << 8 | p[4 * i + 3];
        for (int i = 16; i < 64; ++i) {
            const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
            const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint32_t a = m_state[0], b = m_state[1], c = m_state[2], d = m_state[3], e = m_state[4], f = m_state[5],
                 g = m_state[6], h = m_state[7];
        for (int i = 0; i < 64; ++i) {
            const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
            const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g;
            g = f;
            f = e;
            e = d + t1;
            d = c;
            c = b;
            b = a;
            a = t1 + t2;
        }
        const uint32_t add[8] = { a, b, c, d, e, f, g, h };
        for (int i = 0; i < 8; ++i)
            m_state[size_t(i)] += add[i];
    }

    std::array<uint32_t, 8> m_state { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
    std::array<uint8_t, 64> m_block {};
    size_t m_used = 0;
    uint64_t m_length = 0;
};

} // namespace

bool hasImageSuffix(const std::string& path)
{
    static const std::set<std::string> exts { ".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp",
                                              ".pgm", ".ppm", ".pbm", ".pnm", ".jp2", ".exr", ".hdr" };
    std::string e = fs::path(path).extension().string();
    std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return exts.count(e) != 0;
}

Result<std::string> sha256File(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Error { path + ": cannot open" };
    Sha256 h;
    std::vector<char> buf(1 << 20);
    while (in) {
        in.read(buf.data(), std::streamsize(buf.size()));
        h.update(reinterpret_cast<const uint8_t*>(buf.data()), size_t(in.gcount()));
    }
    return h.hex();
}

namespace {

std::string hashCachePath()
{
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    if (xdg && *xdg)
        return std::string(xdg) + "/attnscope/sha256";
    return home && *home ? std::string(home) + "/.cache/attnscope/sha256" : std::string();
}

} // namespace

Result<std::string> sha256FileCached(const std::string& path)
{
    struct stat st {};
    std::error_code ec;
    const std::string absolute = fs::absolute(path, ec).lexically_normal().string();
    const std::string cache = hashCachePath();
    if (cache.empty() || ec || ::stat(path.c_str(), &st) != 0)
        return sha256File(path);
    // One line per file: "<sha256> <size> <mtime ns> <device> <inode> <absolute path>"; the last match wins.
    char key[160];
    std::snprintf(key, sizeof key, " %lld %lld %llu %llu ", static_cast<long long>(st.st_size),
                  static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec, static_cast<unsigned long long>(st.st_dev),
                  static_cast<unsigned long long>(st.st_ino));
    const std::string wanted = key + absolute;
    std::ifstream in(cache);
    std::vector<std::string> lines;
    std::string found;
    for (std::string line; std::getline(in, line);) {
        if (line.size() == 64 + wanted.size() && line.compare(64, std::string::npos, wanted) == 0)
            found = line.substr(0, 64);
        lines.push_back(std::move(line));
    }
    if (!found.empty())
        return found;
    auto hash = sha256File(path);
    if (!hash)
        return hash;
    fs::create_directories(fs::path(cache).parent_path(), ec);
    if (lines.size() >= 1000) {
        // Kept short: the newest 500 entries and this one, through a temporary name.
        std::string kept;
        for (size_t i = lines.size() - 500; i < lines.size(); ++i)
            kept += lines[i] + "\n";
        (void)writeTextFile(cache, kept + *hash + wanted + "\n");
    } else if (std::FILE* f = std::fopen(cache.c_str(), "a")) {
        const std::string line = *hash + wanted + "\n"; // one write of an O_APPEND file: whole even beside another run
        std::fwrite(line.data(), 1, line.size(), f);
        std::fclose(f);
    }
    return hash;
}

std::string csvField(const std::string& s)
{
    if (s.find_first_of(",\"\n") == std::string::npos)
        return s;
    std::string q = "\"";
    for (char c : s)
        q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

std::string csvNumber(double v)
{
    if (!std::isfinite(v))
        return "nan";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.10g", v);
    return buf;
}

namespace {

bool isOutputName(const std::string& name)
{
    for (const char* ext : { ".csv", ".json", ".npy", ".png", ".svg", ".pdf" }) {
        const size_t n = std::strlen(ext);
        if (name.size() > n && name.compare(name.size() - n, n, ext) == 0)
            return true;
    }
    return false;
}

bool allOf(const std::string& s, int (*pred)(int)) { return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) { return pred((unsigned char)c) != 0; }); }

} // namespace

int removeStaleTemporaries(const std::string& dir, double quietSeconds)
{
    int removed = 0;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file(ec))
            continue;
        const std::string name = it->path().filename().string();
        const size_t dot = name.rfind('.');
        if (dot == std::string::npos || !isOutputName(name.substr(0, dot)))
            continue;
        const std::string suffix = name.substr(dot + 1);
        bool stale = false;
        if (suffix.rfind("tmp-", 0) == 0 && allOf(suffix.substr(4), isdigit) && suffix.size() <= 4 + 9) {
            const pid_t pid = pid_t(std::stol(suffix.substr(4)));
            stale = pid != ::getpid() && ::kill(pid, 0) == -1 && errno == ESRCH; // its writer is gone
        } else if (suffix.size() == 6 && allOf(suffix, isalnum)) {
            const auto written = fs::last_write_time(it->path(), ec);
            stale = !ec && std::chrono::duration<double>(fs::file_time_type::clock::now() - written).count() > quietSeconds;
        }
        if (stale && fs::remove(it->path(), ec))
            ++removed;
        ec.clear();
    }
    return removed;
}

Status writeTextFile(const std::string& path, const std::string& contents)
{
    try {
        writeFileAtomically(path, contents);
    } catch (const LoadError& e) {
        return Error { e.what() };
    }
    return Done {};
}

struct TextFileWriter::Impl {
    AtomicFile file;
};

TextFileWriter::TextFileWriter(std::unique_ptr<Impl> impl)
    : m_impl(std::move(impl))
{
}

TextFileWriter::~TextFileWriter() = default;

Result<std::unique_ptr<TextFileWriter>> TextFileWriter::open(const std::string& path)
{
    try {
        return std::unique_ptr<TextFileWriter>(new TextFileWriter(std::unique_ptr<Impl>(new Impl { AtomicFile(path) })));
    } catch (const LoadError& e) {
        return Error { e.what() };
    }
}

Status TextFileWriter::append(const std::string& text)
{
    try {
        m_impl->file.write(text);
    } catch (const LoadError& e) {
        return Error { e.what() };
    }
    return Done {};
}

Status TextFileWriter::commit()
{
    try {
        m_impl->file.commit();
    } catch (const LoadError& e) {
        return Error { e.what() };
    }
    return Done {};
}

Result<std::vector<std::string>> expandImagePaths(const std::vector<std::string>& args)
{
    std::vector<std::string> out;
    for (const auto& arg : args) {
        std::error_code ec;
        if (fs::is_directory(arg, ec)) {
            std::vector<std::string> found;
            for (auto it = fs::recursive_directory_iterator(arg, fs::directory_options::skip_permission_denied, ec);
                 !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
                if (it->is_regular_file() && hasImageSuffix(it->path().string()))
                    found.push_back(it->path().string());
            std::sort(found.begin(), found.end());
            if (found.empty())
                return Error { arg + ": folder holds no images" };
            out.insert(out.end(), found.begin(), found.end());
        } else if (fs::is_regular_file(arg, ec)) {
            const auto ext = fs::path(arg).extension().string();
            if (ext == ".txt" || ext == ".lst" || ext == ".list") {
                std::ifstream in(arg);
                std::string line;
                while (std::getline(in, line)) {
                    line.erase(0, line.find_first_not_of(" \t\r"));
                    line.erase(line.find_last_not_of(" \t\r") + 1);
                    if (line.empty() || line[0] == '#')
                        continue;
                    fs::path p = line;
                    if (p.is_relative())
                        p = fs::path(arg).parent_path() / p;
                    if (!fs::is_regular_file(p))
                        return Error { arg + ": lists " + line + ", which does not exist" };
                    out.push_back(p.lexically_normal().string());
                }
            } else {
                out.push_back(arg);
            }
        } else {
            return Error { arg + ": no such image, folder or list" };
        }
    }
    if (out.empty())
        return Error { "no images given" };
    return out;
}

std::vector<std::string> uniqueImageStems(const std::vector<std::string>& paths)
{
    std::vector<std::string> stems(paths.size());
    std::vector<fs::path> rest(paths.size());
    for (size_t i = 0; i < paths.size(); ++i) {
        stems[i] = fs::path(paths[i]).stem().string();
        rest[i] = fs::path(paths[i]).parent_path();
    }
    for (int round = 0; round < 16; ++round) {
        std::map<std::string, int> count;
        for (const auto& s : stems)
            ++count[s];
        bool clash = false;
        for (size_t i = 0; i < stems.size(); ++i) {
            if (count[stems[i]] > 1 && !rest[i].empty() && rest[i].filename() != rest[i]) {
                stems[i] = rest[i].filename().string() + "_" + stems[i];
                rest[i] = rest[i].parent_path();
                clash = true;
            }
        }
        if (!clash)
            break;
    }
    std::map<std::string, int> seen; // still equal (same file twice): number them
    for (auto& s : stems)
        if (seen[s]++ > 0)
            s += "_" + std::to_string(seen[s] - 1);
    return stems;
}

} // namespace attnscope
