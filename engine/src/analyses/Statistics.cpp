#include "attnscope/Statistics.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace attnscope {

void RunningStats::add(double x)
{
    // Welford's update: numerically stable, one pass.
    ++m_n;
    const double delta = x - m_mean;
    m_mean += delta / double(m_n);
    m_m2 += delta * (x - m_mean);
}

void RunningStats::merge(const RunningStats& o)
{
    // Chan, Golub and LeVeque's pairwise combination.
    if (o.m_n == 0)
        return;
    if (m_n == 0) {
        *this = o;
        return;
    }
    const double n = double(m_n + o.m_n);
    const double delta = o.m_mean - m_mean;
    m_mean += delta * double(o.m_n) / n;
    m_m2 += o.m_m2 + delta * delta * double(m_n) * double(o.m_n) / n;
    m_n += o.m_n;
}

double RunningStats::sd() const { return m_n > 1 ? std::sqrt(std::max(0.0, m_m2) / double(m_n - 1)) : 0.0; }

RunningStats RunningStats::fromParts(int64_t n, double mean, double m2)
{
    RunningStats s;
    s.m_n = n;
    s.m_mean = mean;
    s.m_m2 = m2;
    return s;
}

std::string RunningStats::toJson() const
{
    char buf[128];
    std::snprintf(buf, sizeof buf, "[%lld,%.17g,%.17g]", static_cast<long long>(m_n), m_mean, m_m2);
    return buf;
}

bool RunningStats::fromJson(const std::string& json, RunningStats& out)
{
    long long n = 0;
    double mean = 0, m2 = 0;
    if (std::sscanf(json.c_str(), " [%lld ,%lf ,%lf ]", &n, &mean, &m2) != 3 || n < 0)
        return false;
    out = fromParts(n, mean, m2);
    return true;
}

void mergeInto(StatsTable& into, const StatsTable& from)
{
    for (const auto& [key, stats] : from)
        into[key].merge(stats);
}

} // namespace attnscope
