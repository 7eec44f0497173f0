-- chring.ring: a ring (chr_ring): membership changes, one batch
-- (apply), lookups, replicas, counts, the fingerprint, snapshots.
-- Internal to the binding: use require "chring".
local ffi = require "ffi"
local base = require "chring.ffi"
base.internal()
local errors = require "chring.errors"
local util = require "chring.util"
local options = require "chring.options"
local snapshot = require "chring.snapshot"

local ffi_new, ffi_string, ffi_gc = ffi.new, ffi.string, ffi.gc
local type, tostring, tonumber, setmetatable = type, tostring, tonumber, setmetatable
local C, K = base.C, base.K
local failure, bad_arg = errors.failure, errors.bad_arg
local check_string, check_optional_string = errors.check_string, errors.check_optional_string
local check_uint32, check_count, check_uint64 = errors.check_uint32, errors.check_count, errors.check_uint64
local ref_out, size_out, u64_out, double_out = util.ref_out, util.size_out, util.u64_out, util.double_out
local ref_buf, hex64, node_table = util.ref_buf, util.hex64, util.node_table
local handle_methods, fetch_all = util.handle_methods, util.fetch_all
local options_from, policy_method = options.options_from, options.policy_method

local M = {}

local Ring = {}
Ring.__index = Ring
M.Ring = Ring

-- A ring object for a chr_ring pointer the caller owns: freed at garbage
-- collection or by ring:free().
local function wrap(p)
    return setmetatable({ ptr = ffi_gc(p, C.chr_ring_free) }, Ring)
end
M.wrap = wrap

-- opts: tokens_per_weight, seed, hasher, placement (name or number), plugin_dir.
function M.new(opts)
    local o, err, code = options_from(opts, "new")
    if not o then return nil, err, code end
    local out = ffi_new("chr_ring *[1]")
    local st = C.chr_ring_new(o, out)
    if st ~= 0 then return failure(st) end
    return wrap(out[0])
end

-- Ring:free() frees the ring now instead of at garbage collection; later
-- calls raise.
local ring_ptr
Ring.free, ring_ptr = handle_methods(C.chr_ring_free, "freed ring")

M.ring_ptr = ring_ptr

function Ring:add(id, weight, zone, tag)
    local p = ring_ptr(self)
    check_string(id, 1, "add")
    check_uint32(weight, 2, "add")
    check_optional_string(zone, 3, "add")
    tag = check_uint64(tag, 4, "add")
    local st = C.chr_ring_add(p, id, #id, weight, zone, zone and #zone or 0, tag)
    if st ~= 0 then return failure(st) end
    return true
end

function Ring:remove(id)
    local p = ring_ptr(self)
    check_string(id, 1, "remove")
    local st = C.chr_ring_remove(p, id, #id)
    if st ~= 0 then return failure(st) end
    return true
end

function Ring:set_weight(id, weight)
    local p = ring_ptr(self)
    check_string(id, 1, "set_weight")
    check_uint32(weight, 2, "set_weight")
    local st = C.chr_ring_set_weight(p, id, #id, weight)
    if st ~= 0 then return failure(st) end
    return true
end

local ops = { add = K.CHR_OP_ADD, remove = K.CHR_OP_REMOVE, set_weight = K.CHR_OP_SET_WEIGHT }

-- changes: { {op = "add", id = , weight = , zone = , tag = },
--            {op = "remove", id = }, {op = "set_weight", id = , weight = } }
-- Returns true, or nil, err, code, index (1-based) of the change that failed.
function Ring:apply(changes)
    local p = ring_ptr(self)
    if type(changes) ~= "table" then bad_arg(1, "apply", "table", type(changes)) end
    local n = #changes
    local cs = ffi_new("chr_change[?]", n > 0 and n or 1)
    for i = 1, n do
        local ch, c = changes[i], cs[i - 1]
        if type(ch) ~= "table" then bad_arg(1, "apply", "table of changes", type(ch)) end
        local op = ops[ch.op]
        if not op then
            bad_arg(1, "apply", "op 'add', 'remove' or 'set_weight' in change " .. i, tostring(ch.op))
        end
        check_string(ch.id, 1, "apply (change " .. i .. " id)")
        c.op, c.id, c.id_len = op, ch.id, #ch.id
        if op ~= K.CHR_OP_REMOVE then
            check_uint32(ch.weight, 1, "apply (change " .. i .. " weight)")
            c.weight = ch.weight
        end
        if op == K.CHR_OP_ADD then
            check_optional_string(ch.zone, 1, "apply (change " .. i .. " zone)")
            c.zone, c.zone_len = ch.zone, ch.zone and #ch.zone or 0
            c.tag = check_uint64(ch.tag, 1, "apply (change " .. i .. " tag)")
        end
    end
    local st = C.chr_ring_apply(p, cs, n, size_out)
    if st ~= 0 then
        local _, err, code = failure(st)
        return nil, err, code, tonumber(size_out[0]) + 1
    end
    return true
end

-- Looks key up into the shared ref_out; returns its status.
local function lookup_into_ref(self, key, who)
    local p = ring_ptr(self)
    check_string(key, 1, who)
    return C.chr_ring_lookup(p, key, #key, ref_out)
end

-- The owner's id: no allocation beyond the interned id string.
function Ring:lookup(key)
    local st = lookup_into_ref(self, key, "lookup")
    if st ~= 0 then return failure(st) end
    local r = ref_out[0]
    return ffi_string(r.id, r.id_len)
end

-- The owner as a table {id, zone, tag, weight, tokens, ownership, index}.
function Ring:lookup_node(key)
    local st = lookup_into_ref(self, key, "lookup_node")
    if st ~= 0 then return failure(st) end
    return node_table(ref_out[0])
end

-- Up to n distinct owner ids for key, coordinator first, in `out` (a new
-- table if nil); returns the table and the count. `policy` (replica_policy)
-- picks the walk; nil is chr_ring_replicas' own.
local function ring_replicas(self, key, n, out, policy, fname)
    local p = ring_ptr(self)
    check_string(key, 1, fname)
    check_count(n, 2, fname)
    local st = C.chr_ring_node_count(p, size_out)
    if st ~= 0 then return failure(st) end
    local room = math.max(1, math.min(n, tonumber(size_out[0])))
    local buf = ref_buf(room)
    local want = n < 0 and 0 or math.min(n, room)
    if policy then
        st = C.chr_ring_replicas_policy(p, key, #key, policy, want, buf, size_out)
    else
        st = C.chr_ring_replicas(p, key, #key, want, buf, size_out)
    end
    if st ~= 0 then return failure(st) end
    out = out or {}
    local count = tonumber(size_out[0])
    for i = 0, count - 1 do out[i + 1] = ffi_string(buf[i].id, buf[i].id_len) end
    for i = count + 1, #out do out[i] = nil end
    return out, count
end

function Ring:replicas(key, n, out)
    return ring_replicas(self, key, n, out, nil, "replicas")
end

-- As replicas, under a replica policy (a replica_policy value or name).
Ring.replicas_policy = policy_method(ring_replicas)

local function counter(fn)
    return function(self)
        local st = fn(ring_ptr(self), size_out)
        if st ~= 0 then return failure(st) end
        return tonumber(size_out[0])
    end
end
Ring.node_count = counter(function(p, out) return C.chr_ring_node_count(p, out) end)
Ring.token_count = counter(function(p, out) return C.chr_ring_token_count(p, out) end)

-- Every member as a table, ids in byte order.
function Ring:nodes()
    local p = ring_ptr(self)
    local buf, count, code = fetch_all("chr_node_ref[?]", function(out, capacity)
        return C.chr_ring_nodes(p, out, capacity, size_out)
    end)
    if not buf then return nil, count, code end
    local list = {}
    for i = 0, count - 1 do list[i + 1] = node_table(buf[i]) end
    return list
end

function Ring:ownership(id)
    local p = ring_ptr(self)
    check_string(id, 1, "ownership")
    local st = C.chr_ring_ownership(p, id, #id, double_out)
    if st ~= 0 then return failure(st) end
    return tonumber(double_out[0])
end

-- The fingerprint as 16 hex digits.
function Ring:fingerprint()
    local st = C.chr_ring_fingerprint(ring_ptr(self), u64_out)
    if st ~= 0 then return failure(st) end
    return hex64(u64_out[0])
end

-- One consistent view for many lookups; valid until released or
-- collected, even after the ring is freed.
function Ring:snapshot()
    local out = ffi_new("chr_snapshot *[1]")
    local st = C.chr_ring_snapshot(ring_ptr(self), out)
    if st ~= 0 then return failure(st) end
    return snapshot.wrap(out[0])
end

return M
