-- chring.bounded: bounded loads and the tracker (docs/bounded-loads.md):
-- lookups that cap every node at a factor of its share of the load in
-- flight, capacities, and a tracker of requests in flight per node id.
-- Internal to the binding: use require "chring".
local ffi = require "ffi"
local bit = require "bit"
local base = require "chring.ffi"
base.internal()
local errors = require "chring.errors"
local util = require "chring.util"
local snapshot = require "chring.snapshot"

local ffi_new, ffi_gc = ffi.new, ffi.gc
local type, tonumber, setmetatable = type, tonumber, setmetatable
local C, K, raise = base.C, base.K, base.raise
local failure, bad_arg = errors.failure, errors.bad_arg
local check_string, check_uint32 = errors.check_string, errors.check_uint32
local view_out, handle_methods = util.view_out, util.handle_methods
local Snapshot, snap_ptr = snapshot.Snapshot, snapshot.snap_ptr

local M = {}

M.spill = { replicas = K.CHR_SPILL_REPLICAS, shuffle = K.CHR_SPILL_SHUFFLE }

-- opts: nil (no bound) or { factor = 1.25 | factor_pct = 125, spill =
-- "replicas" | "shuffle", max_probes = N, slack = N }.
local function bound_options(opts, fname)
    if opts == nil then return nil end
    if type(opts) ~= "table" then bad_arg(3, fname, "table or nil", type(opts)) end
    local o = ffi_new("chr_bound_options[1]")
    C.chr_bound_options_init(o, K.CHR_BOUND_OPTIONS_VERSION)
    if opts.factor_pct then
        check_uint32(opts.factor_pct, 3, fname)
        o[0].factor_pct = opts.factor_pct
    elseif opts.factor then o[0].factor_pct = math.floor(opts.factor * 100 + 0.5) end
    if opts.spill ~= nil then
        local spill = M.spill[opts.spill]
        if not spill then raise("bad argument #3 to '" .. fname .. "' (spill must be 'replicas' or 'shuffle')") end
        o[0].spill = spill
    end
    if opts.max_probes then
        check_uint32(opts.max_probes, 3, fname)
        o[0].max_probes = opts.max_probes
    end
    if opts.slack then o[0].slack = opts.slack end
    return o
end

local bound_out = ffi_new("chr_bound_result[1]")

local function bound_result(r)
    return {
        index = tonumber(r.index) + 1, home = tonumber(r.home) + 1, probes = tonumber(r.probes),
        spilled = bit.band(r.flags, K.CHR_BOUND_SPILLED) ~= 0,
        over = bit.band(r.flags, K.CHR_BOUND_OVER) ~= 0,
        load = tonumber(r.load), capacity = tonumber(r.capacity),
    }
end

-- The C arrays of lookup_bounded, grown to the largest snapshot and kept.
local loads_buf = util.grow("uint64_t[?]")
local available_buf = util.grow("unsigned char[?]")

-- The node table for key that has room, and a result table. loads: nil or
-- an array of in-flight counts by 1-based node index; available: nil or an
-- array of booleans; opts: see bound_options, nil for no bound (the first
-- available node of the key's replica walk).
function Snapshot:lookup_bounded(key, loads, available, opts)
    local p = snap_ptr(self)
    check_string(key, 1, "lookup_bounded")
    local n = self.count
    local lp, ap
    if loads ~= nil then
        if #loads ~= n then raise("bad argument #2 to 'lookup_bounded' (one load per node expected)") end
        lp = loads_buf(n + 1)
        for i = 1, n do lp[i - 1] = loads[i] end
    end
    if available ~= nil then
        if #available ~= n then raise("bad argument #3 to 'lookup_bounded' (one flag per node expected)") end
        ap = available_buf(n + 1)
        for i = 1, n do ap[i - 1] = available[i] and 1 or 0 end
    end
    local o = bound_options(opts, "lookup_bounded")
    local st = C.chr_snapshot_lookup_bounded(p, key, #key, lp, ap, n, o, view_out, bound_out)
    if st ~= 0 then return failure(st) end
    local i = tonumber(view_out[0].index) + 1
    return self.nodes[i] or self:node(i), bound_result(bound_out[0])
end

-- Capacities of the weights for total_load requests in flight.
function M.bound_capacities(weights, total_load, opts)
    local n = #weights
    local w = ffi_new("uint32_t[?]", n + 1)
    for i = 1, n do w[i - 1] = weights[i] end
    local caps = ffi_new("uint64_t[?]", n + 1)
    local st = C.chr_bound_capacities(w, n, total_load, bound_options(opts, "bound_capacities"), caps)
    if st ~= 0 then return failure(st) end
    local out = {}
    for i = 1, n do out[i] = tonumber(caps[i - 1]) end
    return out
end

local Tracker = {}
Tracker.__index = Tracker

-- A tracker of requests in flight per node id (max_nodes ids, nil = 4096).
function M.tracker(max_nodes)
    local out = ffi_new("chr_tracker *[1]")
    local st = C.chr_tracker_new(max_nodes or 0, out)
    if st ~= 0 then return failure(st) end
    return setmetatable({ ptr = ffi_gc(out[0], C.chr_tracker_free) }, Tracker)
end

local tracker_ptr
Tracker.free, tracker_ptr = handle_methods(C.chr_tracker_free, "freed tracker")

-- Places one request: node table, ticket (release it exactly once with
-- tracker:release), result table.
function Tracker:acquire(snap, key, opts)
    local t = tracker_ptr(self)
    local p = snap_ptr(snap)
    check_string(key, 2, "acquire")
    local ticket = ffi_new("chr_ticket")
    local st = C.chr_tracker_acquire(t, p, key, #key, bound_options(opts, "acquire"), view_out, bound_out, ticket)
    if st ~= 0 then return failure(st) end
    local i = tonumber(view_out[0].index) + 1
    return snap.nodes[i] or snap:node(i), ticket, bound_result(bound_out[0])
end

function Tracker:release(ticket)
    local st = C.chr_tracker_release(tracker_ptr(self), ticket)
    if st ~= 0 then return failure(st) end
    return true
end

function Tracker:set_available(id, available)
    check_string(id, 1, "set_available")
    local st = C.chr_tracker_set_available(tracker_ptr(self), id, #id, available and 1 or 0)
    if st ~= 0 then return failure(st) end
    return true
end

local u64_out = ffi_new("uint64_t[1]")

function Tracker:load(id)
    check_string(id, 1, "load")
    local st = C.chr_tracker_load(tracker_ptr(self), id, #id, u64_out)
    if st ~= 0 then return failure(st) end
    return tonumber(u64_out[0])
end

function Tracker:total()
    local st = C.chr_tracker_total(tracker_ptr(self), u64_out)
    if st ~= 0 then return failure(st) end
    return tonumber(u64_out[0])
end

M.Tracker = Tracker

return M
