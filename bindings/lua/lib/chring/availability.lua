-- chring.availability: members marked down (chring.h, "Availability"):
-- ring:set_down, ring:set_availability, ring:availability and
-- snapshot:availability, snapshot:marked_down. While the marks are in
-- effect (not in panic), lookups, batches and replica lists send a down
-- member's keys to the next member of their own replica walk; no token
-- moves, so unmarking brings every key back. Internal to the binding: use
-- require "chring".
local ffi = require "ffi"
local base = require "chring.ffi"
base.internal()
local errors = require "chring.errors"
local util = require "chring.util"
local ring = require "chring.ring"
local snapshot = require "chring.snapshot"

local ffi_new = ffi.new
local type, tonumber = type, tonumber
local C, K = base.C, base.K
local failure, bad_arg = errors.failure, errors.bad_arg
local check_string, check_uint32, check_count = errors.check_string, errors.check_uint32, errors.check_count
local u32_out, hex64, grow = util.u32_out, util.hex64, util.grow
local Ring, ring_ptr = ring.Ring, ring.ring_ptr
local Snapshot, snap_ptr = snapshot.Snapshot, snapshot.snap_ptr

local M = {}

local info_out = ffi_new("chr_availability_info[1]")
local id_ptrs = grow("const void *[?]")
local id_lens = grow("size_t[?]")

-- Marks member id down (down = true) or up (false). Returns true, or nil,
-- err, code (ENOENT: not a member).
function Ring:set_down(id, down)
    local p = ring_ptr(self)
    check_string(id, 1, "set_down")
    if type(down) ~= "boolean" then bad_arg(2, "set_down", "boolean", type(down)) end
    local st = C.chr_ring_set_down(p, id, #id, down and 1 or 0)
    if st ~= 0 then return failure(st) end
    return true
end

-- Replaces the whole availability state in one snapshot: exactly the ids
-- of the list are down, every other member is up, and the panic threshold
-- is `threshold` percent (0..100; nil: 50, the default; 100 never panics).
-- Returns true, or nil, err, code, index: the 1-based position in ids of
-- an id that is not a member (ENOENT). On error the ring is unchanged.
function Ring:set_availability(ids, threshold)
    local p = ring_ptr(self)
    if type(ids) ~= "table" then bad_arg(1, "set_availability", "table", type(ids)) end
    if threshold == nil then threshold = K.CHR_PANIC_THRESHOLD_DEFAULT end
    check_uint32(threshold, 2, "set_availability")
    local n = #ids
    local ptrs, lens = id_ptrs(n + 1), id_lens(n + 1)
    for i = 1, n do
        local id = ids[i]
        check_string(id, 1, "set_availability (id " .. i .. ")")
        ptrs[i - 1], lens[i - 1] = id, #id   -- ids stay anchored in `ids`
    end
    local st = C.chr_ring_set_availability(p, ptrs, lens, n, threshold)
    if st ~= 0 then
        local _, err = failure(st)
        local info = errors.last_error()
        return nil, err, st, info and info.change
    end
    return true
end

-- The state filled by call(info) as a table: panic (boolean),
-- panic_threshold, down (members marked down), down_weight, total_weight,
-- digest (the availability digest, 16 hex digits as fingerprints are:
-- equal fingerprints and digests route every key the same).
local function availability_table(call)
    C.chr_availability_info_init(info_out, K.CHR_AVAILABILITY_INFO_VERSION)
    local st = call(info_out)
    if st ~= 0 then return failure(st) end
    local a = info_out[0]
    return {
        panic = a.panic ~= 0, panic_threshold = tonumber(a.panic_threshold), down = tonumber(a.down),
        down_weight = tonumber(a.down_weight), total_weight = tonumber(a.total_weight),
        digest = hex64(a.digest),
    }
end

-- The availability state of the ring's current snapshot.
function Ring:availability()
    local p = ring_ptr(self)
    return availability_table(function(info) return C.chr_ring_availability(p, info) end)
end

-- The availability state of this snapshot.
function Snapshot:availability()
    local p = snap_ptr(self)
    return availability_table(function(info) return C.chr_snapshot_availability(p, info) end)
end

-- Whether member i (1-based, as snapshot:node) is marked down, whether or
-- not the mark is in effect; nil, err, code (ERANGE) past the end.
function Snapshot:marked_down(i)
    local p = snap_ptr(self)
    check_count(i, 1, "marked_down")
    if i < 1 then return nil, "chring: node index " .. i .. " is below 1", K.CHR_ERANGE end
    local st = C.chr_snapshot_marked_down(p, i - 1, u32_out)
    if st ~= 0 then return failure(st) end
    return u32_out[0] ~= 0
end

M.PANIC_THRESHOLD_DEFAULT = K.CHR_PANIC_THRESHOLD_DEFAULT

return M
