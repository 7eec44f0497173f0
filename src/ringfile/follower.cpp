#include "ringfile/follower.hpp"

#include <cstring>
#include <new>

#include "base/errors.hpp"
#include "base/validate.hpp"

namespace chring {
namespace ringfile {
namespace {
constexpr const char *kWho = "chr_follower_check";  // the one entry point that reads
}  // namespace

chr_status Follower::check(int32_t *outcome, chr_ringfile_info *info) {
    std::lock_guard<std::mutex> lock(mu_);
    ++state_.checks;
    const FileStamp now = stamp_of(path_.c_str());
    if (read_once_ && now == last_) {
        state_.last_outcome = CHR_FOLLOW_UNCHANGED;
        if (outcome) *outcome = CHR_FOLLOW_UNCHANGED;
        return CHR_OK;
    }
    File f;
    Outcome o;
    FileStamp read_stamp;
    bool read = false;
    chr_status st;
    try {
        std::string text;
        st = read_file(path_.c_str(), kWho, text, &read_stamp);
        if (st == CHR_OK) {
            read = true;
            st = parse(text, path_, kWho, f, &o.error_line);
            if (st == CHR_OK) st = apply(ring_, f, kWho, o);
        }
    } catch (const std::bad_alloc &) {
        st = fail(CHR_ENOMEM, "%s: out of memory reading %s", kWho, path_.c_str());
    }
    describe(f, o, st, info);
    // The stamp of what was read belongs to the text applied or refused; a
    // file that could not be read keeps the stamp looked at, so it is
    // reported once. After an allocation failure nothing is kept: the next
    // check tries again.
    if (st != CHR_ENOMEM) {
        last_ = read ? read_stamp : now;
        read_once_ = true;
    }
    if (st == CHR_OK) record_applied(f, o);
    else record_refused(st, f, o);
    if (outcome) *outcome = state_.last_outcome;
    return st;
}

void Follower::record_applied(const File &f, const Outcome &o) {
    state_.last_outcome = CHR_FOLLOW_APPLIED;
    state_.status = CHR_OK;
    state_.error_line = 0;
    ++state_.applied;
    state_.applied_flags = directive_flags(f);
    state_.applied_revision = f.revision;
    state_.applied_fingerprint = o.fingerprint;
    state_.applied_availability = o.availability;
    state_.refused_flags = 0;
    state_.refused_revision = 0;
    state_.refused_fingerprint = 0;
    state_.message[0] = '\0';
}

void Follower::record_refused(chr_status st, const File &f, const Outcome &o) {
    state_.last_outcome = CHR_FOLLOW_REFUSED;
    state_.status = st;
    state_.error_line = uint32_t(o.error_line > UINT32_MAX ? UINT32_MAX : o.error_line);
    ++state_.refused;
    // What the parser had read of the refused file before its fault.
    state_.refused_flags =
        directive_flags(f) & (CHR_RINGFILE_HAS_REVISION | CHR_RINGFILE_HAS_FINGERPRINT);
    state_.refused_revision = f.revision_line ? f.revision : 0;
    state_.refused_fingerprint = f.fingerprint_line ? f.fingerprint : 0;
    std::strncpy(state_.message, last_error(), sizeof state_.message - 1);
    state_.message[sizeof state_.message - 1] = '\0';
}

void Follower::state(chr_follow_state *out) const {
    std::lock_guard<std::mutex> lock(mu_);
    write_versioned(out, state_);
}

}  // namespace ringfile
}  // namespace chring
