local chring = require "chring"
local T = require "testlib"
local S = chring.status

return {
    { "version", function()
        T.ok(chring.version() >= 100, "version below 0.1.0")
        -- The loaded library is the one this module was written for, in both spellings.
        T.eq(chring.version_string(), chring._VERSION, "chr_version_string()")
        local major, minor, patch = chring._VERSION:match("^(%d+)%.(%d+)%.(%d+)$")
        T.eq(chring.version(), tonumber(major) * 10000 + tonumber(minor) * 100 + tonumber(patch),
             "chr_version()")
    end },

    { "lookup on an empty ring is EEMPTY", function()
        local ring = T.ring()
        T.fails(S.EEMPTY, "chr_ring_lookup", ring:lookup("k"))
        T.fails(S.EEMPTY, "chr_ring_replicas", ring:replicas("k", 2))
        assert(ring:add("drained", 0))
        T.fails(S.EEMPTY, "chr_ring_lookup", ring:lookup("k"))
    end },

    { "lookup returns the member with its fields, for binary keys", function()
        local ring = T.ring()
        local id = "a\0\255z"   -- NUL and non-UTF-8 bytes are ordinary id bytes
        assert(ring:add(id, 3, "eu-1", 77))
        for _, key in ipairs { "", "\0", "\255\0", "user:42" } do
            T.eq(ring:lookup(key), id, "owner")
            local n = ring:lookup_node(key)
            T.eq(n.id, id, "id"); T.eq(n.zone, "eu-1", "zone"); T.eq(n.tag, 77, "tag")
            T.eq(n.weight, 3, "weight"); T.eq(n.tokens, 480, "tokens")
            T.eq(n.index, 1, "index"); T.eq(n.ownership, 1, "ownership")
        end
    end },

    { "bad updates fail with the library's message and change nothing", function()
        local ring = T.ring(nil, 1)
        local before = ring:fingerprint()
        T.fails(S.EEXIST, "chr_ring_add", ring:add("node-0", 1))
        T.fails(S.EINVAL, "chr_ring_add", ring:add("", 1))
        T.fails(S.ERANGE, "chr_ring_add", ring:add(("x"):rep(257), 1))
        T.fails(S.ERANGE, "chr_ring_add", ring:add("w", 1000001))
        T.fails(S.ERANGE, "chr_ring_add", ring:add("z", 1, ("z"):rep(65)))
        local err = T.fails(S.ENOENT, "chr_ring_remove", ring:remove("ghost"))
        T.ok(err:find("ghost", 1, true), "message names the id")
        local info = chring.last_error()
        T.eq(info.status, S.ENOENT, "record status"); T.eq(info.func, "chr_ring_remove", "record function")
        T.eq(info.member, "ghost", "record member"); T.eq(info.message, err, "record message")
        T.eq(info.reason, "no node 'ghost' in the ring", "record reason")
        T.eq(info.line, nil, "no line"); T.eq(info.change, nil, "no change")
        T.fails(S.ENOENT, "chr_ring_set_weight", ring:set_weight("ghost", 2))
        T.fails(S.ENOENT, "chr_ring_ownership", ring:ownership("ghost"))
        T.eq(ring:fingerprint(), before, "fingerprint")
        T.eq(ring:node_count(), 1, "node count")
        T.eq(S[S.ENOENT], "ENOENT", "status names")
        T.eq(chring.strerror(S.ENOENT), "no such node", "strerror")
    end },

    { "options reach the library", function()
        local ring = T.ring { tokens_per_weight = 7, seed = 1 }
        assert(ring:add("a", 3))
        T.eq(ring:token_count(), 21, "tokens")
        local other = T.ring { tokens_per_weight = 7, seed = 2ULL }
        assert(other:add("a", 3))
        T.ok(ring:fingerprint() ~= other:fingerprint(), "seed changes the fingerprint")
        T.fails(S.ERANGE, "chr_ring_new", chring.new { tokens_per_weight = 65537 })
        T.fails(S.ENOHASHER, "chr_ring_new", chring.new { hasher = "no-such-hasher" })
        local err = T.fails(S.ENOTSUP, "chr_placement_find", chring.new { placement = "no-such-placement" })
        T.ok(err:find("no placement named 'no-such-placement'", 1, true), "the library's message: " .. err)
        T.raises("string without NUL bytes", chring.new, { placement = "ketama\0" })
        T.fails(S.ENOTSUP, "chr_ring_new", chring.new { placement = 77 })
        local ketama = T.ring { placement = "ketama" }
        assert(ketama:add("10.0.0.1:11211", 1)); assert(ketama:add("10.0.0.2:11211", 1))
        T.eq(ketama:token_count(), 320, "libmemcached weighted ketama: 160 points each")
    end },

    { "placement names are the library's", function()
        local K = chring._constants
        local by_name = T.ring { placement = "ketama-unweighted" }
        local by_mode = T.ring { placement = K.CHR_PLACEMENT_KETAMA_UNWEIGHTED }
        for i = 0, 9 do
            assert(by_name:add(T.node_id(i), 1)); assert(by_mode:add(T.node_id(i), 1))
        end
        T.eq(by_name:token_count(), by_mode:token_count(), "tokens")
        T.eq(by_name:fingerprint(), by_mode:fingerprint(), "fingerprint")
        for i = 0, 99 do
            T.eq(by_name:lookup("key-" .. i), by_mode:lookup("key-" .. i), "owner of key-" .. i)
        end
        local native = T.ring()
        for i = 0, 9 do assert(native:add(T.node_id(i), 1)) end
        T.ok(native:fingerprint() ~= by_name:fingerprint(), "the name selected a placement")
    end },

    { "the fingerprint ignores the order of calls", function()
        local forward, backward = T.ring(), T.ring()
        for i = 0, 19 do
            assert(forward:add(T.node_id(i), i % 4))
            local j = 19 - i
            assert(backward:add(T.node_id(j), j % 4, nil, 9))
        end
        T.eq(forward:fingerprint(), backward:fingerprint(), "fingerprint")
    end },

    { "adding a member moves keys only onto it", function()
        local ring = T.ring(nil, 10)
        local before = {}
        for i = 1, 5000 do before[i] = ring:lookup(T.key(i)) end
        assert(ring:add("newcomer", 2))
        local moved = 0
        for i = 1, 5000 do
            local now = ring:lookup(T.key(i))
            if now ~= before[i] then
                T.eq(now, "newcomer", "key " .. i .. " moved to")
                moved = moved + 1
            end
        end
        T.ok(moved > 0, "the new node took no key")
        assert(ring:remove("newcomer"))
        for i = 1, 5000 do T.eq(ring:lookup(T.key(i)), before[i], "key back") end
    end },

    { "replicas are distinct, skip weight 0 and start at the owner", function()
        local ring = T.ring(nil, 6)
        assert(ring:add("drained", 0))
        local out = {}
        for i = 1, 200 do
            local reps, count = ring:replicas(T.key(i), 10, out)
            T.ok(reps == out, "fills the given table")
            T.eq(count, 6, "count"); T.eq(#reps, 6, "length")
            T.eq(reps[1], ring:lookup(T.key(i)), "coordinator")
            local seen = {}
            for _, id in ipairs(reps) do
                T.ok(not seen[id] and id ~= "drained", "repeated or weight-0 replica " .. id)
                seen[id] = true
            end
        end
        local two = ring:replicas("k", 2, out)
        T.eq(#two, 2, "a reused table is trimmed")
        T.fails(S.EINVAL, "chr_ring_replicas", ring:replicas("k", 0))
        T.fails(S.EINVAL, "chr_ring_replicas", ring:replicas("k", -1))
    end },

    { "apply is all or nothing and reports the failed change", function()
        local ring = T.ring(nil, 3)
        local before = ring:fingerprint()
        local ok, err, code, index = ring:apply {
            { op = "add", id = "x", weight = 1 },
            { op = "set_weight", id = "node-0", weight = 5 },
            { op = "remove", id = "not-there" },
        }
        T.fails(S.ENOENT, "chr_ring_apply", ok, err, code)
        T.eq(index, 3, "failed index (1-based)")
        local info = chring.last_error()
        T.eq(info.change, 3, "record change (1-based)"); T.eq(info.member, "not-there", "record member")
        T.eq(ring:fingerprint(), before, "fingerprint")
        assert(ring:apply {
            { op = "add", id = "x", weight = 1, zone = "z1", tag = 5 },
            { op = "set_weight", id = "node-0", weight = 5 },
            { op = "remove", id = "node-1" },
            { op = "add", id = "y", weight = 1 },
            { op = "remove", id = "y" },
        })
        local nodes = ring:nodes()
        T.eq(#nodes, 3, "members")
        T.eq(nodes[1].id .. "," .. nodes[2].id .. "," .. nodes[3].id, "node-0,node-2,x", "ids")
        T.eq(nodes[1].weight, 5, "weight"); T.eq(nodes[3].zone, "z1", "zone"); T.eq(nodes[3].tag, 5, "tag")
        assert(ring:apply {})
    end },

    { "nodes are in id order and ownership sums to 1", function()
        local ring = T.ring(nil, 12)
        local nodes, sum = ring:nodes(), 0
        T.eq(#nodes, 12, "count")
        for i, n in ipairs(nodes) do
            T.eq(n.index, i, "index")
            if i > 1 then T.ok(nodes[i - 1].id < n.id, "id order") end
            T.eq(ring:ownership(n.id), n.ownership, "ownership")
            sum = sum + n.ownership
        end
        T.ok(math.abs(sum - 1) < 1e-9, "ownership sums to " .. sum)
    end },

    { "free releases the ring; later calls raise", function()
        local ring = T.ring(nil, 2)
        local snap = ring:snapshot()
        ring:free()
        ring:free()   -- twice is a no-op
        T.raises("freed ring", ring.lookup, ring, "k")
        T.ok(snap:lookup("k"), "a snapshot outlives its ring")
    end },

    { "hash known answer (XXH3-64 of empty input, seed 0)", function()
        T.eq(chring.hash("xxh3", ""), "2d06800538d394c2", "xxh3")
        T.fails(S.ENOHASHER, "chr_hasher_hash", chring.hash("nope", "x"))
    end },
}
