#include "cli/Progress.h"

#include <unistd.h>

#include <cstdio>
#include <mutex>

#include <attnscope/Image.h>

Progress::Progress(std::string what, int total)
    : m_what(std::move(what))
    , m_total(total)
    , m_terminal(::isatty(STDERR_FILENO) != 0)
    , m_start(std::chrono::steady_clock::now())
{
}

void Progress::update(int done)
{
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    const double rate = elapsed > 0 ? (done - m_base) / elapsed : 0;
    const double left = rate > 0 ? (m_total - done) / rate : 0;
    const int percent = m_total ? int(100.0 * done / m_total) : 100;
    std::lock_guard<std::mutex> lock(attnscope::stderrLock()); // images may be decoding on the reader thread
    if (m_terminal) {
        const int width = 30, filled = m_total ? width * done / m_total : width;
        std::fprintf(stderr, "\r%s [%.*s%*s] %d/%d  %.1f img/s  %.0fs left ", m_what.c_str(), filled,
                     "##############################", width - filled, "", done, m_total, rate, left);
    } else if (percent / 10 != m_lastPercent / 10 || done == m_total) {
        // Plain lines every 10% (logs of batch jobs stay short).
        std::fprintf(stderr, "%s: %d/%d images, %.1f img/s, %.0fs left\n", m_what.c_str(), done, m_total, rate, left);
    }
    m_lastPercent = percent;
    std::fflush(stderr);
}

void Progress::resumeAt(int done)
{
    m_base = done;
    m_start = std::chrono::steady_clock::now();
}

void Progress::note(const std::string& line)
{
    std::lock_guard<std::mutex> lock(attnscope::stderrLock());
    std::fprintf(stderr, m_terminal ? "\r\033[K%s\n" : "%s\n", line.c_str());
    std::fflush(stderr);
}

void Progress::finish()
{
    std::lock_guard<std::mutex> lock(attnscope::stderrLock());
    if (m_terminal)
        std::fprintf(stderr, "\n");
}
