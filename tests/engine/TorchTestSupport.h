#pragma once

// Helpers of the tests that work on LibTorch tensors directly (the engine's oneDNN paths).

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <functional>
#include <pthread.h>
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

namespace detail {
inline std::atomic<int> g_signals { 0 };
extern "C" inline void countSignal(int) { g_signals.fetch_add(1, std::memory_order_relaxed); }
} // namespace detail

// Calls `work` over and over for `seconds` while another thread sends this one SIGUSR1 every 50 us (a handler that
// counts them is installed meanwhile), with allocations and frees between the calls, where glibc checks its chunks.
// oneDNN 2.6's gemm-based kernels point the stack pointer into a heap buffer, so that a signal frame lands there
// (OneDnnSupport.h): a kernel like that makes the process abort in glibc within the first second. Returns the number
// of signals handled.
inline int runUnderSignals(double seconds, const std::function<void()>& work)
{
    struct sigaction action {}, previous {};
    action.sa_handler = detail::countSignal;
    sigemptyset(&action.sa_mask);
    EXPECT_EQ(sigaction(SIGUSR1, &action, &previous), 0);
    detail::g_signals = 0;
    const pthread_t target = pthread_self();
    std::atomic<bool> done { false };
    std::thread sender([&] {
        while (!done) {
            pthread_kill(target, SIGUSR1);
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    });
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
        work();
        std::vector<at::Tensor> churn;
        for (int j = 0; j < 8; ++j)
            churn.push_back(at::empty({ 1000 + 97 * j }));
    }
    done = true;
    sender.join();
    sigaction(SIGUSR1, &previous, nullptr);
    return detail::g_signals.load();
}

} // namespace attnscope::test
