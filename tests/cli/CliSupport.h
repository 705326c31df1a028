#pragma once

#include "TestSupport.h"

#include <sys/wait.h>

#include <fstream>

namespace attnscope::test {

struct CliResult {
    int status = -1;
    std::string out;
    std::string err;
};

inline std::string slurp(const std::filesystem::path& p)
{
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Runs attnscope-cli from the source folder, with stdout and stderr captured.
class Cli : public ::testing::Test {
protected:
    void SetUp() override { m_dir = scratchDir(::testing::UnitTest::GetInstance()->current_test_info()->name()); }
    void TearDown() override { std::filesystem::remove_all(m_dir); }

    CliResult cli(const std::string& args, const std::string& wrapper = "")
    {
        const auto out = m_dir / "stdout.txt", err = m_dir / "stderr.txt";
        const std::string cmd = std::string("cd " ATTNSCOPE_SOURCE_DIR " && ") + wrapper + ATTNSCOPE_CLI " " + args + " >" + out.string()
            + " 2>" + err.string() + " </dev/null";
        const int raw = std::system(cmd.c_str());
        CliResult r;
        r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
        r.out = slurp(out);
        r.err = slurp(err);
        return r;
    }

    std::filesystem::path m_dir;
};

} // namespace attnscope::test
