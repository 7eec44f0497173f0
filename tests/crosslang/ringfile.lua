-- The Lua side of the ring-file cross-language test (ringfile.py): the
-- same two modes as ringfile_c.c.
--   luajit ringfile.lua build SPEC OUTDIR LANG | load FILE...
local chring = require "chring"

local function unhex(s)
    if s == "-" then return "" end
    return (s:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end))
end

local function check(ok, err, ...)
    if not ok then
        io.stderr:write("ringfile.lua: ", tostring(err), "\n")
        os.exit(1)
    end
    return ok, err, ...
end

local function write(path, data)
    local f = check(io.open(path, "wb"))
    f:write(data)
    f:close()
end

local mode = ...
local args = { select(2, ...) }
if mode == "build" and #args == 3 then
    local spec, dir, lang = args[1], args[2], args[3]
    local ring, rings, tag = nil, 0, 0
    local function finish()
        if not ring then return end
        write(("%s/%s-%d.txt"):format(dir, lang, rings), check(ring:export()))
        write(("%s/%s-%d.json"):format(dir, lang, rings), check(ring:export { json = true }))
        ring:free()
        rings = rings + 1
    end
    for line in io.lines(spec) do
        local placement, tpw, seed = line:match("^ring (%d+) (%d+) (%d+)$")
        if placement then
            finish()
            ring = check(chring.new { placement = tonumber(placement), tokens_per_weight = tonumber(tpw),
                                      seed = tonumber(seed) })
            tag = 0
        else
            local id, weight, zone = line:match("^node (%S+) (%d+) (%S+)$")
            if id then
                check(ring:add(unhex(id), tonumber(weight), unhex(zone), tag))
                tag = tag + 1
            end
        end
    end
    finish()
elseif mode == "load" then
    for _, path in ipairs(args) do
        local ring = check(chring.new_from_file(path))
        local f = check(io.open(path, "rb"))
        local file = f:read("*a")
        f:close()
        print(("%s %s"):format(check(ring:fingerprint()), check(ring:export()) == file and "same" or "differs"))
    end
else
    io.stderr:write("usage: luajit ringfile.lua build SPEC OUTDIR LANG | load FILE...\n")
    os.exit(2)
end
