#pragma once

// Exact t-SNE (van der Maaten and Hinton 2008): a 2-D embedding of n points by gradient descent on KL(P || Q), with
// the exact O(n^2) gradient (no Barnes-Hut), seeded and bitwise reproducible whatever the thread count. Standard C++
// only (no LibTorch): the rows are float64 on the host.

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope {

struct TsneOptions {
    double perplexity = 30;
    int iterations = 1000;
    uint64_t seed = 0;
    int threads = 0; // 0: std::thread::hardware_concurrency()
    int64_t maxPoints = 10000;
};

struct TsneResult {
    std::vector<double> xy; // n x 2, row-major
    double kl = 0;          // KL(P || Q) of the final embedding
    std::string error;      // non-empty: nothing computed (one line, e.g. "t-SNE needs more points than 3 x perplexity (90): got 40")
};

// rows: n x d row-major, float64. Deterministic: the same rows, options and seed give bitwise the same xy whatever
// `threads` is. iterations = 0 gives the initial (random) embedding and its KL.
TsneResult tsne(const std::vector<double>& rows, int64_t n, int64_t d, const TsneOptions& options = {});

// The conditional probabilities' calibration, exposed for tests: row i of P_{j|i} (n x n row-major, diagonal 0) whose
// entropy (natural log) equals log(perplexity) to 1e-5 for each i. Empty where the input is invalid (see tsne()).
std::vector<double> tsneConditionals(const std::vector<double>& rows, int64_t n, int64_t d, double perplexity);

} // namespace attnscope
