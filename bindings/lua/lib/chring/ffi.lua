-- chring.ffi: libchring's C API for LuaJIT: the declarations (ffi.cdef),
-- the header's integer constants, the loaded library, and `raise`, which
-- every module of the binding uses to report a bad argument at the
-- caller's line. Internal to the binding: use require "chring".
--
-- The shared library is loaded at require time from $CHRING_LIB if set,
-- else by its soname, "libchring.so.1", on the loader's path; a copy that
-- `meson install` put under a prefix other than /usr tries the library of
-- that prefix first (its path is written into this file at install time).
local ffi = require "ffi"

local M = {}

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
    uint32_t flags;
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
    uint32_t flags;
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
typedef struct chr_error_info {
    uint32_t version; chr_status status; uint32_t flags; uint32_t line; uint32_t other_line;
    uint32_t reserved0; uint64_t change_index; const char *function; const char *message;
    const char *reason; const char *source; const void *member; size_t member_len;
} chr_error_info;
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
    uint64_t availability;
    uint32_t down;
    uint32_t panic_threshold;
} chr_ringfile_info;
typedef struct chr_ringfile_member {
    uint32_t version;
    uint32_t weight;
    uint32_t id_len;
    uint32_t zone_len;
    unsigned char id[256];
    unsigned char zone[64];
} chr_ringfile_member;
typedef struct chr_ring chr_ring;
typedef struct chr_snapshot chr_snapshot;
uint32_t chr_version(void);
const char *chr_version_string(void);
const char *chr_strerror(chr_status status);
const char *chr_last_error(void);
chr_status chr_error_info_init(chr_error_info *info, uint32_t version);
chr_status chr_last_error_info(chr_error_info *info);
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
chr_status chr_ringfile_member_init(chr_ringfile_member *member, uint32_t version);
chr_status chr_ringfile_parse_member(const char *line, size_t len, const char *name, chr_ringfile_member *out);
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
    uint64_t applied_availability;
} chr_follow_state;
chr_status chr_follow_state_init(chr_follow_state *state, uint32_t version);
chr_status chr_follower_new(chr_ring *ring, const char *path, uint32_t flags, chr_follower **out);
void chr_follower_free(chr_follower *follower);
chr_status chr_follower_check(chr_follower *follower, int32_t *outcome, chr_ringfile_info *info);
chr_status chr_follower_state(const chr_follower *follower, chr_follow_state *state);
typedef struct chr_availability_info {
    uint32_t version;
    uint32_t panic;
    uint32_t panic_threshold;
    uint32_t down;
    uint64_t down_weight;
    uint64_t total_weight;
    uint64_t digest;
} chr_availability_info;
chr_status chr_availability_info_init(chr_availability_info *info, uint32_t version);
chr_status chr_ring_set_down(chr_ring *ring, const void *id, size_t id_len, uint32_t down);
chr_status chr_ring_set_availability(chr_ring *ring, const void *const *ids, const size_t *id_lens, size_t count, uint32_t panic_threshold);
chr_status chr_ring_availability(const chr_ring *ring, chr_availability_info *info);
chr_status chr_snapshot_availability(const chr_snapshot *snap, chr_availability_info *info);
chr_status chr_snapshot_marked_down(const chr_snapshot *snap, size_t index, uint32_t *marked);
]]
M.cdef = cdef

-- Another copy of this module in the same VM (a reload in nginx) has
-- declared them already; ffi.cdef refuses a second definition.
if not pcall(ffi.typeof, "chr_availability_info") then
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
    CHR_ERROR_INFO_VERSION = 1, CHR_ERROR_HAS_SOURCE = 1, CHR_ERROR_HAS_LINE = 2,
    CHR_ERROR_HAS_OTHER_LINE = 4, CHR_ERROR_HAS_MEMBER = 8, CHR_ERROR_HAS_CHANGE = 16,
    CHR_PLACEMENT_INFO_VERSION = 1, CHR_PLACEMENT_SEEDED = 1,
    CHR_RINGFILE_FORMAT_VERSION = 1, CHR_RINGFILE_LINE_MAX = 65536, CHR_RINGFILE_SIZE_MAX = 268435456,
    CHR_RINGFILE_HAS_REVISION = 1, CHR_RINGFILE_HAS_FINGERPRINT = 2, CHR_RINGFILE_HAS_OPTIONS = 4,
    CHR_RINGFILE_HAS_AVAILABILITY = 8,
    CHR_RINGFILE_INFO_VERSION = 2, CHR_RINGFILE_MEMBER_VERSION = 1,
    CHR_EXPORT_REVISION = 1, CHR_EXPORT_JSON = 2, CHR_ESCAPE_HIDDEN = 1,
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
    CHR_FOLLOW_STATE_VERSION = 2, CHR_FOLLOW_MESSAGE_MAX = 512,
    CHR_NODE_DOWN = 1, CHR_PANIC_THRESHOLD_DEFAULT = 50, CHR_AVAILABILITY_INFO_VERSION = 1,
}
M.K = K

-- The sources of the binding's files (each registers itself with
-- M.internal()): raise skips their frames.
local internal = {}
function M.internal()
    internal[debug.getinfo(2, "S").source] = true
end
M.internal()

-- Raises msg at the first caller outside the binding's files, so that an
-- argument error names the line of the call that passed the argument, as
-- a builtin's does (level 2 of the API function, however deep the check
-- sits in here).
function M.raise(msg)
    local level = 2
    while true do
        local info = debug.getinfo(level, "S")
        if not info or not internal[info.source] then break end
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
    M.raise("chring: cannot load libchring (" .. table.concat(errors, "; ")
          .. "); set CHRING_LIB to its path")
end
M.C = load_library()

return M
