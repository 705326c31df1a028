// Tests of the restricted torch.save() reader against the fixtures of data/make_pt_fixtures.py and, when
// present, a real third-party checkpoint from ../shared.
#include "checkpoint/TorchCheckpoint.h"
#include "io/LoadError.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using attnscope::LoadError;
using attnscope::readTorchCheckpoint;
using attnscope::readTorchCheckpointFromMemory;

namespace {

// The build says where the tests' sources are (tests/CMakeLists.txt); otherwise they sit next to this file.
fs::path dataDir()
{
#ifdef ATTNSCOPE_TEST_SOURCE_DIR
    return fs::path(ATTNSCOPE_TEST_SOURCE_DIR) / "engine" / "data" / "pt";
#else
    return fs::path(__FILE__).parent_path() / "data" / "pt";
#endif
}

// shared/ lies beside the repository (read-only real models); env var first, then the build's definition.
fs::path sharedDir()
{
    if (const char* env = std::getenv("ATTNSCOPE_SHARED_DIR"); env && *env)
        return env;
#ifdef ATTNSCOPE_SHARED_DIR
    return ATTNSCOPE_SHARED_DIR;
#else
    return fs::path(__FILE__).parent_path().parent_path().parent_path() / ".." / "shared";
#endif
}

std::string fixture(const std::string& name) { return (dataDir() / name).string(); }

std::vector<char> fileBytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const nlohmann::json& expectedValues()
{
    static const nlohmann::json expected = [] {
        std::ifstream in(dataDir() / "expected.json");
        return nlohmann::json::parse(in);
    }();
    return expected;
}

at::ScalarType dtypeNamed(const std::string& name)
{
    static const std::map<std::string, at::ScalarType> kTypes = {
        {"float32", at::kFloat}, {"float16", at::kHalf},  {"bfloat16", at::kBFloat16}, {"float64", at::kDouble},
        {"int64", at::kLong},    {"int32", at::kInt},     {"int16", at::kShort},       {"int8", at::kChar},
        {"uint8", at::kByte},    {"bool", at::kBool},
    };
    return kTypes.at(name);
}

// Compares every tensor with expected.json exactly: the fixture values are all representable in their dtype.
void expectMatches(const std::map<std::string, at::Tensor>& tensors, const std::string& file)
{
    const nlohmann::json& expected = expectedValues().at(file);
    ASSERT_EQ(tensors.size(), expected.size()) << file;
    for (const auto& [name, want] : expected.items()) {
        SCOPED_TRACE(file + ": " + name);
        auto it = tensors.find(name);
        ASSERT_NE(it, tensors.end()) << "missing tensor";
        const at::Tensor& t = it->second;
        EXPECT_EQ(t.scalar_type(), dtypeNamed(want.at("dtype").get<std::string>()));
        EXPECT_EQ(t.sizes().vec(), want.at("shape").get<std::vector<int64_t>>());
        EXPECT_TRUE(t.is_contiguous());
        EXPECT_EQ(t.device().type(), at::kCPU);
        const auto& values = want.at("values");
        ASSERT_EQ(size_t(t.numel()), values.size());
        const at::Tensor flat = t.reshape({-1});
        const bool integral = at::isIntegralType(t.scalar_type(), /*includeBool=*/true);
        for (size_t i = 0; i < values.size(); ++i) {
            if (integral)
                EXPECT_EQ(flat[int64_t(i)].item<int64_t>(), values[i].get<int64_t>()) << "element " << i;
            else
                EXPECT_EQ(flat[int64_t(i)].item<double>(), values[i].get<double>()) << "element " << i;
        }
    }
}

// The message must name the file first and then say what is wrong.
void expectRefused(const std::string& file, const std::vector<std::string>& phrases)
{
    const std::string path = fixture(file);
    try {
        readTorchCheckpoint(path);
        ADD_FAILURE() << file << " was read";
    } catch (const LoadError& e) {
        const std::string message = e.what();
        EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
        for (const std::string& phrase : phrases)
            EXPECT_NE(message.find(phrase), std::string::npos) << "'" << phrase << "' not in: " << message;
    } catch (const std::exception& e) {
        ADD_FAILURE() << file << " threw something other than LoadError: " << e.what();
    }
    // The in-memory reader must refuse the same bytes the same way, naming what it was given.
    const std::vector<char> bytes = fileBytes(path);
    try {
        readTorchCheckpointFromMemory(bytes.data(), bytes.size(), "memory:" + file);
        ADD_FAILURE() << file << " was read from memory";
    } catch (const LoadError& e) {
        EXPECT_EQ(std::string(e.what()).rfind("memory:" + file + ": ", 0), 0u) << e.what();
    }
}

} // namespace

TEST(TorchCheckpoint, ReadsPlainOrderedDictOfEveryDtype) { expectMatches(readTorchCheckpoint(fixture("plain.pt")), "plain.pt"); }

TEST(TorchCheckpoint, ReadsPickleProtocol4) { expectMatches(readTorchCheckpoint(fixture("proto4.pt")), "proto4.pt"); }

TEST(TorchCheckpoint, SharedStoragesComeBackAsIndependentCopies)
{
    const auto tensors = readTorchCheckpoint(fixture("plain.pt"));
    const at::Tensor& whole = tensors.at("shared_whole");
    const at::Tensor& tail = tensors.at("shared_tail");
    // Each tensor owns its memory: writing one must not show through the other.
    EXPECT_FALSE(whole.is_alias_of(tail));
    const double before = tail[0].item<double>();
    whole.fill_(-1.0);
    EXPECT_EQ(tail[0].item<double>(), before);
    EXPECT_EQ(tensors.at("strided").storage().nbytes(), size_t(12 * 4)); // the view, not its 24-float storage
}

TEST(TorchCheckpoint, UnwrapsModelKeyOfTrainingCheckpoint)
{
    expectMatches(readTorchCheckpoint(fixture("wrapped.pt")), "wrapped.pt");
}

TEST(TorchCheckpoint, UnwrapsStateDictNextToOptimizerState)
{
    expectMatches(readTorchCheckpoint(fixture("nested.pt")), "nested.pt");
}

TEST(TorchCheckpoint, FlattensNestedDictsWithoutWrapperKey)
{
    expectMatches(readTorchCheckpoint(fixture("flatten.pt")), "flatten.pt");
}

TEST(TorchCheckpoint, ReadsParametersAndModuleMetadata)
{
    expectMatches(readTorchCheckpoint(fixture("parameters.pt")), "parameters.pt");
}

TEST(TorchCheckpoint, MapsCudaStoragesToCpuWithAnyArchiveFolder)
{
    expectMatches(readTorchCheckpoint(fixture("cuda_location.pt")), "cuda_location.pt");
}

TEST(TorchCheckpoint, SwapsBigEndianStorages)
{
    expectMatches(readTorchCheckpoint(fixture("big_endian.pt")), "big_endian.pt");
}

TEST(TorchCheckpoint, ReadsFromMemory)
{
    const std::vector<char> bytes = fileBytes(fixture("plain.pt"));
    expectMatches(readTorchCheckpointFromMemory(bytes.data(), bytes.size(), "plain.pt"), "plain.pt");
}

TEST(TorchCheckpoint, RefusesOsSystemWithoutRunningIt)
{
    const char* marker = "/tmp/attnscope_pwned_marker"; // the fixture's command would create it
    std::remove(marker);
    expectRefused("evil_system.pt", {"refuses to load 'posix.system' from the pickle", "no code is run"});
    EXPECT_FALSE(fs::exists(marker)) << "the pickle's command ran";
}

TEST(TorchCheckpoint, RefusesArgparseNamespace)
{
    expectRefused("evil_namespace.pt", {"refuses to load 'argparse.Namespace' from the pickle"});
}

TEST(TorchCheckpoint, RefusesNumpyArrays)
{
    expectRefused("evil_numpy.pt", {"refuses to load 'numpy.core.multiarray._reconstruct'"});
}

TEST(TorchCheckpoint, RefusesWholePickledModule)
{
    expectRefused("whole_module.pt", {"refuses to load 'torch.nn.modules.linear.Linear'"});
}

TEST(TorchCheckpoint, RefusesTruncatedZip) { expectRefused("truncated.pt", {"truncated or damaged zip archive"}); }

TEST(TorchCheckpoint, RefusesTorchScript)
{
    expectRefused("torchscript.pt", {"TorchScript archive: not read, it would run code; export a state_dict"});
}

TEST(TorchCheckpoint, RefusesLegacyFormat)
{
    expectRefused("legacy.pt", {"legacy (pre-1.6) torch.save format is not supported; re-save it with a current "
                                "PyTorch"});
}

TEST(TorchCheckpoint, RefusesNonZipFiles)
{
    expectRefused("not_a_zip.pt", {"not a PyTorch checkpoint (no zip signature)"});
    expectRefused("bare_pickle.pt", {"a bare pickle, not a torch.save zip archive"});
}

TEST(TorchCheckpoint, RefusesZipWithoutDataPkl) { expectRefused("no_data_pkl.pt", {"without data.pkl"}); }

TEST(TorchCheckpoint, RefusesCheckpointWithoutTensors)
{
    expectRefused("no_tensors.pt", {"holds no tensors", "'epoch'"});
}

TEST(TorchCheckpoint, RefusesMissingOrShortStorage)
{
    expectRefused("missing_storage.pt", {"storage record 'data/0' is missing"});
    expectRefused("short_storage.pt", {"storage record 'data/0' holds 8 bytes, the pickle needs 16"});
}

TEST(TorchCheckpoint, RefusesViewsOutsideTheirStorage)
{
    expectRefused("out_of_bounds.pt", {"reaches element 4 of a storage of 4 elements"});
    expectRefused("negative_stride.pt", {"negative tensor size or stride"});
}

TEST(TorchCheckpoint, RefusesMalformedPickles)
{
    expectRefused("bad_opcode.pt", {"data.pkl offset 3", "unknown pickle opcode 0xff"});
    expectRefused("truncated_pickle.pt", {"malformed pickle"});
    expectRefused("stack_underflow.pt", {"stack underflow"});
}

TEST(TorchCheckpoint, RefusesMissingFileAndDirectory)
{
    const std::string missing = fixture("does_not_exist.pt");
    try {
        readTorchCheckpoint(missing);
        ADD_FAILURE() << "read a missing file";
    } catch (const LoadError& e) {
        EXPECT_EQ(std::string(e.what()), missing + ": cannot open (No such file or directory)");
    }
    EXPECT_THROW(readTorchCheckpoint(dataDir().string()), LoadError);
}

// Every prefix of a valid checkpoint (a partial download) must end in LoadError, never in a crash.
TEST(TorchCheckpoint, EveryTruncationIsRefusedCleanly)
{
    const std::vector<char> bytes = fileBytes(fixture("cuda_location.pt"));
    for (size_t n = 0; n < bytes.size(); ++n)
        EXPECT_THROW(readTorchCheckpointFromMemory(bytes.data(), n, "prefix"), LoadError) << n << " bytes";
}

// Flipped bytes anywhere must give a LoadError or a result, never a crash or another exception type.
TEST(TorchCheckpoint, CorruptedBytesNeverCrash)
{
    const std::vector<char> original = fileBytes(fixture("plain.pt"));
    for (size_t i = 0; i < original.size(); i += 3) {
        std::vector<char> bytes = original;
        bytes[i] = char(bytes[i] ^ 0x5a);
        try {
            readTorchCheckpointFromMemory(bytes.data(), bytes.size(), "corrupt");
        } catch (const LoadError&) {
        }
    }
}

TEST(TorchCheckpoint, ReadsRealGpuSavedVit)
{
    const fs::path model = sharedDir() / "models" / "cifar10-vit-tintn" / "model_final.pt";
    if (!fs::exists(model))
        GTEST_SKIP() << model.string() << " is absent (set ATTNSCOPE_SHARED_DIR to the shared folder)";
    const auto tensors = readTorchCheckpoint(model.string());
    // 54 tensors (its zip has 56 records: data.pkl, version and 54 storages), as torch.load counts them.
    EXPECT_EQ(tensors.size(), 54u);
    int64_t parameters = 0;
    for (const auto& [name, t] : tensors) {
        EXPECT_EQ(t.scalar_type(), at::kFloat) << name;
        EXPECT_EQ(t.device().type(), at::kCPU) << name;
        parameters += t.numel();
    }
    EXPECT_EQ(parameters, 119098);
    ASSERT_TRUE(tensors.count("embedding.position_embeddings"));
    EXPECT_EQ(tensors.at("embedding.position_embeddings").sizes().vec(), (std::vector<int64_t>{1, 65, 48}));
    ASSERT_TRUE(tensors.count("encoder.blocks.0.attention.qkv_projection.weight"));
    EXPECT_EQ(tensors.at("encoder.blocks.0.attention.qkv_projection.weight").sizes().vec(),
              (std::vector<int64_t>{144, 48}));
    EXPECT_TRUE(tensors.at("classifier.weight").isfinite().all().item<bool>());
}
