-- The Lua side of the cross-language test (see gen_data.c for the input
-- and route_c.c for the output format). The membership goes in as one
-- apply batch, shuffled; owners come from a snapshot, replica lists from
-- the ring. The 64-bit seed is parsed into a uint64_t cdata (a Lua number
-- would lose its low bits).
--   luajit route.lua DATA OUTPUT      (LUA_PATH must reach chring.lua)
local chring = require "chring"
local ffi = require "ffi"

local data_path, out_path = arg[1], arg[2]
if not out_path then
    io.stderr:write("usage: luajit route.lua DATA OUTPUT\n")
    os.exit(2)
end

local function unhex(s)
    if s == "-" then return "" end
    return (s:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end))
end

local hex_cache = {}   -- node ids repeat: encode each once
local function hex(s)
    local h = hex_cache[s]
    if not h then
        h = s == "" and "-" or s:gsub(".", function(c) return ("%02x"):format(c:byte()) end)
        hex_cache[s] = h
    end
    return h
end

local function uint64_from_hex(s)
    local v = ffi.new("uint64_t", 0)
    for i = 1, #s do v = v * 16 + tonumber(s:sub(i, i), 16) end
    return v
end

local function check(ok, err)
    if not ok then
        io.stderr:write("route.lua: ", tostring(err), "\n")
        os.exit(1)
    end
    return ok
end

local lines = io.lines(data_path)
lines() -- chring-crosslang 1
local tokens_per_weight, seed_hex = lines():match("^options (%d+) (%x+)$")
local replicas = tonumber(lines():match("^replicas (%d+)$"))
local nodes = tonumber(lines():match("^nodes (%d+)$"))
local changes = {}
for i = 1, nodes do
    local id, weight, zone, tag = lines():match("^(%S+) (%d+) (%S+) (%d+)$")
    changes[i] = { op = "add", id = unhex(id), weight = tonumber(weight), zone = unhex(zone), tag = tonumber(tag) }
end
-- A fixed Fisher-Yates shuffle (LCG-driven): the order of changes must not matter.
local state = 12345
for i = #changes, 2, -1 do
    state = (state * 1103515245 + 12345) % 2147483648
    local j = state % i + 1
    changes[i], changes[j] = changes[j], changes[i]
end

local ring = check(chring.new { tokens_per_weight = tonumber(tokens_per_weight), seed = uint64_from_hex(seed_hex) })
check(ring:apply(changes))
local out = assert(io.open(out_path, "w"))
out:write(("fingerprint %s\ncounts %d %d\n"):format(check(ring:fingerprint()), check(ring:node_count()),
                                                     check(ring:token_count())))

local snap = check(ring:snapshot())
local keys = tonumber(lines():match("^keys (%d+)$"))
local reps, line = {}, {}
for _ = 1, keys do
    local key = unhex(lines())
    local owner = check(snap:lookup(key))
    local got, count = ring:replicas(key, replicas, reps)
    check(got, count)
    line[1] = hex(owner.id)
    line[2] = " "
    for r = 1, count do
        line[2 * r + 1] = hex(reps[r])
        line[2 * r + 2] = ","
    end
    line[2 * count + 2] = "\n"
    out:write(table.concat(line, "", 1, 2 * count + 2))
end
out:close()
