// Exact t-SNE (Tsne.h): calibrated conditionals, symmetric P, momentum gradient descent with gains on the Student-t
// embedding, the O(n^2) passes split over rows between threads. Bitwise the same whatever the thread count: each row
// is computed by the same code whichever thread runs it, each thread writes only its own rows, and the sums over rows
// (Z, the KL, the mean) are taken on one thread in row order. The initial embedding comes from splitmix64 and a
// written-out Box-Muller, not <random>'s distributions, whose outputs differ between standard libraries.

#include "analyses/Tsne.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <thread>

namespace attnscope {

namespace {

constexpr double kFloor = 1e-12;       // P_ij's floor, and Q_ij's in the KL
constexpr double kEntropyTol = 1e-5;   // nats
constexpr int kSearchSteps = 200;
constexpr int kExplorationIters = 250; // early exaggeration and momentum 0.5 for these
constexpr double kExaggeration = 12;
constexpr double kMinGain = 0.01;
constexpr int kLanes = 16;             // partial sums per row in the gradient's pass (rowTerms)

int threadCount(int requested, int64_t n)
{
    const int t = requested > 0 ? requested : int(std::thread::hardware_concurrency());
    // Below ~64 rows a thread costs more to start than its share of a pass.
    return int(std::clamp<int64_t>(std::min<int64_t>(t, n / 64), 1, 256));
}

// f(begin, end) over rows [0, n) in `threads` contiguous, equal chunks; the calling thread takes the first.
template <class F>
void forRows(int64_t n, int threads, const F& f)
{
    struct Pool {
        std::vector<std::thread> threads;
        ~Pool() // joins on unwinding too
        {
            for (auto& t : threads)
                t.join();
        }
    } pool;
    for (int t = 1; t < threads; ++t)
        pool.threads.emplace_back([&f, n, t, threads] { f(n * t / threads, n * (t + 1) / threads); });
    f(int64_t(0), n / threads);
}

std::string validate(const std::vector<double>& rows, int64_t n, int64_t d, double perplexity, int64_t maxPoints)
{
    if (d < 1)
        return "t-SNE needs at least one dimension: got " + std::to_string(d);
    if (n > maxPoints)
        return "t-SNE takes at most " + std::to_string(maxPoints) + " points: got " + std::to_string(n);
    if (n > 0 && (uint64_t(d) > rows.size() / uint64_t(n) || uint64_t(n * d) != rows.size()))
        return "t-SNE got " + std::to_string(rows.size()) + " values for " + std::to_string(n) + " x "
            + std::to_string(d) + " rows";
    if (!(perplexity > 0) || std::isinf(perplexity))
        return "t-SNE perplexity must be positive and finite: got " + std::to_string(perplexity);
    if (double(n - 1) < 3 * perplexity) {
        char line[120];
        std::snprintf(line, sizeof line, "t-SNE needs more points than 3 x perplexity (%g): got %lld", 3 * perplexity,
            static_cast<long long>(n));
        return line;
    }
    for (size_t k = 0; k < rows.size(); ++k)
        if (!std::isfinite(rows[k]))
            return "t-SNE input has a non-finite value in row " + std::to_string(int64_t(k) / d) + ", column "
                + std::to_string(int64_t(k) % d);
    return {};
}

// Row i of P_{j|i}: squared distances, then the binary search on beta = 1 / (2 sigma^2) for entropy log(perplexity).
void calibrateRow(const double* x, int64_t n, int64_t d, int64_t i, double target, double* dist, double* p)
{
    const double* xi = x + i * d;
    double nearest = std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < n; ++j) {
        const double* xj = x + j * d;
        double s = 0;
        for (int64_t k = 0; k < d; ++k)
            s += (xi[k] - xj[k]) * (xi[k] - xj[k]);
        dist[j] = s;
        if (j != i)
            nearest = std::min(nearest, s);
    }
    // Distances from the nearest: the normalised row is the same, and exp cannot underflow to all zeros.
    for (int64_t j = 0; j < n; ++j)
        dist[j] -= nearest;
    double beta = 1, lo = 0, hi = std::numeric_limits<double>::infinity(), sum = 1;
    for (int step = 0; step < kSearchSteps; ++step) {
        sum = 0;
        double weighted = 0;
        for (int64_t j = 0; j < n; ++j) {
            p[j] = j == i ? 0 : std::exp(-beta * dist[j]);
            sum += p[j];
            weighted += p[j] * dist[j];
        }
        const double entropy = std::log(sum) + beta * weighted / sum; // -sum p log p, with log p = -beta dist - log sum
        if (std::abs(entropy - target) <= kEntropyTol)
            break;
        if (entropy > target) { // too flat: narrow the kernel
            lo = beta;
            beta = std::isinf(hi) ? beta * 2 : (beta + hi) / 2;
        } else {
            hi = beta;
            beta = (beta + lo) / 2;
        }
    }
    for (int64_t j = 0; j < n; ++j)
        p[j] /= sum;
}

std::vector<double> conditionals(const std::vector<double>& rows, int64_t n, int64_t d, double perplexity, int threads)
{
    std::vector<double> p(size_t(n * n));
    forRows(n, threads, [&](int64_t begin, int64_t end) {
        std::vector<double> dist(static_cast<size_t>(n));
        for (int64_t i = begin; i < end; ++i)
            calibrateRow(rows.data(), n, d, i, std::log(perplexity), dist.data(), p.data() + i * n);
    });
    return p;
}

// P_ij = (P_{j|i} + P_{i|j}) / 2n floored, in place, in tiles so that the transposed reads stay in cache.
void symmetrise(std::vector<double>& p, int64_t n)
{
    constexpr int64_t kTile = 64;
    const double scale = 1 / (2 * double(n));
    for (int64_t bi = 0; bi < n; bi += kTile)
        for (int64_t bj = bi; bj < n; bj += kTile)
            for (int64_t i = bi; i < std::min(bi + kTile, n); ++i)
                for (int64_t j = std::max(bj, i + 1); j < std::min(bj + kTile, n); ++j) {
                    double &ij = p[size_t(i * n + j)], &ji = p[size_t(j * n + i)];
                    ij = ji = std::max((ij + ji) * scale, kFloor);
                }
}

struct Embedding {
    int64_t n = 0;
    std::vector<double> x, y; // coordinates apart, so that the inner loops read contiguous arrays
};

// For row i, with q_ij = 1 / (1 + |y_i - y_j|^2) unnormalised: the attraction sum_j p_ij q_ij (y_i - y_j), the
// repulsion sum_j q_ij^2 (y_i - y_j) and sum_{j != i} q_ij. The gradient: 4 (exaggeration attraction - repulsion / Z).
struct RowTerms { double ax, ay, rx, ry, z; };

RowTerms rowTerms(const Embedding& e, const double* pi, int64_t i)
{
    const double xi = e.x[size_t(i)], yi = e.y[size_t(i)];
    // Lane k sums the terms j = k (mod kLanes): an element-wise loop over fixed-size arrays, which the compiler
    // vectorises at -O2 without reassociating (a single running sum it may not), the lanes added in order at the end.
    double acc[5][kLanes] = {};
    auto block = [&](int64_t j, int64_t m) {
        const double *bx = e.x.data() + j, *by = e.y.data() + j, *bp = pi + j;
        for (int64_t k = 0; k < m; ++k) {
            const double dx = xi - bx[k], dy = yi - by[k];
            const double q = 1 / (1 + dx * dx + dy * dy);
            const double pq = bp[k] * q, qq = q * q;
            acc[0][k] += pq * dx;
            acc[1][k] += pq * dy;
            acc[2][k] += qq * dx;
            acc[3][k] += qq * dy;
            acc[4][k] += q;
        }
    };
    int64_t j = 0;
    for (; j + kLanes <= e.n; j += kLanes)
        block(j, kLanes);
    block(j, e.n - j);
    double t[5] = {};
    for (int c = 0; c < 5; ++c)
        for (int k = 0; k < kLanes; ++k)
            t[c] += acc[c][k];
    return { t[0], t[1], t[2], t[3], t[4] - 1 }; // less q_ii = 1 (p_ii = 0 and y_i - y_i = 0 added nothing else)
}

// KL(P || Q) with Q = q / z, z = sum_{i != j} q_ij.
double klDivergence(const std::vector<double>& p, const Embedding& e, double z, int threads)
{
    const int64_t n = e.n;
    std::vector<double> rowKl(static_cast<size_t>(n));
    double kl = 0;
    forRows(n, threads, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            double s = 0;
            for (int64_t j = 0; j < n; ++j) {
                const double pij = p[size_t(i * n + j)], dx = e.x[size_t(i)] - e.x[size_t(j)];
                const double dy = e.y[size_t(i)] - e.y[size_t(j)], q = 1 / (1 + dx * dx + dy * dy) / z;
                s += j == i ? 0 : pij * std::log(pij / std::max(q, kFloor));
            }
            rowKl[size_t(i)] = s;
        }
    });
    for (double v : rowKl)
        kl += v;
    return kl;
}

// splitmix64 (Steele, Lea and Flood 2014): the same integers on every platform.
uint64_t splitmix64(uint64_t& state)
{
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// N(0, 1e-4) per coordinate by Box-Muller, one pair of uniforms per point.
Embedding initialEmbedding(int64_t n, uint64_t seed)
{
    Embedding e { n, std::vector<double>(size_t(n)), std::vector<double>(size_t(n)) };
    constexpr double kUnit = 1.0 / 9007199254740992.0; // 2^-53
    for (size_t i = 0; i < size_t(n); ++i) {
        const double u1 = double((splitmix64(seed) >> 11) + 1) * kUnit; // (0, 1]: the log is finite
        const double u2 = double(splitmix64(seed) >> 11) * kUnit;
        const double r = 1e-2 * std::sqrt(-2 * std::log(u1)), angle = 6.283185307179586 * u2;
        e.x[i] = r * std::cos(angle);
        e.y[i] = r * std::sin(angle);
    }
    return e;
}

void centre(Embedding& e)
{
    for (std::vector<double>* coordinate : { &e.x, &e.y }) {
        double mean = 0;
        for (double v : *coordinate)
            mean += v;
        mean /= double(e.n);
        for (double& v : *coordinate)
            v -= mean;
    }
}

} // namespace

std::vector<double> tsneConditionals(const std::vector<double>& rows, int64_t n, int64_t d, double perplexity)
{
    if (!validate(rows, n, d, perplexity, std::numeric_limits<int64_t>::max()).empty())
        return {};
    return conditionals(rows, n, d, perplexity, threadCount(0, n));
}

TsneResult tsne(const std::vector<double>& rows, int64_t n, int64_t d, const TsneOptions& options)
{
    TsneResult result;
    result.error = validate(rows, n, d, options.perplexity, options.maxPoints);
    if (result.error.empty() && options.iterations < 0)
        result.error = "t-SNE iterations must not be negative: got " + std::to_string(options.iterations);
    if (!result.error.empty())
        return result;
    try {
        const int threads = threadCount(options.threads, n);
        std::vector<double> p = conditionals(rows, n, d, options.perplexity, threads);
        symmetrise(p, n);
        Embedding e = initialEmbedding(n, options.seed);
        centre(e);
        const size_t count = size_t(n);
        std::vector<double> updateX(count), updateY(count), gainX(count, 1), gainY(count, 1);
        std::vector<RowTerms> terms(count);
        const double rate = std::max(double(n) / kExaggeration / 4, 50.0); // the "auto" learning rate
        auto pass = [&] { // the O(n^2) part; returns Z
            forRows(n, threads, [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i)
                    terms[size_t(i)] = rowTerms(e, p.data() + i * n, i);
            });
            double z = 0;
            for (const RowTerms& t : terms)
                z += t.z;
            return z;
        };
        for (int it = 0; it < options.iterations; ++it) {
            const bool exploring = it < kExplorationIters;
            const double exaggeration = exploring ? kExaggeration : 1, momentum = exploring ? 0.5 : 0.8;
            const double z = pass();
            // The step is O(n): not worth threads. A gain grows while the gradient's sign differs from the last
            // update's (the descent keeps its direction), and shrinks when it overshot.
            auto step = [&](double grad, double& update, double& gain, double& coordinate) {
                gain = update * grad < 0 ? gain + 0.2 : std::max(gain * 0.8, kMinGain);
                update = momentum * update - rate * gain * grad;
                coordinate += update;
            };
            for (size_t i = 0; i < count; ++i) {
                step(4 * (exaggeration * terms[i].ax - terms[i].rx / z), updateX[i], gainX[i], e.x[i]);
                step(4 * (exaggeration * terms[i].ay - terms[i].ry / z), updateY[i], gainY[i], e.y[i]);
            }
            centre(e);
        }
        result.kl = klDivergence(p, e, pass(), threads);
        result.xy.resize(2 * count);
        for (size_t i = 0; i < count; ++i) {
            result.xy[2 * i] = e.x[i];
            result.xy[2 * i + 1] = e.y[i];
        }
    } catch (const std::exception& ex) { // bad_alloc near maxPoints, or no thread to be had
        result = {};
        result.error = std::string("t-SNE failed: ") + ex.what();
    }
    return result;
}

} // namespace attnscope
