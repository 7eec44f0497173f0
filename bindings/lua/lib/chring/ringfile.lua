-- chring.ringfile: ring files (docs/ring-file.md): rings made from a
-- file's text or path, a file applied to a ring as one batch, and a ring's
-- or snapshot's canonical text. Internal to the binding: use require "chring".
local ffi = require "ffi"
local bit = require "bit"
local base = require "chring.ffi"
base.internal()
local errors = require "chring.errors"
local util = require "chring.util"
local options = require "chring.options"
local ring = require "chring.ring"
local snapshot = require "chring.snapshot"

local ffi_new, ffi_string = ffi.new, ffi.string
local type, tonumber = type, tonumber
local band = bit.band
local C, K = base.C, base.K
local failure, bad_arg = errors.failure, errors.bad_arg
local check_string, check_name, check_uint64 = errors.check_string, errors.check_name, errors.check_uint64
local size_out, hex64 = util.size_out, util.hex64
local options_from = options.options_from
local Ring, ring_ptr = ring.Ring, ring.ring_ptr
local Snapshot, snap_ptr = snapshot.Snapshot, snapshot.snap_ptr

local M = {}


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
        has_availability = band(flags, K.CHR_RINGFILE_HAS_AVAILABILITY) ~= 0,
        down = tonumber(info.down), panic_threshold = tonumber(info.panic_threshold),
        availability = hex64(info.availability),
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
    return ring.wrap(out[0]), info_table(info[0])
end

-- A ring from a ring file's text: ring, info or nil, err, code, line.
-- name (optional) appears in messages; opts as chring.new, for a file
-- without option directives and for the plugin directory.
function M.new_from_text(text, name, opts)
    check_string(text, 1, "new_from_text")
    check_name(name, 2, "new_from_text", true)
    return new_ring_from(function(o, out, info)
        return C.chr_ring_new_from_text(text, #text, name, o, out, info)
    end, opts, "new_from_text")
end

-- A ring from the ring file at path; as new_from_text (EIO when unreadable).
function M.new_from_file(path, opts)
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

M.info_table = info_table

return M
