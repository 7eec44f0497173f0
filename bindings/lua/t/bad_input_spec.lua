-- Arguments of the wrong Lua type raise; values the library refuses
-- return nil, message, code. Nothing crashes.
local chring = require "chring"
local T = require "testlib"
local S = chring.status

return {
    { "wrong argument types raise", function()
        local ring = T.ring(nil, 2)
        T.raises("bad argument #1 to 'lookup' (string expected, got nil)", ring.lookup, ring)
        T.raises("bad argument #1 to 'lookup' (string expected, got number)", ring.lookup, ring, 42)
        T.raises("bad argument #1 to 'add'", ring.add, ring, {}, 1)
        T.raises("bad argument #2 to 'add'", ring.add, ring, "x")
        T.raises("bad argument #2 to 'add'", ring.add, ring, "x", -1)
        T.raises("bad argument #2 to 'add'", ring.add, ring, "x", 1.5)
        T.raises("bad argument #2 to 'add'", ring.add, ring, "x", 2^32)
        T.raises("bad argument #3 to 'add'", ring.add, ring, "x", 1, 5)
        T.raises("bad argument #4 to 'add'", ring.add, ring, "x", 1, nil, -3)
        T.raises("bad argument #4 to 'add'", ring.add, ring, "x", 1, nil, "7")
        T.raises("bad argument #2 to 'replicas'", ring.replicas, ring, "k", "3")
        T.raises("bad argument #1 to 'apply'", ring.apply, ring, "add x")
        T.raises("op 'add', 'remove' or 'set_weight' in change 1", ring.apply, ring, { { op = "rename", id = "x" } })
        T.raises("bad argument #1 to 'apply (change 1 weight)'", ring.apply, ring, { { op = "add", id = "x" } })
        T.raises("bad argument #1 to 'new'", chring.new, "xxh3")
        T.raises("bad argument #1 to 'new (seed)'", chring.new, { seed = -1 })
        T.raises("bad argument #1 to 'new (hasher)'", chring.new, { hasher = 3 })
        T.raises("bad argument #1 to 'hash'", chring.hash, nil, "x")
        T.raises("string without NUL bytes", chring.new, { hasher = "xx\0h3" })
        T.raises("string without NUL bytes", chring.new, { plugin_dir = "/tmp\0/x" })
        T.raises("bad argument #1 to 'load_plugin' (string without NUL bytes", chring.load_plugin, "a\0b")
        local snap = ring:snapshot()
        T.raises("bad argument #1 to 'lookup_batch (key 2)'", snap.lookup_batch, snap, { "a", false })
        T.raises("bad argument #1 to 'node'", snap.node, snap, "first")
        T.eq(ring:node_count(), 2, "nothing changed")
    end },

    { "argument errors name the caller's line", function()
        local ring = T.ring(nil, 1)
        local here = debug.getinfo(1, "S").short_src
        local function at(line, f, ...)
            local ok, err = pcall(f, ...)
            T.ok(not ok, "raised")
            T.ok(tostring(err):find(here .. ":" .. line .. ": chring: ", 1, true),
                 ("error %q is not at %s:%d"):format(tostring(err), here, line))
        end
        local line = debug.getinfo(1, "l").currentline
        at(line + 1, function() ring:add(1, 1) end)
        at(line + 2, function() ring:replicas("k", "3") end)
        at(line + 3, function() chring.new(5) end)
        at(line + 4, function() ring:snapshot():lookup_batch({ "a", false }) end)
        ring:free()
        at(line + 6, function() ring:lookup("k") end)
    end },

    { "values the library refuses come back as nil, err, code", function()
        local ring = T.ring(nil, 1)
        T.fails(S.EINVAL, "chr_ring_add", ring:add("", 1))
        T.fails(S.ERANGE, "chr_ring_set_weight", ring:set_weight("node-0", 1000001))
        T.fails(S.EINVAL, "chr_ring_remove", ring:remove(""))
        T.fails(S.ENOHASHER, "chr_ring_new", chring.new { hasher = ("h"):rep(100) })
        T.fails(S.ENOHASHER, "chr_hasher_digest", chring.digest("", "x"))
        -- huge keys are fine: they are only hashed
        T.ok(ring:lookup(("k"):rep(1e6)) == "node-0", "a 1 MB key")
    end },
}
