// removeStaleTemporaries (attnscope/Files.h): what a killed run leaves goes, what a live writer or the user has stays.
#include "TestSupport.h"

#include <attnscope/Files.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

using namespace attnscope;
namespace fs = std::filesystem;

namespace {

void touch(const fs::path& p)
{
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "partial";
}

// The pid of a process that has exited and been reaped.
pid_t deadPid()
{
    const pid_t pid = ::fork();
    if (pid == 0)
        ::_exit(0);
    ::waitpid(pid, nullptr, 0);
    return pid;
}

} // namespace

TEST(StaleTemporaries, KilledRunsGoLiveWritersAndOtherFilesStay)
{
    const fs::path dir = test::scratchDir("stale-temporaries");
    const std::string dead = std::to_string(deadPid()), alive = std::to_string(::getpid());
    const auto old = fs::file_time_type::clock::now() - std::chrono::minutes(5);
    const std::vector<fs::path> gone { dir / ("token_similarity.csv.tmp-" + dead), dir / ("tensors/img/attn_l01.npy.tmp-" + dead),
                                       dir / "figures/snr.png.Ab3dE9" };
    const std::vector<fs::path> kept {
        dir / ("stats.json.tmp-" + alive),   // its writer is running
        dir / "figures/snr.svg.Xy12Zq",      // a QSaveFile temporary written to just now
        dir / ("notes.txt.tmp-" + dead),     // not a name a run writes
        dir / "tensors/attn.npy.tmp-/x",     // a file in a folder that merely looks like a temporary
        dir / "token_similarity.csv",        // a finished output
        dir / "figures/photo.png.backup1",   // seven characters: not QSaveFile's
        dir / "figures/snr.png.tmp-12x",     // not a pid
    };
    for (const auto& p : gone)
        touch(p);
    for (const auto& p : kept)
        touch(p);
    fs::last_write_time(dir / "figures/snr.png.Ab3dE9", old); // nobody has written to it for 5 minutes
    EXPECT_EQ(removeStaleTemporaries(dir.string(), 60.0), 3);
    for (const auto& p : gone)
        EXPECT_FALSE(fs::exists(p)) << p;
    for (const auto& p : kept)
        EXPECT_TRUE(fs::exists(p)) << p;
    EXPECT_EQ(removeStaleTemporaries((dir / "no-such-folder").string()), 0);
}
