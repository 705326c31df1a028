#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>

namespace attnscope {

// Streaming mean and variance (Welford), mergeable (Chan et al.), so that per-image values need not be kept and
// shards of a dataset run merge to the unsharded result.
class RunningStats {
public:
    void add(double x);
    void merge(const RunningStats& other);

    int64_t count() const { return m_n; }
    double mean() const { return m_n ? m_mean : std::numeric_limits<double>::quiet_NaN(); }
    double sd() const; // sample standard deviation (n - 1); 0 for one value
    double ci95() const { return m_n ? 1.96 * sd() / std::sqrt(double(m_n)) : 0.0; } // half-width of the 95% interval

    // Exact round trip through JSON text (values printed with 17 significant digits).
    std::string toJson() const;
    static bool fromJson(const std::string& json, RunningStats& out);

    double m2() const { return m_m2; }
    static RunningStats fromParts(int64_t n, double mean, double m2);

private:
    int64_t m_n = 0;
    double m_mean = 0;
    double m_m2 = 0;
};

// Named RunningStats ("token_similarity/3/block/all" ...), in key order.
using StatsTable = std::map<std::string, RunningStats>;
void mergeInto(StatsTable& into, const StatsTable& from);

} // namespace attnscope
