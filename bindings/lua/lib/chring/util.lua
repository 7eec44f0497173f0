-- chring.util: what the binding's modules share: the out-structs and
-- buffers every call reuses, node tables, handle classes (release now or
-- at garbage collection), and lists fetched whole from the library.
-- Internal to the binding: use require "chring".
local ffi = require "ffi"
local bit = require "bit"
local base = require "chring.ffi"
base.internal()
local errors = require "chring.errors"

local ffi_new, ffi_string, ffi_gc, ffi_cast = ffi.new, ffi.string, ffi.gc, ffi.cast
local tonumber, tohex, band = tonumber, bit.tohex, bit.band
local K, raise, failure = base.K, base.raise, errors.failure

local M = {}

-- Out-structs and counters reused by every call: LuaJIT runs one
-- coroutine at a time per VM, and no call below yields between filling
-- one and reading it.
local ref_out = ffi_new("chr_node_ref[1]")
local view_out = ffi_new("chr_node_view[1]")
local size_out = ffi_new("size_t[1]")
local u64_out = ffi_new("uint64_t[1]")
local u32_out = ffi_new("uint32_t[1]")
local double_out = ffi_new("double[1]")

-- Buffers for n results, grown on demand and kept.
local function grow(ctype)
    local buf, size = nil, 0
    return function(n)
        if n > size then
            size = n
            buf = ffi_new(ctype, n)
        end
        return buf
    end
end
local ref_buf = grow("chr_node_ref[?]")
local view_buf = grow("chr_node_view[?]")
local batch_ptrs = grow("const void *[?]")
local batch_lens = grow("size_t[?]")
local batch_indices = grow("uint32_t[?]")

M.ref_out, M.view_out, M.size_out = ref_out, view_out, size_out
M.u64_out, M.u32_out, M.double_out = u64_out, u32_out, double_out
M.grow, M.ref_buf, M.view_buf = grow, ref_buf, view_buf
M.batch_ptrs, M.batch_lens, M.batch_indices = batch_ptrs, batch_lens, batch_indices

-- A 64-bit value (fingerprint, hash) as 16 hex digits.
local function hex64(v)
    return tohex(ffi_cast("uint64_t", v), 16)
end

-- A node as a plain table: every field copied from a chr_node_ref or view;
-- down: the member is marked down and lookups route around it now.
local function node_table(n)
    return {
        down = band(n.flags, K.CHR_NODE_DOWN) ~= 0,
        id = ffi_string(n.id, n.id_len),
        zone = ffi_string(n.zone, n.zone_len),
        tag = tonumber(n.tag),
        weight = tonumber(n.weight),
        tokens = tonumber(n.tokens),
        ownership = tonumber(n.ownership),
        index = tonumber(n.index) + 1,
    }
end

-- The release method of a handle class (release now rather than at garbage
-- collection; twice is a no-op) and the accessor of its live pointer,
-- which raises once it is released.
local function handle_methods(free, released)
    local function release(self)
        if self.ptr ~= nil then
            free(ffi_gc(self.ptr, nil))
            self.ptr = nil
        end
    end
    local function live_ptr(self)
        local p = self.ptr
        if p == nil then raise("chring: use of a " .. released) end
        return p
    end
    return release, live_ptr
end

-- Runs fill(buf, capacity), a chr_*_nodes / chr_hasher_list call that
-- stores the count in size_out, until buf was large enough: a writer or a
-- plugin may grow the list between asking its size and fetching it.
-- Returns buf, count or nil, err, code.
local function fetch_all(ctype, fill)
    local count = 0
    while true do
        local buf, capacity = ffi_new(ctype, count), count
        local st = fill(buf, capacity)
        count = tonumber(size_out[0])
        if st ~= K.CHR_ERANGE or count <= capacity then
            if st ~= 0 then return failure(st) end
            return buf, count
        end
    end
end

M.hex64, M.node_table, M.handle_methods, M.fetch_all = hex64, node_table, handle_methods, fetch_all

return M
