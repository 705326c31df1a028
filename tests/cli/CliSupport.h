#pragma once

#include "TestSupport.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

namespace attnscope::test {

// Whether the attnscope-cli under test draws figures (the Qt build) or writes only their CSVs and says so in one
// line (the headless build, ATTNSCOPE_GUI=OFF). Tests that check figures expect the one or the other.
inline constexpr bool kCliDrawsFigures = ATTNSCOPE_CLI_DRAWS_FIGURES;

// The lines of `text` that match `pattern`.
inline int countLines(const std::string& text, const std::string& pattern)
{
    const std::regex re(pattern);
    std::istringstream in(text);
    int n = 0;
    for (std::string line; std::getline(in, line);)
        n += std::regex_search(line, re);
    return n;
}

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

// The Fashion-MNIST sample PNGs in resources/samples/fashion-mnist, sorted.
inline std::vector<std::filesystem::path> fashionSamples()
{
    std::vector<std::filesystem::path> samples;
    for (const auto& e : std::filesystem::directory_iterator(ATTNSCOPE_SOURCE_DIR "/resources/samples/fashion-mnist"))
        if (e.path().extension() == ".png")
            samples.push_back(e.path());
    std::sort(samples.begin(), samples.end());
    return samples;
}

// Starts attnscope-cli with `args` from the source folder, output discarded; returns its pid.
inline pid_t startCli(const std::vector<std::string>& args)
{
    const pid_t pid = fork();
    if (pid != 0)
        return pid;
    if (chdir(ATTNSCOPE_SOURCE_DIR) != 0)
        _exit(126);
    if (FILE* null = std::fopen("/dev/null", "w")) {
        dup2(fileno(null), 1);
        dup2(fileno(null), 2);
    }
    std::vector<char*> argv { const_cast<char*>(ATTNSCOPE_CLI) };
    for (const auto& a : args)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(ATTNSCOPE_CLI, argv.data());
    _exit(127);
}

inline int waitFor(pid_t pid)
{
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

} // namespace attnscope::test
