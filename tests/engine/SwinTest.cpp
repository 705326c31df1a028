// Swin and Swin v2 (docs/models.md, "Swin"), each from the folder its own code writes (tests/golden/make_swin.py:
// timm's save_for_hf, transformers' save_pretrained): that code's logits, every block's attention per window (the
// relative position bias and the shifted windows' mask inside the softmax) and every block's output, to 1e-4 of the
// largest.
#include "FamiliesSupport.h"
#include "TestSupport.h"

#include <attnscope/Analyses.h>
#include <attnscope/Model.h>

#include "checkpoint/SafeTensors.h"

#include <ATen/ATen.h>

#include <regex>

using namespace attnscope;
using namespace attnscope::test;
using namespace attnscope::test::families;

namespace {

std::string swinDir() { return ATTNSCOPE_TEST_SOURCE_DIR "/golden/swin"; }

void expectSwinReferenceNumbers(const Model& model, const std::string& dir)
{
RunOptions options;
options.record = RecordSpec::everything();
auto trace = model.run(loadNpy(dir + "/input.npy"), options);
ASSERT_TRUE(trace.ok()) << trace.message();
EXPECT_TRUE(closeTo(trace->logits, loadNpy(dir + "/logits.npy"), 1e-4)) << "logits";
const int depth = model.config().depth;
ASSERT_EQ(int(trace->attention.size()), depth + 1);
for (int l = 1; l <= depth; ++l)
    EXPECT_TRUE(closeTo(trace->attention[size_t(l)], loadNpy(dir + "/attn_L" + std::to_string(l) + ".npy"), 1e-4))
        << "attention " << l;
for (int l = 0; l <= depth; ++l)
    EXPECT_TRUE(closeTo(trace->blocks[size_t(l)], loadNpy(dir + "/block_L" + std::to_string(l) + ".npy"), 1e-4))
        << "block " << l;
}

} // namespace

TEST(Swin, TimmAndHuggingFaceSwinsGiveTheirOwnCodesNumbers)
{
    struct Case {
        const char* folder;
        Hierarchy hierarchy;
        const char* naming;
    };
    for (const Case& c : { Case { "timm_swin", Hierarchy::Swin, "timm" },
             Case { "timm_swin_pad", Hierarchy::Swin, "timm" }, Case { "timm_swinv2", Hierarchy::SwinV2, "timm" },
             Case { "timm_swinv2_pw", Hierarchy::SwinV2, "timm" }, Case { "hf_swin", Hierarchy::Swin, "huggingface" },
             Case { "hf_swinv2", Hierarchy::SwinV2, "huggingface" } }) {
        SCOPED_TRACE(c.folder);
        const std::string dir = swinDir() + "/" + c.folder;
        auto model = loadSwin(dir);
        ASSERT_TRUE(model);
        const ModelInfo& info = model->info();
        EXPECT_EQ(info.config.hierarchy, c.hierarchy);
        EXPECT_EQ(info.family, c.hierarchy == Hierarchy::Swin ? "swin" : "swinv2");
        EXPECT_EQ(info.naming, c.naming);
        EXPECT_EQ(info.config.numClasses, 5);
        EXPECT_EQ(info.config.numPrefixTokens(), 0);
        expectSwinReferenceNumbers(*model, dir);
    }
}

// The blocks of timm_swin (a 64-pixel input at patch 4, window 4, two blocks in each of three stages): 16, 4 and 1
// windows; the odd blocks' windows shifted by 2 but in the last stage, whose 4 x 4 grid is one window.
// On two threads the Swin's linear layers are cut into blocks of rows, each an OpenBLAS product on a team thread of its
// own (where the build keeps OpenBLAS on one thread for the ViT's oneDNN layers): timm's numbers still, and one thread's
// to float rounding.
TEST(Swin, TwoThreadsGiveTimmsNumbers)
{
    struct Threads {
        Threads() { setNumThreads(2); }
        ~Threads() { setNumThreads(1); }
    };
    for (const char* folder : { "timm_swin", "timm_swinv2" }) {
        SCOPED_TRACE(folder);
        auto model = loadSwin(swinDir() + "/" + folder);
        ASSERT_TRUE(model);
        const Tensor input = loadNpy(swinDir() + "/" + folder + "/input.npy");
        auto one = model->run(input);
        ASSERT_TRUE(one) << one.message();
        Threads two;
        expectSwinReferenceNumbers(*model, swinDir() + "/" + folder);
        auto both = model->run(input);
        ASSERT_TRUE(both) << both.message();
        EXPECT_TRUE(closeTo(both->logits, one->logits, 1e-5));
    }
}

TEST(Swin, BlocksHaveTheirStagesGridWindowAndShift)
{
    auto model = loadSwin(swinDir() + "/timm_swin");
    ASSERT_TRUE(model);
    const auto blocks = windowBlocks(model->config());
    ASSERT_EQ(blocks.size(), 6u);
    const int grids[] = { 16, 16, 8, 8, 4, 4 }, shifts[] = { 0, 2, 0, 2, 0, 0 }, windows[] = { 16, 16, 4, 4, 1, 1 };
    for (size_t i = 0; i < 6; ++i) {
        EXPECT_EQ(blocks[i].gridH, grids[i]) << i;
        EXPECT_EQ(blocks[i].shiftH, shifts[i]) << i;
        EXPECT_EQ(blocks[i].numWindows(), windows[i]) << i;
        EXPECT_EQ(blocks[i].windowArea(), 16) << i;
        EXPECT_EQ(blocks[i].heads, 2 << (i / 2)) << i;
    }
    const ModelInfo& info = model->info();
    EXPECT_NE(
        std::find(info.inferred.begin(), info.inferred.end(), "windows 4, 4, 4: config.json model_args.window_size"),
        info.inferred.end());
    auto other = model->withInputSize(96, 96);
    ASSERT_FALSE(other.ok());
    EXPECT_CONTAINS(other.message(), "a Swin runs at its input size 64x64 only");
}

// The original release's layout (microsoft/Swin-Transformer, timm before 0.9): patch merging at the end of a stage,
// the masks and indices saved as buffers. Made from timm_swin's tensors: the same numbers. A bare file: the windows come
// from the tables' sizes and the input size is a guess, said as one.
TEST_F(Families, TheOriginalSwinLayoutGivesTheSameNumbers)
{
    TensorMap moved;
    for (auto& [name, tensor] : readSafetensors(swinDir() + "/timm_swin/model.safetensors").tensors) {
        std::smatch m;
        static const std::regex down("^layers\\.(\\d+)\\.downsample\\.(.*)$");
        if (std::regex_match(name, m, down))
            moved["layers." + std::to_string(std::stoi(m[1]) - 1) + ".downsample." + m[2].str()] = tensor;
        else
            moved[name] = tensor;
    }
    moved["layers.0.blocks.1.attn_mask"] = at::zeros({ 16, 16, 16 });
    moved["layers.0.blocks.0.attn.relative_position_index"] = at::zeros({ 16, 16 });
    ASSERT_TRUE(moved.count("layers.0.downsample.reduction.weight"));
    writeSafetensors((m_dir / "swin_tiny_patch4_window7_224.safetensors").string(), moved);
    LoadOptions options;
    options.acceptHierarchical = true;
    auto model = Model::load((m_dir / "swin_tiny_patch4_window7_224.safetensors").string(), options);
    ASSERT_TRUE(model.ok()) << model.message();
    ASSERT_EQ((*model)->info().guesses.size(), 1u);
    EXPECT_CONTAINS((*model)->info().guesses[0], "input size 224x224: no config.json states it");
    auto at64 = (*model)->withInputSize(64, 64);
    EXPECT_FALSE(at64.ok()); // a Swin runs at the size it was made for: a config must say 64
    writeBytes(m_dir / "config.json", json({ { "architecture", "swin_tiny_patch4_window7_224" },
                                             { "model_args", { { "img_size", 64 }, { "window_size", 4 } } } })
                                          .dump());
    model = Model::load(m_dir.string(), options);
    ASSERT_TRUE(model.ok()) << model.message();
    expectSwinReferenceNumbers(**model, swinDir() + "/timm_swin");
}

TEST_F(Families, SwinsThatCannotBeRunAsTheySayAreRefused)
{
    const auto copy = [&](const std::string& folder, const std::function<void(json&)>& edit) {
        fs::remove_all(m_dir);
        fs::create_directories(m_dir);
        fs::copy_file(swinDir() + "/" + folder + "/model.safetensors", m_dir / "model.safetensors");
        auto cfg = json::parse(readBytes(swinDir() + "/" + folder + "/config.json"));
        if (edit)
            edit(cfg);
        writeBytes(m_dir / "config.json", cfg.dump());
        return refusal(m_dir.string());
    };
    EXPECT_CONTAINS(copy("timm_swin", [](json& c) { c["model_args"]["window_size"] = 8; }),
        "layers.0.blocks.0.attn.relative_position_bias_table: shape [49, 2], expected [225, 2] for a 8x8 window");
    EXPECT_CONTAINS(copy("timm_swin", [](json& c) { c["model_args"]["ape"] = true; }),
        "model_args.ape = true changes the model in a way attnscope does not run");
    EXPECT_CONTAINS(copy("timm_swin",
                        [](json& c) {
                            c["model_args"]["depths"] = { 2, 2, 6 };
                        }),
        "depths [2,2,6] contradicts the checkpoint's blocks per stage (2, 2, 2)");
    EXPECT_CONTAINS(copy("timm_swin", [](json& c) { c["architecture"] = "swinv2_tiny_window8_256"; }),
        "architecture \"swinv2_tiny_window8_256\" is not one of timm 1.0.31's swin models");
    EXPECT_CONTAINS(copy("timm_swin", [](json& c) { c["model_args"]["img_size"] = 66; }),
        "image size 66x66 is not a positive multiple of the patch size 4");
    EXPECT_CONTAINS(copy("timm_swin", [](json& c) { c["architecture"] = "swinv2_cr_tiny_224"; }),
        "swinv2_cr_tiny_224: attnscope does not run timm's SwinTransformerV2Cr");
    EXPECT_CONTAINS(copy("hf_swinv2",
                        [](json& c) {
                            c["model_type"] = "swin";
                            c["architectures"] = { "SwinForImageClassification" };
                        }),
        "model_type \"swin\", but the tensors are a Swin v2's");
    // where traces are read as a ViT's (a program that did not ask for a Swin's), a Swin is refused saying so
    EXPECT_CONTAINS(refusal(swinDir() + "/timm_swin"),
        "timm_swin: a Swin (hierarchical windowed attention), whose traces are per window and per stage: a program that "
        "reads them as a ViT's does not take it (LoadOptions::acceptHierarchical;");
    // a Swin v2's tensors alone do not say its windows
    fs::remove(m_dir / "config.json");
    EXPECT_CONTAINS(refusal(m_dir.string()), "a Swin v2 checkpoint alone does not say its windows");
}

// Head ablation of a Swin (docs/analyses.md section 8): a head zeroed gives the logits of the same model with that
// head's columns of the block's projection zeroed; every block's heads are its stage's.
TEST_F(Families, ASwinsHeadsAblateAsTheirProjectionColumnsZeroed)
{
    auto model = loadSwin(swinDir() + "/timm_swin");
    ASSERT_TRUE(model);
    const Tensor input = loadNpy(swinDir() + "/timm_swin/input.npy");
    // block 3 is stage 2's first: 4 heads of width 8 over 32 channels; head 2 is columns 16..23 of its projection
    TensorMap tensors = readSafetensors(swinDir() + "/timm_swin/model.safetensors").tensors;
    at::Tensor& proj = tensors.at("layers.1.blocks.0.attn.proj.weight");
    ASSERT_EQ(proj.size(1), 32);
    proj = proj.clone();
    proj.slice(1, 16, 24).zero_();
    writeSafetensors((m_dir / "model.safetensors").string(), tensors);
    writeBytes(m_dir / "config.json", readBytes(swinDir() + "/timm_swin/config.json"));
    auto edited = loadSwin(m_dir.string());
    ASSERT_TRUE(edited);
    auto expected = edited->run(input, {});
    ASSERT_TRUE(expected.ok()) << expected.message();
    for (AblationMode mode : { AblationMode::Zero, AblationMode::Mean }) {
        RunOptions ablated;
        ablated.ablatedHeads = { { 3, 2 } };
        ablated.ablation = mode;
        auto traces = model->runBatch({ input }, ablated);
        ASSERT_TRUE(traces.ok()) << traces.message();
        if (mode == AblationMode::Zero)
            EXPECT_TRUE(closeTo(traces->front().logits, expected->logits, 1e-5)) << "zero ablation";
        else
            EXPECT_FALSE(closeTo(traces->front().logits, expected->logits, 1e-3)) << "the mean is not zero";
    }
    // every head of every block, each block's own count: 2 + 2 + 4 + 4 + 8 + 8
    auto all = headAblation(*model, input, AblationMode::Zero, {});
    ASSERT_TRUE(all.ok()) << all.message();
    EXPECT_EQ(all->heads.size(), 28u);
    EXPECT_EQ(all->heads[4].layer, 3);
    EXPECT_EQ(all->heads[6].head, 2);
    // a head stage 1 has not: refused in one line
    auto outside = headAblation(*model, input, AblationMode::Zero, {}, 0, { { 1, 2 } });
    ASSERT_FALSE(outside.ok());
    EXPECT_CONTAINS(outside.message(), "head ablation: layer 1 head 2 is outside the model's layers 1..6 and heads 0..1");
}
