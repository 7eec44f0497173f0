-- LuaRocks: `luarocks make` in this folder installs the modules against
-- an installed libchring (checked through external_dependencies: found under
-- /usr or /usr/local, else give CHRING_DIR=<prefix>, or CHRING_INCDIR and
-- CHRING_LIBDIR). The modules load libchring.so.1 at run time through
-- LuaJIT's FFI by its soname (or $CHRING_LIB), so LuaJIT or OpenResty runs
-- them; nothing is compiled.
rockspec_format = "3.0"
package = "chring"
version = "0.1.0-1"
source = {
   url = "git+file:///chring",   -- `luarocks make` builds this folder; nothing is fetched
}
description = {
   summary = "Consistent-hashing ring: LuaJIT FFI binding of libchring",
   detailed = [[
      Rings with weighted nodes, lock-free lookups, replicas on distinct nodes,
      snapshots, ring files and hash plugins, calling libchring's C API through
      LuaJIT's FFI. require "chring", or require "resty.chring" under OpenResty.
   ]],
   license = "MIT",
   labels = { "consistent-hashing", "ffi", "openresty" },
}
dependencies = {
   "lua == 5.1",   -- LuaJIT
}
external_dependencies = {
   CHRING = { header = "chring.h", library = "chring" },
}
build = {
   type = "builtin",
   modules = {
      chring = "lib/chring.lua",
      ["chring.ffi"] = "lib/chring/ffi.lua",
      ["chring.errors"] = "lib/chring/errors.lua",
      ["chring.util"] = "lib/chring/util.lua",
      ["chring.options"] = "lib/chring/options.lua",
      ["chring.ring"] = "lib/chring/ring.lua",
      ["chring.snapshot"] = "lib/chring/snapshot.lua",
      ["chring.ringfile"] = "lib/chring/ringfile.lua",
      ["chring.follow"] = "lib/chring/follow.lua",
      ["chring.diff"] = "lib/chring/diff.lua",
      ["chring.bounded"] = "lib/chring/bounded.lua",
      ["chring.availability"] = "lib/chring/availability.lua",
      ["resty.chring"] = "lib/resty/chring.lua",
   },
}
