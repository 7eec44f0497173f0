// A progress bar on stderr for long runs, drawn only when stderr is a
// terminal and the run has already taken a moment (no flicker, no noise
// in pipes or logs).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace chring::cli {

class Progress {
public:
    Progress(std::string label, uint64_t total);
    ~Progress();
    Progress(const Progress &) = delete;
    Progress &operator=(const Progress &) = delete;

    void advance(uint64_t done_now);

private:
    void draw();

    std::string label_;
    uint64_t total_;
    uint64_t done_ = 0;
    bool terminal_;
    bool drawn_ = false;
    std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace chring::cli
