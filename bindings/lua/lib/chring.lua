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
-- that prefix first (its path is written into chring/ffi.lua at install
-- time).
--
-- This file is the API: it gathers what the modules under chring/ define
-- (each is internal; require "chring", not them):
--   chring.ffi        declarations, constants, the loaded library, raise
--   chring.errors     status codes, failures, argument checks
--   chring.util       shared out-structs and buffers, node tables, handles
--   chring.options    ring options, placements, hashers and plugins,
--                     replica policies, the library's version
--   chring.ring       rings
--   chring.snapshot   snapshots
--   chring.ringfile   ring files: new_from_text/file, apply, export
--   chring.follow     watch_file: following a ring file
--   chring.diff       diffs and replica plans
--   chring.bounded    bounded loads and the tracker
--   chring.availability  members marked down: set_down, set_availability
local base = require "chring.ffi"
base.internal()
local errors = require "chring.errors"
local options = require "chring.options"
local ring = require "chring.ring"
local ringfile = require "chring.ringfile"
local follow = require "chring.follow"
local diff = require "chring.diff"
local bounded = require "chring.bounded"
local availability = require "chring.availability"

local _M = { _VERSION = "0.1.0" }

-- The declarations, the header's constants and the loaded library (for
-- t/cdef_spec.lua, bench.lua and callers of C functions the module does
-- not wrap).
_M._cdef = base.cdef
_M._constants = base.K
_M._lib = base.C

-- Status codes by name (chring.status.ENOENT == -5) and back, and the last
-- failure as data (chring.last_error()).
_M.status = errors.status
_M.last_error = errors.last_error

-- Replica policies by Lua name (chring.replica_policy.zones_first), as the
-- library names them.
_M.replica_policy = options.replica_policy

-- The library, hashers and plugins.
_M.version = options.version
_M.version_string = options.version_string
_M.strerror = options.strerror
_M.hash = options.hash
_M.digest = options.digest
_M.load_plugin = options.load_plugin
_M.hashers = options.hashers

-- Rings (and, through ring:snapshot(), snapshots).
_M.new = ring.new

-- Ring files and following one.
_M.new_from_text = ringfile.new_from_text
_M.new_from_file = ringfile.new_from_file
_M.watch_file = follow.watch_file

-- Diffs and replica plans.
_M.diff = diff.diff

-- Bounded loads and the tracker.
_M.spill = bounded.spill
_M.bound_capacities = bounded.bound_capacities
_M.tracker = bounded.tracker

-- Availability: ring:set_down, ring:set_availability, ring:availability,
-- snapshot:availability, snapshot:marked_down; the default panic threshold.
_M.PANIC_THRESHOLD_DEFAULT = availability.PANIC_THRESHOLD_DEFAULT

return _M
