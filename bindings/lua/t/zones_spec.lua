local chring = require "chring"
local T = require "testlib"
local S = chring.status

-- zones a (4 nodes), b (4), c (1), weight 1 each
local function zoned_ring()
    local ring = assert(chring.new())
    local zones = { "a", "a", "a", "a", "b", "b", "b", "b", "c" }
    for i, zone in ipairs(zones) do assert(ring:add(T.node_id(i - 1), 1, zone, i - 1)) end
    return ring
end

return {
    { "replica_policy is the library's list of policies", function()
        local ffi = require "ffi"
        local C, K = chring._lib, chring._constants
        local name_out = ffi.new("const char *[1]")
        local count = 0
        while C.chr_replica_policy_name(count, name_out) == 0 do
            local name = ffi.string(name_out[0])
            T.eq(chring.replica_policy[(name:gsub("-", "_"))], count, "replica_policy for " .. name)
            count = count + 1
        end
        T.ok(count >= 3, "the library names " .. count .. " policies")
        local entries = 0
        for _ in pairs(chring.replica_policy) do entries = entries + 1 end
        T.eq(entries, count, "entries of replica_policy")
        -- The names the API has always had.
        T.eq(chring.replica_policy.nodes, K.CHR_REPLICAS_NODES, "nodes")
        T.eq(chring.replica_policy.zones_first, K.CHR_REPLICAS_ZONES_FIRST, "zones_first")
        T.eq(chring.replica_policy.nts, K.CHR_REPLICAS_NTS, "nts")
        -- Every form a replica call takes selects the same policy.
        local ring = zoned_ring()
        local want = assert(ring:replicas_policy("k", 3, K.CHR_REPLICAS_ZONES_FIRST))
        for _, policy in ipairs { "zones-first", "zones_first", chring.replica_policy.zones_first } do
            local got = assert(ring:replicas_policy("k", 3, policy))
            for j = 1, 3 do T.eq(got[j], want[j], "replica " .. j .. " under " .. tostring(policy)) end
        end
    end },

    { "zones-first replicas: distinct zones, owner first, prefixes; nts the same set", function()
        local ring = zoned_ring()
        local snap = assert(ring:snapshot())
        for i = 1, 500 do
            local key = T.key(i)
            local zf = assert(snap:replicas_policy(key, 4, "zones-first"))
            T.eq(#zf, 4, "count")
            T.eq(zf[1].id, ring:lookup(key), "coordinator")
            T.ok(zf[1].zone ~= zf[2].zone and zf[2].zone ~= zf[3].zone and zf[1].zone ~= zf[3].zone,
                 "first 3 in distinct zones for key " .. i)
            local ids = assert(ring:replicas_policy(key, 3, chring.replica_policy.zones_first))
            for j = 1, 3 do T.eq(ids[j], zf[j].id, "prefix and ring = snapshot") end
            local nts = assert(snap:replicas_policy(key, 4, "nts"))
            local set = {}
            for _, n in ipairs(zf) do set[n.id] = true end
            for _, n in ipairs(nts) do T.ok(set[n.id], "nts set = zones-first set") end
            local plain, same = ring:replicas(key, 3), ring:replicas_policy(key, 3, nil)
            for j = 1, 3 do T.eq(same[j], plain[j], "nil policy = replicas") end
        end
        T.fails(S.ENOTSUP, "chr_replica_policy_find", snap:replicas_policy("k", 2, "zones"))
        T.fails(S.ENOTSUP, "chr_ring_replicas_policy", ring:replicas_policy("k", 2, 7))
        T.fails(S.EINVAL, "chr_snapshot_replicas_policy", snap:replicas_policy("k", 0, "nts"))
    end },

    { "replica shares: exact, sum to n, the lone node of zone c holds every key", function()
        local snap = assert(zoned_ring():snapshot())
        local shares = assert(snap:replica_shares("zones-first", 3))
        local total = 0
        for _, s in ipairs(shares) do total = total + s end
        T.ok(math.abs(total - 3) < 1e-12, "shares sum to " .. total)
        T.eq(shares[9], 1, "node-8's share")
        local own = assert(snap:replica_shares(nil, 1))
        for i = 1, 9 do T.eq(own[i], snap:node(i).ownership, "n = 1 share = ownership") end
        T.fails(S.EINVAL, "chr_snapshot_replica_shares", snap:replica_shares("nodes", 0))
        T.fails(S.ENOTSUP, "chr_snapshot_replica_shares", snap:replica_shares(5, 1))
    end },
}
