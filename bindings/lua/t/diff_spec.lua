local chring = require "chring"
local T = require "testlib"
local S = chring.status

-- Snapshots of 10 nodes before and after adding node-10.
local function pair()
    local ring = assert(chring.new())
    for i = 0, 9 do assert(ring:add(T.node_id(i), 1, nil, i)) end
    local before = assert(ring:snapshot())
    assert(ring:add(T.node_id(10), 1, nil, 10))
    return before, assert(ring:snapshot())
end

return {
    { "diff of an add: ranges to the new node hold exactly the keys that move", function()
        local before, after = pair()
        local d = assert(chring.diff(before, after))
        before:release() -- the diff keeps its own references
        after:release()
        local info = d:info()
        T.eq(info.added, 1, "added")
        T.eq(info.removed, 0, "removed")
        local ranges = assert(d:ranges())
        T.eq(#ranges, info.ranges, "ranges")
        T.ok(#ranges > 0, "something moves")
        local total = 0
        for i, r in ipairs(ranges) do
            T.eq(r.to_id, "node-10", "range " .. i .. " goes to the new node")
            T.ok(r.first <= r.last, "first <= last")
            if i > 1 then T.ok(ranges[i - 1].last < r.first, "sorted, disjoint") end
            total = total + (tonumber(r.last - r.first) + 1) / 2 ^ 64
        end
        T.ok(math.abs(total - info.moved) < 1e-9, "total = moved")
        local moved = 0
        for i = 1, 5000 do
            local t = assert(d:lookup(T.key(i)))
            local inside = false
            for _, r in ipairs(ranges) do
                if r.first <= t.position and t.position <= r.last then
                    inside = true
                    T.eq(t.old.id, r.from_id, "from")
                    T.eq(t.new.id, r.to_id, "to")
                end
            end
            T.eq(inside, t.moved, "key " .. i .. " moves iff it is in a range")
            if t.moved then moved = moved + 1 end
        end
        T.ok(moved > 0, "some key moved")
        local sum = 0
        for _, c in ipairs(assert(d:matrix())) do sum = sum + c.fraction end
        T.ok(math.abs(sum - 1) < 1e-12, "matrix sums to 1")
        T.eq(d:counterpart("new", ranges[1].to), nil, "the new node has no old counterpart")
        T.eq(d:counterpart("old", 1), 1, "node-0 keeps index 1")
        T.eq(d:node("new", ranges[1].to).id, "node-10", "node()")
        T.raises("'old' or 'new'", d.counterpart, d, "middle", 1)
        d:release()
        d:release()
        T.raises("released diff", d.ranges, d)
    end },
    { "plan: one replica is the ranges, three copy from three old replicas", function()
        local before, after = pair()
        local d = assert(chring.diff(before, after))
        local ranges = assert(d:ranges())
        local one = assert(d:plan("nodes", 1))
        T.eq(#one, #ranges, "entries")
        for i, e in ipairs(one) do
            T.ok(e.first == ranges[i].first and e.last == ranges[i].last, "same positions")
            T.eq(e.to_id, "node-10", "gainer")
            T.eq(e.source_ids[1], ranges[i].from_id, "source")
        end
        for _, e in ipairs(assert(d:plan(chring.replica_policy.zones_first, 3))) do
            T.eq(e.to_id, "node-10", "only the new node gains")
            T.eq(#e.sources, 3, "three sources")
        end
        T.fails(S.EINVAL, "chr_plan_new", d:plan("nodes", 0))
        T.fails(S.ENOTSUP, "chr_plan_new", d:plan(9, 2))
    end },
    { "rings that place keys differently are refused", function()
        local a = assert(assert(chring.new()):snapshot())
        local b = assert(assert(chring.new { seed = 7 }):snapshot())
        T.fails(S.EINCOMPATIBLE, "chr_diff_new", chring.diff(a, b))
        T.raises("snapshot expected", chring.diff, a, "b")
    end },
}
