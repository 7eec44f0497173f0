-- Availability: members marked down are routed around along each key's
-- replica walk (lookups, batches, replica lists), unmarking restores every
-- key, panic ignores the marks, failed sets change nothing, and the digest
-- is the one the library writes and checks in ring files, which a watcher
-- applies with the members.
local chring = require "chring"
local T = require "testlib"
local S = chring.status

local KEYS = 1000

-- Every key of ring against before (the same members, no marks): the
-- owner is the first member of the key's unmarked walk not in `down` (a
-- set of ids), the replica list starts with it and lists down members
-- last, the snapshot's lookup and batch agree. Returns how many keys moved.
local function check_routing(ring, before, down)
    local members = before:node_count()
    local snap = assert(ring:snapshot())
    local keys = T.keys(KEYS)
    local batch = assert(snap:lookup_batch(keys))
    local moved = 0
    for i, key in ipairs(keys) do
        local walk = assert(before:replicas(key, members))
        local want = walk[1].id
        for _, n in ipairs(walk) do
            if not down[n.id] then want = n.id; break end
        end
        T.eq(ring:lookup(key), want, key)
        T.eq(snap:lookup(key).id, want, key .. " (snapshot)")
        T.eq(snap:node(batch[i]).id, want, key .. " (batch)")
        local reps = assert(ring:replicas(key, 3))
        T.eq(reps[1], want, key .. ": replica list")
        for j = 2, #reps do
            T.ok(not (down[reps[j - 1]] and not down[reps[j]]), key .. ": down before available")
        end
        if want ~= walk[1].id then moved = moved + 1 end
    end
    return moved
end

local function equal_ring(count, seed)
    local ring = assert(chring.new { seed = seed })
    for i = 0, count - 1 do assert(ring:add(T.node_id(i), 1)) end
    return ring
end

return {
    { "set_down routes to the next replica, unmarking restores", function()
        local ring = T.ring({ seed = 3 }, 5)
        local before = assert(ring:snapshot())
        local owners = {}
        for i = 1, KEYS do owners[i] = ring:lookup(T.key(i)) end
        assert(ring:set_down("node-1", true))
        T.ok(check_routing(ring, before, { ["node-1"] = true }) > 0, "no key moved")
        local a = assert(ring:availability())
        T.eq(a.down, 1, "down"); T.eq(a.panic, false, "panic")
        T.eq(a.down_weight, 2, "down_weight"); T.eq(a.total_weight, 9, "total_weight")
        T.eq(a.panic_threshold, chring.PANIC_THRESHOLD_DEFAULT, "threshold")
        T.ok(a.digest ~= "0000000000000000", "a digest")
        for _, n in ipairs(assert(ring:nodes())) do T.eq(n.down, n.id == "node-1", n.id .. " down") end
        local snap = assert(ring:snapshot())
        T.eq(snap:availability().digest, a.digest, "snapshot digest")
        T.eq(snap:node(2).down, true, "node-1 down"); T.eq(snap:node(2).marked_down, true, "marked")
        T.eq(snap:marked_down(2), true, "marked_down(2)"); T.eq(snap:marked_down(1), false, "marked_down(1)")
        T.fails(S.ERANGE, nil, snap:marked_down(6))

        assert(ring:set_down("node-1", false))
        for i = 1, KEYS do T.eq(ring:lookup(T.key(i)), owners[i], "key " .. i .. " after unmarking") end
        T.eq(ring:availability().digest, "0000000000000000", "digest unmarked")
        T.fails(S.ENOENT, "chr_ring_set_down", ring:set_down("nobody", true))
        T.raises("boolean expected", function() ring:set_down("node-1", 1) end)
    end },

    { "two of five honoured, three of four is panic", function()
        local ring = T.ring({ seed = 5 }, 5)
        local before = assert(ring:snapshot())
        assert(ring:set_availability({ "node-0", "node-3" }))
        check_routing(ring, before, { ["node-0"] = true, ["node-3"] = true })

        local eq = equal_ring(4, 9)
        local plain = assert(eq:snapshot())
        local three = { "node-0", "node-1", "node-2" }
        assert(eq:set_availability(three, 50))
        local a = eq:availability()
        T.ok(a.panic and a.down == 3 and a.down_weight == 3 and a.total_weight == 4, "3 of 4: panic")
        T.eq(check_routing(eq, plain, {}), 0, "keys moved in panic")
        local snap = assert(eq:snapshot())
        T.ok(snap:node(1).marked_down and not snap:node(1).down, "a mark panic suspends")
        assert(eq:set_availability(three, 100))
        T.eq(eq:availability().panic, false, "threshold 100 never panics")
        check_routing(eq, plain, { ["node-0"] = true, ["node-1"] = true, ["node-2"] = true })

        -- A failed set leaves the state as it was.
        local digest = eq:availability().digest
        local ok, err, code, index = eq:set_availability({ "node-0", "ghost" }, 50)
        T.fails(S.ENOENT, "chr_ring_set_availability", ok, err, code)
        T.eq(index, 2, "index of the unknown id")
        T.fails(S.ERANGE, nil, eq:set_availability({}, 101))
        T.eq(eq:availability().digest, digest, "unchanged")
        assert(eq:set_availability({}))
        T.eq(eq:availability().digest, "0000000000000000", "cleared")
    end },

    { "the digest is the file's, and a watcher applies %%down", function()
        local a, b = T.ring(nil, 6), T.ring(nil, 6)
        assert(a:set_down("node-4", true)); assert(a:set_down("node-2", true))
        assert(b:set_availability({ "node-2", "node-4", "node-2" }))
        local digest = a:availability().digest
        T.eq(b:availability().digest, digest, "same marks, same digest")
        local text = assert(a:export())
        T.ok(text:find("%%down node-2\n", 1, true), "export has %%down:\n" .. text)
        local c, info = assert(chring.new_from_text(text))
        T.ok(info.has_availability and info.down == 2 and info.availability == digest, "file info")
        T.eq(c:availability().digest, digest, "loaded digest")
        -- The file's %%availability is the digest, and checked against its state.
        T.ok(text:find("%%availability 0x" .. digest .. "\n", 1, true), "export's %%availability")
        local claimed = text
        local other = digest:sub(1, 15) .. (digest:sub(16) == "0" and "1" or "0")
        local wrong = text:gsub("%%%%availability 0x%x+", "%%%%availability 0x" .. other)
        T.fails(S.EFORMAT, nil, chring.new_from_text(wrong))

        local path = os.tmpname()
        local f = assert(io.open(path, "wb")); f:write(claimed); f:close()
        local ring = assert(chring.new())
        local w = assert(chring.watch_file(ring, path))
        local ok, applied = w:step()
        T.eq(ok, true, "applied"); T.eq(applied.availability, digest, "applied digest")
        T.eq(w:state().applied_availability, digest, "state digest")
        for i = 1, KEYS do T.eq(ring:lookup(T.key(i)), a:lookup(T.key(i)), "key " .. i) end
        os.remove(path)
    end },
}
