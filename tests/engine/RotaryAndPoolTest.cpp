// The families whose positions turn the queries and keys (DINOv3, EVA-02, timm's RoPE ViTs) and SigLIP's attention-pool
// head, each from the folder its own code writes (tests/golden/make_families.py): that code's numbers, the query-key
// map's rotated rows, the pool's map as the model's last (docs/models.md, "Families").
#include "FamiliesSupport.h"
#include "TestSupport.h"

#include <attnscope/Analyses.h>
#include <attnscope/QueryKey.h>

#include <cmath>

using namespace attnscope;
using namespace attnscope::test;
using namespace attnscope::test::families;

namespace {

// Another input size (24 x 20, a 6 x 5 grid at patch 4) runs: the rotary angles are made for its grid.
void expectRunsAt24By20(const Model& model)
{
    auto larger = model.withInputSize(24, 20);
    ASSERT_TRUE(larger.ok()) << larger.message();
    auto trace = (*larger)->run(Tensor::fromVector({ 3, 24, 20 }, std::vector<float>(3 * 24 * 20, 0.1f)), RunOptions {});
    ASSERT_TRUE(trace.ok()) << trace.message();
    EXPECT_EQ(trace->gridHeight * trace->gridWidth, 30);
}

// The query-key map's rows are the rotated queries and keys: through the softmax, each head's map of `layer` (timm's).
void expectQueryKeyRowsMakeTheMaps(const Model& model, const std::string& dir, int layer)
{
    const Tensor map = loadNpy(dir + "/attn_L" + std::to_string(layer) + ".npy"); // [H, N, N]
    const int64_t n = map.shape()[1];
    for (int head = 0; head < model.config().numHeads; ++head) {
        auto rows = queryKeyRows(model, { loadNpy(dir + "/input.npy") }, layer, head);
        ASSERT_TRUE(rows.ok()) << rows.message();
        const Tensor& q = rows->queries[0];
        const Tensor& k = rows->keys[0];
        const int64_t d = q.shape()[1];
        const Tensor softmax = softmaxRows({ n, n }, [&](int64_t i, int64_t j) {
            double dot = 0;
            for (int64_t e = 0; e < d; ++e)
                dot += double(q.data()[i * d + e]) * k.data()[j * d + e];
            return dot / std::sqrt(double(d));
        });
        const Tensor headMap = Tensor::fromData({ n, n }, map.data() + head * n * n);
        EXPECT_TRUE(closeTo(softmax, headMap, 1e-4)) << "layer " << layer << " head " << head;
    }
}

} // namespace

// DINOv3's rotary embedding has no tensor: timm's registry states it, info says so, and the query-key map projects the
// rotated queries and keys (the logits are their products: checked against the first layer's map). The maps above equal
// timm's; another input size makes the angles for its grid.
TEST(DinoV3, TheRotaryEmbeddingIsStatedAndTheQueryKeyMapUsesTheRotatedVectors)
{
    const std::string dir = familiesDir() + "/timm_dinov3";
    auto model = Model::load(dir);
    ASSERT_TRUE(model.ok()) << model.message();
    const ModelInfo& info = (*model)->info();
    EXPECT_EQ(info.config.rope, ModelConfig::Rope::DinoV3);
    EXPECT_STREQ(info.config.positionScheme(), "rotary");
    EXPECT_EQ(info.config.numRegisters, 4);
    EXPECT_FALSE(info.config.posEmbed);
    EXPECT_EQ(info.family, "dinov3");
    EXPECT_NE(std::find(info.inferred.begin(), info.inferred.end(),
                        "position: rotary (DINOv3's, temperature 100, patch centres in [-1, 1], rotated in halves; on the "
                        "patch tokens' queries and keys), timm's vit_small_patch16_dinov3"),
              info.inferred.end());
    expectQueryKeyRowsMakeTheMaps(**model, dir, 1);
    expectRunsAt24By20(**model);
}

// transformers' DINOv3ViTModel as save_pretrained writes it (the hub's `layer.N.` names): its rotary embedding stated by
// config.json's model_type and rope_theta, the pooled output (CLS after the final norm), every map and hidden state to
// 1e-4 of transformers' (tests/golden/make_hf_dinov3.py, transformers 5.24 on torch 2.12); with registers and no key
// bias, and gated (SwiGLU) with a key bias and another rope_theta. A config that says the MLP is gated over a plain one,
// or a rope_theta that is not a positive number, is refused.
TEST_F(Families, HuggingFaceDinoV3GivesTransformersNumbers)
{
    for (const char* name : { "hf_dinov3", "hf_dinov3_gated" }) {
        SCOPED_TRACE(name);
        const std::string dir = familiesDir() + "/" + name;
        auto model = Model::load(dir);
        ASSERT_TRUE(model.ok()) << model.message();
        const ModelInfo& info = (*model)->info();
        EXPECT_EQ(info.family, "dinov3");
        EXPECT_EQ(info.naming, "huggingface");
        EXPECT_EQ(info.config.rope, ModelConfig::Rope::DinoV3);
        EXPECT_STREQ(info.config.positionScheme(), "rotary");
        EXPECT_EQ(info.config.pooling, Pooling::Token);
        EXPECT_EQ(info.config.numClasses, 0);
        const bool gated = std::string(name) == "hf_dinov3_gated";
        EXPECT_EQ(info.config.mlpGated, gated);
        EXPECT_EQ(info.config.numRegisters, gated ? 0 : 2);
        EXPECT_EQ(info.config.ropeTemperature, gated ? 50.0 : 100.0);
        expectReferenceNumbers(**model, dir);
        expectQueryKeyRowsMakeTheMaps(**model, dir, 2);
    }
    EXPECT_CONTAINS(refusal(editedCopy("hf_dinov3", [](json& cfg) { cfg["use_gated_mlp"] = true; })),
                    "the architecture has a gated MLP (SwiGLU), but blocks.0.mlp.fc1.weight is not twice as wide");
    EXPECT_CONTAINS(refusal(editedCopy("hf_dinov3", [](json& cfg) { cfg["rope_theta"] = -1; })),
                    "config.json: rope_theta must be a positive number");
}

// EVA-02, timm's RoPE ViTs (axial and mixed, with and without a learned table beside the rotation, a register without a
// CLS token) and DINOv3 with SwiGLU, each from the folder timm writes: timm's logits, maps and block outputs; the query-
// key map's rows are the rotated vectors in every layer (RoPE-Mixed's differ per layer); another input size runs with
// the angles made for its grid.
TEST(Rope, EvaAndTheRopeViTsGiveTimmsNumbers)
{
    struct Case {
        const char* folder;
        const char* family;
        ModelConfig::Rope rope;
        const char* position;
        bool gated, mlpNorm, attnNorm;
        Pooling pooling;
    };
    using R = ModelConfig::Rope;
    for (const Case& c : { Case { "timm_eva02", "eva02", R::Axial, "learned+rotary", true, false, false, Pooling::PatchMean },
                           Case { "timm_eva02_clip", "eva02", R::Axial, "learned+rotary", true, true, true, Pooling::Token },
                           Case { "timm_vit_rope", "rope-vit", R::Axial, "rotary", false, false, false, Pooling::Token },
                           Case { "timm_vit_rope_ape", "rope-vit", R::Axial, "learned+rotary", false, false, false, Pooling::Token },
                           Case { "timm_vit_rope_mixed", "rope-vit", R::Mixed, "rotary", false, false, false, Pooling::Token },
                           Case { "timm_vit_rope_reg", "rope-vit", R::Axial, "rotary", false, false, false, Pooling::PatchMean },
                           Case { "timm_dinov3_swiglu", "dinov3", R::DinoV3, "rotary", true, false, false, Pooling::PatchMean } }) {
        SCOPED_TRACE(c.folder);
        const std::string dir = familiesDir() + "/" + c.folder;
        auto model = Model::load(dir);
        ASSERT_TRUE(model.ok()) << model.message();
        const ModelInfo& info = (*model)->info();
        EXPECT_EQ(info.family, c.family);
        EXPECT_EQ(info.config.rope, c.rope);
        EXPECT_STREQ(info.config.positionScheme(), c.position);
        EXPECT_EQ(info.config.mlpGated, c.gated);
        EXPECT_EQ(info.config.mlpNorm, c.mlpNorm);
        EXPECT_EQ(info.config.attnNorm, c.attnNorm);
        EXPECT_EQ(info.config.pooling, c.pooling);
        EXPECT_TRUE(info.guesses.empty());
        expectReferenceNumbers(**model, dir);
        for (int layer = 1; layer <= 2; ++layer)
            expectQueryKeyRowsMakeTheMaps(**model, dir, layer);
        auto qk = queryKeyMap(**model, { loadNpy(dir + "/input.npy") }, 1, 0);
        ASSERT_TRUE(qk.ok()) << qk.message();
        EXPECT_TRUE(qk->rotated); // and the figures say so
        // GAE's backward goes through the rotation too.
        auto relevance = classRelevance(**model, loadNpy(dir + "/input.npy"), {});
        ASSERT_TRUE(relevance.ok()) << relevance.message();
        EXPECT_TRUE(std::isfinite(relevance->gae.data()[0]));
        expectRunsAt24By20(**model);
    }
}

// SigLIP's attention-pool head (timm's global_pool "map"): one learned query over the patch tokens (behind registers it
// does not read, too); timm's logits, maps and blocks, and the pool's own map (rebuilt from timm's q and kv) recorded as
// the model's last, layer depth + 1 of attentionMap whatever the query; GAE weighs the patches by it.
TEST(SigLip, TheAttentionPoolHeadRunsAndItsMapIsTheLastLayer)
{
    for (const char* folder : { "timm_siglip", "timm_siglip_tanh", "timm_map_registers" }) {
        SCOPED_TRACE(folder);
        const std::string dir = familiesDir() + "/" + folder;
        auto model = Model::load(dir);
        ASSERT_TRUE(model.ok()) << model.message();
        const ModelConfig& c = (*model)->config();
        EXPECT_EQ(c.pooling, Pooling::AttentionPool);
        EXPECT_TRUE((*model)->info().guesses.empty());
        expectReferenceNumbers(**model, dir);
        RunOptions options;
        options.record.attention = true;
        auto trace = (*model)->run(loadNpy(dir + "/input.npy"), options);
        ASSERT_TRUE(trace.ok()) << trace.message();
        const Tensor pool = loadNpy(dir + "/pool.npy"); // [H, P]
        EXPECT_TRUE(closeTo(trace->poolAttention, pool, 1e-4));
        const int64_t P = pool.shape()[1];
        for (int head = -1; head < c.numHeads; ++head) {
            const AttentionMap map = attentionMap(*trace, c.depth + 1, head, 0);
            std::vector<float> expected(size_t(P), 0.0f);
            for (int h = head < 0 ? 0 : head; h < (head < 0 ? c.numHeads : head + 1); ++h)
                for (int64_t p = 0; p < P; ++p)
                    expected[size_t(p)] += pool.data()[h * P + p] / float(head < 0 ? c.numHeads : 1);
            EXPECT_TRUE(closeTo(map.patches, Tensor::fromVector({ trace->gridHeight, trace->gridWidth }, expected), 1e-5))
                << "head " << head;
            EXPECT_EQ(map.prefixMass, 0.0);
        }
        auto relevance = classRelevance(**model, loadNpy(dir + "/input.npy"), {});
        ASSERT_TRUE(relevance.ok()) << relevance.message();
        EXPECT_EQ(relevance->gae.numel(), P);
    }
}

// transformers' SiglipVisionModel as save_pretrained writes it: the pooled features (its attention-pool head's, with
// the pool's q and kv split out of nn.MultiheadAttention's in_proj), every map and hidden state, and the pool's per-head
// map as torch's MultiheadAttention gives it. Its image classifier, which reads another pooling, is refused.
TEST_F(Families, HuggingFaceSiglipVisionModelGivesTransformersNumbers)
{
    const std::string dir = familiesDir() + "/hf_siglip";
    auto model = Model::load(dir);
    ASSERT_TRUE(model.ok()) << model.message();
    const ModelInfo& info = (*model)->info();
    EXPECT_EQ(info.family, "siglip");
    EXPECT_EQ(info.naming, "huggingface");
    EXPECT_EQ(info.config.pooling, Pooling::AttentionPool);
    EXPECT_EQ(info.config.activation, Activation::GeluTanh);
    EXPECT_EQ(info.config.numClasses, 0);
    expectReferenceNumbers(**model, dir);
    RunOptions options;
    options.record.attention = true;
    auto trace = (*model)->run(loadNpy(dir + "/input.npy"), options);
    ASSERT_TRUE(trace.ok()) << trace.message();
    EXPECT_TRUE(closeTo(trace->poolAttention, loadNpy(dir + "/pool.npy"), 1e-4));

    const auto classifier = editedCopy("hf_siglip", [](json& cfg) { cfg["architectures"] = json::array({ "SiglipForImageClassification" }); });
    EXPECT_CONTAINS(refusal(classifier), "architectures names SiglipForImageClassification, whose classifier reads the mean");
}
