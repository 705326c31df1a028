// Bad checkpoints: each gets a one-line Error that names the file and the problem, never a crash.
#include "TestSupport.h"

#include <attnscope/Model.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <limits>

using namespace attnscope;
using namespace attnscope::test;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string readBytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void writeBytes(const fs::path& path, const std::string& bytes)
{
    std::ofstream out(path, std::ios::binary);
    out << bytes;
}

std::string lengthPrefix(uint64_t n)
{
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i)
        s[size_t(i)] = char((n >> (8 * i)) & 0xff);
    return s;
}

// A safetensors file taken apart (header JSON + data) so that a test can break one thing and write it back.
struct Safetensors {
    json header;
    std::string data;

    static Safetensors fromFile(const std::string& path)
    {
        const std::string bytes = readBytes(path);
        uint64_t n = 0;
        std::memcpy(&n, bytes.data(), 8);
        return { json::parse(bytes.substr(8, n)), bytes.substr(8 + n) };
    }
    std::string bytes() const
    {
        const std::string h = header.dump();
        return lengthPrefix(h.size()) + h + data;
    }
    // Drops a tensor from the header (its bytes stay as unreferenced padding).
    void remove(const std::string& name) { header.erase(name); }
    void add(const std::string& name, const std::vector<int64_t>& shape, const std::vector<float>& values)
    {
        const uint64_t begin = data.size();
        data.append(reinterpret_cast<const char*>(values.data()), values.size() * 4);
        header[name] = { { "dtype", "F32" }, { "shape", shape }, { "data_offsets", { begin, data.size() } } };
    }
};

class LoaderErrors : public ::testing::Test {
protected:
    void SetUp() override { m_dir = scratchDir(::testing::UnitTest::GetInstance()->current_test_info()->name()); }
    void TearDown() override { fs::remove_all(m_dir); }

    // Writes `bytes` as model.safetensors in a fresh folder (with the fixture's config when asked) and loads it.
    std::string loadError(const std::string& bytes, const std::string& configFrom = "tv_timm")
    {
        writeBytes(m_dir / "model.safetensors", bytes);
        if (!configFrom.empty())
            fs::copy_file(goldenDir() + "/" + configFrom + "/config.json", m_dir / "config.json", fs::copy_options::overwrite_existing);
        auto model = Model::load(m_dir.string());
        EXPECT_FALSE(model.ok()) << "a broken file loaded";
        if (model.ok())
            return {};
        const std::string& m = model.message();
        EXPECT_EQ(m.find('\n'), std::string::npos) << "message must be one line: " << m;
        return m;
    }
    Safetensors base() const { return Safetensors::fromFile(goldenDir() + "/tv_timm/model.safetensors"); }
    std::string file() const { return (m_dir / "model.safetensors").string(); }

    fs::path m_dir;
};

#define EXPECT_MESSAGE(message, fragment)                                                                          \
    do {                                                                                                          \
        const std::string m_ = (message);                                                                          \
        EXPECT_NE(m_.find(fragment), std::string::npos) << "message: " << m_;                                     \
        EXPECT_NE(m_.find("model.safetensors"), std::string::npos) << "message names no file: " << m_;             \
    } while (0)

TEST_F(LoaderErrors, EmptyFile) { EXPECT_MESSAGE(loadError(""), "shorter than the 8-byte header length"); }

TEST_F(LoaderErrors, TruncatedHeaderLength) { EXPECT_MESSAGE(loadError(std::string("\x10\x00\x00", 3)), "not a safetensors file"); }

TEST_F(LoaderErrors, HeaderLongerThanTheFile)
{
    const std::string bytes = base().bytes();
    EXPECT_MESSAGE(loadError(bytes.substr(0, 200)), "beyond the end of the file");
}

TEST_F(LoaderErrors, HugeHeaderLength)
{
    EXPECT_MESSAGE(loadError(lengthPrefix(uint64_t(1) << 60) + "{}"), "exceeds the limit");
}

TEST_F(LoaderErrors, InvalidJson) { EXPECT_MESSAGE(loadError(lengthPrefix(5) + "{abc]"), "invalid safetensors header JSON"); }

TEST_F(LoaderErrors, TruncatedData)
{
    const std::string bytes = base().bytes();
    EXPECT_MESSAGE(loadError(bytes.substr(0, bytes.size() - 100)), "truncated file?");
}

TEST_F(LoaderErrors, OverlappingOffsets)
{
    auto st = base();
    st.header["cls_token"]["data_offsets"] = st.header["pos_embed"]["data_offsets"];
    st.header["cls_token"]["shape"] = st.header["pos_embed"]["shape"];
    EXPECT_MESSAGE(loadError(st.bytes()), "overlaps");
}

TEST_F(LoaderErrors, OutOfRangeOffsets)
{
    auto st = base();
    const uint64_t size = st.data.size();
    st.header["cls_token"]["data_offsets"] = { size, size + 256 };
    EXPECT_MESSAGE(loadError(st.bytes()), "reach beyond the data");
}

TEST_F(LoaderErrors, NegativeOffsets)
{
    auto st = base();
    st.header["cls_token"]["data_offsets"] = { -256, 0 };
    EXPECT_MESSAGE(loadError(st.bytes()), "are not two non-negative integers");
}

TEST_F(LoaderErrors, UnknownDtype)
{
    auto st = base();
    st.header["cls_token"]["dtype"] = "F8_E9";
    EXPECT_MESSAGE(loadError(st.bytes()), "cls_token: unknown dtype");
}

TEST_F(LoaderErrors, ShapeDisagreesWithByteCount)
{
    auto st = base();
    st.header["cls_token"]["shape"] = { 1, 1, 65 };
    EXPECT_MESSAGE(loadError(st.bytes()), "cls_token: shape [1, 1, 65] of F32 needs 260 bytes");
}

TEST_F(LoaderErrors, WrongTensorShapeNamesTensorAndBothShapes)
{
    auto st = base();
    auto entry = st.header["blocks.0.attn.qkv.weight"];
    entry["shape"] = { 384, 32 }; // same bytes as [192, 64]
    st.header["blocks.0.attn.qkv.weight"] = entry;
    EXPECT_MESSAGE(loadError(st.bytes()), "blocks.0.attn.qkv.weight: shape [384, 32], expected [192, 64]");
}

TEST_F(LoaderErrors, MissingTensorIsListed)
{
    auto st = base();
    st.remove("blocks.1.mlp.fc2.bias");
    EXPECT_MESSAGE(loadError(st.bytes()), "missing tensors: blocks.1.mlp.fc2.bias");
}

TEST_F(LoaderErrors, UnexpectedTensorIsListed)
{
    auto st = base();
    st.add("blocks.0.attn.rel_pos_bias", { 4 }, { 1, 2, 3, 4 });
    EXPECT_MESSAGE(loadError(st.bytes()), "unexpected tensors: blocks.0.attn.rel_pos_bias");
}

TEST_F(LoaderErrors, NanWeight)
{
    auto st = base();
    const uint64_t begin = st.header["blocks.1.norm2.weight"]["data_offsets"][0].get<uint64_t>();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(&st.data[begin + 8], &nan, 4);
    EXPECT_MESSAGE(loadError(st.bytes()), "blocks.1.norm2.weight holds NaN or Inf");
}

TEST_F(LoaderErrors, UnknownNaming)
{
    Safetensors st;
    st.header = json::object();
    st.add("encoder.weird.weight", { 2 }, { 1, 2 });
    EXPECT_MESSAGE(loadError(st.bytes(), ""), "no known ViT convention");
}

// A window asks for the half of a user's model that is missing (Error::missing): a description for tensor names no
// convention knows, the weights for a description that names none; any other failure asks for nothing.
TEST_F(LoaderErrors, TheMissingHalfIsNamed)
{
    Safetensors st;
    st.header = json::object();
    st.add("encoder.weird.weight", { 2 }, { 1, 2 });
    writeBytes(m_dir / "model.safetensors", st.bytes());
    auto unknown = Model::load(file());
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().missing, Error::Missing::Description) << unknown.message();

    std::ofstream(m_dir / "description.json") << R"({"attnscope_description": 1, "architecture": {"num_heads": 2}})";
    auto alone = Model::load((m_dir / "description.json").string());
    ASSERT_FALSE(alone.ok());
    EXPECT_EQ(alone.error().missing, Error::Missing::Weights) << alone.message();
    EXPECT_NE(alone.message().find("description.json"), std::string::npos) << alone.message();

    writeBytes(m_dir / "model.safetensors", base().bytes().substr(0, 200));
    auto truncated = Model::load(file());
    ASSERT_FALSE(truncated.ok());
    EXPECT_EQ(truncated.error().missing, Error::Missing::Nothing) << truncated.message();
}

TEST_F(LoaderErrors, HeadsNotDividingWidth)
{
    writeBytes(m_dir / "model.safetensors", base().bytes());
    auto cfg = json::parse(readBytes(goldenDir() + "/tv_timm/config.json"));
    cfg["model_args"]["num_heads"] = 5;
    writeBytes(m_dir / "config.json", cfg.dump());
    auto model = Model::load(m_dir.string());
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.message().find("5 heads do not divide width 64"), std::string::npos) << model.message();
    EXPECT_NE(model.message().find("config.json"), std::string::npos) << model.message();
}

TEST_F(LoaderErrors, ConfigContradictsPatchSize)
{
    fs::copy_file(goldenDir() + "/tv_hf/model.safetensors", m_dir / "model.safetensors");
    auto cfg = json::parse(readBytes(goldenDir() + "/tv_hf/config.json"));
    cfg["patch_size"] = 16;
    writeBytes(m_dir / "config.json", cfg.dump());
    auto model = Model::load(m_dir.string());
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.message().find("config.json: patch_size 16 contradicts"), std::string::npos) << model.message();
}

TEST_F(LoaderErrors, ConfigContradictsDepth)
{
    fs::copy_file(goldenDir() + "/tv_hf/model.safetensors", m_dir / "model.safetensors");
    auto cfg = json::parse(readBytes(goldenDir() + "/tv_hf/config.json"));
    cfg["num_hidden_layers"] = 12;
    writeBytes(m_dir / "config.json", cfg.dump());
    auto model = Model::load(m_dir.string());
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.message().find("num_hidden_layers 12 contradicts the checkpoint's 2"), std::string::npos) << model.message();
}

TEST_F(LoaderErrors, FolderWithoutModel)
{
    auto model = Model::load(m_dir.string());
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.message().find("no model in this folder"), std::string::npos) << model.message();
}

TEST_F(LoaderErrors, MissingFile)
{
    auto model = Model::load((m_dir / "nope.safetensors").string());
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.message().find("nope.safetensors: no such file"), std::string::npos) << model.message();
}

TEST_F(LoaderErrors, UnknownBuiltin)
{
    auto model = Model::load("builtin:does-not-exist");
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.message().find("no such embedded model"), std::string::npos) << model.message();
}

TEST_F(LoaderErrors, CudaWithoutCuda)
{
    LoadOptions options;
    options.device = "cuda:0";
    auto model = Model::load(goldenDir() + "/tv_timm", options);
    if (model.ok())
        GTEST_SKIP() << "this LibTorch has CUDA and a GPU";
    EXPECT_NE(model.message().find("no CUDA"), std::string::npos) << model.message();
}

TEST_F(LoaderErrors, PickleThatWouldRunCodeIsRefusedThroughTheModelLoader)
{
    fs::copy_file(testDataDir() + "/pt/evil_system.pt", m_dir / "model.pt");
    auto model = Model::load((m_dir / "model.pt").string());
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.message().find("model.pt"), std::string::npos) << model.message();
    EXPECT_NE(model.message().find("no code is run"), std::string::npos) << model.message();
}

} // namespace

// A model description's keys are checked: a misspelt key is an error naming it and the closest valid one, never a
// silent guess (a "num_head" once left the head count to width/64 and the model classified 312/1000 instead of 690).
TEST(DescriptionKeys, UnknownKeysAreNamedWithTheClosestValidOne)
{
    const fs::path dir = scratchDir("description_keys");
    fs::copy_file(goldenDir() + "/tv_grid16/model.safetensors", dir / "model.safetensors", fs::copy_options::overwrite_existing);
    const std::pair<std::string, std::string> cases[] = {
        { R"({"weights": "model.safetensors", "architecture": {"num_head": 4}})",
          "architecture.num_head: unknown key; did you mean num_heads?" },
        { R"({"weights": "model.safetensors", "renames": []})", "renames: unknown key; did you mean rename?" },
        { R"({"weights": "model.safetensors", "preprocessing": {"crop_pc": 1.0}})",
          "preprocessing.crop_pc: unknown key; did you mean crop_pct?" },
        { R"({"weights": "model.safetensors", "architecture": {"zzz": 1}})", "architecture.zzz: unknown key (num_heads, block_norm," },
    };
    for (const auto& [text, message] : cases) {
        writeBytes(dir / "description.json", text);
        auto model = Model::load((dir / "description.json").string());
        ASSERT_FALSE(model) << text;
        EXPECT_NE(model.message().find((dir / "description.json").string() + ": " + message), std::string::npos) << model.message();
    }
    writeBytes(dir / "description.json",
               R"({"attnscope_description": 1, "about": "x", "weights": "model.safetensors", "architecture": {"num_heads": 4}})");
    auto ok = Model::load((dir / "description.json").string());
    EXPECT_TRUE(ok) << ok.message();
}
