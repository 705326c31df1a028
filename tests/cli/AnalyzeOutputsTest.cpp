// `analyze` and `merge` outputs: CSV schemas of docs/design.md section 7, figures, shards that merge to the unsharded
// run, Ctrl-C, and the dataset means of 200 CIFAR-10 images against the float64 reference (make_analyses.py).
#include "CliSupport.h"

#include <attnscope/Image.h>
#include <attnscope/Statistics.h>
#include <attnscope/AnalysisRun.h>

#include <nlohmann/json.hpp>

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace attnscope;
using namespace attnscope::test;
namespace fs = std::filesystem;

namespace {

std::string firstLine(const fs::path& p)
{
    std::ifstream in(p);
    std::string line;
    std::getline(in, line);
    return line;
}

double num(const std::string& s) { return csvNumber(s); }

// What a run that asked for figures must leave in figures/: the CSV of what every figure plots, in both builds; the
// figures themselves in each format (the Qt build), or none of them and one line on stderr saying that figures need
// the Qt build, the run going on with the data (the headless build).
void expectFigures(const CliResult& r, const fs::path& dir, const std::vector<std::string>& figures,
                   const std::vector<std::string>& formats)
{
    const auto manifest = nlohmann::json::parse(slurp(dir / "manifest.json"));
    for (const auto& figure : figures) {
        const fs::path csv = dir / "figures" / (figure + ".csv");
        EXPECT_GE(countLines(slurp(csv), "."), 2) << csv << ": no data rows";
        for (const auto& format : formats) {
            const fs::path drawn = dir / "figures" / (figure + "." + format);
            if (kCliDrawsFigures)
                EXPECT_GT(fs::exists(drawn) ? fs::file_size(drawn) : 0, 1000u) << drawn;
            else
                EXPECT_FALSE(fs::exists(drawn)) << drawn << ": drawn by a build without Qt";
        }
    }
    if (kCliDrawsFigures) {
        EXPECT_EQ(manifest["figures"]["drawn"], nlohmann::json(formats));
        EXPECT_FALSE(manifest["figures"].contains("not_drawn"));
        EXPECT_EQ(countLines(r.err, "Qt"), 0) << r.err;
    } else {
        EXPECT_EQ(manifest["figures"]["drawn"], nlohmann::json::array());
        EXPECT_NE(manifest["figures"].value("not_drawn", "").find("Qt build"), std::string::npos) << manifest["figures"];
        EXPECT_EQ(countLines(r.err, "figures need the Qt build"), 1) << r.err;
        EXPECT_EQ(countLines(r.err, "Qt"), 1) << r.err;
    }
}

TEST_F(Cli, AnalyzeWritesEveryCsvAndFigure)
{
    auto r = cli("analyze --model tests/golden/fixtures/tv_grid16 --images resources/samples --out " + m_dir.string()
                 + " --analyses similarity,attention,centres,snr,decomposition --noise gaussian:sigma=8 --formats png,svg,pdf");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(firstLine(m_dir / "token_similarity.csv"), "layer,tap,tokens,mean,sd,ci95,n");
    EXPECT_EQ(firstLine(m_dir / "head_centres.csv"),
              "layer,head,centre_dy,centre_dx,peak_dy,peak_dx,mean_distance_px,bandwidth,prefix_mass,window_mass,n");
    EXPECT_EQ(firstLine(m_dir / "attention_similarity.csv"), "layer,successive_cos,head_redundancy,n");
    EXPECT_EQ(firstLine(m_dir / "snr.csv"), "layer,tap,snr_db_mean,snr_db_sd,n");
    EXPECT_EQ(firstLine(m_dir / "snr_diagnostics.csv"), "layer,alpha,beta,gamma,gain,bound,condition_holds,sensitivity");
    for (const auto& row : readCsv(m_dir / "snr_diagnostics.csv"))
        EXPECT_GE(num(row.at("gain")), num(row.at("bound")) * (1 - 1e-9)) << "layer " << row.at("layer");
    const std::vector<std::string> figures { "token_similarity", "snr", "snr_diagnostics", "head_centres", "attention_distance",
                                             "attention_grid", "logit_decomposition" };
    expectFigures(r, m_dir, figures, { "png", "svg", "pdf" });
    EXPECT_EQ(firstLine(m_dir / "figures" / "attention_grid.csv"), "layer,head,row,col,attention");
    EXPECT_EQ(firstLine(m_dir / "figures" / "logit_decomposition.csv"), "term,query,key,value");
    if (!kCliDrawsFigures)
        return;
    for (const auto& figure : figures) {
        auto png = decodeImage((m_dir / "figures" / (figure + ".png")).string());
        ASSERT_TRUE(png.ok()) << png.message();
        EXPECT_GT(png->width, 600) << figure;
        std::set<uint8_t> levels(png->pixels.begin(), png->pixels.end());
        EXPECT_GT(levels.size(), 20u) << figure << " looks blank";
    }
    std::ifstream svg(m_dir / "figures" / "token_similarity.svg");
    const std::string svgText((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
    EXPECT_NE(svgText.find("<svg"), std::string::npos);
    std::ifstream pdf(m_dir / "figures" / "snr.pdf");
    std::string magic(4, '\0');
    pdf.read(magic.data(), 4);
    EXPECT_EQ(magic, "%PDF");
}

// Without --formats the Qt build draws PNGs; the headless build writes the data alone (the figures' CSVs too) and
// says nothing about figures nobody asked for. Either way a successful run's stderr holds progress and the summary
// only, also where XDG_RUNTIME_DIR is unset (root in a container, batch jobs), which made Qt warn.
TEST_F(Cli, AnalyzeStderrIsCleanWithoutRuntimeDir)
{
    const fs::path tmp = m_dir / "tmp";
    fs::create_directories(tmp);
    auto r = cli("analyze --model builtin:fmnist-vit-d4 --images resources/samples/fashion-mnist --analyses similarity,attention,centres"
                 " --out " + (m_dir / "out").string(),
                 "env -u XDG_RUNTIME_DIR TMPDIR=" + tmp.string() + " ");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err.find("QStandardPaths"), std::string::npos) << r.err;
    EXPECT_EQ(countLines(r.err, "."), countLines(r.err, "^analyze: |^attnscope-cli: 10 images analysed; results in ")) << r.err;
    const auto manifest = nlohmann::json::parse(slurp(m_dir / "out" / "manifest.json"));
    EXPECT_EQ(manifest["figures"]["drawn"], kCliDrawsFigures ? nlohmann::json { "png" } : nlohmann::json::array());
    EXPECT_EQ(fs::exists(m_dir / "out" / "figures" / "head_centres.png"), kCliDrawsFigures);
    EXPECT_GE(countLines(slurp(m_dir / "out" / "figures" / "head_centres.csv"), "."), 2);
    // Where Qt runs, it found the runtime folder it would have made itself: private to this user.
    if (kCliDrawsFigures) {
        const auto perms = fs::status(tmp / ("runtime-" + std::string(getpwuid(geteuid())->pw_name))).permissions();
        EXPECT_EQ(perms & fs::perms::all, fs::perms::owner_all);
    }
}

TEST_F(Cli, ShardsMergeToTheUnshardedRun)
{
    const std::string common = " --model tests/golden/fixtures/tv_grid16 --images resources/samples --seed 7";
    ASSERT_EQ(cli("analyze" + common + " --formats png --out " + (m_dir / "all").string()).status, 0);
    std::string dirs;
    for (int k = 1; k <= 3; ++k) {
        // The figure formats do not shape the numbers: shards that differ only there (the Qt build's default and
        // the headless build's) merge.
        const auto d = m_dir / ("shard" + std::to_string(k));
        auto r = cli("analyze" + common + (k == 3 ? " --formats ''" : " --formats png") + " --shard " + std::to_string(k) + "/3 --out "
                     + d.string());
        ASSERT_EQ(r.status, 0) << r.err;
        dirs += " " + d.string();
    }
    auto merged = cli("merge" + dirs + " --formats png --out " + (m_dir / "merged").string());
    ASSERT_EQ(merged.status, 0) << merged.err;
    const auto read = [](const fs::path& p) {
        std::ifstream in(p);
        return *statisticsFromJson(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
    };
    const StatsTable all = read(m_dir / "all" / "stats.json"), parts = read(m_dir / "merged" / "stats.json");
    ASSERT_EQ(all.size(), parts.size());
    for (const auto& [key, s] : all) {
        ASSERT_TRUE(parts.count(key)) << key;
        const auto& p = parts.at(key);
        EXPECT_EQ(p.count(), s.count()) << key;
        EXPECT_NEAR(p.mean(), s.mean(), 1e-12 * std::max(1.0, std::fabs(s.mean()))) << key;
        EXPECT_NEAR(p.sd(), s.sd(), 1e-9 * std::max(1.0, s.sd())) << key;
    }
    EXPECT_TRUE(fs::exists(m_dir / "merged" / "token_similarity.csv"));
    expectFigures(merged, m_dir / "merged", { "token_similarity", "snr", "head_centres", "attention_distance" }, { "png" });
    const auto manifest = nlohmann::json::parse(std::ifstream(m_dir / "merged" / "manifest.json"));
    EXPECT_EQ(manifest["images"].size(), 14u);
    // Options that do shape the numbers must agree.
    const auto otherSeed = m_dir / "other-seed";
    ASSERT_EQ(cli("analyze --model tests/golden/fixtures/tv_grid16 --images resources/samples --seed 8 --formats png --shard 2/3 --out "
                  + otherSeed.string())
                  .status,
              0);
    auto mismatch = cli("merge " + (m_dir / "shard1").string() + " " + otherSeed.string() + " --out " + (m_dir / "bad").string());
    EXPECT_EQ(mismatch.status, 1);
    EXPECT_EQ(countLines(mismatch.err, "other options than .*shards must match"), 1) << mismatch.err;
}

TEST_F(Cli, InterruptLeavesNoPartialFile)
{
    std::ofstream list(m_dir / "many.txt");
    for (int i = 0; i < 400; ++i)
        list << ATTNSCOPE_SOURCE_DIR "/resources/samples/photos/chelsea.png\n";
    list.close();
    const auto out = m_dir / "out";
    // Ctrl-C one second after the output folder appears (the model is loaded and images are being analysed),
    // however long loading takes (sanitizer builds are slow).
    std::ofstream script(m_dir / "interrupt.sh");
    script << "\"$@\" &\npid=$!\ni=0\nwhile [ ! -d '" << out.string() << "' ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\n"
           << "sleep 1\nkill -INT $pid\nwait $pid\n";
    script.close();
    auto r = cli("analyze --model tests/golden/fixtures/tv_grid16 --images " + (m_dir / "many.txt").string() + " --out " + out.string()
                     + " --formats png",
                 "sh " + (m_dir / "interrupt.sh").string() + " ");
    EXPECT_EQ(r.status, 130) << r.err;
    for (const auto& e : fs::recursive_directory_iterator(out))
        EXPECT_EQ(e.path().string().find(".tmp-"), std::string::npos) << e.path();
    const auto manifest = nlohmann::json::parse(std::ifstream(out / "manifest.json"));
    EXPECT_FALSE(manifest["complete"].get<bool>());
    EXPECT_LT(manifest["images"].size(), 400u);
}

TEST_F(Cli, DatasetMeansOf200ImagesMatchTheReference)
{
    const std::string images = sharedDir() + "/data/cifar10-test-1000";
    if (!fs::exists(images))
        GTEST_SKIP() << images << " is absent";
    // The reference's order: sorted(glob('<dir>/*/*.jpg'))[:200]
    std::vector<std::string> paths;
    for (const auto& e : fs::recursive_directory_iterator(images))
        if (e.path().extension() == ".jpg")
            paths.push_back(e.path().string());
    std::sort(paths.begin(), paths.end());
    std::ofstream list(m_dir / "cifar200.txt");
    for (size_t i = 0; i < 200; ++i)
        list << paths[i] << "\n";
    list.close();
    auto r = cli("analyze --model tests/golden/fixtures/tv_grid16 --images " + (m_dir / "cifar200.txt").string() + " --out "
                 + (m_dir / "out").string() + " --analyses similarity,centres --formats png");
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string ref = ATTNSCOPE_TEST_SOURCE_DIR "/golden/analyses/cifar200_tv_grid16/";
    const auto ours = readCsv(m_dir / "out" / "token_similarity.csv");
    const auto theirs = readCsv(ref + "token_similarity.csv");
    ASSERT_EQ(ours.size(), theirs.size());
    std::map<std::string, std::map<std::string, std::string>> byKey;
    for (const auto& row : ours)
        byKey[row.at("layer") + row.at("tap") + row.at("tokens")] = row;
    for (const auto& t : theirs) {
        const auto& o = byKey.at(t.at("layer") + t.at("tap") + t.at("tokens"));
        EXPECT_NEAR(num(o.at("mean")), num(t.at("mean")), 1e-4 * std::fabs(num(t.at("mean")))) << t.at("layer") << t.at("tap");
        EXPECT_NEAR(num(o.at("sd")), num(t.at("sd")), 1e-4 * std::max(1e-2, num(t.at("sd"))));
        EXPECT_EQ(o.at("n"), t.at("n"));
    }
    const auto centres = readCsv(m_dir / "out" / "head_centres.csv");
    const auto refCentres = readCsv(ref + "head_centres.csv");
    ASSERT_EQ(centres.size(), refCentres.size());
    for (size_t i = 0; i < centres.size(); ++i) {
        for (const char* col : { "centre_dy", "centre_dx", "mean_distance_px", "bandwidth", "prefix_mass", "window_mass" })
            EXPECT_NEAR(num(centres[i].at(col)), num(refCentres[i].at(col)), 1e-4 * std::max(1e-2, std::fabs(num(refCentres[i].at(col)))))
                << "L" << centres[i].at("layer") << "H" << centres[i].at("head") << " " << col;
        // Per-image argmax peaks can flip on near-ties between float32 and float64 (the reference measured the
        // closest at 1.1e-4); one flip of 200 moves the mean by 0.005.
        for (const char* col : { "peak_dy", "peak_dx" })
            EXPECT_NEAR(num(centres[i].at(col)), num(refCentres[i].at(col)), 0.006) << col;
    }
}

} // namespace

// The GPU's path on the CPU: batches of 4 with the analyses as batched tensor operations (--analyses-on device) give
// the CSVs of one image at a time through the host loops, and the manifest says how the run went. The attention grid,
// whose maps the device path does not copy back, is still drawn; the dumped tensors (copied back behind the batch's
// analyses, two batches in flight) are the host path's.
TEST_F(Cli, BatchedDevicePathWritesTheHostPathsNumbers)
{
    const std::string common = "analyze --model builtin:fmnist-vit-d4 --images resources/samples/fashion-mnist --noise gaussian:sigma=8"
                               " --noise blur:sigma=1 --draws 2 --formats png --dump-tensors";
    auto host = cli(common + " --batch 1 --analyses-on host --out " + (m_dir / "host").string());
    ASSERT_EQ(host.status, 0) << host.err;
    auto device = cli(common + " --batch 4 --analyses-on device --out " + (m_dir / "device").string());
    ASSERT_EQ(device.status, 0) << device.err;
    const auto manifest = nlohmann::json::parse(slurp(m_dir / "device" / "manifest.json"));
    EXPECT_EQ(manifest["options"]["batch"], 4);
    EXPECT_EQ(manifest["options"]["analyses_on"], "device");
    EXPECT_EQ(manifest["options"]["precision"], "fp32");
    EXPECT_EQ(manifest["options"]["device"], "cpu");
    EXPECT_EQ(nlohmann::json::parse(slurp(m_dir / "host" / "manifest.json"))["options"]["analyses_on"], "host");
    EXPECT_EQ(manifest["images"].size(), 10u);
    // Batches of 4 and of 1 agree to float32 rounding, not bit for bit: the matrix kernels block their sums by batch
    // shape differently on some CPUs (OpenBLAS on AVX2; docs/performance.md, "Which numbers are bit for bit"), so
    // every number within 1e-5 relative, plus one unit of the 7th printed digit for the predictions' probabilities.
    int compared = 0;
    for (const char* csv : { "token_similarity.csv", "head_centres.csv", "attention_similarity.csv", "snr_gaussian-sigma-8.csv",
                             "snr_diagnostics_blur-sigma-1.csv", "predictions.csv" }) {
        const auto a = readCsv(m_dir / "host" / csv), b = readCsv(m_dir / "device" / csv);
        ASSERT_EQ(a.size(), b.size()) << csv;
        ASSERT_FALSE(a.empty()) << csv;
        for (size_t i = 0; i < a.size(); ++i)
            for (const auto& [column, value] : a[i]) {
                if (column == "tap" || column == "tokens" || value.empty() || value == "nan")
                    continue;
                char* end = nullptr;
                const double x = std::strtod(value.c_str(), &end);
                if (*end != '\0') { // text (a file name, a class name): the same
                    EXPECT_EQ(b[i].at(column), value) << csv << " row " << i << " " << column;
                    continue;
                }
                const double printed = std::string(csv) == "predictions.csv" ? 1e-6 : 1e-9; // written with 6 digits
                EXPECT_NEAR(num(b[i].at(column)), x, 1e-5 * std::abs(x) + printed) << csv << " row " << i << " " << column;
                ++compared;
            }
    }
    EXPECT_GT(compared, 300);
    EXPECT_EQ(slurp(m_dir / "host" / "figures" / "attention_grid.csv"), slurp(m_dir / "device" / "figures" / "attention_grid.csv"));
    int tensors = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(m_dir / "host" / "tensors")) {
        if (!e.is_regular_file())
            continue;
        const auto relative = std::filesystem::relative(e.path(), m_dir / "host");
        EXPECT_TRUE(closeTo(loadNpy((m_dir / "device" / relative).string()), loadNpy(e.path().string()), 1e-5)) << relative;
        ++tensors;
    }
    EXPECT_EQ(tensors, 10 * 10); // logits, 4 maps and 5 block outputs of each image
}

// Bad values of the batch options are usage errors: one line each and status 2, before anything is written.
TEST_F(Cli, BatchOptionsRefuseBadValues)
{
    const std::string common = "analyze --model builtin:fmnist-vit-d4 --images resources/samples/fashion-mnist --out " + (m_dir / "out").string();
    const std::pair<std::string, std::string> cases[] = {
        { " --batch -2", "--batch -2: expected 0" },
        { " --precision fp16", "unknown precision \"fp16\" (fp32, tf32, bf16)" },
        { " --precision tf32 --device cpu", "--precision tf32 needs a CUDA device" },
        { " --analyses-on gpu", "--analyses-on gpu: expected auto, device or host" },
        { " --cuda-graph --device cpu", "--cuda-graph: needs a CUDA device (the model runs on cpu)" },
    };
    for (const auto& [args, message] : cases) {
        auto r = cli(common + args);
        EXPECT_EQ(r.status, 2) << args;
        EXPECT_EQ(countLines(r.err, "."), 1) << r.err;
        EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(m_dir / "out")) << args;
    }
}

// --formats none: the data only, the figures' CSVs included, no picture in any build.
TEST_F(Cli, FormatsNoneWritesTheDataOnly)
{
    auto r = cli("analyze --model builtin:fmnist-vit-d4 --images resources/samples/fashion-mnist --analyses similarity,centres --formats none"
                 " --out " + (m_dir / "out").string());
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(fs::exists(m_dir / "out" / "figures" / "head_centres.csv"));
    EXPECT_FALSE(fs::exists(m_dir / "out" / "figures" / "head_centres.png"));
    EXPECT_EQ(nlohmann::json::parse(slurp(m_dir / "out" / "manifest.json"))["figures"]["drawn"], nlohmann::json::array());
    auto bad = cli("analyze --model builtin:fmnist-vit-d4 --images resources/samples/fashion-mnist --formats gif --out " + (m_dir / "bad").string());
    EXPECT_EQ(bad.status, 2);
    EXPECT_NE(bad.err.find("unknown format \"gif\" (png, svg, pdf, or none)"), std::string::npos) << bad.err;
}

// Every perturbation the help lists runs end to end, on an embedded model and on the third-party CIFAR checkpoint, and
// gives finite SNR curves (FGSM and PGD once failed on every image: autograd met the forward's inference tensors).
TEST_F(Cli, EveryPerturbationOfTheHelpRuns)
{
    auto help = cli("analyze --help");
    ASSERT_EQ(help.status, 0);
    const std::string models[] = { "builtin:fmnist-vit-d4 --images resources/samples/fashion-mnist/test-0000-ankle-boot.png"
                                   " resources/samples/fashion-mnist/test-0001-pullover.png",
                                   sharedDir() + "/models/cifar10-vit-tintn/model_final.pt --description docs/examples/cifar10-vit-tintn.json"
                                   " --images " + sharedDir() + "/data/cifar10-test-1000/cat/0000.jpg " + sharedDir()
                                   + "/data/cifar10-test-1000/ship/0000.jpg" };
    for (const char* spec : { "gaussian:sigma=8", "saltpepper:fraction=0.05", "blur:sigma=1.5", "jpeg:quality=30", "fgsm:eps=2",
                              "pgd:eps=2,steps=5" }) {
        const std::string kind = std::string(spec).substr(0, std::string(spec).find(':'));
        EXPECT_NE(help.out.find(kind + ":"), std::string::npos) << kind << " is not in the help";
        for (size_t m = 0; m < std::size(models); ++m) {
            if (m == 1 && !fs::exists(sharedDir() + "/models/cifar10-vit-tintn/model_final.pt"))
                continue; // tests read third-party models from ../shared when it is there
            SCOPED_TRACE(std::string(spec) + " on model " + std::to_string(m));
            const fs::path out = m_dir / (kind + std::to_string(m));
            auto r = cli("analyze --model " + models[m] + " --analyses snr --noise " + spec + " --formats none --out " + out.string());
            ASSERT_EQ(r.status, 0) << r.err;
            const auto rows = readCsv(out / "snr.csv");
            ASSERT_FALSE(rows.empty());
            for (const auto& row : rows) {
                EXPECT_TRUE(std::isfinite(num(row.at("snr_db_mean")))) << row.at("layer") << " " << row.at("tap");
                EXPECT_EQ(row.at("n"), "2");
            }
        }
    }
}

// --dump-tensors writes the tensors of every run: the model's under tensors/, a variant's under runs/<label>/tensors/,
// so that a variant can be checked by hand; they are its own (NeuTRENO changes the blocks' outputs).
TEST_F(Cli, DumpTensorsCoversTheExtraRuns)
{
    auto r = cli("analyze --model builtin:fmnist-vit-d4 --images resources/samples/fashion-mnist/test-0000-ankle-boot.png --neutreno 0.6"
                 " --analyses similarity --formats none --dump-tensors --out " + m_dir.string());
    ASSERT_EQ(r.status, 0) << r.err;
    const auto manifest = nlohmann::json::parse(slurp(m_dir / "manifest.json"));
    ASSERT_EQ(manifest["runs"].size(), 2u);
    const std::string folder = manifest["runs"][1]["folder"];
    const fs::path mine = m_dir / "tensors" / "test-0000-ankle-boot", variant = m_dir / folder / "tensors" / "test-0000-ankle-boot";
    for (const char* file : { "logits.npy", "attn_L1.npy", "attn_L4.npy", "block_L0.npy", "block_L4.npy" }) {
        EXPECT_TRUE(fs::exists(mine / file)) << (mine / file);
        EXPECT_TRUE(fs::exists(variant / file)) << (variant / file);
    }
    EXPECT_EQ(slurp(mine / "block_L0.npy"), slurp(variant / "block_L0.npy")); // the same embeddings
    EXPECT_NE(slurp(mine / "block_L4.npy"), slurp(variant / "block_L4.npy")); // the variant's own blocks
}

// An analysis the model refuses (the decomposition of a model without additive position embeddings) is one line
// naming the model, and the output folder the run would have made is not left behind.
TEST_F(Cli, RefusedAnalysisLeavesNoFolder)
{
    const fs::path out = m_dir / "refused";
    auto r = cli("analyze --model builtin:fmnist-quadratic --images resources/samples/fashion-mnist --analyses decomposition --out " + out.string());
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(countLines(r.err, "."), 1) << r.err;
    EXPECT_NE(r.err.find("builtin:fmnist-quadratic: the logit decomposition needs"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
}

// The attention grids: of any number of images, for any patch query, with the rollout's head fusion and discard share;
// the figure's CSV holds the chosen query's maps (they differ from the CLS query's), and the manifest the choices.
TEST_F(Cli, AttentionGridsForImagesQueriesAndRollouts)
{
    const std::string common = "analyze --model builtin:fmnist-vit-d4 --images resources/samples/fashion-mnist --analyses similarity --formats png";
    auto plain = cli(common + " --out " + (m_dir / "plain").string());
    ASSERT_EQ(plain.status, 0) << plain.err;
    auto r = cli(common + " --grid-images 3 --query 3,4 --rollout max --discard 0.5 --out " + (m_dir / "grids").string());
    ASSERT_EQ(r.status, 0) << r.err;
    int grids = 0;
    for (const auto& e : fs::directory_iterator(m_dir / "grids" / "figures"))
        grids += e.path().extension() == ".png" && e.path().filename().string().rfind("attention_grid_", 0) == 0;
    EXPECT_EQ(grids, kCliDrawsFigures ? 3 : 0);
    const fs::path first = m_dir / "grids" / "figures" / "attention_grid_test-0000-ankle-boot.csv";
    ASSERT_TRUE(fs::exists(first));
    EXPECT_NE(slurp(first), slurp(m_dir / "plain" / "figures" / "attention_grid.csv"));
    const auto options = nlohmann::json::parse(slurp(m_dir / "grids" / "manifest.json"))["options"];
    EXPECT_EQ(options["query"], "3,4");
    EXPECT_EQ(options["rollout"], "max");
    EXPECT_EQ(options["discard"], 0.5);
    EXPECT_EQ(options["grid_images"], 3);
    // A query outside this model's grid is found once the model is loaded (status 1); the rest are usage errors (2).
    const std::tuple<std::string, std::string, int> bad[] = {
        { " --query 7,0", "--query 7,0: outside the model's 7x7 patch grid", 1 },
        { " --query centre", "--query centre: expected cls or ROW,COL", 2 },
        { " --rollout median", "unknown head fusion \"median\" (mean, max, min)", 2 },
        { " --discard 1", "--discard 1.000000: expected a share from 0 up to (not including) 1", 2 },
        { " --grid-images -1", "--grid-images -1: expected 0 or more", 2 },
    };
    for (const auto& [args, message, status] : bad) {
        auto e = cli(common + args + " --out " + (m_dir / "bad").string());
        EXPECT_EQ(e.status, status) << args;
        EXPECT_EQ(countLines(e.err, "."), 1) << e.err;
        EXPECT_NE(e.err.find(message), std::string::npos) << e.err;
        EXPECT_FALSE(fs::exists(m_dir / "bad")) << args;
    }
}

// The head-kernel figure comes with the head centres, in every format, and its CSV is the offset maps: one row per
// cell of every head's (2R+1)^2 window, whose weights add up to the head's window mass in head_centres.csv (both are
// means over the images of the same per-image maps; 1e-6 covers the CSVs' 10 significant digits).
TEST_F(Cli, HeadKernelsFigureIsTheOffsetMaps)
{
    const std::string photos = " resources/samples/photos/";
    const std::string images = photos + "chelsea.png" + photos + "coffee.png" + photos + "rocket.jpg";
    auto r = cli("analyze --model tests/golden/fixtures/tv_grid16 --images" + images + " --analyses centres --formats png,svg,pdf --out "
                 + m_dir.string());
    ASSERT_EQ(r.status, 0) << r.err;
    expectFigures(r, m_dir, { "head_kernels" }, { "png", "svg", "pdf" });
    EXPECT_EQ(firstLine(m_dir / "figures" / "head_kernels.csv"), "label,layer,head,dy,dx,weight,centre_dy,centre_dx,bandwidth");

    std::map<std::pair<int, int>, double> windowMass, weights;
    for (const auto& row : readCsv(m_dir / "head_centres.csv"))
        windowMass[{ std::stoi(row.at("layer")), std::stoi(row.at("head")) }] = num(row.at("window_mass"));
    ASSERT_EQ(windowMass.size(), 12u); // tv_grid16: 3 layers x 4 heads
    const auto rows = readCsv(m_dir / "figures" / "head_kernels.csv");
    constexpr int radius = 3; // the default window
    EXPECT_EQ(rows.size(), windowMass.size() * (2 * radius + 1) * (2 * radius + 1));
    for (const auto& row : rows) {
        EXPECT_LE(std::abs(std::stoi(row.at("dy"))), radius);
        EXPECT_LE(std::abs(std::stoi(row.at("dx"))), radius);
        weights[{ std::stoi(row.at("layer")), std::stoi(row.at("head")) }] += num(row.at("weight"));
    }
    ASSERT_EQ(weights.size(), windowMass.size());
    for (const auto& [key, mass] : windowMass)
        EXPECT_NEAR(weights[key], mass, 1e-6) << "layer " << key.first << " head " << key.second;
}
