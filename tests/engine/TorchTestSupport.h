#pragma once

// Helpers of the tests that work on LibTorch tensors directly (the engine's oneDNN paths).

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

namespace attnscope::test {

// |a - b| <= 2e-5 + 1e-5 |b| everywhere: float32 sums of up to a few hundred O(1) products, in another order.
inline void expectClose(const at::Tensor& a, const at::Tensor& b)
{
    ASSERT_EQ(a.sizes(), b.sizes());
    const at::Tensor excess = (a - b).abs() - (2e-5 + 1e-5 * b.abs());
    EXPECT_LE(excess.max().item<double>(), 0.0) << "max |a - b| = " << (a - b).abs().max().item<double>();
}

// Four threads computing the same thing 20 times each under InferenceMode, sharing whatever `compute` captures;
// every thread's last result must match `expected` (expectClose).
inline void expectSameOnFourThreads(const std::function<at::Tensor()>& compute, const at::Tensor& expected)
{
    std::vector<at::Tensor> results(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < results.size(); ++t)
        threads.emplace_back([&, t] {
            c10::InferenceMode inference;
            for (int i = 0; i < 20; ++i)
                results[t] = compute();
        });
    for (auto& t : threads)
        t.join();
    for (const auto& r : results)
        expectClose(r, expected);
}

} // namespace attnscope::test
