-- chring.snapshot: a snapshot, one consistent, immutable view of a ring
-- for many lookups (node tables made once per node, batches, replicas,
-- tokens). Internal to the binding: use require "chring".
local ffi = require "ffi"
local base = require "chring.ffi"
base.internal()
local errors = require "chring.errors"
local util = require "chring.util"
local options = require "chring.options"

local ffi_new, ffi_gc = ffi.new, ffi.gc
local type, tonumber, setmetatable = type, tonumber, setmetatable
local C, K = base.C, base.K
local failure, bad_arg = errors.failure, errors.bad_arg
local check_string, check_count = errors.check_string, errors.check_count
local view_out, size_out, u64_out, u32_out = util.view_out, util.size_out, util.u64_out, util.u32_out
local view_buf, batch_ptrs, batch_lens, batch_indices =
    util.view_buf, util.batch_ptrs, util.batch_lens, util.batch_indices
local hex64, node_table, handle_methods = util.hex64, util.node_table, util.handle_methods
local policy_arg, policy_method = options.policy_arg, options.policy_method

local M = {}

local Snapshot = {}
Snapshot.__index = Snapshot
M.Snapshot = Snapshot

-- A snapshot object for a chr_snapshot pointer the caller owns: released
-- at garbage collection or by snap:release(); valid until then, even after
-- the ring is freed.
function M.wrap(p)
    local count = ffi_new("size_t[1]")
    C.chr_snapshot_node_count(p, count)
    return setmetatable({
        ptr = ffi_gc(p, C.chr_snapshot_release),
        count = tonumber(count[0]),
        nodes = {},   -- node tables by 1-based index, made on first use
    }, Snapshot)
end

local snap_ptr
Snapshot.release, snap_ptr = handle_methods(C.chr_snapshot_release, "released snapshot")

-- Node i (1-based) as a table shared by every lookup on this snapshot: its
-- strings are copied from the snapshot once, the first time it is needed.
-- marked_down: the member is marked down, whether or not the mark is in
-- effect (down is set only while it is: not in panic).
function Snapshot:node(i)
    local node = self.nodes[i]
    if node then return node end
    local p = snap_ptr(self)
    check_count(i, 1, "node")
    local st = C.chr_snapshot_node(p, i - 1, view_out)
    if st ~= 0 then return failure(st) end
    node = node_table(view_out[0])
    st = C.chr_snapshot_marked_down(p, i - 1, u32_out)
    if st ~= 0 then return failure(st) end
    node.marked_down = u32_out[0] ~= 0
    self.nodes[i] = node
    return node
end

-- The owner's node table: no allocation once each node has been seen.
function Snapshot:lookup(key)
    local p = snap_ptr(self)
    check_string(key, 1, "lookup")
    local st = C.chr_snapshot_lookup(p, key, #key, view_out)
    if st ~= 0 then return failure(st) end
    local i = tonumber(view_out[0].index) + 1
    return self.nodes[i] or self:node(i)
end

-- The owner's 1-based node index.
function Snapshot:lookup_index(key)
    local p = snap_ptr(self)
    check_string(key, 1, "lookup_index")
    local st = C.chr_snapshot_lookup(p, key, #key, view_out)
    if st ~= 0 then return failure(st) end
    return tonumber(view_out[0].index) + 1
end

-- Owners of many keys in one C call: out[i] = 1-based node index of keys[i],
-- in `out` (trimmed to #keys) or a new table. The C arrays are the module's,
-- grown to the largest batch and kept, so a call that passes `out` back
-- allocates nothing.
function Snapshot:lookup_batch(keys, out)
    local p = snap_ptr(self)
    if type(keys) ~= "table" then bad_arg(1, "lookup_batch", "table", type(keys)) end
    local n = #keys
    local ptrs, lens, indices = batch_ptrs(n + 1), batch_lens(n + 1), batch_indices(n + 1)
    for i = 1, n do
        local k = keys[i]
        if type(k) ~= "string" then check_string(k, 1, "lookup_batch (key " .. i .. ")") end
        ptrs[i - 1], lens[i - 1] = k, #k   -- keys stay anchored in `keys`
    end
    local st = C.chr_snapshot_lookup_batch(p, ptrs, lens, n, indices)
    if st ~= 0 then return failure(st) end
    out = out or {}
    for i = 1, n do out[i] = indices[i - 1] + 1 end
    for i = n + 1, #out do out[i] = nil end
    return out
end

-- Up to n distinct owners (node tables), coordinator first, in `out`.
local function snapshot_replicas(self, key, n, out, policy, fname)
    local p = snap_ptr(self)
    check_string(key, 1, fname)
    check_count(n, 2, fname)
    local room = math.max(1, math.min(n, self.count))
    local buf = view_buf(room)
    local want = n < 0 and 0 or math.min(n, room)
    local st
    if policy then
        st = C.chr_snapshot_replicas_policy(p, key, #key, policy, want, buf, size_out)
    else
        st = C.chr_snapshot_replicas(p, key, #key, want, buf, size_out)
    end
    if st ~= 0 then return failure(st) end
    out = out or {}
    local count = tonumber(size_out[0])
    -- Read every index before node(), which reuses view_out but not buf.
    for i = 0, count - 1 do out[i + 1] = tonumber(buf[i].index) + 1 end
    for i = 1, count do out[i] = self.nodes[out[i]] or self:node(out[i]) end
    for i = count + 1, #out do out[i] = nil end
    return out, count
end

function Snapshot:replicas(key, n, out)
    return snapshot_replicas(self, key, n, out, nil, "replicas")
end

-- As replicas, under a replica policy (a replica_policy value or name).
Snapshot.replicas_policy = policy_method(snapshot_replicas)

-- Each member's replica share (by 1-based node index): the fraction of
-- keys for which it is among the first n replicas under `policy`, exact
-- from the token arcs; they sum to min(n, members with tokens).
function Snapshot:replica_shares(policy, n)
    local p = snap_ptr(self)
    local code = policy_arg(policy, 1, "replica_shares")
    check_count(n, 2, "replica_shares")
    if not code then return failure(K.CHR_ENOTSUP) end
    local buf = ffi_new("double[?]", self.count + 1)
    local st = C.chr_snapshot_replica_shares(p, code, n < 0 and 0 or n, buf, self.count, size_out)
    if st ~= 0 then return failure(st) end
    local out = {}
    for i = 1, self.count do out[i] = tonumber(buf[i - 1]) end
    return out
end

function Snapshot:node_count()
    snap_ptr(self)
    return self.count
end

function Snapshot:token_count()
    local st = C.chr_snapshot_token_count(snap_ptr(self), size_out)
    if st ~= 0 then return failure(st) end
    return tonumber(size_out[0])
end

function Snapshot:fingerprint()
    local st = C.chr_snapshot_fingerprint(snap_ptr(self), u64_out)
    if st ~= 0 then return failure(st) end
    return hex64(u64_out[0])
end

-- Token i (1-based) of the sorted token array: its position as 16 hex
-- digits and its owner's 1-based node index.
function Snapshot:token(i)
    local p = snap_ptr(self)
    check_count(i, 1, "token")
    if i < 1 then return nil, "chring: token index " .. i .. " is below 1", K.CHR_ERANGE end
    local st = C.chr_snapshot_token(p, i - 1, u64_out, u32_out)
    if st ~= 0 then return failure(st) end
    return hex64(u64_out[0]), u32_out[0] + 1
end

M.snap_ptr = snap_ptr

return M
