-- chring.errors: how the binding reports a failure (nil, message, status
-- code: the library's chr_last_error() text and chr_status) and a bad
-- argument (an error raised at the caller's line, as a builtin would).
-- Internal to the binding: use require "chring".
local ffi = require "ffi"
local base = require "chring.ffi"
base.internal()

local ffi_string = ffi.string
local type, tostring, floor = type, tostring, math.floor
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
