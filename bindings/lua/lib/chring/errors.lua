-- chring.errors: how the binding reports a failure (nil, message, status
-- code: the library's chr_last_error() text and chr_status) and a bad
-- argument (an error raised at the caller's line, as a builtin would).
-- Internal to the binding: use require "chring".
local ffi = require "ffi"
local bit = require "bit"
local base = require "chring.ffi"
base.internal()

local ffi_string, ffi_new = ffi.string, ffi.new
local band = bit.band
local type, tostring, tonumber, floor = type, tostring, tonumber, math.floor
local C, K, raise = base.C, base.K, base.raise

local M = { raise = raise }

-- Status codes by name (chring.status.ENOENT == -5) and back.
M.status = {}
for name, value in pairs(K) do
    local short = name:match("^CHR_(E[%u_]+)$")
    if short then
        M.status[short] = value
        M.status[value] = short
    end
end

-- nil, the library's message, status: what every failed call returns.
function M.failure(status)
    return nil, ffi_string(C.chr_last_error()), status
end

-- The last failure of this thread as data (chr_last_error_info), read right
-- after a call returned nil: a table with status, message, reason (the
-- message without its "name:line: " or "chr_x: " prefix) and func (the C
-- function, "" if unknown), and when the failure has them: source and line
-- (a ring file's name and line, 0 for the file as a whole), other_line (the
-- earlier line a duplicate conflicts with), member (the id) and change (the
-- 1-based index of a batch's change at fault).
local error_info = ffi_new("chr_error_info")
function M.last_error()
    error_info.version = K.CHR_ERROR_INFO_VERSION
    local st = C.chr_last_error_info(error_info)
    if st ~= 0 then return nil, "chr_last_error_info failed", st end
    local e = error_info
    local info = {
        status = tonumber(e.status), message = ffi_string(e.message), reason = ffi_string(e.reason),
        func = ffi_string(e["function"]),
    }
    local flags = tonumber(e.flags)
    if band(flags, K.CHR_ERROR_HAS_SOURCE) ~= 0 then info.source = ffi_string(e.source) end
    if band(flags, K.CHR_ERROR_HAS_LINE) ~= 0 then info.line = tonumber(e.line) end
    if band(flags, K.CHR_ERROR_HAS_OTHER_LINE) ~= 0 then info.other_line = tonumber(e.other_line) end
    if band(flags, K.CHR_ERROR_HAS_MEMBER) ~= 0 then info.member = ffi_string(e.member, e.member_len) end
    if band(flags, K.CHR_ERROR_HAS_CHANGE) ~= 0 then info.change = tonumber(e.change_index) + 1 end
    return info
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

M.bad_arg, M.check_string, M.check_optional_string = bad_arg, check_string, check_optional_string
M.check_name, M.check_uint32, M.check_count, M.check_uint64 = check_name, check_uint32, check_count, check_uint64

return M
