// attnscope-cli as a user runs it: exit codes, messages, and the files it writes.
#include "CliSupport.h"

#include <attnscope/CpuKernels.h>

#include <nlohmann/json.hpp>


#include <fstream>
#include <functional>
#include <sstream>

using namespace attnscope;
using namespace attnscope::test;
namespace fs = std::filesystem;

namespace {

TEST_F(Cli, VersionAndHelp)
{
    auto v = cli("--version");
    EXPECT_EQ(v.status, 0);
    EXPECT_NE(v.out.find("attnscope"), std::string::npos);
    EXPECT_NE(v.out.find("(LibTorch " + attnscope::libtorchVersion() + ")"), std::string::npos) << v.out;
    auto h = cli("--help");
    EXPECT_EQ(h.status, 0);
    EXPECT_NE(h.out.find("analyze"), std::string::npos);
    EXPECT_EQ(cli("analyze --help").status, 0);
}

TEST_F(Cli, BadUsageExitsWithTwo)
{
    EXPECT_EQ(cli("").status, 2);
    EXPECT_EQ(cli("frobnicate").status, 2);
    EXPECT_EQ(cli("analyze --images x.png").status, 2); // --model is required
    EXPECT_EQ(cli("info --no-such-flag").status, 2);
}

TEST_F(Cli, InfoDescribesTheModel)
{
    auto r = cli("info tests/golden/fixtures/timm_dinov2_reg --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["layers"], 2);
    EXPECT_EQ(j["heads"], 3);
    EXPECT_EQ(j["width"], 48);
    EXPECT_EQ(j["patch_size"], 14);
    EXPECT_EQ(j["grid"], nlohmann::json({ 4, 4 }));
    EXPECT_EQ(j["prefix_tokens"], nlohmann::json({ "cls", "reg0", "reg1", "reg2", "reg3" }));
    EXPECT_EQ(j["naming"], "timm");
    EXPECT_EQ(j["family"], "dinov2");
    EXPECT_TRUE(j["layer_scale"].get<bool>());
    EXPECT_FALSE(j["pos_embed_includes_prefix"].get<bool>());
    EXPECT_GT(j["parameters"].get<int64_t>(), 0);
    auto text = cli("info tests/golden/fixtures/tv_hf");
    ASSERT_EQ(text.status, 0);
    EXPECT_NE(text.out.find("huggingface naming"), std::string::npos) << text.out;
}

TEST_F(Cli, InfoOnMissingModelFailsWithOneLine)
{
    auto r = cli("info /nonexistent/model.safetensors");
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("/nonexistent/model.safetensors: no such file"), std::string::npos) << r.err;
}

// The issue's "done when": an HF-named conversion of torchvision's ViT, with HF config and preprocessor config,
// analysed from an image file, reproduces torchvision's logits, attention and block outputs (relative 1e-4).
TEST_F(Cli, AnalyzeDumpTensorsReproducesTheReference)
{
    for (const std::string fixture : { "tv_hf", "tv_timm" }) {
        const std::string ref = goldenDir() + "/" + fixture;
        const auto out = m_dir / fixture;
        auto r = cli("analyze --model " + ref + " --images " + ref + "/image.png --out " + out.string() + " --dump-tensors");
        ASSERT_EQ(r.status, 0) << r.err;
        const auto tensors = out / "tensors" / "image";
        EXPECT_TRUE(closeTo(loadNpy((tensors / "logits.npy").string()), loadNpy(ref + "/logits.npy"), 1e-4));
        for (int l = 1; l <= 2; ++l)
            EXPECT_TRUE(closeTo(loadNpy((tensors / ("attn_L" + std::to_string(l) + ".npy")).string()),
                                loadNpy(ref + "/attn_L" + std::to_string(l) + ".npy"), 1e-4));
        for (int l = 0; l <= 2; ++l)
            EXPECT_TRUE(closeTo(loadNpy((tensors / ("block_L" + std::to_string(l) + ".npy")).string()),
                                loadNpy(ref + "/block_L" + std::to_string(l) + ".npy"), 1e-4));
        const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
        EXPECT_EQ(manifest["images"].size(), 1u);
        EXPECT_EQ(manifest["model"]["sha256"].get<std::string>().size(), 64u);
        EXPECT_TRUE(manifest["complete"].get<bool>());
        // predictions.csv: header + top 5, probabilities descending and summing to at most 1
        std::istringstream csv(slurp(out / "predictions.csv"));
        std::string line;
        std::getline(csv, line);
        EXPECT_EQ(line, "image,rank,class,label,prob");
        int rows = 0;
        double last = 2, sum = 0;
        while (std::getline(csv, line)) {
            const double p = std::stod(line.substr(line.rfind(',') + 1));
            EXPECT_LE(p, last);
            last = p;
            sum += p;
            ++rows;
        }
        EXPECT_EQ(rows, 5);
        EXPECT_LE(sum, 1.0 + 1e-6);
    }
}

TEST_F(Cli, AnalyzeFolderOfSamplePhotosWritesEveryImage)
{
    auto r = cli("analyze --model tests/golden/fixtures/tv_timm --images resources/samples --out " + m_dir.string() + " --dump-tensors");
    ASSERT_EQ(r.status, 0) << r.err;
    for (const char* stem : { "astronaut", "chelsea", "coffee", "rocket" }) {
        const auto a = loadNpy((m_dir / "tensors" / stem / "attn_L2.npy").string());
        EXPECT_EQ(a.shape(), (std::vector<int64_t> { 4, 17, 17 })) << stem;
        EXPECT_EQ(loadNpy((m_dir / "tensors" / stem / "block_L0.npy").string()).shape(), (std::vector<int64_t> { 17, 64 }));
    }
    for (const auto& e : fs::recursive_directory_iterator(m_dir))
        EXPECT_EQ(e.path().string().find(".tmp-"), std::string::npos) << "left a temporary file: " << e.path();
}

// More than one thread wants libgomp's passive waiting, which must be in the environment before the process
// starts: the CLI sets it and execs itself again; a policy the user set stays.
TEST_F(Cli, ThreadsAboveOneRunWithPassiveWaiting)
{
    const std::string args = "analyze --model builtin:fmnist-vit-d4 --images resources/samples/fashion-mnist/test-0000-ankle-boot.png"
                             " --analyses similarity --formats png --threads 2 --out ";
    auto r = cli(args + (m_dir / "a").string(), "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT ");
    ASSERT_EQ(r.status, 0) << r.err;
    auto manifest = nlohmann::json::parse(slurp(m_dir / "a" / "manifest.json"));
    EXPECT_EQ(manifest["options"]["threads"], 2);
    EXPECT_EQ(manifest["options"]["intra_op_threads"], 2);
    EXPECT_EQ(manifest["options"]["inter_op_threads"], 2);
    EXPECT_EQ(manifest["options"]["omp_wait_policy"], "PASSIVE");
    // which kernels ran on this CPU (docs/performance.md, "Which kernels run where"), whichever they are
    for (const char* part : { "linear", "attention" })
        EXPECT_FALSE(manifest["options"]["cpu_kernels"][part].get<std::string>().empty()) << part;
    r = cli(args + (m_dir / "b").string(), "env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=ACTIVE ");
    ASSERT_EQ(r.status, 0) << r.err;
    manifest = nlohmann::json::parse(slurp(m_dir / "b" / "manifest.json"));
    EXPECT_EQ(manifest["options"]["omp_wait_policy"], "ACTIVE");
}

// With --strict an image that cannot be read stops the run: one line naming it, status 1, nothing written.
TEST_F(Cli, AnalyzeBadImageFailsWithOneLine)
{
    std::ofstream(m_dir / "broken.png") << "not an image at all";
    auto r = cli("analyze --strict --model tests/golden/fixtures/tv_timm --images " + (m_dir / "broken.png").string() + " --out "
                 + (m_dir / "out").string());
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("broken.png"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(m_dir / "out" / "manifest.json"));
}

TEST_F(Cli, AnalyzeImageListFile)
{
    std::ofstream(m_dir / "list.txt") << "# two photos\n" ATTNSCOPE_SOURCE_DIR "/resources/samples/photos/chelsea.png\n"
                                      << ATTNSCOPE_SOURCE_DIR "/resources/samples/photos/coffee.png\n";
    auto r = cli("analyze --model tests/golden/fixtures/tv_hf --images " + (m_dir / "list.txt").string() + " --out " + (m_dir / "o").string());
    ASSERT_EQ(r.status, 0) << r.err;
    const auto manifest = nlohmann::json::parse(slurp(m_dir / "o" / "manifest.json"));
    EXPECT_EQ(manifest["images"].size(), 2u);
}

TEST_F(Cli, ThirdPartyCheckpointThroughTheCli)
{
    const std::string pt = sharedDir() + "/models/cifar10-vit-tintn/model_final.pt";
    if (!fs::exists(pt))
        GTEST_SKIP() << pt << " is absent";
    auto r = cli("info " + pt + " --description docs/examples/cifar10-vit-tintn.json --json");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["parameters"], 119098);
    auto bad = cli("info " + pt);
    EXPECT_EQ(bad.status, 1);
    EXPECT_NE(bad.err.find("attnscope.json"), std::string::npos) << bad.err;
}

} // namespace

// Every usage error of analyze, info and merge exits with 2 (docs/design.md section 6: 2 on bad usage), with one line
// naming the option; a failure of the run itself (a missing model) stays 1.
TEST_F(Cli, EveryUsageErrorExitsWithTwo)
{
    const std::string images = " --images resources/samples/fashion-mnist --out " + (m_dir / "out").string();
    const std::string analyze = "analyze --model builtin:fmnist-vit-d4" + images;
    const std::pair<std::string, std::string> cases[] = {
        { analyze + " --device gpu", "--device gpu: expected auto, cpu, cuda or cuda:<i>" },
        { analyze + " --device cuda:x", "--device cuda:x" },
        { analyze + " --analyses smilarity", "unknown analysis \"smilarity\"" },
        { analyze + " --noise gauss:sigma=8", "unknown kind" },
        { analyze + " --shard 3/2", "--shard 3/2: expected K/N" },
        { analyze + " --formats gif", "unknown format \"gif\"" },
        { analyze + " --batch -1", "--batch -1" },
        { analyze + " --precision fp16", "unknown precision" },
        { analyze + " --rollout median", "unknown head fusion" },
        { analyze + " --draws x", "" },
        { "info builtin:fmnist-vit-d4 --device gpu", "--device gpu" },
        { "info", "give a MODEL" },
        { "merge " + m_dir.string() + " --out " + (m_dir / "m").string() + " --formats gif", "unknown format" },
    };
    for (const auto& [args, message] : cases) {
        auto r = cli(args);
        EXPECT_EQ(r.status, 2) << args << "\n" << r.err;
        EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
        EXPECT_FALSE(fs::exists(m_dir / "out")) << args;
    }
    EXPECT_EQ(cli("analyze --model no/such/model.safetensors" + images).status, 1);
}

// A value no file records and attnscope takes from a convention (heads = width/64) is a warning from info and analyze,
// and is listed in their JSON: a wrong guess runs and is wrong, so it must not be silent.
TEST_F(Cli, GuessedHeadsAreAWarning)
{
    // fmnist-vit-d4's weights without its config.json and without the safetensors metadata that records its 4 heads.
    const fs::path bare = m_dir / "bare";
    fs::create_directories(bare);
    const std::string bytes = slurp(ATTNSCOPE_SOURCE_DIR "/resources/models/fmnist-vit-d4/model.safetensors");
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i)
        length = (length << 8) | uint8_t(bytes[size_t(i)]);
    auto header = nlohmann::json::parse(bytes.substr(8, length));
    ASSERT_TRUE(header.contains("__metadata__"));
    header.erase("__metadata__");
    const std::string text = header.dump();
    std::string prefix(8, '\0');
    for (int i = 0; i < 8; ++i)
        prefix[size_t(i)] = char((uint64_t(text.size()) >> (8 * i)) & 0xff);
    std::ofstream(bare / "model.safetensors", std::ios::binary) << prefix << text << bytes.substr(8 + length);
    auto info = cli("info " + bare.string() + " --json");
    ASSERT_EQ(info.status, 0) << info.err;
    EXPECT_EQ(countLines(info.err, "^attnscope-cli: warning: .*num_heads guessed as width/64 = 1"), 1) << info.err;
    EXPECT_EQ(nlohmann::json::parse(info.out)["guesses"].size(), 1u);
    auto recorded = cli("info builtin:fmnist-vit-d4 --json");
    ASSERT_EQ(recorded.status, 0) << recorded.err;
    EXPECT_EQ(recorded.err, "");
    EXPECT_TRUE(nlohmann::json::parse(recorded.out)["guesses"].empty());
    auto analyze = cli("analyze --model " + bare.string() + " --images resources/samples/fashion-mnist --analyses similarity --formats none --out "
                       + (m_dir / "out").string());
    ASSERT_EQ(analyze.status, 0) << analyze.err;
    EXPECT_EQ(countLines(analyze.err, "^attnscope-cli: warning: .*num_heads guessed"), 1) << analyze.err;
    EXPECT_EQ(nlohmann::json::parse(slurp(m_dir / "out" / "manifest.json"))["model"]["guesses"].size(), 1u);
}

namespace {

// A safetensors file's tensors under new names: the header is rewritten, the data (its offsets are relative to the
// data) copied as it is. Names `rename` maps to "" are left out of the header.
void writeRenamed(const fs::path& from, const fs::path& to, const std::function<std::string(const std::string&)>& rename)
{
    const std::string bytes = slurp(from);
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i)
        length = (length << 8) | uint8_t(bytes[size_t(i)]);
    const auto header = nlohmann::json::parse(bytes.substr(8, length));
    nlohmann::json renamed = nlohmann::json::object();
    for (const auto& [name, entry] : header.items())
        if (name == "__metadata__")
            renamed[name] = entry;
        else if (const std::string n = rename(name); !n.empty())
            renamed[n] = entry;
    const std::string text = renamed.dump();
    std::string prefix(8, '\0');
    for (int i = 0; i < 8; ++i)
        prefix[size_t(i)] = char((uint64_t(text.size()) >> (8 * i)) & 0xff);
    std::ofstream(to, std::ios::binary) << prefix << text << bytes.substr(8 + length);
}

} // namespace

// Keys of a foreign config.json that attnscope does not read are listed by info (text and JSON) and in analyze's
// manifest; not as a warning: Hugging Face and timm configs carry training settings. A key the resolver reads is not
// listed, whatever its value.
TEST_F(Cli, InfoListsIgnoredConfigKeys)
{
    const std::string hf = "tests/golden/fixtures/hf_vit_eps5"; // a ViTForImageClassification config.json
    auto r = cli("info " + hf + " --json");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err, "");
    const auto keys = nlohmann::json::parse(r.out)["ignored_config_keys"]["config.json"];
    const auto listed = [&](const nlohmann::json& list, const std::string& key) {
        return std::find(list.begin(), list.end(), key) != list.end();
    };
    for (const char* key : { "attention_probs_dropout_prob", "hidden_dropout_prob", "initializer_range", "label2id",
                             "encoder_stride", "qkv_bias" })
        EXPECT_TRUE(listed(keys, key)) << key << " in " << keys.dump();
    // Read: layer_norm_eps 1e-5 and hidden_act gelu_new (both unlike the defaults), the rest checked or taken as they are;
    // architectures is checked to name an encoder or classifier of the type (docs/models.md, "Families").
    for (const char* key : { "model_type", "architectures", "layer_norm_eps", "hidden_act", "hidden_size", "num_attention_heads", "num_hidden_layers",
                             "intermediate_size", "image_size", "patch_size", "num_channels", "id2label" })
        EXPECT_FALSE(listed(keys, key)) << key << " in " << keys.dump();

    auto text = cli("info " + hf);
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_EQ(countLines(text.out, "^ignored config keys \\(config\\.json\\): attention_probs_dropout_prob, .*hidden_dropout_prob, initializer_range"), 1)
        << text.out;
    EXPECT_EQ(countLines(text.out, "^ignored config keys.*layer_norm_eps"), 0) << text.out;

    // timm: model_args and pretrained_cfg keys are dotted; those read (act_layer, mean) are not listed.
    auto timm = cli("info tests/golden/fixtures/timm_clip_quickgelu --json");
    ASSERT_EQ(timm.status, 0) << timm.err;
    const auto timmKeys = nlohmann::json::parse(timm.out)["ignored_config_keys"]["config.json"];
    for (const char* key : { "num_classes", "model_args.pre_norm", "model_args.embed_dim", "pretrained_cfg.first_conv" })
        EXPECT_TRUE(listed(timmKeys, key)) << key << " in " << timmKeys.dump();
    for (const char* key : { "architecture", "model_args", "model_args.act_layer", "model_args.img_size", "pretrained_cfg.mean",
                             "pretrained_cfg.crop_pct" })
        EXPECT_FALSE(listed(timmKeys, key)) << key << " in " << timmKeys.dump();

    // A project's own config.json is not read at all: every key of it is listed (its head count plays no part).
    const fs::path own = m_dir / "own";
    fs::create_directories(own);
    fs::copy_file(ATTNSCOPE_SOURCE_DIR "/resources/models/fmnist-vit-d4/model.safetensors", own / "model.safetensors");
    std::ofstream(own / "config.json") << R"({"num_attention_heads": 8, "dropout": 0.1})";
    auto project = cli("info " + own.string() + " --json");
    ASSERT_EQ(project.status, 0) << project.err;
    EXPECT_EQ(nlohmann::json::parse(project.out)["ignored_config_keys"],
              nlohmann::json::parse(R"({"config.json": ["dropout", "num_attention_heads"]})"));

    // attnscope's own config.json is not foreign: nothing listed.
    auto builtin = cli("info builtin:fmnist-vit-d4 --json");
    ASSERT_EQ(builtin.status, 0) << builtin.err;
    EXPECT_TRUE(nlohmann::json::parse(builtin.out)["ignored_config_keys"].empty());
    EXPECT_EQ(countLines(cli("info builtin:fmnist-vit-d4").out, "^ignored config keys"), 0);

    auto analyze = cli("analyze --model " + hf + " --images " + hf + "/image.png --analyses similarity --formats none --out "
                       + (m_dir / "out").string());
    ASSERT_EQ(analyze.status, 0) << analyze.err;
    EXPECT_EQ(nlohmann::json::parse(slurp(m_dir / "out" / "manifest.json"))["model"]["ignored_config_keys"]["config.json"], keys);
}

// A model description whose rules leave tensors without attnscope's names fails with one line that names the
// description and those tensors as the checkpoint names them, once for all blocks.
TEST_F(Cli, DescriptionRuleMissingNamesTheTensors)
{
    // fmnist-vit-d4 saved as a ViT built on nn.TransformerEncoder would be (docs/model-description.md).
    const auto torchNames = [](const std::string& name) {
        static const std::pair<std::regex, std::string> rules[] = {
            { std::regex("^blocks\\.(\\d+)\\.attn\\.qkv\\.(weight|bias)$"), "encoder.layers.$1.self_attn.in_proj_$2" },
            { std::regex("^blocks\\.(\\d+)\\.attn\\.proj\\."), "encoder.layers.$1.self_attn.out_proj." },
            { std::regex("^blocks\\.(\\d+)\\.mlp\\.fc([12])\\."), "encoder.layers.$1.linear$2." },
            { std::regex("^blocks\\.(\\d+)\\."), "encoder.layers.$1." },
            { std::regex("^patch_embed\\.proj\\."), "to_patches." },
            { std::regex("^norm\\."), "encoder.norm." },
            { std::regex("^head\\."), "classifier." },
        };
        std::string n = name;
        for (const auto& [re, to] : rules)
            if (std::regex_search(n, re))
                return std::regex_replace(n, re, to);
        return n; // cls_token, pos_embed
    };
    const fs::path dir = m_dir / "torch";
    fs::create_directories(dir);
    writeRenamed(ATTNSCOPE_SOURCE_DIR "/resources/models/fmnist-vit-d4/model.safetensors", dir / "model.safetensors", torchNames);
    const std::vector<std::pair<std::string, std::string>> allRules = {
        { "^encoder\\.layers\\.(\\d+)\\.self_attn\\.in_proj_(weight|bias)$", "blocks.$1.attn.qkv.$2" },
        { "^encoder\\.layers\\.(\\d+)\\.self_attn\\.out_proj\\.", "blocks.$1.attn.proj." },
        { "^encoder\\.layers\\.(\\d+)\\.linear1\\.", "blocks.$1.mlp.fc1." },
        { "^encoder\\.layers\\.(\\d+)\\.linear2\\.", "blocks.$1.mlp.fc2." },
        { "^encoder\\.layers\\.(\\d+)\\.norm([12])\\.", "blocks.$1.norm$2." },
        { "^to_patches\\.", "patch_embed.proj." },
        { "^encoder\\.norm\\.", "norm." },
        { "^classifier\\.", "head." },
    };
    const auto describe = [&](const std::vector<std::pair<std::string, std::string>>& rules) {
        nlohmann::json d = { { "attnscope_description", 1 }, { "architecture", { { "num_heads", 4 }, { "final_norm", true } } } };
        d["rename"] = nlohmann::json::array();
        for (const auto& [from, to] : rules)
            d["rename"].push_back({ from, to });
        std::ofstream(dir / "attnscope.json") << d.dump(2);
    };
    const auto without = [&](size_t rule) {
        auto rules = allRules;
        rules.erase(rules.begin() + long(rule));
        return rules;
    };
    const std::string description = (dir / "attnscope.json").string();
    const auto expectOneLine = [&](const CliResult& r, const std::string& text) {
        EXPECT_EQ(r.status, 1) << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_NE(r.err.find(description + ": after its rename rules, "), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
    };

    describe(allRules);
    auto ok = cli("info " + dir.string() + " --json");
    ASSERT_EQ(ok.status, 0) << ok.err;
    EXPECT_EQ(nlohmann::json::parse(ok.out)["layers"], 4);

    // The in_proj rule forgotten: no block has attn.qkv, so the names follow no convention at all.
    describe(without(0));
    expectOneLine(cli("info " + dir.string()),
                  "8 tensors of " + (dir / "model.safetensors").string() + " have names attnscope does not use: "
                      "encoder.layers.{0..3}.self_attn.in_proj_bias (not renamed), encoder.layers.{0..3}.self_attn.in_proj_weight "
                      "(not renamed); add or fix a rename rule for them");
    // A rule onto a name attnscope does not know: the checkpoint's name and what the rule made of it.
    auto typo = allRules;
    typo[3].second = "blocks.$1.mlp.fc_2.";
    describe(typo);
    expectOneLine(cli("info " + dir.string()), "encoder.layers.{0..3}.linear2.bias (renamed to blocks.{0..3}.mlp.fc_2.bias), "
                                               "encoder.layers.{0..3}.linear2.weight (renamed to blocks.{0..3}.mlp.fc_2.weight)");
    // One tensor outside the blocks.
    describe(without(7));
    expectOneLine(cli("info " + dir.string()), "2 tensors of " + (dir / "model.safetensors").string()
                                                   + " have names attnscope does not use: classifier.bias (not renamed), "
                                                     "classifier.weight (not renamed)");
}
