-- The Lua side of the availability cross-language test (availability.py):
-- the same output as availability_c.c, the ring following the file with a
-- watcher; owners from the ring (checked against a snapshot's batch),
-- replica lists from the snapshot.
--   luajit availability.lua RINGFILE KEYS OUTPUT   (LUA_PATH must reach chring.lua)
local chring = require "chring"

local ring_path, keys_path, out_path = ...
if not out_path then
    io.stderr:write("usage: luajit availability.lua RINGFILE KEYS OUTPUT\n")
    os.exit(2)
end

local function check(ok, err, ...)
    if not ok then
        io.stderr:write("availability.lua: ", tostring(err), "\n")
        os.exit(1)
    end
    return ok, err, ...
end

local function unhex(s)
    return (s:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end))
end

local function hex(s)
    return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end))
end

local ring = check(chring.new())
local watcher = check(chring.watch_file(ring, ring_path))
if watcher:step() ~= true then check(nil, ring_path .. ": the first step did not apply the file") end
local avail = check(ring:availability())
local members = check(ring:node_count())
local keys = {}
for line in io.lines(keys_path) do keys[#keys + 1] = unhex(line) end
local snap = check(ring:snapshot())
local batch = check(snap:lookup_batch(keys))

local out = assert(io.open(out_path, "w"))
out:write(("fingerprint %s availability %s panic %d down %d applied %s\n"):format(
    check(ring:fingerprint()), avail.digest, avail.panic and 1 or 0, avail.down,
    watcher:state().applied_availability))
local reps = {}
for k, key in ipairs(keys) do
    local owner = check(ring:lookup_node(key))
    if owner.index ~= batch[k] then
        check(nil, ("key %d: the batch says node %d, the lookup %d"):format(k, batch[k], owner.index))
    end
    local _, count = check(snap:replicas(key, members, reps))
    local line = { hex(owner.id) }
    for r = 1, count do line[#line + 1] = (r == 1 and " " or ",") .. hex(reps[r].id) end
    out:write(table.concat(line), "\n")
end
out:close()
