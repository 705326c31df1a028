#pragma once

#include <attnscope/Image.h>
#include <attnscope/Model.h>
#include <attnscope/Npy.h>
#include <attnscope/Tensor.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace attnscope::test {

inline std::string goldenDir() { return ATTNSCOPE_TEST_SOURCE_DIR "/golden/fixtures"; }

// A Swin test fixture (tests/golden/swin/FOLDER, tests/golden/make_swin.py), loaded as the programs that read its
// per-window traces load it (LoadOptions::acceptHierarchical); null, with the failure said, when it does not load.
inline std::string swinDir(const std::string& folder) { return std::string(ATTNSCOPE_TEST_SOURCE_DIR "/golden/swin/") + folder; }
inline std::shared_ptr<const Model> loadSwin(const std::string& path)
{
    LoadOptions options;
    options.acceptHierarchical = true;
    auto model = Model::load(path, options);
    EXPECT_TRUE(model.ok()) << model.message();
    return model.ok() ? *model : nullptr;
}
inline std::string testDataDir() { return ATTNSCOPE_TEST_SOURCE_DIR "/engine/data"; }
// ../shared beside the checkout (or $ATTNSCOPE_SHARED_DIR): third-party models and data, never copied in.
inline std::string sharedDir()
{
    if (const char* env = std::getenv("ATTNSCOPE_SHARED_DIR"))
        return env;
    return ATTNSCOPE_SHARED_DIR;
}

// A fresh empty folder under the build tree's temp space.
inline std::filesystem::path scratchDir(const std::string& name)
{
    auto dir = std::filesystem::temp_directory_path() / ("attnscope-test-" + std::to_string(::getpid())) / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

// Up to `n` of the embedded Fashion-MNIST samples, prepared for `model`: five different garments.
inline std::vector<Model::Prepared> fashionSamples(const Model& model, int n)
{
    std::vector<Model::Prepared> out;
    for (const char* name : { "test-0000-ankle-boot.png", "test-0001-pullover.png", "test-0002-trouser.png",
                              "test-0004-shirt.png", "test-0006-coat.png" }) {
        auto image = decodeImage(ATTNSCOPE_TEST_SOURCE_DIR "/../resources/samples/fashion-mnist/" + std::string(name));
        auto prepared = image ? model.prepare(*image) : Result<Model::Prepared>(image.error());
        if (prepared)
            out.push_back(*prepared);
        if (int(out.size()) == n)
            break;
    }
    return out;
}

// A test on an embedded model with its first Fashion-MNIST samples prepared, the set-up that many engine tests share:
// ASSERT_NO_FATAL_FAILURE(useSamples(n)) in the body, then `model` and `images`.
class SampleImagesTest : public ::testing::Test {
protected:
    void useSamples(int n, const std::string& name = "builtin:fmnist-vit-d4")
    {
        auto loaded = Model::load(name);
        ASSERT_TRUE(loaded) << loaded.message();
        model = *loaded;
        images = fashionSamples(*model, n);
        ASSERT_EQ(images.size(), size_t(n));
    }

    std::shared_ptr<const Model> model;
    std::vector<Model::Prepared> images;
};

// max|a - b| / max|b|: the error relative to the reference tensor's scale (near-zero entries would make an
// elementwise relative error meaningless).
inline double relativeError(const Tensor& a, const Tensor& b)
{
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < b.numel(); ++i) {
        diff = std::max(diff, double(std::fabs(a.data()[i] - b.data()[i])));
        scale = std::max(scale, double(std::fabs(b.data()[i])));
    }
    return diff / std::max(scale, 1e-30);
}

inline ::testing::AssertionResult closeTo(const Tensor& actual, const Tensor& expected, double tolerance)
{
    if (actual.shape() != expected.shape()) {
        auto s = [](const Tensor& t) {
            std::string r;
            for (auto d : t.shape())
                r += std::to_string(d) + " ";
            return r;
        };
        return ::testing::AssertionFailure() << "shape [" << s(actual) << "] vs expected [" << s(expected) << "]";
    }
    for (int64_t i = 0; i < actual.numel(); ++i)
        if (!std::isfinite(actual.data()[i]))
            return ::testing::AssertionFailure() << "non-finite value at " << i;
    const double err = relativeError(actual, expected);
    if (err > tolerance)
        return ::testing::AssertionFailure() << "relative error " << err << " > " << tolerance;
    return ::testing::AssertionSuccess();
}

inline Tensor loadNpy(const std::string& path)
{
    auto r = readNpy(path);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.message());
    return r.ok() ? *r : Tensor();
}

// A CSV with a header row as rows of column name -> text.
inline std::vector<std::map<std::string, std::string>> readCsv(const std::filesystem::path& path)
{
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    std::vector<std::string> header;
    std::stringstream hs(line);
    for (std::string h; std::getline(hs, h, ',');)
        header.push_back(h);
    std::vector<std::map<std::string, std::string>> rows;
    while (std::getline(in, line)) {
        std::stringstream ls(line);
        std::map<std::string, std::string> row;
        size_t i = 0;
        for (std::string v; std::getline(ls, v, ',') && i < header.size(); ++i)
            row[header[i]] = v;
        rows.push_back(row);
    }
    return rows;
}

// Why bfloat16 products cannot run on the CPU here, or "": under make test-avx2's emulation of an AVX2 CPU on an AVX-512
// one. LibTorch 1.13 sends bfloat16 matrix products to oneDNN when the CPU itself has AVX-512 (its own CPUID check),
// and oneDNN, held to AVX2 by ONEDNN_MAX_CPU_ISA, then has no kernel for them ("could not create a primitive
// descriptor iterator"); a real AVX2 CPU takes LibTorch's own bfloat16 path instead, as its runs show.
inline std::string bf16BlockedByTheAvx2Emulation()
{
    const char* limit = std::getenv("ONEDNN_MAX_CPU_ISA");
    if (!limit)
        return "";
    std::string isa(limit);
    std::transform(isa.begin(), isa.end(), isa.begin(), [](unsigned char c) { return char(std::toupper(c)); });
    __builtin_cpu_init();
    if (isa.find("AVX512") != std::string::npos || isa == "ALL" || !__builtin_cpu_supports("avx512bw"))
        return "";
    return "ONEDNN_MAX_CPU_ISA=" + std::string(limit) + " on an AVX-512 CPU: LibTorch 1.13 gives oneDNN the bfloat16 products"
           " (it checks the CPU, not the limit) and oneDNN has no kernel below AVX-512; a real AVX2 CPU runs them";
}

// A CSV cell as a number; "nan" and empty cells are NaN.
inline double csvNumber(const std::string& s) { return s == "nan" || s.empty() ? std::nan("") : std::stod(s); }

} // namespace attnscope::test
