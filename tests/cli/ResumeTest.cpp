// Resume (docs/reliability.md, Resume): a dataset run killed or interrupted, rerun with the same arguments into the
// same folder, continues from its last checkpoint and writes exactly what an uninterrupted run writes; a rerun with
// another model, other images or other options refuses, saying which.
#include "CliSupport.h"

#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

using namespace attnscope;
using namespace attnscope::test;
namespace fs = std::filesystem;

namespace {

// The checkpoint a run has written so far: how many of its images are behind it (-1: none yet).
int checkpointPosition(const fs::path& out)
{
    const std::string text = slurp(out / ".attnscope-run" / "checkpoint.json"); // written atomically: whole or absent
    if (text.empty())
        return -1;
    return nlohmann::json::parse(text).value("position", -1);
}

// Starts a run and signals it once its checkpoints have passed `after` images; returns the wait status.
int signalAfter(const std::vector<std::string>& args, const fs::path& out, int after, int signal)
{
    const pid_t pid = startCli(args);
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (checkpointPosition(out) >= after || std::chrono::steady_clock::now() > deadline) {
            ::kill(pid, signal);
            return waitFor(pid);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return status;
}

// Every data file of an output folder (CSVs and stats.json, the runs' and the figures' included), by relative path.
std::map<std::string, std::string> dataFiles(const fs::path& dir)
{
    std::map<std::string, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
        const std::string ext = e.path().extension().string();
        if (e.is_regular_file() && (ext == ".csv" || e.path().filename() == "stats.json"))
            files[fs::relative(e.path(), dir).string()] = slurp(e.path());
    }
    return files;
}

// `resumed` (a run interrupted and resumed after `at` images) holds byte for byte what the uninterrupted `whole` does:
// every CSV (both runs', the grids' and the decomposition's) and the statistics.
void expectTheUninterruptedResult(const fs::path& whole, const fs::path& resumed, int at)
{
    const auto expected = dataFiles(whole), got = dataFiles(resumed);
    EXPECT_GE(expected.size(), 10u);
    for (const auto& [name, bytes] : expected) {
        ASSERT_TRUE(got.count(name)) << name << " is missing from the resumed run";
        EXPECT_TRUE(got.at(name) == bytes) << name << " differs from the uninterrupted run's";
    }
    EXPECT_EQ(got.size(), expected.size());
    const auto a = nlohmann::json::parse(slurp(whole / "manifest.json")), b = nlohmann::json::parse(slurp(resumed / "manifest.json"));
    EXPECT_EQ(a["images"], b["images"]);
    EXPECT_EQ(b["images"].size(), 30u);
    EXPECT_EQ(a["skipped"], b["skipped"]);
    EXPECT_EQ(b["skipped"].size(), 1u);
    EXPECT_EQ(a["resumed_at"], 0);
    EXPECT_EQ(b["resumed_at"], at);
    EXPECT_TRUE(b["complete"].get<bool>());
}

class Resume : public Cli {
protected:
    // 30 Fashion-MNIST samples (the ten in resources, three times) and a truncated PNG as the fourth image.
    void SetUp() override
    {
        Cli::SetUp();
        m_list = m_dir / "images.txt";
        const std::vector<fs::path> samples = fashionSamples();
        ASSERT_GE(samples.size(), 10u);
        const std::string png = slurp(samples.front());
        std::ofstream(m_dir / "broken.png", std::ios::binary) << png.substr(0, png.size() / 2);
        std::ofstream list(m_list);
        for (int i = 0; i < 30; ++i) {
            list << samples[size_t(i) % samples.size()].string() << "\n";
            if (i == 2)
                list << (m_dir / "broken.png").string() << "\n";
        }
    }
    std::vector<std::string> args(const fs::path& out, std::vector<std::string> more = {}) const
    {
        std::vector<std::string> a { "analyze", "--model", "builtin:fmnist-vit-d4", "--images", m_list.string(), "--out", out.string(),
                                     "--neutreno", "0.5", "--grid-images", "2", "--analyses", "similarity,attention,centres,snr,decomposition",
                                     "--batch", "1", "--threads", "1", "--checkpoint-seconds", "0", "--formats", "none" };
        a.insert(a.end(), more.begin(), more.end());
        return a;
    }
    std::string command(const std::vector<std::string>& a) const
    {
        std::string s;
        for (size_t i = 1; i < a.size(); ++i)
            s += (s.empty() ? "" : " ") + a[i];
        return a[0] + " " + s;
    }
    fs::path m_list;
};

TEST_F(Resume, AKilledRunResumesToExactlyTheUninterruptedResult)
{
    const fs::path whole = m_dir / "whole", killed = m_dir / "killed";
    const CliResult reference = cli(command(args(whole)));
    ASSERT_EQ(reference.status, 3) << reference.err; // the broken image is skipped
    EXPECT_FALSE(fs::exists(whole / ".attnscope-run")) << "a complete run leaves no journal";

    // Killed once 12 images are behind the run, twice (the second kill lands in the resumed run).
    for (int after : { 12, 20 }) {
        const int status = signalAfter(args(killed), killed, after, SIGKILL);
        ASSERT_TRUE(WIFSIGNALED(status)) << "the run finished before the kill after " << after << " images";
        EXPECT_GE(checkpointPosition(killed), after);
        EXPECT_LT(checkpointPosition(killed), 31);
    }
    const int at = checkpointPosition(killed);
    const CliResult resumed = cli(command(args(killed)));
    ASSERT_EQ(resumed.status, 3) << resumed.err;
    EXPECT_EQ(countLines(resumed.err, "resuming the unfinished run in .* after " + std::to_string(at) + " of 31 images"), 1) << resumed.err;
    EXPECT_EQ(countLines(resumed.err, "attnscope-cli: skipped"), 0) << "the skipped image is remembered, not reported again: " << resumed.err;
    EXPECT_EQ(countLines(resumed.err, "30 images analysed, 1 skipped"), 1) << resumed.err;
    EXPECT_FALSE(fs::exists(killed / ".attnscope-run"));

    expectTheUninterruptedResult(whole, killed, at);
}

TEST_F(Resume, AnInterruptedRunRefusesAnotherRunAndFreshStartsAgain)
{
    const fs::path out = m_dir / "out";
    const int status = signalAfter(args(out), out, 5, SIGINT);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 130) << status;
    const int at = checkpointPosition(out);
    ASSERT_GE(at, 5);

    const auto refused = [&](const std::vector<std::string>& a, const std::string& why) {
        const CliResult r = cli(command(a));
        EXPECT_EQ(r.status, 1) << r.err;
        EXPECT_EQ(countLines(r.err, "holds an unfinished run \\(" + std::to_string(at) + " of 31 images behind it\\) that differs"), 1) << r.err;
        EXPECT_EQ(countLines(r.err, why), 1) << r.err;
        EXPECT_EQ(checkpointPosition(out), at) << "a refused run leaves the journal as it was";
    };
    refused(args(out, { "--seed", "7" }), "--seed 0 then, 7 now");
    refused(args(out, { "--draws", "2" }), "--draws 1 then, 2 now");
    // The identity is the option table's (report/RunSpec.h), named by its flags: a variant asked anew says --boost.
    refused(args(out, { "--boost", "0.3" }), "--boost none then, 0.3 now");
    std::vector<std::string> otherModel = args(out);
    otherModel[2] = "builtin:fmnist-neutreno-d4";
    refused(otherModel, "--model \"builtin:fmnist-vit-d4 \\(sha256 [0-9a-f]{12}\\)\" then, \"builtin:fmnist-neutreno-d4");
    std::vector<std::string> otherImages = args(out);
    otherImages[4] = ATTNSCOPE_SOURCE_DIR "/resources/samples/fashion-mnist";
    refused(otherImages, "image 4: .*broken.png then, .*fashion-mnist/test-[0-9]+-[a-z]+.png now");
    std::vector<std::string> otherVariant = args(out);
    otherVariant[8] = "0.7";
    refused(otherVariant, "run 2's neutreno 0.5 then, 0.7 now");

    // The figures' options are no part of what is resumed.
    std::vector<std::string> oneGrid = args(out);
    oneGrid[10] = "1";
    const CliResult resumed = cli(command(oneGrid));
    EXPECT_EQ(resumed.status, 3) << resumed.err;
    EXPECT_EQ(countLines(resumed.err, "resuming the unfinished run"), 1) << resumed.err;

    const CliResult fresh = cli(command(args(out, { "--fresh", "--seed", "7" })));
    EXPECT_EQ(fresh.status, 3) << fresh.err;
    EXPECT_EQ(countLines(fresh.err, "resuming"), 0) << fresh.err;
    const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
    EXPECT_EQ(manifest["resumed_at"], 0);
    EXPECT_EQ(manifest["images"].size(), 30u);
    EXPECT_FALSE(fs::exists(out / ".attnscope-run"));
}

TEST_F(Resume, AnInterruptedBatchedRunResumesToExactlyTheUninterruptedResult)
{
    // Batches of 4 with two in flight (Report.cpp): the interrupt lands while a batch is queued on both runs (the model
    // and its variant) and not yet written out; it is then finished on both or dropped on both, never on one only, and
    // the checkpoint written on the way out is where the resumed run continues.
    const auto batched = [&](const fs::path& out) {
        std::vector<std::string> a = args(out);
        *(std::find(a.begin(), a.end(), "--batch") + 1) = "4";
        return a;
    };
    const fs::path whole = m_dir / "whole", interrupted = m_dir / "interrupted";
    const CliResult reference = cli(command(batched(whole)));
    ASSERT_EQ(reference.status, 3) << reference.err;
    const int status = signalAfter(batched(interrupted), interrupted, 8, SIGINT);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 130) << "the run finished before the interrupt: " << status;
    const int at = checkpointPosition(interrupted);
    EXPECT_GE(at, 8);
    EXPECT_LT(at, 31);
    EXPECT_EQ(at % 4, 0) << "a checkpoint inside a batch";
    const auto journal = nlohmann::json::parse(slurp(interrupted / ".attnscope-run" / "checkpoint.json"));
    for (const auto& run : journal["runs"]) // every run holds the images behind the position, the skipped one aside
        EXPECT_EQ(run.value("images", -1), at - 1) << run.dump().substr(0, 200);
    const CliResult resumed = cli(command(batched(interrupted)));
    ASSERT_EQ(resumed.status, 3) << resumed.err;
    EXPECT_EQ(countLines(resumed.err, "resuming the unfinished run in .* after " + std::to_string(at) + " of 31 images"), 1) << resumed.err;
    expectTheUninterruptedResult(whole, interrupted, at);
}

} // namespace
