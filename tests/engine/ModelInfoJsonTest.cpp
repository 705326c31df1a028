// A model's description as JSON and back (issue 45: the window holds a remote model's ModelInfo from load_model's
// answer): modelInfoFromJson(modelInfoJson(i)) describes i again exactly, for the embedded models, families of every
// position scheme and pooling, and hand-made infos of every enumeration's every value; a wrong type or an unknown name
// is an Error naming the key.
#include "TestSupport.h"

#include <attnscope/ModelInfoJson.h>

#include <nlohmann/json.hpp>

#include <array>
#include <tuple>

using namespace attnscope;
using namespace attnscope::test;
using json = nlohmann::json;

namespace {

// The round trip, and the fields the window reads compared one by one (so that a field both sides forget is seen).
void expectRoundTrip(const ModelInfo& i)
{
    const std::string text = modelInfoJson(i);
    auto back = modelInfoFromJson(text);
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(modelInfoJson(*back), text);
    const ModelInfo& b = *back;
    const ModelConfig &c = i.config, &d = b.config;
    EXPECT_EQ(b.path, i.path);
    EXPECT_EQ(b.labels, i.labels);
    EXPECT_EQ(b.trainedHeight, i.trainedHeight);
    EXPECT_EQ(b.trainedWidth, i.trainedWidth);
    EXPECT_EQ(b.ignoredConfigKeys, i.ignoredConfigKeys);
    EXPECT_EQ(b.parameterCount, i.parameterCount);
    EXPECT_EQ(d.imageHeight, c.imageHeight);
    EXPECT_EQ(d.imageWidth, c.imageWidth);
    EXPECT_EQ(d.channels, c.channels);
    EXPECT_EQ(d.numClasses, c.numClasses);
    EXPECT_EQ(d.headIsProjection, c.headIsProjection);
    EXPECT_EQ(d.neutrenoLambda, c.neutrenoLambda);
    EXPECT_EQ(d.boostT, c.boostT);
    EXPECT_EQ(d.depth, c.depth);
    EXPECT_EQ(d.numHeads, c.numHeads);
    EXPECT_EQ(d.width, c.width);
    EXPECT_EQ(d.patchSize, c.patchSize);
    EXPECT_EQ(d.classToken, c.classToken);
    EXPECT_EQ(d.distToken, c.distToken);
    EXPECT_EQ(d.numRegisters, c.numRegisters);
    EXPECT_EQ(d.pooling, c.pooling);
    EXPECT_EQ(d.rope, c.rope);
    EXPECT_EQ(d.ropeTemperature, c.ropeTemperature);
    EXPECT_EQ(d.attentionWidth, c.attentionWidth);
    EXPECT_EQ(d.layerNormEps, c.layerNormEps);
    EXPECT_EQ(std::string(d.positionScheme()), c.positionScheme());
    EXPECT_EQ(b.preprocess.resize, i.preprocess.resize);
    EXPECT_EQ(b.preprocess.resizeShortest, i.preprocess.resizeShortest);
    EXPECT_EQ(b.preprocess.resizeHeight, i.preprocess.resizeHeight);
    EXPECT_EQ(b.preprocess.cropPct, i.preprocess.cropPct);
    EXPECT_EQ(b.preprocess.cropOffsetFloor, i.preprocess.cropOffsetFloor);
    EXPECT_EQ(b.preprocess.mean, i.preprocess.mean);
    EXPECT_EQ(b.preprocess.std, i.preprocess.std);
    EXPECT_EQ(b.preprocess.rescale, i.preprocess.rescale);
    ASSERT_EQ(b.quadraticHeads.size(), i.quadraticHeads.size());
    for (size_t l = 0; l < i.quadraticHeads.size(); ++l) {
        ASSERT_EQ(b.quadraticHeads[l].size(), i.quadraticHeads[l].size());
        for (size_t h = 0; h < i.quadraticHeads[l].size(); ++h) {
            EXPECT_EQ(b.quadraticHeads[l][h].dy, i.quadraticHeads[l][h].dy);
            EXPECT_EQ(b.quadraticHeads[l][h].alpha, i.quadraticHeads[l][h].alpha);
        }
    }
}

// Every field off its default, with values that print long (1/3, 1e-5) so that a lossy number would show.
ModelInfo handMade()
{
    ModelInfo i;
    i.path = "/data/models/ünïcode \"quoted\".safetensors";
    i.weightsPath = i.path;
    i.format = "safetensors";
    i.naming = "described";
    i.family = "vit";
    i.configSource = "config.json";
    i.recognition = "tensor names (timm naming)";
    i.inferred = { "heads 6: timm's vit_small_patch16_224" };
    i.guesses = { "num_heads guessed as width/64 = 1" };
    i.ignoredConfigKeys = { { "config.json", { "dropout", "pretrained_cfg.tag" } }, { "other.json", {} } };
    i.device = "cpu";
    ModelConfig& c = i.config;
    c.width = 48;
    c.depth = 3;
    c.numHeads = 3;
    c.mlpHidden = 100;
    c.patchSize = 7;
    c.imageHeight = 35;
    c.imageWidth = 21;
    c.channels = 1;
    c.numClasses = 7;
    c.headIsProjection = true;
    c.classToken = false;
    c.distToken = true;
    c.numRegisters = 4;
    c.posEmbed = false;
    c.posEmbedHasPrefix = false;
    c.patchNormIn = c.patchNormOut = true;
    c.attentionWidth = 60;
    c.posFixedSinCos = true;
    c.relativePositionBias = true;
    c.ropeTemperature = 1.0 / 3.0;
    c.ropeXY = c.ropeHalf = true;
    c.ropeReferenceGridH = 16;
    c.ropeReferenceGridW = 14;
    c.mlpGated = c.mlpNorm = c.attnNorm = true;
    c.poolMlpHidden = 77;
    c.patchBias = c.qkvBias = c.projBias = false;
    c.preNorm = c.layerScale = true;
    c.layerNormEps = 1e-5;
    c.neutrenoLambda = 0.6;
    c.boostT = 1.0 / 7.0;
    i.trainedHeight = 28;
    i.trainedWidth = 14;
    PreprocessConfig& p = i.preprocess;
    p.resizeShortest = 257;
    p.resizeHeight = 31;
    p.resizeWidth = 29;
    p.centerCrop = false;
    p.cropHeight = 30;
    p.cropWidth = 20;
    p.cropOffsetFloor = true;
    p.rescale = 1.0 / 255.0;
    p.mean = { 0.5 };
    p.std = { 1.0 / 3.0 };
    p.cropPct = 0.875;
    p.source = "preprocessor_config.json";
    i.labels = { "T-shirt/top", "Trouser", "", "ünï" };
    i.parameterCount = int64_t(1) << 40;
    i.quadraticHeads = { { { 1.5, -2.0, 0.1 }, { 0.0, 1.0 / 3.0, 2.0 } }, {} };
    return i;
}

} // namespace

TEST(ModelInfoJson, TheEmbeddedModelsAndFamiliesComeBackExactly)
{
    std::vector<std::string> paths;
    for (const std::string& name : builtinModelNames())
        paths.push_back("builtin:" + name);
    // Each position scheme, rope kind and pooling a loader gives.
    for (const char* family : { "timm_dinov3", "timm_eva02", "timm_vit_rope_mixed", "timm_vit_rope_ape", "timm_siglip", "timm_beit",
                                "vitpytorch_simplevit", "vitpytorch_vit_mean" })
        paths.push_back(std::string(ATTNSCOPE_TEST_SOURCE_DIR "/golden/families/") + family);
    for (const char* fixture : { "timm_deit_distilled", "timm_dinov2_reg", "hf_clip_vision", "hf_vit_eps5" })
        paths.push_back(goldenDir() + "/" + fixture);
    ASSERT_GE(paths.size(), 12u);
    for (const std::string& path : paths) {
        SCOPED_TRACE(path);
        auto model = Model::load(path);
        ASSERT_TRUE(model) << model.message();
        expectRoundTrip((*model)->info());
    }
}

TEST(ModelInfoJson, EveryEnumerationValueComesBack)
{
    const ModelInfo base = handMade();
    expectRoundTrip(base);
    const auto each = [&](auto set) {
        ModelInfo i = base;
        set(i.config, i.preprocess);
        expectRoundTrip(i);
    };
    for (Activation a : { Activation::Gelu, Activation::GeluTanh, Activation::QuickGelu, Activation::Relu, Activation::Silu })
        each([&](ModelConfig& c, PreprocessConfig&) { c.activation = a; });
    for (BlockNorm n : { BlockNorm::Pre, BlockNorm::Post })
        each([&](ModelConfig& c, PreprocessConfig&) { c.blockNorm = n; });
    for (FinalNorm n : { FinalNorm::AllTokens, FinalNorm::Pooled, FinalNorm::None })
        each([&](ModelConfig& c, PreprocessConfig&) { c.finalNorm = n; });
    for (Pooling p : { Pooling::Token, Pooling::PatchMean, Pooling::TokenAndPatchMean, Pooling::Distilled, Pooling::AllTokensMean, Pooling::AttentionPool })
        each([&](ModelConfig& c, PreprocessConfig&) { c.pooling = p; });
    for (PatchEmbedding e : { PatchEmbedding::Convolution, PatchEmbedding::LinearChannelsLast, PatchEmbedding::LinearChannelsFirst })
        each([&](ModelConfig& c, PreprocessConfig&) { c.patchEmbedding = e; });
    for (AttentionKind k : { AttentionKind::Standard, AttentionKind::Bilateral, AttentionKind::Quadratic })
        each([&](ModelConfig& c, PreprocessConfig&) { c.attention = k; });
    for (BlockKind k : { BlockKind::Standard, BlockKind::AttentionOnly })
        each([&](ModelConfig& c, PreprocessConfig&) { c.block = k; });
    for (auto r : { ModelConfig::Rope::None, ModelConfig::Rope::DinoV3, ModelConfig::Rope::Axial, ModelConfig::Rope::Mixed })
        for (bool table : { false, true })
            each([&](ModelConfig& c, PreprocessConfig&) {
                c.rope = r;
                c.posEmbed = table;
            });
    for (ResizeMode m : { ResizeMode::ShortestEdge, ResizeMode::Exact, ResizeMode::None, ResizeMode::Cover })
        each([&](ModelConfig&, PreprocessConfig& p) { p.resize = m; });
    for (Interpolation n : { Interpolation::Nearest, Interpolation::Bilinear, Interpolation::Bicubic })
        each([&](ModelConfig&, PreprocessConfig& p) { p.interpolation = n; });
    // The position schemes a remote window shows come back with the fields they are made of.
    const std::vector<std::array<bool, 3>> schemes = { { false, false, false }, { true, false, false }, { false, true, true }, { false, false, true } };
    for (const std::array<bool, 3>& s : schemes) // sin-cos, relative bias, a learned table
        each([&](ModelConfig& c, PreprocessConfig&) {
            c.rope = ModelConfig::Rope::None;
            c.posFixedSinCos = s[0];
            c.relativePositionBias = s[1];
            c.posEmbed = s[2];
        });
}

TEST(ModelInfoJson, AWrongTypeOrAnUnknownNameIsAnErrorNamingTheKey)
{
    const json good = json::parse(modelInfoJson(handMade()));
    const std::vector<std::tuple<std::string, json, std::string>> cases = {
        { "layers", "twelve", "\"layers\" is \"twelve\", not a whole number" },
        { "layers", 1.5, "\"layers\" is 1.5, not a whole number" },
        { "layers", int64_t(1) << 40, "\"layers\" is 1099511627776, not a whole number of int's range" },
        { "pooling", "cls-ish", "\"pooling\" is \"cls-ish\", not one of token, patch-mean, token+patch-mean" },
        { "rope", "spiral", "\"rope\" is \"spiral\", not one of none, dinov3, axial, mixed" },
        { "activation", 3, "\"activation\" is 3, not a string" },
        { "class_token", "yes", "\"class_token\" is \"yes\", not true or false" },
        { "input_size", json::array({ 224 }), "\"input_size\" is [224], not [height, width]" },
        { "labels", json::array({ "a", 2 }), "\"labels\" is [\"a\",2], not a list of strings" },
        { "layer_norm_eps", nullptr, "\"layer_norm_eps\" is null, not a number" },
        { "ignored_config_keys", json { { "config.json", "dropout" } }, "\"ignored_config_keys\" is \"dropout\", not a list of strings" },
    };
    for (const auto& [key, value, said] : cases) {
        json bad = good;
        bad[key] = value;
        auto back = modelInfoFromJson(bad.dump());
        ASSERT_FALSE(back) << key;
        EXPECT_EQ(back.message().rfind("model info: ", 0), 0u) << back.message();
        EXPECT_NE(back.message().find(said), std::string::npos) << back.message();
    }
    // Nested: the preprocessing's keys are named with their object's.
    json bad = good;
    bad["preprocessing"]["resize"] = "stretch";
    auto back = modelInfoFromJson(bad.dump());
    ASSERT_FALSE(back);
    EXPECT_NE(back.message().find("\"preprocessing.resize\" is \"stretch\", not one of shortest-edge, exact, none, cover"), std::string::npos)
        << back.message();
    bad = good;
    bad.erase("registers");
    back = modelInfoFromJson(bad.dump());
    ASSERT_FALSE(back);
    EXPECT_NE(back.message().find("\"registers\" is missing"), std::string::npos) << back.message();
    bad = good;
    bad["quadratic_heads"][0][0].erase("alpha");
    back = modelInfoFromJson(bad.dump());
    ASSERT_FALSE(back);
    EXPECT_NE(back.message().find("\"quadratic_heads.alpha\" is missing"), std::string::npos) << back.message();
    EXPECT_FALSE(modelInfoFromJson("[1, 2]"));
    EXPECT_FALSE(modelInfoFromJson("{\"layers\": "));
}
