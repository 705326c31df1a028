// Families (docs/models.md, "Families"): a config that names an architecture attnscope does not run exactly is refused in
// one line that names it and what it lacks; never run as the nearest family it resembles. The folders are timm's own
// (tests/golden/make_families.py: timm.models.save_for_hf of small seeded models).
#include "FamiliesSupport.h"
#include "TestSupport.h"

#include "checkpoint/ConfigResolver.h"
#include "checkpoint/Families.h"

#include <attnscope/Analyses.h>
#include <attnscope/QueryKey.h>
#include "checkpoint/ModelLoader.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <functional>
#include <numeric>
#include <fstream>

using namespace attnscope;
using namespace attnscope::test;
namespace fs = std::filesystem;
using nlohmann::json;

using namespace attnscope::test::families;

// Each folder as a user downloads it: refused, naming the architecture and what attnscope does not run.
TEST_F(Families, EachFamilyAttnscopeDoesNotRunIsRefusedNamingWhatItLacks)
{
    const std::pair<const char*, const char*> cases[] = {
        { "timm_relpos", "config.json: vit_relpos_small_patch16_224: attnscope does not run relative position embedding "
                         "(timm's relpos ViT)" },
    };
    for (const auto& [folder, expected] : cases) {
        SCOPED_TRACE(folder);
        EXPECT_CONTAINS(refusal(familiesDir() + "/" + folder), expected);
    }
}

// DINOv3's tensors alone (no config) look like a DINOv2 with registers and no position table; its positions are rotary.
// Without a statement of the position scheme it is refused, not run without positions.
TEST_F(Families, ACheckpointWithoutAPositionTableNeedsTheSchemeStated)
{
    fs::copy_file(familiesDir() + "/timm_dinov3/model.safetensors", m_dir / "model.safetensors");
    const std::string message = refusal((m_dir / "model.safetensors").string());
    EXPECT_CONTAINS(message, "model.safetensors: no position embedding tensor (pos_embed)");
    EXPECT_CONTAINS(message, "rotary (RoPE)");

    // Said in a description, a model without positions runs (and says how that was decided).
    writeBytes(m_dir / "attnscope.json",
               R"({"attnscope_description": 1, "architecture": {"num_heads": 2, "position": "none"}})");
    auto stated = Model::load((m_dir / "model.safetensors").string());
    ASSERT_TRUE(stated.ok()) << stated.message();
    const auto& inferred = (*stated)->info().inferred;
    EXPECT_NE(std::find(inferred.begin(), inferred.end(), "position: none, the model description"), inferred.end());

    writeBytes(m_dir / "attnscope.json",
               R"({"attnscope_description": 1, "architecture": {"num_heads": 2, "position": "rotary"}})");
    EXPECT_CONTAINS(refusal((m_dir / "model.safetensors").string()), "architecture.position must be \"learned\"");
    writeBytes(m_dir / "attnscope.json",
               R"({"attnscope_description": 1, "family": "dinov3", "architecture": {"num_heads": 2, "position": "none"}})");
    EXPECT_CONTAINS(refusal((m_dir / "model.safetensors").string()),
                    "attnscope.json: family \"dinov3\": its rotary position embedding has no tensor; open timm's DINOv3 "
                    "hub folder");
}

// A plain ViT under its timm name runs with what timm's registry says of it: heads (when model_args do not state them, as
// in configs of timm before 1.0.20), activation, eps, pooling; logits equal timm's (1e-4 of the largest).
TEST_F(Families, APlainViTUnderItsTimmNameRunsWithTheRegistrysFacts)
{
    struct Case {
        const char* folder;
        const char* architecture;
        int heads;
        Activation activation;
        Pooling pooling;
    };
    for (const Case& c : { Case { "timm_vit_small", "vit_small_patch16_224", 6, Activation::Gelu, Pooling::Token },
                           Case { "timm_siglip_gap", "vit_base_patch32_siglip_gap_256", 12, Activation::GeluTanh,
                                  Pooling::PatchMean },
                           Case { "timm_beit", "beit_base_patch16_224", 12, Activation::Gelu, Pooling::PatchMean },
                           Case { "timm_beitv2", "beitv2_base_patch16_224", 12, Activation::Gelu, Pooling::PatchMean },
                           Case { "timm_dinov3", "vit_small_patch16_dinov3", 6, Activation::Gelu, Pooling::PatchMean },
                           // MAE's and DINO's encoders, as timm saves them under their tags (no classifier)
                           Case { "timm_mae", "vit_base_patch16_224", 12, Activation::Gelu, Pooling::Token },
                           Case { "timm_dino", "vit_small_patch16_224", 6, Activation::Gelu, Pooling::Token } }) {
        SCOPED_TRACE(c.folder);
        const std::string dir = familiesDir() + "/" + c.folder;
        auto model = Model::load(dir);
        ASSERT_TRUE(model.ok()) << model.message();
        EXPECT_EQ((*model)->info().config.numHeads, c.heads);
        fs::remove_all(m_dir);
        fs::create_directories(m_dir);
        model = Model::load(editedCopy(c.folder, [](json& cfg) { cfg["model_args"].erase("num_heads"); }));
        ASSERT_TRUE(model.ok()) << model.message();
        const ModelInfo& info = (*model)->info();
        EXPECT_EQ(info.config.numHeads, c.heads);
        EXPECT_EQ(info.config.activation, c.activation);
        EXPECT_EQ(info.config.pooling, c.pooling);
        EXPECT_CONTAINS(info.recognition, std::string("timm ") + c.architecture + " (config.json architecture");
        EXPECT_NE(std::find(info.inferred.begin(), info.inferred.end(),
                            "heads " + std::to_string(c.heads) + ": timm's " + c.architecture),
                  info.inferred.end());
        EXPECT_TRUE(info.guesses.empty());
        expectReferenceNumbers(**model, dir);
    }
}

// transformers' BeitForImageClassification as save_pretrained writes it: the same relative position bias, q and v biases
// without k, layer scale (lambda_1, lambda_2) and mean pooling through its pooler's norm; transformers' numbers.
TEST(Beit, HuggingFaceBeitGivesTransformersNumbers)
{
    const std::string dir = familiesDir() + "/hf_beit";
    auto model = Model::load(dir);
    ASSERT_TRUE(model.ok()) << model.message();
    const ModelInfo& info = (*model)->info();
    EXPECT_EQ(info.family, "beit");
    EXPECT_EQ(info.naming, "huggingface");
    EXPECT_TRUE(info.config.relativePositionBias && info.config.layerScale);
    EXPECT_EQ(info.config.pooling, Pooling::PatchMean);
    EXPECT_EQ(info.config.finalNorm, FinalNorm::Pooled);
    EXPECT_DOUBLE_EQ(info.config.layerNormEps, 1e-12);
    expectReferenceNumbers(**model, dir);
}

// BEiT's relative position bias is inside the softmax of every layer (the maps above equal timm's); the position scheme
// is said, and another input size is refused rather than run with a table made for the trained grid.
TEST(Beit, TheRelativePositionBiasIsSaidAndBoundToItsGrid)
{
    auto model = Model::load(familiesDir() + "/timm_beitv2");
    ASSERT_TRUE(model.ok()) << model.message();
    const ModelInfo& info = (*model)->info();
    EXPECT_TRUE(info.config.relativePositionBias);
    EXPECT_FALSE(info.config.posEmbed);
    EXPECT_STREQ(info.config.positionScheme(), "relative-bias");
    EXPECT_TRUE(info.config.layerScale);
    EXPECT_EQ(info.config.finalNorm, FinalNorm::Pooled);
    EXPECT_EQ(info.family, "beitv2");
    EXPECT_NE(std::find(info.inferred.begin(), info.inferred.end(),
                        "position: a relative position bias in every layer's attention (relative_position_bias_table)"),
              info.inferred.end());
    auto other = (*model)->withInputSize(32, 32);
    ASSERT_FALSE(other.ok());
    EXPECT_CONTAINS(other.message(), "input size 32x32: this model's relative position bias tables are for its trained 16x16");
}

TEST(TimmRegistry, NamesWithTagsAndTheFamiliesTimmDefines)
{
    const auto* small = findTimmArchitecture("vit_small_patch16_224.augreg_in21k_ft_in1k");
    ASSERT_NE(small, nullptr);
    EXPECT_EQ(small->heads, 6);
    EXPECT_STREQ(small->unsupported, "");
    const auto* clip = findTimmArchitecture("vit_base_patch16_clip_224");
    ASSERT_NE(clip, nullptr);
    EXPECT_DOUBLE_EQ(clip->layerNormEps, 1e-5);
    EXPECT_STREQ(findTimmArchitecture("vit_so400m_patch16_siglip_gap_384")->activation, "gelu_tanh");
    EXPECT_TRUE(findTimmArchitecture("vit_base_patch14_reg4_dinov2")->noEmbedClass);
    // Plain-looking names whose blocks differ, found in timm's own entry points rather than guessed from the name.
    EXPECT_STREQ(findTimmArchitecture("vit_base_patch16_rpn_224")->unsupported, "norms after each residual branch (ResPostBlock)");
    EXPECT_STREQ(findTimmArchitecture("vit_giant_patch14_dinov2")->unsupported, "a gated MLP (GluMlp)");
    EXPECT_EQ(findTimmArchitecture("resnet50"), nullptr);
    EXPECT_EQ(findTimmArchitecture("vit_small_patch16"), nullptr);
    EXPECT_EQ(findTimmArchitecture(""), nullptr);
    EXPECT_EQ(findTimmArchitecture("zzz"), nullptr);
    EXPECT_NE(findTimmArchitecture("beit_base_patch16_224"), nullptr); // the first and the last names are found
    EXPECT_NE(findTimmArchitecture("vit_xsmall_patch16_clip_224"), nullptr);
}

TEST_F(Families, NamesAndArgumentsTimmsRegistryDoesNotVouchFor)
{
    EXPECT_CONTAINS(refusal(editedCopy("timm_vit_small", [](json& c) {
                        c["architecture"] = "my_vit";
                        c["model_args"].erase("num_heads");
                    })),
                    "config.json: architecture \"my_vit\" is not one of timm 1.0.31's vision transformers that attnscope runs");
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
    EXPECT_CONTAINS(refusal(editedCopy("timm_vit_small", [](json& c) { c["architecture"] = "my_dinov3_small"; })),
                    "config.json: my_dinov3_small: attnscope does not run rotary position embedding (RoPE) (the name says so");
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
    EXPECT_CONTAINS(refusal(editedCopy("timm_vit_small", [](json& c) { c["model_args"]["qk_norm"] = true; })),
                    "config.json: model_args.qk_norm = true changes the model in a way attnscope does not run");
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
    // A name of one's own with num_heads stated runs as timm's plain VisionTransformer, and says it guessed that.
    auto own = Model::load(editedCopy("timm_vit_small", [](json& c) { c["architecture"] = "my_vit"; }));
    ASSERT_TRUE(own.ok()) << own.message();
    ASSERT_EQ((*own)->info().guesses.size(), 1u);
    EXPECT_CONTAINS((*own)->info().guesses[0], "architecture \"my_vit\" is not in timm 1.0.31's registry");
}

TEST_F(Families, HuggingFaceTypesAndClassesAttnscopeDoesNotRun)
{
    const auto hf = [&](const std::function<void(json&)>& edit) {
        fs::remove_all(m_dir);
        fs::create_directories(m_dir);
        fs::copy_file(goldenDir() + "/hf_dinov2/model.safetensors", m_dir / "model.safetensors");
        auto cfg = json::parse(readBytes(goldenDir() + "/hf_dinov2/config.json"));
        edit(cfg);
        writeBytes(m_dir / "config.json", cfg.dump());
        return refusal(m_dir.string());
    };
    EXPECT_CONTAINS(hf([](json& c) { c["model_type"] = "dinov3_convnext"; }),
                    "config.json: model_type \"dinov3_convnext\" is not a vision transformer attnscope runs");
    EXPECT_CONTAINS(hf([](json& c) {
                        c["model_type"] = "swinv2";
                        c["architectures"] = { "Swinv2Model" };
                    }),
                    "config.json: model_type \"swinv2\" names a Swin, but the tensors are not a Swin's");
    EXPECT_CONTAINS(hf([](json& c) { c["model_type"] = "vitdet"; }),
                    "config.json: model_type \"vitdet\": attnscope does not run windowed attention with relative positions");
    EXPECT_CONTAINS(hf([](json& c) { c["model_type"] = "levit"; }),
                    "config.json: model_type \"levit\" is not a vision transformer attnscope runs");
    EXPECT_CONTAINS(hf([](json& c) { c["architectures"] = { "Dinov2WithRegistersBackboneHybrid" }; }),
                    "config.json: architectures names Dinov2WithRegistersBackboneHybrid, which is not a dinov2 encoder");
}

// Sniffed by structure: a valid safetensors file whose header length's low byte is 0x80 (a pickle's PROTO opcode) is
// read as safetensors; a truncated one says what is wrong with it, never "not a PyTorch checkpoint".
TEST_F(Families, SafetensorsAreRecognisedByTheirStructureNotTheirFirstByte)
{
    const std::string bytes = readBytes(familiesDir() + "/timm_vit_small/model.safetensors");
    uint64_t length = 0;
    std::memcpy(&length, bytes.data(), 8);
    std::string header = bytes.substr(8, length);
    const std::string data = bytes.substr(8 + length);
    // Pad the header with spaces until its length ends in 0x80 and the data stays 8-byte aligned (JSON allows trailing
    // white space).
    while ((header.size() & 0xff) != 0x80)
        header += ' ';
    std::string padded(8, '\0');
    for (int i = 0; i < 8; ++i)
        padded[size_t(i)] = char((header.size() >> (8 * i)) & 0xff);
    ASSERT_EQ(uint8_t(padded[0]), 0x80);
    writeBytes(m_dir / "model.safetensors", padded + header + data);
    fs::copy_file(familiesDir() + "/timm_vit_small/config.json", m_dir / "config.json");
    auto model = Model::load(m_dir.string());
    ASSERT_TRUE(model.ok()) << model.message();
    EXPECT_EQ((*model)->info().format, "safetensors");

    writeBytes(m_dir / "model.safetensors", (padded + header + data).substr(0, 8 + header.size() / 2));
    const std::string truncated = refusal(m_dir.string());
    EXPECT_CONTAINS(truncated, "model.safetensors: safetensors header length");
    EXPECT_CONTAINS(truncated, "truncated file?");
    EXPECT_EQ(truncated.find("PyTorch"), std::string::npos) << truncated;
}

// lucidrains' vit-pytorch, read by its tensor names from the .pt its users save, with a description of what the tensors
// cannot tell (heads, image size, pooling): logits, every layer's attention maps and the block outputs equal
// vit-pytorch's own forward (tests/golden/make_vitpytorch.py), 1e-4 of each tensor's largest value. Its layout: a
// linear patch embedding over (p1 p2 c) patches between two LayerNorms, q, k, v 48 wide in a 24-wide model (3 heads of
// 16), no qkv bias, SimpleViT's fixed sin-cos positions.
TEST(VitPytorch, ViTAndSimpleViTGiveVitPytorchsNumbers)
{
    struct Case {
        const char* folder;
        const char* family;
        Pooling pooling;
        bool sinCos;
    };
    for (const Case& c : { Case { "vitpytorch_vit", "vit-pytorch ViT", Pooling::Token, false },
                           Case { "vitpytorch_vit_mean", "vit-pytorch ViT", Pooling::PatchMean, false },
                           Case { "vitpytorch_simplevit", "vit-pytorch SimpleViT", Pooling::PatchMean, true } }) {
        SCOPED_TRACE(c.folder);
        const std::string dir = familiesDir() + "/" + c.folder;
        auto model = Model::load(dir + "/model.pt");
        ASSERT_TRUE(model.ok()) << model.message();
        const ModelInfo& info = (*model)->info();
        EXPECT_EQ(info.family, c.family);
        EXPECT_NE(info.naming.find("vit-pytorch"), std::string::npos) << info.naming;
        EXPECT_TRUE(info.guesses.empty()) << info.guesses.front();
        const ModelConfig& config = info.config;
        EXPECT_EQ(config.patchEmbedding, PatchEmbedding::LinearChannelsLast);
        EXPECT_TRUE(config.patchNormIn && config.patchNormOut);
        EXPECT_EQ(config.patchSize, 4);
        EXPECT_EQ(config.channels, 3);
        EXPECT_EQ(config.width, 24);
        EXPECT_EQ(config.attnWidth(), 48);
        EXPECT_EQ(config.headDim(), 16);
        EXPECT_FALSE(config.qkvBias);
        EXPECT_DOUBLE_EQ(config.layerNormEps, 1e-5);
        EXPECT_EQ(config.pooling, c.pooling);
        EXPECT_EQ(config.posFixedSinCos, c.sinCos);
        EXPECT_STREQ(config.positionScheme(), c.sinCos ? "sincos2d" : "learned");
        if (c.sinCos) {
            EXPECT_NE(std::find(info.inferred.begin(), info.inferred.end(),
                                "position: fixed 2-D sin-cos (posemb_sincos_2d), vit-pytorch SimpleViT's layout"),
                      info.inferred.end());
        }
        expectReferenceNumbers(**model, dir);
        // The first layer's logits split into token and position terms (learned or SimpleViT's fixed table) whose sum,
        // through the softmax, is vit-pytorch's first map.
        auto parts = decomposeLogits(**model, loadNpy(dir + "/input.npy"));
        ASSERT_TRUE(parts.ok()) << parts.message();
        const Tensor map = loadNpy(dir + "/attn_L1.npy");
        const int64_t n = map.shape()[1];
        const Tensor softmax = softmaxRows(map.shape(), [&](int64_t row, int64_t j) {
            const int64_t i = row * n + j;
            return double(parts->tt.data()[i]) + parts->tp.data()[i] + parts->pt.data()[i] + parts->pp.data()[i];
        });
        EXPECT_TRUE(closeTo(softmax, map, 1e-4)) << "softmax(TT + TP + PT + PP)";
    }
}

// What a description of a vit-pytorch model must say and may not contradict, one line each.
TEST_F(Families, VitPytorchDescriptionsThatCannotBeRight)
{
    const auto withDescription = [&](const std::string& folder, const std::string& description) {
        fs::remove_all(m_dir);
        fs::create_directories(m_dir);
        fs::copy_file(familiesDir() + "/" + folder + "/model.pt", m_dir / "model.pt");
        writeBytes(m_dir / "attnscope.json", description);
        return refusal((m_dir / "model.pt").string());
    };
    EXPECT_CONTAINS(withDescription("vitpytorch_simplevit", R"({"architecture": {"num_heads": 3, "patch_size": 4}})"),
                    "a fixed sin-cos position table is made for the image size: state architecture.image_size");
    EXPECT_CONTAINS(withDescription("vitpytorch_simplevit",
                                    R"({"architecture": {"num_heads": 3, "patch_size": 5, "image_size": 15}})"),
                    "patch_embed.linear.weight: shape [24, 48] is not [D, P*P*C] for the stated patch size and channels");
    EXPECT_CONTAINS(withDescription("vitpytorch_vit", R"({"architecture": {"num_heads": 5, "image_size": 16}})"),
                    "5 heads do not divide width 48");
    EXPECT_CONTAINS(withDescription("vitpytorch_vit", R"({"architecture": {"num_heads": 3, "image_size": 16, "patch_order": "c p2 p1"}})"),
                    "architecture.patch_order must be \"p1 p2 c\" (channels fastest) or \"c p1 p2\"");
    EXPECT_CONTAINS(withDescription("vitpytorch_vit", R"({"architecture": {"num_heads": 3, "image_size": 16, "position": "none"}})"),
                    "architecture.position is \"none\" but the checkpoint has a pos_embed tensor");
}

// The layouts people train themselves (tests/golden/make_layouts.py): timm_vit_small's weights with one Linear per head
// for q, k and v (tintn's original layout) joined by "concatenate" rules, a linear (c p1 p2) patch embedding, the state
// dict in a {"model_state", "model_ema", "optimizer", "epoch"} wrapper. The same weights give timm's logits; which
// entry was taken is said, the EMA copy is not taken unless asked.
TEST_F(Families, PerHeadLayersInAWrapperDictGiveTheFusedModelsNumbers)
{
    const std::string dir = familiesDir() + "/layout_per_head";
    auto model = Model::load(dir + "/model.pt");
    ASSERT_TRUE(model.ok()) << model.message();
    const ModelInfo& info = (*model)->info();
    EXPECT_EQ(info.config.patchEmbedding, PatchEmbedding::LinearChannelsFirst);
    EXPECT_EQ(info.config.numHeads, 6);
    ASSERT_FALSE(info.inferred.empty());
    EXPECT_CONTAINS(info.inferred.front(), "tensors: the checkpoint's 'model_state' (beside 'model_ema', 'optimizer', 'epoch'); "
                                           "the EMA copy 'model_ema' was not taken");
    const std::string reference = familiesDir() + "/timm_vit_small";
    auto trace = (*model)->run(loadNpy(reference + "/input.npy"), RunOptions {});
    ASSERT_TRUE(trace.ok()) << trace.message();
    EXPECT_TRUE(closeTo(trace->logits, loadNpy(reference + "/logits.npy"), 1e-4));

    const auto description = json::parse(readBytes(dir + "/attnscope.json"));
    const auto loadWith = [&](const std::function<void(json&)>& edit) {
        fs::remove_all(m_dir);
        fs::create_directories(m_dir);
        fs::copy_file(dir + "/model.pt", m_dir / "model.pt");
        json d = description;
        edit(d);
        writeBytes(m_dir / "attnscope.json", d.dump());
        return Model::load((m_dir / "model.pt").string());
    };
    // The EMA copy when the description asks for it (here it holds only a head, which the error shows).
    auto ema = loadWith([](json& d) { d["weights_key"] = "model_ema"; });
    ASSERT_FALSE(ema.ok());
    EXPECT_CONTAINS(ema.message(), "first names: head.bias, head.weight");
    auto unknownKey = loadWith([](json& d) { d["weights_key"] = "weights"; });
    ASSERT_FALSE(unknownKey.ok());
    EXPECT_CONTAINS(unknownKey.message(), "model.pt: weights_key 'weights' is not a dict of tensors in the checkpoint (its keys: ");
    // A safetensors file has no dict entry to choose: weights_key on one is refused, not ignored.
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
    fs::copy_file(familiesDir() + "/timm_vit_small/model.safetensors", m_dir / "model.safetensors");
    writeBytes(m_dir / "attnscope.json", R"({"attnscope_description": 1, "weights_key": "model_ema", "architecture": {"num_heads": 6}})");
    EXPECT_CONTAINS(refusal((m_dir / "model.safetensors").string()),
                    "attnscope.json: weights_key chooses an entry of a torch.save dict; model.safetensors is a safetensors file");
    // Without the concatenation the per-head tensors collide, and the error names both and the rule that joins them.
    auto collide = loadWith([](json& d) {
        d.erase("concatenate");
        d["rename"].insert(d["rename"].begin(), json::array({ "\\.heads\\.\\d+\\.", "." }));
    });
    ASSERT_FALSE(collide.ok());
    EXPECT_CONTAINS(collide.message(), "rename rules map encoder.blocks.0.attention.heads.0.key.bias and "
                                       "encoder.blocks.0.attention.heads.1.key.bias onto blocks.0.attn.k.bias; to join "
                                       "tensors into one (per-head query, key and value layers, say) write a \"concatenate\" rule");
    // A head left out (dropped: drop rules apply first), and two tensors put at one position.
    auto gap = loadWith([](json& d) { d["drop"] = json::array({ "\\.heads\\.2\\.query\\.weight$" }); });
    ASSERT_FALSE(gap.ok());
    EXPECT_CONTAINS(gap.message(), "attnscope.json: concatenate rule for encoder.blocks.0.attention.query.weight: position 2 is "
                                   "missing (found 3, encoder.blocks.0.attention.heads.3.query.weight)");
    auto twice = loadWith([](json& d) {
        d["concatenate"][0]["from"] = "^encoder\\.blocks\\.(\\d+)\\.attention\\.heads\\.(\\d+)\\.(query)\\.(weight|bias)$";
        d["concatenate"][0]["to"] = "encoder.blocks.$1.attention.$3.all";
    });
    ASSERT_FALSE(twice.ok());
    EXPECT_CONTAINS(twice.message(), "attnscope.json: concatenate rule puts encoder.blocks.0.attention.heads.0.query.bias and "
                                     "encoder.blocks.0.attention.heads.0.query.weight at the same position 0");
}

TEST(Descriptions, AConcatenationOfMismatchedShapesNamesBoth)
{
    TensorMap tensors { { "a.0", at::zeros({ 2, 3 }) }, { "a.1", at::zeros({ 3, 3 }) } };
    const auto d = json::parse(R"({"concatenate": [{"from": "^a\\.(\\d)$", "to": "b", "order": "$1"}]})");
    try {
        applyDescriptionRenames(tensors, d, "d.json");
        ADD_FAILURE() << "joined";
    } catch (const std::exception& e) {
        EXPECT_STREQ(e.what(), "d.json: concatenate rule for b joins tensors of different shapes: a.0 [2, 3] and a.1 [3, 3]");
    }
    const auto bad = json::parse(R"({"concatenate": [{"from": "^a\\.(\\d)$", "to": "b", "order": "x$1"}]})");
    try {
        applyDescriptionRenames(tensors, bad, "d.json");
        ADD_FAILURE() << "joined";
    } catch (const std::exception& e) {
        EXPECT_STREQ(e.what(), "d.json: concatenate rule \"^a\\.(\\d)$\": order \"x$1\" gives \"x0\" for a.0, not a number");
    }
}
