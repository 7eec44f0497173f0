local chring = require "chring"
local T = require "testlib"
local S = chring.status

return {
    { "idle, the bounded lookup is the plain one; a full node gets nothing", function()
        local ring = T.ring(nil, 6)
        local snap = assert(ring:snapshot())
        for i = 1, 1000 do
            local home = snap:lookup_index(T.key(i))
            local n, r = assert(snap:lookup_bounded(T.key(i), nil, nil, { factor = 1.25 }))
            T.eq(n.index, home, "idle"); T.eq(r.home, home, "home"); T.eq(r.probes, 1, "probes")
        end
        local loads = { 0, 0, 90, 0, 0, 0 }
        for i = 1, 1000 do
            local n, r = assert(snap:lookup_bounded(T.key(i), loads, nil, { factor = 1.25, spill = "shuffle" }))
            T.ok(n.index ~= 3, "not the full node")
            T.ok(loads[n.index] < r.capacity, "below capacity")
        end
        local caps = assert(chring.bound_capacities({ 1, 1, 1 }, 10, { factor_pct = 125 }))
        T.ok(caps[1] + caps[2] + caps[3] >= 11, "room for L + 1")
        T.fails(S.ERANGE, "chr_snapshot_lookup_bounded", snap:lookup_bounded("k", nil, nil, { factor_pct = 50 }))
        T.raises("one load per node", snap.lookup_bounded, snap, "k", { 1, 2 })
    end },

    { "a masked node gets nothing and its keys return", function()
        local ring = T.ring(nil, 5)
        local snap = assert(ring:snapshot())
        local up = { true, true, false, true, true }
        for i = 1, 1000 do
            local home = snap:lookup_index(T.key(i))
            local n = assert(snap:lookup_bounded(T.key(i), nil, up))
            T.ok(n.index ~= 3, "masked")
            if home ~= 3 then T.eq(n.index, home, "others stay") end
            T.eq((assert(snap:lookup_bounded(T.key(i)))).index, home, "back home")
        end
    end },

    { "without a bound, a mask gives the first available node of the replica walk", function()
        -- The rule chring_balancer (bindings/nginx/openresty) retries by.
        local ring = T.ring(nil, 40)
        local snap = assert(ring:snapshot())
        local n = snap:node_count()
        local mask, walk = {}, {}
        math.randomseed(7)
        for i = 1, 400 do
            local key = T.key(i)
            for j = 1, n do mask[j] = math.random() < 0.25 end
            mask[math.random(n)] = true   -- at least one
            local want
            for _, node in ipairs(assert(snap:replicas(key, n, walk))) do
                if mask[node.index] then want = node; break end
            end
            local got = assert(snap:lookup_bounded(key, nil, mask))
            T.eq(got.id, want.id, "key " .. i)
        end
        for j = 1, n do mask[j] = false end
        T.fails(S.EEMPTY, "chr_snapshot_lookup_bounded", snap:lookup_bounded("k", nil, mask))
    end },

    { "tracker: explicit release, also after the node is removed", function()
        local ring = T.ring(nil, 4)
        local tracker = assert(chring.tracker())
        local snap = assert(ring:snapshot())
        local tickets = {}
        for i = 1, 200 do
            local node, ticket, r = assert(tracker:acquire(snap, T.key(i), { factor = 1.25 }))
            T.ok(r.load < r.capacity, "below capacity")
            tickets[i] = { ticket, node.id }
        end
        T.eq(tracker:total(), 200, "total")
        local gone = tickets[1][2]
        assert(ring:remove(gone))
        snap:release()
        for i = 1, 200 do assert(tracker:release(tickets[i][1])) end
        T.eq(tracker:total(), 0, "total after release")
        T.eq(tracker:load(gone), 0, "removed node's count")
        T.fails(S.EINVAL, "chr_tracker_release", tracker:release(tickets[1][1]))
        snap = assert(ring:snapshot())
        local masked = snap:node(1).id
        assert(tracker:set_available(masked, false))
        for i = 1, 200 do
            local node, ticket = assert(tracker:acquire(snap, T.key(i)))
            T.ok(node.id ~= masked, "masked node skipped")
            assert(tracker:release(ticket))
        end
        tracker:free()
        T.raises("freed tracker", tracker.total, tracker)
    end },
}
