local chring = require "chring"
local T = require "testlib"
local S = chring.status

return {
    { "a snapshot agrees with the ring and then stays fixed", function()
        local ring = T.ring(nil, 8)
        local snap = assert(ring:snapshot())
        local owners = {}
        for i = 1, 2000 do
            local n = snap:lookup(T.key(i))
            T.eq(n.id, ring:lookup(T.key(i)), "owner")
            owners[i] = n
        end
        local fp = snap:fingerprint()
        assert(ring:remove("node-3")); assert(ring:set_weight("node-4", 9))
        T.ok(ring:fingerprint() ~= fp, "the ring changed")
        for i = 1, 2000 do
            T.ok(snap:lookup(T.key(i)) == owners[i], "same node table for key " .. i)
        end
        T.eq(snap:fingerprint(), fp, "fingerprint"); T.eq(snap:node_count(), 8, "count")
        snap:release()
        snap:release()
        T.raises("released snapshot", snap.lookup, snap, "k")
    end },

    { "tokens, nodes, batch and replicas", function()
        local ring = T.ring({ tokens_per_weight = 4 }, 5)
        local snap = ring:snapshot()
        local tokens = snap:token_count()
        T.eq(tokens, 4 * (1 + 2 + 3 + 1 + 2), "tokens")
        local last = "0000000000000000"
        for i = 1, tokens do
            local value, owner = snap:token(i)
            T.ok(value >= last and owner >= 1 and owner <= 5, "token order at " .. i)
            last = value
        end
        T.fails(S.ERANGE, "chr_snapshot_token", snap:token(tokens + 1))
        T.fails(S.ERANGE, nil, snap:token(0))
        T.fails(S.ERANGE, "chr_snapshot_node", snap:node(6))
        T.fails(S.ERANGE, "chr_snapshot_node", snap:node(0))
        T.eq(snap:node(1).id, "node-0", "first node")

        local keys = {}
        for i = 1, 300 do keys[i] = T.key(i) end
        keys[301] = ""                     -- the empty key
        keys[302] = "\0\255\0"             -- binary
        local indices = assert(snap:lookup_batch(keys))
        local out = {}
        for i, k in ipairs(keys) do
            T.eq(indices[i], snap:lookup_index(k), "batch index of key " .. i)
            local reps, count = snap:replicas(k, 3, out)
            T.eq(count, 3, "replica count")
            T.eq(reps[1], snap:node(indices[i]), "coordinator")
            local from_ring = ring:replicas(k, 3)
            for j = 1, 3 do T.eq(reps[j].id, from_ring[j], "replica " .. j) end
        end
        T.fails(S.EINVAL, "chr_snapshot_replicas", snap:replicas("k", 0))
    end },

    { "a snapshot of an empty ring", function()
        local snap = T.ring():snapshot()
        T.fails(S.EEMPTY, "chr_snapshot_lookup", snap:lookup("k"))
        T.fails(S.EEMPTY, "chr_snapshot_replicas", snap:replicas("k", 3))
        T.eq(#snap:lookup_batch {}, 0, "an empty batch")
    end },

    { "lookups allocate nothing once each node has been seen", function()
        local ring = T.ring(nil, 16)
        local snap = ring:snapshot()
        local keys = T.keys(1000)
        local ids = {}
        for i = 1, 1000 do snap:lookup(keys[i]); ids[i] = ring:lookup(keys[i]) end   -- warm up
        local grew = T.allocated(function()
            for _ = 1, 50 do
                for i = 1, 1000 do snap:lookup(keys[i]); ring:lookup(keys[i]) end
            end
        end)
        -- 100,000 lookups; a single 16-byte allocation each would be 1.5 MiB.
        T.ok(grew < 16, ("lookups allocated %.1f KiB"):format(grew))
    end },

    { "lookup_batch equals single lookups and reuses `out`", function()
        local ring = T.ring({ seed = 5 }, 40)
        local snap = ring:snapshot()
        local keys = {}
        for i = 1, 20000 do keys[i] = T.key(i * 7) end
        local all = assert(snap:lookup_batch(keys))
        T.eq(#all, #keys, "one index per key")
        for i, k in ipairs(keys) do T.eq(all[i], snap:lookup_index(k), "batch index of key " .. i) end
        -- A smaller batch into the same table: trimmed, and still right.
        local few = { keys[9], keys[10], keys[11] }
        local out = assert(snap:lookup_batch(few, all))
        T.ok(out == all and #out == 3, "out reused and trimmed to the batch")
        for i = 1, 3 do T.eq(out[i], snap:lookup_index(few[i]), "small batch key " .. i) end
    end },

    { "lookup_batch into a reused table allocates nothing", function()
        local ring = T.ring(nil, 16)
        local snap = ring:snapshot()
        local keys, out = T.keys(1024), {}
        snap:lookup_batch(keys, out)       -- warm up: buffers grow, `out` fills
        local grew = T.allocated(function()
            for _ = 1, 200 do snap:lookup_batch(keys, out) end
        end)
        -- 204,800 keys; three fresh FFI buffers per call would be about 4 MiB.
        T.ok(grew < 4, ("200 batches allocated %.1f KiB"):format(grew))
    end },
}
