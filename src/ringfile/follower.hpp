// A ring kept equal to a ring file that another process rewrites: the one
// implementation behind chr_follower_* (chring.h, "Following a ring file")
// that every binding and the nginx module use.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "chring.h"
#include "ringfile/ringfile.hpp"

namespace chring {
class Ring;

namespace ringfile {

class Follower {
public:
    Follower(Ring &ring, std::string path) : ring_(ring), path_(std::move(path)) {}

    // One look at the file: when its stamp changed (or at the first call),
    // read, parse and apply it. CHR_OK with *outcome UNCHANGED or APPLIED;
    // the refusal's status with *outcome REFUSED. `info` as
    // chr_ring_apply_file fills it, untouched when nothing changed.
    chr_status check(int32_t *outcome, chr_ringfile_info *info);

    // A copy of the state; the caller set state->version (checked).
    void state(chr_follow_state *out) const;

private:
    void record_applied(const File &f, const Outcome &o);
    void record_refused(chr_status st, const File &f, const Outcome &o);

    mutable std::mutex mu_;  // serializes checks and state copies
    Ring &ring_;
    const std::string path_;
    bool read_once_ = false;  // a stamp was kept (not after an allocation failure)
    FileStamp last_;
    chr_follow_state state_ = CHR_FOLLOW_STATE_INIT;
};

}  // namespace ringfile
}  // namespace chring
