// The one table of a dataset run's options (report/RunSpec.h, issue 44): every door is made from it or checked against
// it. The CLI's flags are registered from the table (each is in `analyze --help` with its help), the manifest records
// each option under the table's key, and every option has a value as a run resolves it. Python's keywords are checked
// in tests/python/test_analyze.py.
#include "CliSupport.h"

#include "RunSpec.h"

#include <nlohmann/json.hpp>

#include <set>

using namespace attnscope::test;

TEST_F(Cli, EveryRunOptionIsAFlagWithItsHelp)
{
    auto r = cli("analyze --help");
    ASSERT_EQ(r.status, 0) << r.err;
    std::set<std::string> names;
    for (const RunOption& o : runOptions()) {
        EXPECT_TRUE(names.insert(o.cli).second) << o.cli << " twice in the table";
        EXPECT_NE(r.out.find(std::string("--") + o.cli + " "), std::string::npos) << "--" << o.cli << " missing from --help";
        // CLI11 wraps long help; the first words are on the flag's line.
        const std::string help = o.help;
        EXPECT_NE(r.out.find(help.substr(0, std::min<size_t>(help.size(), 24))), std::string::npos) << o.cli;
        EXPECT_EQ(runOptionNamed(o.cli), &o);
    }
}

TEST_F(Cli, EveryRunOptionHasAResolvedValueAndTheManifestRecordsIt)
{
    ReportRequest request;
    ASSERT_TRUE(applyRunSpec(RunSpec {}, [](const std::string& n) { return n; }, request));
    const auto resolved = resolvedRunOptions(request, nlohmann::json::array(), 16, false);
    for (const RunOption& o : runOptions())
        EXPECT_TRUE(resolved.contains(o.cli)) << o.cli << " has no resolved value (report/RunSpec.cpp, resolvedRunOptions)";
    EXPECT_EQ(resolved.size(), runOptions().size()) << resolved.dump();

    const auto out = m_dir / "out";
    auto run = cli("analyze --model builtin:fmnist-vit-d4 --images resources/samples/fashion-mnist/test-0000-ankle-boot.png --out " + out.string()
                   + " --analyses similarity,norms,ablation --ablation mean --outlier-ratio 3 --draws 2 --neutreno 0.5 --formats none");
    ASSERT_EQ(run.status, 0) << run.err;
    const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
    for (const RunOption& o : runOptions())
        if (*o.manifest)
            EXPECT_TRUE(manifest["options"].contains(o.manifest)) << o.manifest << " missing from the manifest's options";
    EXPECT_EQ(manifest["options"]["ablation"], "mean");
    EXPECT_EQ(manifest["options"]["outlier_ratio"], 3.0);
    EXPECT_EQ(manifest["options"]["draws"], 2);
    EXPECT_EQ(manifest["options"]["neutreno_lambda"], 0.5);
    EXPECT_TRUE(manifest["options"]["boost_t"].is_null());
}
