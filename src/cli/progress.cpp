#include "progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace chring::cli {
namespace {
constexpr auto kQuietStart = std::chrono::milliseconds(300);  // short runs draw nothing
constexpr auto kRedrawEvery = std::chrono::milliseconds(100);
constexpr int kBarWidth = 30;
}  // namespace

Progress::Progress(std::string label, uint64_t total)
    : label_(std::move(label)), total_(total ? total : 1), terminal_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

Progress::~Progress() {
    if (drawn_) std::fprintf(stderr, "\r\033[K");
}

void Progress::advance(uint64_t done_now) {
    done_ += done_now;
    if (!terminal_) return;
    auto now = std::chrono::steady_clock::now();
    if (now - start_ < kQuietStart || now - last_draw_ < kRedrawEvery) return;
    last_draw_ = now;
    draw();
}

void Progress::draw() {
    double fraction = done_ >= total_ ? 1.0 : double(done_) / double(total_);
    int filled = int(fraction * kBarWidth);
    char bar[kBarWidth + 1];
    for (int i = 0; i < kBarWidth; ++i) bar[i] = i < filled ? '#' : '.';
    bar[kBarWidth] = '\0';
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    double eta = fraction > 0 ? elapsed * (1 - fraction) / fraction : 0;
    std::fprintf(stderr, "\r\033[K%s [%s] %3d%%  %.1fs left", label_.c_str(), bar, int(fraction * 100),
                 eta);
    std::fflush(stderr);
    drawn_ = true;
}

}  // namespace chring::cli
