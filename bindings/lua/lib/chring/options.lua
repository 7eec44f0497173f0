-- chring.options: what a ring is made with and how replicas are walked:
-- ring options (chr_options; placements by the library's names), hashers
-- and plugins, replica policies by the library's names, and the loaded
-- library's version. Internal to the binding: use require "chring".
local ffi = require "ffi"
local base = require "chring.ffi"
base.internal()
local errors = require "chring.errors"
local util = require "chring.util"

local ffi_new, ffi_string = ffi.new, ffi.string
local type, tonumber = type, tonumber
local C, K = base.C, base.K
local failure, bad_arg = errors.failure, errors.bad_arg
local check_string, check_name = errors.check_string, errors.check_name
local check_uint32, check_count, check_uint64 = errors.check_uint32, errors.check_count, errors.check_uint64
local size_out, u64_out, hex64, fetch_all = util.size_out, util.u64_out, util.hex64, util.fetch_all

local M = {}

-- The loaded library's version as a number (chr_version()).
function M.version()
    return tonumber(C.chr_version())
end

-- The loaded library's version as text, "MAJOR.MINOR.PATCH".
function M.version_string()
    return ffi_string(C.chr_version_string())
end

function M.strerror(status)
    return ffi_string(C.chr_strerror(status))
end

function M.hash(hasher, data, seed)
    check_name(hasher, 1, "hash")
    check_string(data, 2, "hash")
    seed = check_uint64(seed, 3, "hash")
    local st = C.chr_hasher_hash(hasher, data, #data, seed, u64_out)
    if st ~= 0 then return failure(st) end
    return hex64(u64_out[0])
end

function M.digest(hasher, data)
    check_name(hasher, 1, "digest")
    check_string(data, 2, "digest")
    local out = ffi_new("unsigned char[?]", K.CHR_DIGEST_MAX)
    local st = C.chr_hasher_digest(hasher, data, #data, out, K.CHR_DIGEST_MAX, size_out)
    if st ~= 0 then return failure(st) end
    return ffi_string(out, size_out[0])
end

function M.load_plugin(path)
    check_name(path, 1, "load_plugin")
    local st = C.chr_plugin_load(path, size_out)
    if st ~= 0 then return failure(st) end
    return tonumber(size_out[0])
end

function M.hashers(plugin_dir)
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

-- Fills a chr_options from the table opts (nil = defaults); `who` names
-- the calling function in errors. Returns the cdata, or nil, err, code.
-- Its strings are the caller's, alive while the caller holds opts.
function M.options_from(opts, who)
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

-- Replica policies (chring.h, "Zone-aware replicas") by Lua name: the
-- library's names with "_" for "-" (replica_policy.zones_first), read from
-- the library at load time (chr_replica_policy_name numbers them from 0
-- without gaps), so a policy the library adds needs no change here. The
-- replica calls also take the library's names ("zones-first").
M.replica_policy = {}
do
    local name_out = ffi_new("const char *[1]")
    for policy = 0, 1023 do
        if C.chr_replica_policy_name(policy, name_out) ~= 0 then break end
        M.replica_policy[(ffi_string(name_out[0]):gsub("-", "_"))] = policy
    end
end
local replica_policy = M.replica_policy

-- A replica policy argument: a number, a library name ("zones-first") or
-- a replica_policy key ("zones_first"); nil is nodes. nil for an unknown
-- name, whose message chr_replica_policy_find left; an unknown number
-- reaches the library, which refuses it (CHR_ENOTSUP).
local policy_out = ffi_new("int32_t[1]")
function M.policy_arg(policy, n, fname)
    if policy == nil then return K.CHR_REPLICAS_NODES end
    if type(policy) == "number" then
        check_count(policy, n, fname)
        return policy
    end
    check_name(policy, n, fname)
    if replica_policy[policy] then return replica_policy[policy] end
    if C.chr_replica_policy_find(policy, policy_out) ~= 0 then return nil end
    return policy_out[0]
end

local policy_arg = M.policy_arg

-- A replicas_policy method over ring_replicas or snapshot_replicas.
function M.policy_method(replicas)
    return function(self, key, n, policy, out)
        local code = policy_arg(policy, 3, "replicas_policy")
        if not code then return failure(K.CHR_ENOTSUP) end
        return replicas(self, key, n, out, code, "replicas_policy")
    end
end

return M
