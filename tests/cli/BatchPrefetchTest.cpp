// The report's reader (report/BatchPrefetch.cpp) with several threads, as on a GPU machine: the batches come in
// order, every image once, unreadable ones set aside with their cause, and each run's batch staged with the images
// that could be read. (On a CPU the CLI reads with one thread, so this is the test of the threaded path.)
#include "TestSupport.h"

#include <BatchPrefetch.h>

#include <attnscope/Files.h>

#include <filesystem>

using namespace attnscope;
using namespace attnscope::test;
namespace fs = std::filesystem;

TEST(BatchPrefetch, ThreadedReadingKeepsOrderAndSetsAsideUnreadableImages)
{
    auto model = Model::load("builtin:fmnist-vit-d4");
    ASSERT_TRUE(model) << model.message();
    auto paths = expandImagePaths({ ATTNSCOPE_SOURCE_DIR "/resources/samples/fashion-mnist" });
    ASSERT_TRUE(paths) << paths.message();
    ASSERT_EQ(paths->size(), 10u);
    paths->insert(paths->begin() + 5, ATTNSCOPE_SOURCE_DIR "/tests/data/bad/image_truncated.png");
    AnalysisOptions options;
    options.perturbations.push_back(*Perturbation::parse("gaussian:sigma=8"));
    AnalysisRun run(*model, options);
    std::vector<size_t> indices(paths->size());
    for (size_t i = 0; i < indices.size(); ++i)
        indices[i] = i;
    BatchPrefetch prefetch({ model->get() }, { &run }, { 0 }, *paths, indices, 4, 3);
    std::vector<size_t> seen, skipped;
    for (auto batch = prefetch.next(); !batch.end(); batch = prefetch.next()) {
        ASSERT_TRUE(batch.error.empty()) << batch.error;
        for (const auto& item : batch.images) {
            seen.push_back(item.index);
            EXPECT_EQ(item.prepared.size(), 1u);
            EXPECT_EQ(item.sha256.size(), 64u);
        }
        for (const auto& item : batch.skipped) {
            skipped.push_back(item.index);
            EXPECT_NE(item.error.find("image_truncated.png"), std::string::npos) << item.error;
        }
        if (batch.images.empty())
            continue;
        ASSERT_EQ(batch.staged.size(), 1u);
        auto added = run.addStaged(batch.staged[0]);
        ASSERT_TRUE(added) << added.message();
    }
    EXPECT_EQ(skipped, (std::vector<size_t> { 5 }));
    ASSERT_EQ(seen.size(), 10u);
    for (size_t i = 1; i < seen.size(); ++i)
        EXPECT_LT(seen[i - 1], seen[i]);
    EXPECT_EQ(run.images(), 10);
}
