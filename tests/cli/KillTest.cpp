// SIGKILL during a dataset run (docs/reliability.md, Faults): every file under a final name is complete, whatever
// the moment of the kill, and a rerun with the same arguments completes.
#include "CliSupport.h"

#include <attnscope/Npy.h>

#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <regex>
#include <thread>

using namespace attnscope;
using namespace attnscope::test;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

// Fields of one CSV line, counting quoted commas as text.
size_t csvFields(const std::string& line)
{
    size_t fields = 1;
    bool quoted = false;
    for (char c : line) {
        if (c == '"')
            quoted = !quoted;
        else if (c == ',' && !quoted)
            ++fields;
    }
    return fields;
}

// Why a file under a final name is not whole ("" when it is): CSVs end in a newline and every row has the
// header's field count, JSON parses, an .npy's size is exactly its header's shape, a PNG ends with IEND, an
// SVG with </svg>, a PDF with %%EOF.
std::string incompleteness(const fs::path& path)
{
    const std::string bytes = slurp(path);
    const std::string ext = path.extension().string();
    if (bytes.empty())
        return "empty";
    if (ext == ".csv") {
        if (bytes.back() != '\n')
            return "no final newline";
        std::istringstream lines(bytes);
        std::string header, line;
        std::getline(lines, header);
        while (std::getline(lines, line))
            if (csvFields(line) != csvFields(header))
                return "row \"" + line + "\" has " + std::to_string(csvFields(line)) + " fields";
        return {};
    }
    if (ext == ".json")
        return nlohmann::json::accept(bytes) ? "" : "does not parse";
    if (ext == ".npy") {
        auto t = readNpy(path.string());
        if (!t)
            return t.message();
        const size_t headerEnd = 10 + size_t(uint8_t(bytes[8])) + 256 * size_t(uint8_t(bytes[9]));
        return bytes.size() == headerEnd + 4 * size_t(t->numel()) ? "" : "size disagrees with the header's shape";
    }
    if (ext == ".png")
        return bytes.size() > 12 && bytes.compare(bytes.size() - 8, 4, "IEND") == 0 ? "" : "no IEND chunk at the end";
    if (ext == ".svg")
        return bytes.find("</svg>") != std::string::npos ? "" : "no </svg>";
    if (ext == ".pdf")
        return bytes.find("%%EOF", bytes.size() > 64 ? bytes.size() - 64 : 0) != std::string::npos ? "" : "no %%EOF";
    return "not an output type";
}

// Temporary names: AtomicFile's "<final>.tmp-<pid>" and QSaveFile's "<final>.XXXXXX".
bool isTemporary(const std::string& name)
{
    static const std::regex temp(R"(.*\.(csv|json|npy|png|svg|pdf)\.(tmp-\d+|[A-Za-z0-9]{6})$)");
    return std::regex_match(name, temp);
}

// Checks every file under `dir`; returns the number of final files checked (and counts the temporary ones).
int checkOutputs(const fs::path& dir, int kill, int* temporaries = nullptr)
{
    int finals = 0;
    if (!fs::exists(dir))
        return 0;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
        // The journal a resume starts from (RunJournal.h) is no output: its appended files grow as the run goes.
        if (!e.is_regular_file() || e.path().parent_path().filename() == ".attnscope-run")
            continue;
        const std::string name = e.path().filename().string();
        if (isTemporary(name)) {
            if (temporaries)
                ++*temporaries;
            continue;
        }
        ++finals;
        const std::string why = incompleteness(e.path());
        EXPECT_TRUE(why.empty()) << "kill " << kill << ": " << e.path() << " is partial: " << why;
    }
    return finals;
}

TEST_F(Cli, SigkillAtRandomMomentsLeavesNoPartialFileAndARerunCompletes)
{
    // 40 Fashion-MNIST samples (the ten in resources, four times) with every tap dumped: 400 .npy files, then
    // CSVs, stats, figures and the manifest, so that kills land in every phase of the run.
    const fs::path list = m_dir / "images.txt";
    {
        std::ofstream out(list);
        const std::vector<fs::path> samples = fashionSamples();
        ASSERT_GE(samples.size(), 10u);
        for (int i = 0; i < 40; ++i)
            out << samples[size_t(i) % samples.size()].string() << "\n";
    }
    const fs::path out = m_dir / "out";
    const std::vector<std::string> args { "analyze", "--model", "builtin:fmnist-vit-d4", "--images", list.string(), "--out", out.string(),
                                          "--analyses", "similarity,attention,centres,snr", "--draws", "1", "--dump-tensors",
                                          "--formats", "png,svg", "--threads", "1" };

    // A complete run into a separate folder measures how long one takes.
    const auto t0 = clock_type::now();
    std::vector<std::string> timing = args;
    timing[6] = (m_dir / "timing").string();
    const int status = waitFor(startCli(timing));
    double runSeconds = std::chrono::duration<double>(clock_type::now() - t0).count();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the uninterrupted run failed: " << status;
    const int finalsOfAWholeRun = checkOutputs(m_dir / "timing", -1);
    EXPECT_GT(finalsOfAWholeRun, 400);

    // 20 kills at delays spread over (0, 1.05 x the run time), one in each twentieth, shuffled with a fixed seed.
    std::mt19937 rng(20240607);
    std::vector<double> fractions;
    for (int k = 0; k < 20; ++k)
        fractions.push_back((k + std::uniform_real_distribution<double>(0.05, 0.95)(rng)) / 20.0 * 1.05);
    std::shuffle(fractions.begin(), fractions.end(), rng);
    int killedWhileRunning = 0, temporaries = 0;
    std::string finalsAfterKills;
    for (int k = 0; k < 20; ++k) {
        // A fresh folder each time, so that every kill is checked on the files its own run wrote.
        fs::remove_all(out);
        const auto started = clock_type::now();
        const pid_t pid = startCli(args);
        // Sleep until the kill's moment, watching for an early finish: the timing run may have been slowed by other
        // work on the machine, so a run that ends sooner shortens the run time the later kills aim at.
        const auto deadline = started + std::chrono::duration<double>(fractions[size_t(k)] * runSeconds);
        int status = 0;
        pid_t ended = 0;
        while (clock_type::now() < deadline && (ended = waitpid(pid, &status, WNOHANG)) == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        if (ended == pid) {
            runSeconds = std::min(runSeconds, std::chrono::duration<double>(clock_type::now() - started).count());
        } else {
            ::kill(pid, SIGKILL);
            killedWhileRunning += WIFSIGNALED(waitFor(pid)); // not when it had finished before the signal
        }
        finalsAfterKills += " " + std::to_string(checkOutputs(out, k, &temporaries));
        if (HasFailure())
            return;
    }
    // Under load a run's length varies; most kills must still land before the run ends.
    EXPECT_GE(killedWhileRunning, 10) << "too few kills landed while the run was going (run: " << runSeconds << " s)";

    // A rerun with the same arguments, into the folder the last kill left, completes and leaves a complete,
    // consistent folder, without the temporaries of killed runs: the last kill's, and two planted as a kill while
    // writing a CSV (the engine's name.tmp-<pid>) and a figure (QSaveFile's name.XXXXXX) leaves them, the
    // latter aged past the minute after which nobody is writing it.
    fs::create_directories(out);
    const pid_t dead = startCli({ "--version" });
    waitFor(dead);
    std::ofstream(out / ("token_similarity.csv.tmp-" + std::to_string(dead))) << "image,layer\n1,";
    std::ofstream(out / "snr.png.Qw3rT7") << "\x89PNG";
    for (const auto& e : fs::recursive_directory_iterator(out))
        if (e.is_regular_file() && isTemporary(e.path().filename().string()))
            fs::last_write_time(e.path(), fs::file_time_type::clock::now() - std::chrono::minutes(5));
    const int rerun = waitFor(startCli(args));
    ASSERT_TRUE(WIFEXITED(rerun) && WEXITSTATUS(rerun) == 0) << "the rerun failed: " << rerun;
    int leftOver = 0;
    EXPECT_GE(checkOutputs(out, 20, &leftOver), finalsOfAWholeRun);
    EXPECT_EQ(leftOver, 0) << "the rerun left temporaries of the killed runs";
    const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
    EXPECT_TRUE(manifest["complete"].get<bool>());
    EXPECT_EQ(manifest["images"].size(), 40u);
    std::printf("[ measured ] one run %.2f s; %d of 20 kills landed while the CLI was running; complete files found after "
                "each kill:%s (of %d); %d temporary files left by the kills\n",
                runSeconds, killedWhileRunning, finalsAfterKills.c_str(), finalsOfAWholeRun, temporaries);
}

} // namespace
