-- chring.follow: a ring kept equal to a ring file that another process
-- rewrites, on the library's follower (chring.h, "Following a ring file";
-- docs/ring-file.md, section 11): chring.watch_file and its watcher.
-- Internal to the binding: use require "chring".
local ffi = require "ffi"
local bit = require "bit"
local base = require "chring.ffi"
base.internal()
local errors = require "chring.errors"
local util = require "chring.util"
local rings = require "chring.ring"
local ringfile = require "chring.ringfile"

local ffi_new, ffi_string, ffi_gc = ffi.new, ffi.string, ffi.gc
local type, tonumber, getmetatable, setmetatable = type, tonumber, getmetatable, setmetatable
local band = bit.band
local C, K = base.C, base.K
local failure, bad_arg, check_name = errors.failure, errors.bad_arg, errors.check_name
local hex64, handle_methods = util.hex64, util.handle_methods
local Ring, ring_ptr = rings.Ring, rings.ring_ptr
local info_table = ringfile.info_table

local M = {}

local Watcher = {}
Watcher.__index = Watcher

local follower_ptr
Watcher.free, follower_ptr = handle_methods(C.chr_follower_free, "freed watcher")

-- Filled by every step and state call: one check runs at a time per VM.
local outcome_out = ffi_new("int32_t[1]")
local follow_info = ffi_new("chr_ringfile_info[1]")
local state_out = ffi_new("chr_follow_state[1]")

-- Follows the ring file at path for ring, one step per call: callers call
-- watcher:step() from their event loop (e.g. an ngx.timer.every handler).
-- A step is one chr_follower_check: when the file's stamp (device, inode,
-- size, modification and change times, taken from the file it reads)
-- changed since the file last read (or at the first step), it applies it:
--   nil                        nothing changed
--   true, info                 applied (info as Ring:apply_file)
--   false, err, code, line     refused; the ring keeps its last good state
-- Each change is reported once. Replace the file by rename so that it is
-- never read half written. The watcher holds the ring: the ring lives at
-- least as long as its watcher. Returns nil, err, code when the library
-- refuses to make a follower (EINVAL: an empty path).
function M.watch_file(ring, path)
    if getmetatable(ring) ~= Ring then bad_arg(1, "watch_file", "ring", type(ring)) end
    check_name(path, 2, "watch_file")
    local out = ffi_new("chr_follower *[1]")
    local st = C.chr_follower_new(ring_ptr(ring), path, 0, out)
    if st ~= 0 then return failure(st) end
    -- `ring` keeps the Lua ring (and so its chr_ring) alive while the
    -- follower that borrows it is reachable.
    return setmetatable({ ptr = ffi_gc(out[0], C.chr_follower_free), ring = ring, path = path }, Watcher)
end

function Watcher:step()
    local f = follower_ptr(self)
    ring_ptr(self.ring)   -- raises once the ring is freed: the follower borrows it
    C.chr_ringfile_info_init(follow_info, K.CHR_RINGFILE_INFO_VERSION)
    local st = C.chr_follower_check(f, outcome_out, follow_info)
    local outcome = outcome_out[0]
    if st == 0 then
        if outcome == K.CHR_FOLLOW_APPLIED then return true, info_table(follow_info[0]) end
        return nil
    end
    local _, err = failure(st)
    return false, err, st, tonumber(follow_info[0].error_line)
end

local outcome_names = {
    [K.CHR_FOLLOW_UNCHANGED] = "unchanged", [K.CHR_FOLLOW_APPLIED] = "applied",
    [K.CHR_FOLLOW_REFUSED] = "refused",
}

-- What the watcher has seen (chr_follow_state) as a table:
--   checks, applied, refused   counts of steps, of applied and refused files
--   last_outcome               "unchanged", "applied" or "refused": the latest step
--   applied_revision           the %%revision of the file applied last (nil: none)
--   applied_fingerprint        the ring's fingerprint after that apply (nil: none yet)
--   applied_availability       the ring's availability digest after that apply (nil: none yet)
--   status, line, message      why the file as last read was refused (0, 0, ""
--                              when it is the one applied)
--   refused_revision, refused_fingerprint   the %%revision and %%fingerprint the
--                              refused file declared before its fault (nil: none)
-- Fingerprints as 16 hex digits, revisions as numbers (exact to 2^53).
function Watcher:state()
    local f = follower_ptr(self)
    C.chr_follow_state_init(state_out, K.CHR_FOLLOW_STATE_VERSION)
    local st = C.chr_follower_state(f, state_out)
    if st ~= 0 then return failure(st) end
    local s = state_out[0]
    local applied, refused_flags = tonumber(s.applied), s.refused_flags
    return {
        checks = tonumber(s.checks), applied = applied, refused = tonumber(s.refused),
        last_outcome = outcome_names[s.last_outcome] or tonumber(s.last_outcome),
        applied_revision = band(s.applied_flags, K.CHR_RINGFILE_HAS_REVISION) ~= 0
            and tonumber(s.applied_revision) or nil,
        applied_fingerprint = applied > 0 and hex64(s.applied_fingerprint) or nil,
        applied_availability = applied > 0 and hex64(s.applied_availability) or nil,
        status = tonumber(s.status), line = tonumber(s.error_line), message = ffi_string(s.message),
        refused_revision = band(refused_flags, K.CHR_RINGFILE_HAS_REVISION) ~= 0
            and tonumber(s.refused_revision) or nil,
        refused_fingerprint = band(refused_flags, K.CHR_RINGFILE_HAS_FINGERPRINT) ~= 0
            and hex64(s.refused_fingerprint) or nil,
    }
end

M.Watcher = Watcher

return M
