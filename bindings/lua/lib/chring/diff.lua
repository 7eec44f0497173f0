-- chring.diff: what moves between two snapshots (docs/migration.md): the
-- ranges of key positions that change owner, the transfer matrix, where a
-- key lives before and after, and replica plans.
-- Internal to the binding: use require "chring".
local ffi = require "ffi"
local base = require "chring.ffi"
base.internal()
local errors = require "chring.errors"
local util = require "chring.util"
local options = require "chring.options"
local snapshot = require "chring.snapshot"

local ffi_new, ffi_gc = ffi.new, ffi.gc
local type, tostring, tonumber, getmetatable, setmetatable = type, tostring, tonumber, getmetatable, setmetatable
local C, K = base.C, base.K
local failure, bad_arg = errors.failure, errors.bad_arg
local check_string, check_count = errors.check_string, errors.check_count
local view_out, u32_out = util.view_out, util.u32_out
local hex64, node_table, handle_methods = util.hex64, util.node_table, util.handle_methods
local policy_arg = options.policy_arg
local Snapshot, snap_ptr = snapshot.Snapshot, snapshot.snap_ptr

local M = {}

local Diff = {}
Diff.__index = Diff

local diff_ptr
Diff.release, diff_ptr = handle_methods(C.chr_diff_free, "released diff")

local sides = { old = K.CHR_DIFF_OLD, new = K.CHR_DIFF_NEW }

-- The diff from snapshot old to snapshot new, or nil, err, code
-- (status.EINCOMPATIBLE: they place keys differently). It keeps its own
-- references to both: they may be released.
function M.diff(old, new)
    if getmetatable(old) ~= Snapshot then bad_arg(1, "diff", "snapshot", type(old)) end
    if getmetatable(new) ~= Snapshot then bad_arg(2, "diff", "snapshot", type(new)) end
    local out = ffi_new("chr_diff *[1]")
    local st = C.chr_diff_new(snap_ptr(old), snap_ptr(new), out)
    if st ~= 0 then return failure(st) end
    local d = setmetatable({ ptr = ffi_gc(out[0], C.chr_diff_free), nodes = { {}, {} } }, Diff)
    local info = ffi_new("chr_diff_info[1]")
    C.chr_diff_info_init(info, K.CHR_DIFF_INFO_VERSION)
    st = C.chr_diff_describe(d.ptr, info)
    if st ~= 0 then return failure(st) end
    local i = info[0]
    d.summary = {
        ranges = tonumber(i.ranges), cells = tonumber(i.cells), moved = tonumber(i.moved),
        old_fingerprint = hex64(i.old_fingerprint), new_fingerprint = hex64(i.new_fingerprint),
        old_nodes = tonumber(i.old_nodes), new_nodes = tonumber(i.new_nodes),
        added = tonumber(i.added), removed = tonumber(i.removed),
    }
    return d
end

-- Counts and totals: ranges, cells, moved (share of the key space),
-- old/new_fingerprint (hex), old/new_nodes, added, removed.
function Diff:info()
    diff_ptr(self)
    return self.summary
end

local function side_arg(side, n, fname)
    local code = sides[side]
    if not code then bad_arg(n, fname, "'old' or 'new'", tostring(side)) end
    return code
end

-- Node i (1-based) of side "old" or "new" as a table (as Snapshot:node);
-- nil for no node (CHR_DIFF_NONE).
local snap_out = ffi_new("const chr_snapshot *[1]")
local function diff_node(self, code, index0)
    if index0 == K.CHR_DIFF_NONE then return nil end
    local cache = self.nodes[code + 1]
    local node = cache[index0]
    if node then return node end
    C.chr_diff_snapshot(diff_ptr(self), code, snap_out)
    local st = C.chr_snapshot_node(snap_out[0], index0, view_out)
    if st ~= 0 then return failure(st) end
    node = node_table(view_out[0])
    cache[index0] = node
    return node
end

function Diff:node(side, i)
    local code = side_arg(side, 1, "node")
    check_count(i, 2, "node")
    return diff_node(self, code, i - 1)
end

local function index_or_nil(i)
    if i == K.CHR_DIFF_NONE then return nil end
    return tonumber(i) + 1
end

-- The owner fields of a range or a cell: from, to (1-based indices, nil
-- for no node) and from_id, to_id.
local function owner_fields(self, rec, list)
    local from, to = diff_node(self, K.CHR_DIFF_OLD, rec.from), diff_node(self, K.CHR_DIFF_NEW, rec.to)
    list.from, list.to = index_or_nil(rec.from), index_or_nil(rec.to)
    list.from_id, list.to_id = from and from.id, to and to.id
    return list
end

-- Reads `total` items through a cursor call into a new array of ctype.
local written_out = ffi_new("size_t[1]")
local function read_cursor(ctype, total, call)
    local buf = ffi_new(ctype, total > 0 and total or 1)
    local at = 0
    while at < total do
        local st = call(buf + at, total - at, at)
        if st ~= 0 then return failure(st) end
        if written_out[0] == 0 then break end
        at = at + tonumber(written_out[0])
    end
    return buf
end

-- Every range of key positions that changes owner, in order: { first,
-- last (uint64 cdata: positions first..last, both included, never
-- wrapping), from, to (1-based node indices in the old and new snapshot,
-- nil for no node), from_id, to_id }.
function Diff:ranges()
    local p = diff_ptr(self)
    local n = self.summary.ranges
    local buf, err, code = read_cursor("chr_diff_range[?]", n, function(out, room, at)
        return C.chr_diff_ranges(p, at, out, room, written_out)
    end)
    if not buf then return nil, err, code end
    local list = {}
    for i = 0, n - 1 do
        local r = buf[i]
        list[i + 1] = owner_fields(self, r, {
            first = ffi_new("uint64_t", r.first), last = ffi_new("uint64_t", r.last),
        })
    end
    return list
end

-- The transfer matrix's cells that are not 0, sorted by (from, to):
-- { from, to, fraction, from_id, to_id, moves }.
function Diff:matrix()
    local p = diff_ptr(self)
    local n = self.summary.cells
    local buf, err, code = read_cursor("chr_diff_cell[?]", n, function(out, room, at)
        return C.chr_diff_matrix(p, at, out, room, written_out)
    end)
    if not buf then return nil, err, code end
    local list = {}
    for i = 0, n - 1 do
        local cell = owner_fields(self, buf[i], { fraction = tonumber(buf[i].fraction) })
        cell.moves = cell.from_id ~= cell.to_id
        list[i + 1] = cell
    end
    return list
end

-- The index (1-based) in the other side of node i of `side`, nil if the
-- other side has no member with that id.
function Diff:counterpart(side, i)
    local code = side_arg(side, 1, "counterpart")
    check_count(i, 2, "counterpart")
    local st = C.chr_diff_counterpart(diff_ptr(self), code, i - 1, u32_out)
    if st ~= 0 then return failure(st) end
    return index_or_nil(u32_out[0])
end

-- Where key lives before and after: { position (uint64 cdata), old, new
-- (node tables, nil for no owner), moved }.
local transition_out = ffi_new("chr_transition[1]")
function Diff:lookup(key)
    local p = diff_ptr(self)
    check_string(key, 1, "lookup")
    local st = C.chr_diff_lookup(p, key, #key, transition_out)
    if st ~= 0 then return failure(st) end
    local t = transition_out[0]
    return {
        position = ffi_new("uint64_t", t.position),
        old = diff_node(self, K.CHR_DIFF_OLD, t.old_index),
        new = diff_node(self, K.CHR_DIFF_NEW, t.new_index),
        moved = t.moved ~= 0,
    }
end

-- The replica plan for n replicas under `policy` (as replicas_policy):
-- { first, last, to, to_id, sources = { old indices }, source_ids }, each
-- a range the node `to` gains and the old replicas it can copy it from.
function Diff:plan(policy, n)
    local p = diff_ptr(self)
    local code = policy_arg(policy, 1, "plan")
    if not code then return failure(K.CHR_ENOTSUP) end
    check_count(n, 2, "plan")
    local out = ffi_new("chr_plan *[1]")
    local st = C.chr_plan_new(p, code, n < 0 and 0 or n, out)
    if st ~= 0 then return failure(st) end
    local plan = ffi_gc(out[0], C.chr_plan_free)
    local info = ffi_new("chr_plan_info[1]")
    C.chr_plan_info_init(info, K.CHR_PLAN_INFO_VERSION)
    st = C.chr_plan_describe(plan, info)
    if st ~= 0 then return failure(st) end
    local count = tonumber(info[0].entries)
    local buf, err, ecode = read_cursor("chr_plan_range[?]", count, function(o, room, at)
        return C.chr_plan_ranges(plan, at, o, room, written_out)
    end)
    C.chr_plan_free(ffi_gc(plan, nil))
    if not buf then return nil, err, ecode end
    local list = {}
    for i = 0, count - 1 do
        local e = buf[i]
        local sources, ids = {}, {}
        for k = 0, e.source_count - 1 do
            sources[k + 1] = tonumber(e.sources[k]) + 1
            ids[k + 1] = diff_node(self, K.CHR_DIFF_OLD, e.sources[k]).id
        end
        list[i + 1] = {
            first = ffi_new("uint64_t", e.first), last = ffi_new("uint64_t", e.last),
            to = tonumber(e.to) + 1, to_id = diff_node(self, K.CHR_DIFF_NEW, e.to).id,
            sources = sources, source_ids = ids,
        }
    end
    return list
end

M.Diff = Diff

return M
