// What the family tests share (FamiliesTest.cpp, RotaryAndPoolTest.cpp): the folders of tests/golden/families (made by
// tests/golden/make_families.py), a scratch fixture that edits their configs, and the reference comparisons.
#pragma once

#include "TestSupport.h"

#include <attnscope/Model.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <string>

namespace attnscope::test::families {

namespace fs = std::filesystem;
using nlohmann::json;

inline std::string familiesDir() { return ATTNSCOPE_TEST_SOURCE_DIR "/golden/families"; }

inline std::string readBytes(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void writeBytes(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

class Families : public ::testing::Test {
protected:
    void SetUp() override { m_dir = scratchDir(::testing::UnitTest::GetInstance()->current_test_info()->name()); }
    void TearDown() override { fs::remove_all(m_dir); }

    // A copy of a family's folder with its config.json edited by `edit`.
    std::string editedCopy(const std::string& family, const std::function<void(json&)>& edit)
    {
        fs::copy_file(familiesDir() + "/" + family + "/model.safetensors", m_dir / "model.safetensors",
                      fs::copy_options::overwrite_existing);
        auto cfg = json::parse(readBytes(familiesDir() + "/" + family + "/config.json"));
        edit(cfg);
        writeBytes(m_dir / "config.json", cfg.dump());
        return m_dir.string();
    }

    fs::path m_dir;
};

inline std::string refusal(const std::string& path)
{
    auto model = Model::load(path);
    EXPECT_FALSE(model.ok()) << path << " loaded as " << (model.ok() ? (*model)->info().family : "");
    if (model.ok())
        return {};
    EXPECT_EQ(model.message().find('\n'), std::string::npos) << "one line: " << model.message();
    return model.message();
}

// Logits, both layers' attention maps and the block outputs 0..2 against the folder's reference (1e-4 of the largest).
inline void expectReferenceNumbers(const Model& model, const std::string& dir)
{
    RunOptions options;
    options.record = RecordSpec::everything();
    auto trace = model.run(loadNpy(dir + "/input.npy"), options);
    ASSERT_TRUE(trace.ok()) << trace.message();
    EXPECT_TRUE(closeTo(trace->logits, loadNpy(dir + "/logits.npy"), 1e-4)) << "logits";
    for (int l = 1; l <= 2; ++l)
        EXPECT_TRUE(closeTo(trace->attention[size_t(l)], loadNpy(dir + "/attn_L" + std::to_string(l) + ".npy"), 1e-4))
            << "attention " << l;
    for (int l = 0; l <= 2; ++l)
        EXPECT_TRUE(closeTo(trace->blocks[size_t(l)], loadNpy(dir + "/block_L" + std::to_string(l) + ".npy"), 1e-4))
            << "block " << l;
}

// softmax over the last axis of logits [rows, n] given as a function of (row, column), as a Tensor of `shape`.
inline Tensor softmaxRows(const std::vector<int64_t>& shape, const std::function<double(int64_t, int64_t)>& logit)
{
    const int64_t n = shape.back(), rows = std::accumulate(shape.begin(), shape.end() - 1, int64_t(1), std::multiplies<>());
    std::vector<float> out(size_t(rows * n));
    for (int64_t row = 0; row < rows; ++row) {
        double largest = -1e300, sum = 0;
        for (int64_t j = 0; j < n; ++j)
            largest = std::max(largest, logit(row, j));
        for (int64_t j = 0; j < n; ++j)
            sum += std::exp(logit(row, j) - largest);
        for (int64_t j = 0; j < n; ++j)
            out[size_t(row * n + j)] = float(std::exp(logit(row, j) - largest) / sum);
    }
    return Tensor::fromVector(shape, out);
}

#define EXPECT_CONTAINS(text, fragment)                                                                                \
    do {                                                                                                               \
        const std::string text_ = (text);                                                                              \
        EXPECT_NE(text_.find(fragment), std::string::npos) << text_;                                                   \
    } while (0)

} // namespace attnscope::test::families
