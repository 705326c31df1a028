// sha256File and its cache across runs (attnscope/Files.h): the FIPS 180-4 test vectors, and a cached hash used only
// while the file's path, size, modification time and inode are unchanged.
#include "TestSupport.h"

#include <attnscope/Files.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

using namespace attnscope;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

std::string slurpText(const fs::path& p)
{
    std::ifstream in(p);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class HashCache : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_dir = test::scratchDir("HashCache");
        const char* old = std::getenv("XDG_CACHE_HOME");
        m_oldCache = old ? std::optional<std::string>(old) : std::nullopt;
        ::setenv("XDG_CACHE_HOME", (m_dir / "cache").c_str(), 1);
    }
    void TearDown() override
    {
        if (m_oldCache)
            ::setenv("XDG_CACHE_HOME", m_oldCache->c_str(), 1);
        else
            ::unsetenv("XDG_CACHE_HOME");
        fs::remove_all(m_dir);
    }
    fs::path m_dir;
    std::optional<std::string> m_oldCache;
};

TEST_F(HashCache, Sha256MatchesTheFipsVectors)
{
    write(m_dir / "abc", "abc");
    write(m_dir / "empty", "");
    write(m_dir / "two-blocks", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq");
    EXPECT_EQ(*sha256File((m_dir / "abc").string()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(*sha256File((m_dir / "empty").string()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(*sha256File((m_dir / "two-blocks").string()), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_FALSE(sha256File((m_dir / "missing").string()));
}

TEST_F(HashCache, ACachedHashIsUsedOnlyWhileTheFileIsUnchanged)
{
    const fs::path file = m_dir / "weights.safetensors", cache = m_dir / "cache" / "attnscope" / "sha256";
    write(file, "abc");
    const std::string abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    EXPECT_EQ(*sha256FileCached(file.string()), abc);
    ASSERT_TRUE(fs::exists(cache));
    EXPECT_EQ(slurpText(cache).substr(0, 65), abc + " ");

    // The cache is read: a hash planted in its line comes back while the file is as it was.
    const std::string planted = std::string(64, '7');
    std::string text = slurpText(cache);
    text.replace(0, 64, planted);
    write(cache, text);
    EXPECT_EQ(*sha256FileCached(file.string()), planted);
    EXPECT_EQ(*sha256FileCached((m_dir / "." / "weights.safetensors").string()), planted) << "the same file by another spelling";

    // Rewritten at the same size (a new modification time): hashed again.
    write(file, "abd");
    fs::last_write_time(file, fs::last_write_time(file) + std::chrono::seconds(1));
    EXPECT_EQ(*sha256FileCached(file.string()), *sha256File(file.string()));
    EXPECT_NE(*sha256FileCached(file.string()), planted);
    // Another size: hashed again.
    write(file, "abcd");
    EXPECT_EQ(*sha256FileCached(file.string()), "88d4266fd4e6338d13b845fcf289579d209c897823b9217da3e161936f031589");
    EXPECT_FALSE(sha256FileCached((m_dir / "missing").string()));
}

TEST_F(HashCache, WithoutACacheFolderItHashesEveryTime)
{
    write(m_dir / "cache", "a file where the cache folder would be");
    write(m_dir / "abc", "abc");
    EXPECT_EQ(*sha256FileCached((m_dir / "abc").string()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

} // namespace
