#pragma once

#include <chrono>
#include <string>

// Progress on stderr: a redrawn bar with images/s and time left on a terminal, plain lines otherwise.
class Progress {
public:
    Progress(std::string what, int total);
    void update(int done);
    // The run continues one that stopped after `done` (a resumed run): rates count from here.
    void resumeAt(int done);
    // One line of its own (a skipped file), the bar redrawn under it on the next update.
    void note(const std::string& line);
    void finish();

private:
    std::string m_what;
    int m_total;
    bool m_terminal;
    int m_lastPercent = -1;
    int m_base = 0;
    std::chrono::steady_clock::time_point m_start;
};
