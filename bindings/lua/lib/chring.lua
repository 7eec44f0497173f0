-- chring: consistent-hashing ring, LuaJIT FFI binding of libchring.
--
--   local chring = require "chring"
--   local ring = assert(chring.new())
--   assert(ring:add("cache-a", 1))
--   assert(ring:add("cache-b", 2))
--   local owner = ring:lookup("user:42")       -- "cache-a" or "cache-b"
--
-- Errors: calls return nil, message, status code (the library's
-- chr_last_error() text names the C function and the bad value); an
-- argument of the wrong Lua type raises an error, as a builtin would.
-- Indices are 1-based. Strings are passed to C as (pointer, length),
-- never copied; lookups reuse preallocated out-structs.
--
-- The shared library is loaded at require time from $CHRING_LIB if set,
-- else by its soname, "libchring.so.1", on the loader's path; a copy that
-- `meson install` put under a prefix other than /usr tries the library of
-- that prefix first (its path is written into the copy at install time).
local ffi = require "ffi"
local bit = require "bit"

local ffi_new, ffi_string, ffi_gc, ffi_cast = ffi.new, ffi.string, ffi.gc, ffi.cast
local type, error, tonumber, setmetatable, floor = type, error, tonumber, setmetatable, math.floor
local tohex = bit.tohex

local _M = { _VERSION = "0.1.0" }

-- Declarations copied from include/c/chring.h and chring_plugin.h; t/cdef_spec.lua
-- compiles them against the real headers. One declaration per line.
local cdef = [[
typedef int chr_status;
typedef uint64_t (*chr_hash64_fn)(const void *data, size_t len, uint64_t seed);
typedef void (*chr_digest_fn)(const void *data, size_t len, unsigned char *out);
typedef struct chr_hasher {
    uint32_t abi_version;
    uint32_t struct_size;
    const char *name;
    const char *description;
    chr_hash64_fn hash64;
    uint32_t digest_size;
    chr_digest_fn digest;
    uint32_t flags;
} chr_hasher;
typedef struct chr_options {
    uint32_t version;
    uint32_t tokens_per_weight;
    uint64_t seed;
    const char *hasher;
    int32_t placement;
    uint32_t reserved0;
    const char *plugin_dir;
} chr_options;
typedef struct chr_node_ref {
    uint64_t tag;
    double ownership;
    uint32_t weight;
    uint32_t tokens;
    uint32_t index;
    uint32_t id_len;
    uint32_t zone_len;
    uint32_t reserved0;
    unsigned char id[256];
    unsigned char zone[64];
} chr_node_ref;
typedef struct chr_node_view {
    const unsigned char *id;
    size_t id_len;
    const unsigned char *zone;
    size_t zone_len;
    uint64_t tag;
    double ownership;
    uint32_t weight;
    uint32_t tokens;
    uint32_t index;
    uint32_t reserved0;
} chr_node_view;
typedef struct chr_change {
    uint32_t op;
    uint32_t weight;
    const void *id;
    size_t id_len;
    const void *zone;
    size_t zone_len;
    uint64_t tag;
} chr_change;
typedef struct chr_hasher_info {
    const char *name;
    const char *description;
    const char *origin;
    uint32_t digest_size;
    uint32_t reserved0;
} chr_hasher_info;
typedef struct chr_placement_info {
    uint32_t version; int32_t mode; const char *name; const char *summary; const char *hasher;
    uint32_t digest_size; uint32_t flags;
} chr_placement_info;
typedef struct chr_ringfile_info {
    uint32_t version;
    uint32_t flags;
    uint64_t revision;
    uint64_t fingerprint;
    uint32_t format_version;
    uint32_t members;
    uint32_t added;
    uint32_t removed;
    uint32_t reweighted;
    uint32_t replaced;
    uint32_t error_line;
    uint32_t reserved0;
} chr_ringfile_info;
typedef struct chr_ring chr_ring;
typedef struct chr_snapshot chr_snapshot;
uint32_t chr_version(void);
const char *chr_version_string(void);
const char *chr_strerror(chr_status status);
const char *chr_last_error(void);
chr_status chr_options_init(chr_options *opts, uint32_t version);
chr_status chr_ring_new(const chr_options *opts, chr_ring **out);
void chr_ring_free(chr_ring *ring);
chr_status chr_ring_add(chr_ring *ring, const void *id, size_t id_len, uint32_t weight, const void *zone, size_t zone_len, uint64_t tag);
chr_status chr_ring_remove(chr_ring *ring, const void *id, size_t id_len);
chr_status chr_ring_set_weight(chr_ring *ring, const void *id, size_t id_len, uint32_t weight);
chr_status chr_ring_apply(chr_ring *ring, const chr_change *changes, size_t count, size_t *failed_index);
chr_status chr_ring_lookup(const chr_ring *ring, const void *key, size_t key_len, chr_node_ref *out);
chr_status chr_ring_replicas(const chr_ring *ring, const void *key, size_t key_len, size_t n, chr_node_ref *out, size_t *count);
chr_status chr_ring_node_count(const chr_ring *ring, size_t *count);
chr_status chr_ring_token_count(const chr_ring *ring, size_t *count);
chr_status chr_ring_nodes(const chr_ring *ring, chr_node_ref *out, size_t capacity, size_t *count);
chr_status chr_ring_ownership(const chr_ring *ring, const void *id, size_t id_len, double *fraction);
chr_status chr_ring_fingerprint(const chr_ring *ring, uint64_t *fingerprint);
chr_status chr_ring_snapshot(const chr_ring *ring, chr_snapshot **out);
void chr_snapshot_release(chr_snapshot *snap);
chr_status chr_snapshot_lookup(const chr_snapshot *snap, const void *key, size_t key_len, chr_node_view *out);
chr_status chr_snapshot_lookup_batch(const chr_snapshot *snap, const void *const *keys, const size_t *key_lens, size_t n, uint32_t *indices);
chr_status chr_snapshot_replicas(const chr_snapshot *snap, const void *key, size_t key_len, size_t n, chr_node_view *out, size_t *count);
chr_status chr_snapshot_node(const chr_snapshot *snap, size_t index, chr_node_view *out);
chr_status chr_snapshot_node_count(const chr_snapshot *snap, size_t *count);
chr_status chr_snapshot_token_count(const chr_snapshot *snap, size_t *count);
chr_status chr_snapshot_fingerprint(const chr_snapshot *snap, uint64_t *fingerprint);
chr_status chr_snapshot_token(const chr_snapshot *snap, size_t index, uint64_t *value, uint32_t *node_index);
chr_status chr_plugin_load(const char *path, size_t *loaded);
chr_status chr_hasher_list(const char *plugin_dir, chr_hasher_info *out, size_t capacity, size_t *count);
chr_status chr_hasher_register(const chr_hasher *hasher);
chr_status chr_hasher_hash(const char *name, const void *data, size_t len, uint64_t seed, uint64_t *out);
chr_status chr_ringfile_info_init(chr_ringfile_info *info, uint32_t version);
chr_status chr_ring_new_from_text(const char *text, size_t len, const char *name, const chr_options *base, chr_ring **out, chr_ringfile_info *info);
chr_status chr_ring_new_from_file(const char *path, const chr_options *base, chr_ring **out, chr_ringfile_info *info);
chr_status chr_placement_info_init(chr_placement_info *info, uint32_t version);
chr_status chr_placement_describe(int32_t mode, chr_placement_info *out);
chr_status chr_placement_find(const char *name, int32_t *mode);
chr_status chr_ring_apply2(chr_ring *ring, const void *changes, size_t count, size_t change_size, size_t *failed_index);
chr_status chr_ring_apply_text(chr_ring *ring, const char *text, size_t len, const char *name, chr_ringfile_info *info);
chr_status chr_ring_apply_file(chr_ring *ring, const char *path, chr_ringfile_info *info);
chr_status chr_ring_export(const chr_ring *ring, uint32_t flags, uint64_t revision, char *buf, size_t capacity, size_t *len);
chr_status chr_snapshot_export(const chr_snapshot *snap, uint32_t flags, uint64_t revision, char *buf, size_t capacity, size_t *len);
chr_status chr_ringfile_escape(const void *bytes, size_t len, uint32_t flags, char *buf, size_t capacity, size_t *out_len);
chr_status chr_ringfile_unescape(const char *field, size_t len, const char *what, char *buf, size_t capacity, size_t *out_len);
chr_status chr_hasher_digest(const char *name, const void *data, size_t len, unsigned char *out, size_t capacity, size_t *digest_size);
chr_status chr_replica_policy_name(int32_t policy, const char **name);
chr_status chr_replica_policy_find(const char *name, int32_t *policy);
chr_status chr_ring_replicas_policy(const chr_ring *ring, const void *key, size_t key_len, int32_t policy, size_t n, chr_node_ref *out, size_t *count);
chr_status chr_snapshot_replicas_policy(const chr_snapshot *snap, const void *key, size_t key_len, int32_t policy, size_t n, chr_node_view *out, size_t *count);
chr_status chr_snapshot_replica_shares(const chr_snapshot *snap, int32_t policy, size_t n, double *shares, size_t capacity, size_t *count);
typedef struct chr_diff chr_diff;
typedef struct chr_diff_range {
    uint64_t first;
    uint64_t last;
    uint32_t from;
    uint32_t to;
} chr_diff_range;
typedef struct chr_diff_cell {
    uint32_t from;
    uint32_t to;
    double fraction;
} chr_diff_cell;
typedef struct chr_diff_info {
    uint32_t version;
    uint32_t reserved0;
    uint64_t ranges;
    uint64_t cells;
    double moved;
    uint64_t old_fingerprint;
    uint64_t new_fingerprint;
    uint32_t old_nodes;
    uint32_t new_nodes;
    uint32_t added;
    uint32_t removed;
} chr_diff_info;
typedef struct chr_transition {
    uint64_t position;
    uint32_t old_index;
    uint32_t new_index;
    uint32_t moved;
    uint32_t reserved0;
    chr_node_view old_owner;
    chr_node_view new_owner;
} chr_transition;
typedef struct chr_plan chr_plan;
typedef struct chr_plan_range {
    uint64_t first;
    uint64_t last;
    uint32_t to;
    uint32_t source_count;
    uint32_t sources[16];
} chr_plan_range;
typedef struct chr_plan_info {
    uint32_t version;
    int32_t policy;
    uint32_t replicas;
    uint32_t reserved0;
    uint64_t entries;
    double copies;
} chr_plan_info;
chr_status chr_diff_info_init(chr_diff_info *info, uint32_t version);
chr_status chr_diff_new(const chr_snapshot *old_snap, const chr_snapshot *new_snap, chr_diff **out);
void chr_diff_free(chr_diff *diff);
chr_status chr_diff_describe(const chr_diff *diff, chr_diff_info *info);
chr_status chr_diff_ranges(const chr_diff *diff, size_t cursor, chr_diff_range *out, size_t capacity, size_t *written);
chr_status chr_diff_matrix(const chr_diff *diff, size_t cursor, chr_diff_cell *out, size_t capacity, size_t *written);
chr_status chr_diff_snapshot(const chr_diff *diff, int32_t side, const chr_snapshot **out);
chr_status chr_diff_counterpart(const chr_diff *diff, int32_t side, uint32_t index, uint32_t *other);
chr_status chr_diff_lookup(const chr_diff *diff, const void *key, size_t key_len, chr_transition *out);
chr_status chr_diff_lookup_batch(const chr_diff *diff, const void *const *keys, const size_t *key_lens, size_t n, uint32_t *old_indices, uint32_t *new_indices);
chr_status chr_plan_info_init(chr_plan_info *info, uint32_t version);
chr_status chr_plan_new(const chr_diff *diff, int32_t policy, size_t replicas, chr_plan **out);
void chr_plan_free(chr_plan *plan);
chr_status chr_plan_describe(const chr_plan *plan, chr_plan_info *info);
chr_status chr_plan_ranges(const chr_plan *plan, size_t cursor, chr_plan_range *out, size_t capacity, size_t *written);
typedef struct chr_bound_options {
    uint32_t version;
    uint32_t factor_pct;
    uint32_t spill;
    uint32_t max_probes;
    uint64_t slack;
} chr_bound_options;
typedef struct chr_bound_result {
    uint32_t index;
    uint32_t home;
    uint32_t probes;
    uint32_t flags;
    uint64_t load;
    uint64_t capacity;
} chr_bound_result;
typedef struct chr_tracker chr_tracker;
typedef struct chr_ticket {
    uint64_t slot;
    uint64_t check;
} chr_ticket;
chr_status chr_bound_options_init(chr_bound_options *opts, uint32_t version);
chr_status chr_bound_capacities(const uint32_t *weights, size_t n, uint64_t total_load, const chr_bound_options *opts, uint64_t *caps);
chr_status chr_snapshot_lookup_bounded(const chr_snapshot *snap, const void *key, size_t key_len, const uint64_t *loads, const unsigned char *available, size_t n_nodes, const chr_bound_options *opts, chr_node_view *out, chr_bound_result *result);
chr_status chr_tracker_new(size_t max_nodes, chr_tracker **out);
void chr_tracker_free(chr_tracker *tracker);
chr_status chr_tracker_acquire(chr_tracker *tracker, const chr_snapshot *snap, const void *key, size_t key_len, const chr_bound_options *opts, chr_node_view *out, chr_bound_result *result, chr_ticket *ticket);
chr_status chr_tracker_release(chr_tracker *tracker, const chr_ticket *ticket);
chr_status chr_tracker_set_available(chr_tracker *tracker, const void *id, size_t id_len, uint32_t available);
chr_status chr_tracker_load(const chr_tracker *tracker, const void *id, size_t id_len, uint64_t *load);
chr_status chr_tracker_total(const chr_tracker *tracker, uint64_t *total);
typedef struct chr_follower chr_follower;
typedef struct chr_follow_state {
    uint32_t version;
    int32_t last_outcome;
    chr_status status;
    uint32_t error_line;
    uint64_t checks;
    uint64_t applied;
    uint64_t refused;
    uint32_t applied_flags;
    uint32_t refused_flags;
    uint64_t applied_revision;
    uint64_t applied_fingerprint;
    uint64_t refused_revision;
    uint64_t refused_fingerprint;
    char message[512];
} chr_follow_state;
chr_status chr_follow_state_init(chr_follow_state *state, uint32_t version);
chr_status chr_follower_new(chr_ring *ring, const char *path, uint32_t flags, chr_follower **out);
void chr_follower_free(chr_follower *follower);
chr_status chr_follower_check(chr_follower *follower, int32_t *outcome, chr_ringfile_info *info);
chr_status chr_follower_state(const chr_follower *follower, chr_follow_state *state);
]]
_M._cdef = cdef

-- Another copy of this module in the same VM (a reload in nginx) has
-- declared them already; ffi.cdef refuses a second definition.
if not pcall(ffi.typeof, "chr_follow_state") then
    ffi.cdef(cdef)
end

-- The header's integer constants (t/cdef_spec.lua checks them too).
local K = {
    CHR_VERSION_MAJOR = 0, CHR_VERSION_MINOR = 1, CHR_VERSION_PATCH = 0, CHR_ABI_VERSION = 1,
    CHR_OK = 0, CHR_EINVAL = -1, CHR_ENOMEM = -2, CHR_ERANGE = -3, CHR_EEXIST = -4,
    CHR_ENOENT = -5, CHR_EEMPTY = -6, CHR_EVERSION = -7, CHR_ENOHASHER = -8, CHR_ENOTSUP = -9,
    CHR_EINTERNAL = -10, CHR_EPLUGIN_NOFILE = -11, CHR_EPLUGIN_NOTSO = -12,
    CHR_EPLUGIN_SYMBOL = -13, CHR_EPLUGIN_ABI = -14, CHR_EPLUGIN_DESC = -15,
    CHR_EPLUGIN_UNTRUSTED = -16,
    CHR_EFORMAT = -17, CHR_EOPTIONS = -18, CHR_EIO = -19,
    CHR_PLACEMENT_INFO_VERSION = 1, CHR_PLACEMENT_SEEDED = 1,
    CHR_RINGFILE_FORMAT_VERSION = 1, CHR_RINGFILE_LINE_MAX = 65536, CHR_RINGFILE_SIZE_MAX = 268435456,
    CHR_RINGFILE_HAS_REVISION = 1, CHR_RINGFILE_HAS_FINGERPRINT = 2, CHR_RINGFILE_HAS_OPTIONS = 4,
    CHR_RINGFILE_INFO_VERSION = 1, CHR_EXPORT_REVISION = 1, CHR_EXPORT_JSON = 2, CHR_ESCAPE_HIDDEN = 1,
    CHR_NODE_ID_MAX = 256, CHR_ZONE_MAX = 64, CHR_WEIGHT_MAX = 1000000,
    CHR_TOKENS_PER_WEIGHT_MAX = 65536, CHR_TOKENS_MAX = 16777216, CHR_NODES_MAX = 1048576,
    CHR_PLACEMENT_NATIVE = 0, CHR_PLACEMENT_KETAMA = 1, CHR_PLACEMENT_KETAMA_UNWEIGHTED = 2,
    CHR_PLACEMENT_NGINX = 3, CHR_OPTIONS_VERSION = 1, CHR_DEFAULT_TOKENS_PER_WEIGHT = 160,
    CHR_OP_ADD = 1, CHR_OP_REMOVE = 2, CHR_OP_SET_WEIGHT = 3,
    CHR_PLUGIN_ABI_VERSION = 1, CHR_HASHER_NAME_MAX = 63, CHR_DIGEST_MAX = 64,
    CHR_HASHER_DESCRIPTION_MAX = 1023,
    CHR_REPLICAS_NODES = 0, CHR_REPLICAS_ZONES_FIRST = 1, CHR_REPLICAS_NTS = 2,
    CHR_FINGERPRINT_VERSION = 2,
    CHR_EINCOMPATIBLE = -20, CHR_DIFF_NONE = 0xffffffff, CHR_DIFF_OLD = 0, CHR_DIFF_NEW = 1,
    CHR_DIFF_INFO_VERSION = 1, CHR_PLAN_REPLICAS_MAX = 16, CHR_PLAN_INFO_VERSION = 1,
    CHR_SPILL_REPLICAS = 0, CHR_SPILL_SHUFFLE = 1, CHR_BALANCE_FACTOR_MIN = 100,
    CHR_BALANCE_FACTOR_MAX = 100000, CHR_LOAD_MAX = 1099511627776, CHR_BOUND_OPTIONS_VERSION = 1,
    CHR_BOUND_SPILLED = 1, CHR_BOUND_OVER = 2, CHR_TRACKER_NODES_DEFAULT = 4096,
    CHR_FOLLOW_UNCHANGED = 0, CHR_FOLLOW_APPLIED = 1, CHR_FOLLOW_REFUSED = 2,
    CHR_FOLLOW_STATE_VERSION = 1, CHR_FOLLOW_MESSAGE_MAX = 512,
}
_M._constants = K

-- Status codes by name (chring.status.ENOENT == -5) and back.
_M.status = {}
for name, value in pairs(K) do
    local short = name:match("^CHR_(E[%u_]+)$")
    if short then
        _M.status[short] = value
        _M.status[value] = short
    end
end

-- Raises msg at the first caller outside this file, so that an argument
-- error names the line of the call that passed the argument, as a
-- builtin's does (level 2 of the API function, however deep the check sits
-- in here).
local this_source = debug.getinfo(1, "S").source
local function raise(msg)
    local level = 2
    while true do
        local info = debug.getinfo(level, "S")
        if not info or info.source ~= this_source then break end
        level = level + 1
    end
    error(msg, level)
end

local function load_library()
    local explicit = os.getenv("CHRING_LIB")
    local names = { "libchring.so.1" }
    -- Replaced by meson install outside /usr (bindings/meson.build); the
    -- source tree's copy keeps the placeholder and uses the soname alone.
    local installed_libdir = "@CHRING_INSTALLED_LIBDIR@"
    if installed_libdir ~= "" and installed_libdir:sub(1, 1) ~= "@" then
        table.insert(names, 1, installed_libdir .. "/libchring.so.1")
    end
    if explicit then names = { explicit } end
    local errors = {}
    for _, name in ipairs(names) do
        local ok, lib = pcall(ffi.load, name)
        if ok then return lib end
        errors[#errors + 1] = tostring(lib)
    end
    raise("chring: cannot load libchring (" .. table.concat(errors, "; ")
          .. "); set CHRING_LIB to its path")
end
local C = load_library()
_M._lib = C

-- Replica policies (chring.h, "Zone-aware replicas") by Lua name: the
-- library's names with "_" for "-" (replica_policy.zones_first), read from
-- the library at load time (chr_replica_policy_name numbers them from 0
-- without gaps), so a policy the library adds needs no change here. The
-- replica calls also take the library's names ("zones-first").
_M.replica_policy = {}
do
    local name_out = ffi_new("const char *[1]")
    for policy = 0, 1023 do
        if C.chr_replica_policy_name(policy, name_out) ~= 0 then break end
        _M.replica_policy[(ffi_string(name_out[0]):gsub("-", "_"))] = policy
    end
end

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

local function failure(status)
    return nil, ffi_string(C.chr_last_error()), status
end

local function bad_arg(n, fname, expected, got)
    raise(("chring: bad argument #%d to '%s' (%s expected, got %s)"):format(n, fname, expected, got))
end

local function check_string(v, n, fname)
    if type(v) ~= "string" then bad_arg(n, fname, "string", type(v)) end
end

local function check_optional_string(v, n, fname)
    if v ~= nil and type(v) ~= "string" then bad_arg(n, fname, "string or nil", type(v)) end
end

-- A name for a C string parameter: a NUL byte would silently cut it short.
local function check_name(v, n, fname, optional)
    if optional then check_optional_string(v, n, fname) else check_string(v, n, fname) end
    if v and v:find("\0", 1, true) then bad_arg(n, fname, "string without NUL bytes", "one with a NUL") end
end

local function check_uint32(v, n, fname)
    if type(v) ~= "number" or v < 0 or v > 0xffffffff or v ~= floor(v) then
        bad_arg(n, fname, "integer 0..2^32-1", type(v) == "number" and tostring(v) or type(v))
    end
end

local function check_count(v, n, fname)
    if type(v) ~= "number" or v ~= floor(v) then
        bad_arg(n, fname, "integer", type(v) == "number" and tostring(v) or type(v))
    end
end

-- A uint64 from a Lua number (exact up to 2^53) or a 64-bit cdata.
local function check_uint64(v, n, fname)
    if v == nil then return 0 end
    if type(v) == "number" then
        if v < 0 or v ~= floor(v) then bad_arg(n, fname, "non-negative integer", tostring(v)) end
        return v
    end
    if type(v) == "cdata" and (ffi.istype("uint64_t", v) or ffi.istype("int64_t", v)) then return v end
    bad_arg(n, fname, "integer or 64-bit cdata", type(v))
end

local function hex64(v)
    return tohex(ffi_cast("uint64_t", v), 16)
end

-- A node as a plain table: every field copied from a chr_node_ref or view.
local function node_table(n)
    return {
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

--------------------------------------------------------------------------
-- Module functions
--------------------------------------------------------------------------

function _M.version()
    return tonumber(C.chr_version())
end

-- The loaded library's version as text, "MAJOR.MINOR.PATCH".
function _M.version_string()
    return ffi_string(C.chr_version_string())
end

function _M.strerror(status)
    return ffi_string(C.chr_strerror(status))
end

function _M.hash(hasher, data, seed)
    check_name(hasher, 1, "hash")
    check_string(data, 2, "hash")
    seed = check_uint64(seed, 3, "hash")
    local st = C.chr_hasher_hash(hasher, data, #data, seed, u64_out)
    if st ~= 0 then return failure(st) end
    return hex64(u64_out[0])
end

function _M.digest(hasher, data)
    check_name(hasher, 1, "digest")
    check_string(data, 2, "digest")
    local out = ffi_new("unsigned char[?]", K.CHR_DIGEST_MAX)
    local st = C.chr_hasher_digest(hasher, data, #data, out, K.CHR_DIGEST_MAX, size_out)
    if st ~= 0 then return failure(st) end
    return ffi_string(out, size_out[0])
end

function _M.load_plugin(path)
    check_name(path, 1, "load_plugin")
    local st = C.chr_plugin_load(path, size_out)
    if st ~= 0 then return failure(st) end
    return tonumber(size_out[0])
end

function _M.hashers(plugin_dir)
    check_name(plugin_dir, 1, "hashers", true)
    local out, count, code = fetch_all("chr_hasher_info[?]", function(buf, capacity)
        return C.chr_hasher_list(plugin_dir, buf, capacity, size_out)
    end)
    if not out then return nil, count, code end
    local list = {}
    for i = 0, count - 1 do
        local h = out[i]
        list[i + 1] = {
            name = ffi_string(h.name), description = ffi_string(h.description),
            origin = ffi_string(h.origin), digest_size = tonumber(h.digest_size),
        }
    end
    return list
end

--------------------------------------------------------------------------
-- Ring
--------------------------------------------------------------------------

local Ring = {}
Ring.__index = Ring

-- Fills a chr_options from the table opts (nil = defaults); `who` names
-- the calling function in errors. Returns the cdata, or nil, err, code.
-- Its strings are the caller's, alive while the caller holds opts.
local function options_from(opts, who)
    if opts ~= nil and type(opts) ~= "table" then bad_arg(1, who, "table or nil", type(opts)) end
    opts = opts or {}
    local o = ffi_new("chr_options[1]")
    local st = C.chr_options_init(o, K.CHR_OPTIONS_VERSION)
    if st ~= 0 then return failure(st) end
    if opts.tokens_per_weight ~= nil then
        check_uint32(opts.tokens_per_weight, 1, who .. " (tokens_per_weight)")
        o[0].tokens_per_weight = opts.tokens_per_weight
    end
    o[0].seed = check_uint64(opts.seed, 1, who .. " (seed)")
    local placement = opts.placement
    if type(placement) == "string" then
        -- The library owns the placement names: a new one needs no Lua change.
        check_name(placement, 1, who .. " (placement)")
        local mode = ffi_new("int32_t[1]")
        local st = C.chr_placement_find(placement, mode)
        if st ~= 0 then return failure(st) end
        placement = mode[0]
    end
    if placement ~= nil then
        check_count(placement, 1, who .. " (placement)")
        o[0].placement = placement
    end
    check_name(opts.hasher, 1, who .. " (hasher)", true)
    check_name(opts.plugin_dir, 1, who .. " (plugin_dir)", true)
    o[0].hasher = opts.hasher
    o[0].plugin_dir = opts.plugin_dir
    return o
end

-- opts: tokens_per_weight, seed, hasher, placement (name or number), plugin_dir.
function _M.new(opts)
    local o, err, code = options_from(opts, "new")
    if not o then return nil, err, code end
    local out = ffi_new("chr_ring *[1]")
    local st = C.chr_ring_new(o, out)
    if st ~= 0 then return failure(st) end
    return setmetatable({ ptr = ffi_gc(out[0], C.chr_ring_free) }, Ring)
end

-- Ring:free() frees the ring now instead of at garbage collection; later
-- calls raise.
local ring_ptr
Ring.free, ring_ptr = handle_methods(C.chr_ring_free, "freed ring")

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

-- A replica policy argument: a number, a library name ("zones-first") or
-- a replica_policy key ("zones_first"); nil is nodes. nil for an unknown
-- name, whose message chr_replica_policy_find left; an unknown number
-- reaches the library, which refuses it (CHR_ENOTSUP).
local policy_out = ffi_new("int32_t[1]")
local function policy_arg(policy, n, fname)
    if policy == nil then return K.CHR_REPLICAS_NODES end
    if type(policy) == "number" then
        check_count(policy, n, fname)
        return policy
    end
    check_name(policy, n, fname)
    if _M.replica_policy[policy] then return _M.replica_policy[policy] end
    if C.chr_replica_policy_find(policy, policy_out) ~= 0 then return nil end
    return policy_out[0]
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

-- A replicas_policy method over ring_replicas or snapshot_replicas.
local function policy_method(replicas)
    return function(self, key, n, policy, out)
        local code = policy_arg(policy, 3, "replicas_policy")
        if not code then return failure(K.CHR_ENOTSUP) end
        return replicas(self, key, n, out, code, "replicas_policy")
    end
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

--------------------------------------------------------------------------
-- Snapshot
--------------------------------------------------------------------------

local Snapshot = {}
Snapshot.__index = Snapshot

-- One consistent view for many lookups; valid until released or
-- collected, even after the ring is freed.
function Ring:snapshot()
    local out = ffi_new("chr_snapshot *[1]")
    local st = C.chr_ring_snapshot(ring_ptr(self), out)
    if st ~= 0 then return failure(st) end
    local count = ffi_new("size_t[1]")
    C.chr_snapshot_node_count(out[0], count)
    return setmetatable({
        ptr = ffi_gc(out[0], C.chr_snapshot_release),
        count = tonumber(count[0]),
        nodes = {},   -- node tables by 1-based index, made on first use
    }, Snapshot)
end

local snap_ptr
Snapshot.release, snap_ptr = handle_methods(C.chr_snapshot_release, "released snapshot")

-- Node i (1-based) as a table shared by every lookup on this snapshot: its
-- strings are copied from the snapshot once, the first time it is needed.
function Snapshot:node(i)
    local node = self.nodes[i]
    if node then return node end
    local p = snap_ptr(self)
    check_count(i, 1, "node")
    local st = C.chr_snapshot_node(p, i - 1, view_out)
    if st ~= 0 then return failure(st) end
    node = node_table(view_out[0])
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

--------------------------------------------------------------------------
-- Ring files (docs/ring-file.md)
--------------------------------------------------------------------------

local band = bit.band

-- What a ring file said and what loading it did, as a table; the
-- fingerprint as 16 hex digits, the revision as a number (exact to 2^53)
-- or nil when the file has none.
local function info_table(info)
    local flags = info.flags
    return {
        revision = band(flags, K.CHR_RINGFILE_HAS_REVISION) ~= 0 and tonumber(info.revision) or nil,
        has_fingerprint = band(flags, K.CHR_RINGFILE_HAS_FINGERPRINT) ~= 0,
        has_options = band(flags, K.CHR_RINGFILE_HAS_OPTIONS) ~= 0,
        fingerprint = hex64(info.fingerprint),
        format_version = tonumber(info.format_version),
        members = tonumber(info.members), added = tonumber(info.added),
        removed = tonumber(info.removed), reweighted = tonumber(info.reweighted),
        replaced = tonumber(info.replaced),
    }
end

local function new_info()
    local info = ffi_new("chr_ringfile_info[1]")
    C.chr_ringfile_info_init(info, K.CHR_RINGFILE_INFO_VERSION)
    return info
end

-- nil, err, code, line (the line at fault; 0 for the file as a whole).
local function file_failure(st, info)
    local _, err = failure(st)
    return nil, err, st, tonumber(info[0].error_line)
end

local function new_ring_from(call, opts, who)
    local o, err, code = options_from(opts, who)
    if not o then return nil, err, code end
    local info, out = new_info(), ffi_new("chr_ring *[1]")
    local st = call(o, out, info)
    if st ~= 0 then return file_failure(st, info) end
    return setmetatable({ ptr = ffi_gc(out[0], C.chr_ring_free) }, Ring), info_table(info[0])
end

-- A ring from a ring file's text: ring, info or nil, err, code, line.
-- name (optional) appears in messages; opts as chring.new, for a file
-- without option directives and for the plugin directory.
function _M.new_from_text(text, name, opts)
    check_string(text, 1, "new_from_text")
    check_name(name, 2, "new_from_text", true)
    return new_ring_from(function(o, out, info)
        return C.chr_ring_new_from_text(text, #text, name, o, out, info)
    end, opts, "new_from_text")
end

-- A ring from the ring file at path; as new_from_text (EIO when unreadable).
function _M.new_from_file(path, opts)
    check_name(path, 1, "new_from_file")
    return new_ring_from(function(o, out, info)
        return C.chr_ring_new_from_file(path, o, out, info)
    end, opts, "new_from_file")
end

-- Makes the ring the one the file describes, as one atomic batch: info, or
-- nil, err, code, line (EOPTIONS for other options); a failure changes
-- nothing.
function Ring:apply_text(text, name)
    local p = ring_ptr(self)
    check_string(text, 1, "apply_text")
    check_name(name, 2, "apply_text", true)
    local info = new_info()
    local st = C.chr_ring_apply_text(p, text, #text, name, info)
    if st ~= 0 then return file_failure(st, info) end
    return info_table(info[0])
end

function Ring:apply_file(path)
    local p = ring_ptr(self)
    check_name(path, 1, "apply_file")
    local info = new_info()
    local st = C.chr_ring_apply_file(p, path, info)
    if st ~= 0 then return file_failure(st, info) end
    return info_table(info[0])
end

-- how: nil or { json = bool, revision = number or uint64 cdata }.
local function export_with(call, how, who)
    if how ~= nil and type(how) ~= "table" then bad_arg(1, who, "table or nil", type(how)) end
    how = how or {}
    local flags, revision = 0, 0
    if how.json then flags = flags + K.CHR_EXPORT_JSON end
    if how.revision ~= nil then
        flags = flags + K.CHR_EXPORT_REVISION
        revision = check_uint64(how.revision, 1, who .. " (revision)")
    end
    -- Ask the size, then export; a writer may grow the ring in between
    -- (ERANGE with the new size), so ask again.
    local st = call(flags, revision, nil, 0, size_out)
    while true do
        if st ~= 0 and st ~= K.CHR_ERANGE then return failure(st) end
        local capacity = tonumber(size_out[0]) + 1
        local buf = ffi_new("char[?]", capacity)
        st = call(flags, revision, buf, capacity, size_out)
        if st == 0 then return ffi_string(buf, size_out[0]) end
    end
end

-- The ring's canonical ring file (or its JSON twin) as a string.
function Ring:export(how)
    local p = ring_ptr(self)
    return export_with(function(...) return C.chr_ring_export(p, ...) end, how, "export")
end

function Snapshot:export(how)
    local p = snap_ptr(self)
    return export_with(function(...) return C.chr_snapshot_export(p, ...) end, how, "export")
end

--------------------------------------------------------------------------
-- Following a ring file: the library's follower (chring.h, "Following a
-- ring file"; docs/ring-file.md, section 11)
--------------------------------------------------------------------------

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
function _M.watch_file(ring, path)
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
        status = tonumber(s.status), line = tonumber(s.error_line), message = ffi_string(s.message),
        refused_revision = band(refused_flags, K.CHR_RINGFILE_HAS_REVISION) ~= 0
            and tonumber(s.refused_revision) or nil,
        refused_fingerprint = band(refused_flags, K.CHR_RINGFILE_HAS_FINGERPRINT) ~= 0
            and hex64(s.refused_fingerprint) or nil,
    }
end

--------------------------------------------------------------------------
-- Diff: what moves between two snapshots (docs/migration.md)
--------------------------------------------------------------------------

local Diff = {}
Diff.__index = Diff

local diff_ptr
Diff.release, diff_ptr = handle_methods(C.chr_diff_free, "released diff")

local sides = { old = K.CHR_DIFF_OLD, new = K.CHR_DIFF_NEW }

-- The diff from snapshot old to snapshot new, or nil, err, code
-- (status.EINCOMPATIBLE: they place keys differently). It keeps its own
-- references to both: they may be released.
function _M.diff(old, new)
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

--------------------------------------------------------------------------
-- Bounded loads and the tracker (docs/bounded-loads.md)
--------------------------------------------------------------------------

_M.spill = { replicas = K.CHR_SPILL_REPLICAS, shuffle = K.CHR_SPILL_SHUFFLE }

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
        local spill = _M.spill[opts.spill]
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

-- The node table for key that has room, and a result table. loads: nil or
-- an array of in-flight counts by 1-based node index; available: nil or an
-- array of booleans; opts: see bound_options.
function Snapshot:lookup_bounded(key, loads, available, opts)
    local p = snap_ptr(self)
    check_string(key, 1, "lookup_bounded")
    local n = self.count
    local lp, ap
    if loads ~= nil then
        if #loads ~= n then raise("bad argument #2 to 'lookup_bounded' (one load per node expected)") end
        lp = ffi_new("uint64_t[?]", n + 1)
        for i = 1, n do lp[i - 1] = loads[i] end
    end
    if available ~= nil then
        if #available ~= n then raise("bad argument #3 to 'lookup_bounded' (one flag per node expected)") end
        ap = ffi_new("unsigned char[?]", n + 1)
        for i = 1, n do ap[i - 1] = available[i] and 1 or 0 end
    end
    local o = bound_options(opts, "lookup_bounded")
    local st = C.chr_snapshot_lookup_bounded(p, key, #key, lp, ap, n, o, view_out, bound_out)
    if st ~= 0 then return failure(st) end
    local i = tonumber(view_out[0].index) + 1
    return self.nodes[i] or self:node(i), bound_result(bound_out[0])
end

-- Capacities of the weights for total_load requests in flight.
function _M.bound_capacities(weights, total_load, opts)
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
function _M.tracker(max_nodes)
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

return _M
