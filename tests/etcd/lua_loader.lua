-- Follows a ring file with the Lua binding's file watcher (chring.watch_file)
-- and prints one line per change it sees, for the etcd harness:
--
--   revision R fingerprint 0x0123456789abcdef
--   error MESSAGE
--
--   luajit lua_loader.lua FILE [INTERVAL_MS [SECONDS]]
--
-- CHRING_LIB names libchring; LUA_PATH finds chring.lua. One watcher:step()
-- every INTERVAL_MS (default 20) for at most SECONDS (default 600): the
-- harness stops it sooner by signal.
local ffi = require("ffi")
local chring = require("chring")

local path = arg[1]
if not path then
    io.stderr:write("usage: luajit lua_loader.lua FILE [INTERVAL_MS [SECONDS]]\n")
    os.exit(2)
end
local interval = tonumber(arg[2] or "20")
local seconds = tonumber(arg[3] or "600")

ffi.cdef [[ int poll(void *fds, unsigned long nfds, int timeout); ]]

local ring = assert(chring.new())
local watcher = chring.watch_file(ring, path)
local steps = math.floor(seconds * 1000 / interval)
for _ = 1, steps do
    local ok, a = watcher:step()
    if ok == true then
        local fp = a.fingerprint:lower()
        if fp:sub(1, 2) ~= "0x" then fp = "0x" .. fp end
        io.stdout:write(("revision %s fingerprint %s\n"):format(tostring(a.revision), fp))
        io.stdout:flush()
    elseif ok == false then
        io.stdout:write(("error %s\n"):format((tostring(a):gsub("\n", " "))))
        io.stdout:flush()
    end
    ffi.C.poll(nil, 0, interval)
end
