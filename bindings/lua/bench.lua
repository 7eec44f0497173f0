-- Lookups through the module next to the same C calls made directly
-- through LuaJIT's FFI, on the same ring and keys, in interleaved rounds:
-- medians of process CPU time (os.clock) in ns per key, the ratio to the C
-- call, the spread across rounds and the memory each call allocates
-- (collectgarbage "count", collector stopped; the median over rounds, so
-- the first round's node tables and grown buffers do not count). Then building 1,000 members
-- with one add each against one apply.
--
--   sh run-tests.sh --bench [ROUNDS]        (default 5 rounds)
--
-- Rings: N members "node-<i>" of weight 1 (160 tokens each), default
-- options, built with one apply. Keys: 2^18 distinct keys of 20-30 bytes,
-- shuffled once, walked in order; batches of 1,024 keys.
local ffi = require "ffi"
local chring = require "chring"
local C = chring._lib

local rounds = tonumber(arg and arg[1]) or 5
local KEYS, BATCH, SIZES = 2 ^ 18, 1024, { 10, 100, 1000 }

math.randomseed(42)
local keys = {}
for i = 1, KEYS do keys[i] = ("session:user_%d:%x"):format(i, math.random(0, 0x7fffffff)) end
for i = KEYS, 2, -1 do
    local j = math.random(1, i)
    keys[i], keys[j] = keys[j], keys[i]
end
local batches = {}
for b = 1, KEYS / BATCH do
    local t = {}
    for i = 1, BATCH do t[i] = keys[(b - 1) * BATCH + i] end
    batches[b] = t
end
-- The C arrays of every key, for the direct batch call (keys anchored above).
local all_ptrs = ffi.new("const void *[?]", KEYS)
local all_lens = ffi.new("size_t[?]", KEYS)
for i = 1, KEYS do all_ptrs[i - 1], all_lens[i - 1] = keys[i], #keys[i] end

local function members(n)
    local changes = {}
    for i = 1, n do changes[i] = { op = "add", id = "node-" .. (i - 1), weight = 1 } end
    return changes
end

local fixtures = {}
for s, n in ipairs(SIZES) do
    local ring = assert(chring.new())
    assert(ring:apply(members(n)))
    fixtures[s] = { ring = ring, snap = assert(ring:snapshot()) }
end

local view = ffi.new("chr_node_view[1]")
local out_indices = ffi.new("uint32_t[?]", BATCH)
local out = {}

-- Each case looks up every key once and returns a checksum of the owners
-- (0-based indices), which its reference must match.
local cases = {
    { "C chr_snapshot_lookup", nil, function(f)
        local p, sum = f.snap.ptr, 0
        for i = 1, KEYS do
            local k = keys[i]
            assert(C.chr_snapshot_lookup(p, k, #k, view) == 0)
            sum = sum + view[0].index
        end
        return sum
    end },
    { "snap:lookup_index", "C chr_snapshot_lookup", function(f)
        local snap, sum = f.snap, 0
        for i = 1, KEYS do sum = sum + snap:lookup_index(keys[i]) - 1 end
        return sum
    end },
    { "snap:lookup", "C chr_snapshot_lookup", function(f)
        local snap, sum = f.snap, 0
        for i = 1, KEYS do sum = sum + snap:lookup(keys[i]).index - 1 end
        return sum
    end },
    { "C chr_snapshot_lookup_batch", nil, function(f)
        local p, sum = f.snap.ptr, 0
        for from = 0, KEYS - 1, BATCH do
            assert(C.chr_snapshot_lookup_batch(p, all_ptrs + from, all_lens + from, BATCH, out_indices) == 0)
            for i = 0, BATCH - 1 do sum = sum + out_indices[i] end
        end
        return sum
    end },
    { "snap:lookup_batch(keys, out)", "C chr_snapshot_lookup_batch", function(f)
        local snap, sum = f.snap, 0
        for b = 1, #batches do
            snap:lookup_batch(batches[b], out)
            for i = 1, BATCH do sum = sum + out[i] - 1 end
        end
        return sum
    end },
}

local function median(v)
    local s = {}
    for i = 1, #v do s[i] = v[i] end
    table.sort(s)
    local m = math.floor(#s / 2)
    return #s % 2 == 1 and s[m + 1] or (s[m] + s[m + 1]) / 2
end

local ns, kib, sums = {}, {}, {}
for c = 1, #cases do ns[c], kib[c], sums[c] = {}, {}, {} end
for round = 1, rounds do
    for c0 = 1, #cases do
        local c = (c0 + round - 2) % #cases + 1   -- rotate the order each round
        for s, f in ipairs(fixtures) do
            ns[c][s] = ns[c][s] or {}
            collectgarbage(); collectgarbage("stop")
            local before_mem, start = collectgarbage("count"), os.clock()
            sums[c][s] = cases[c][3](f)
            local cpu = os.clock() - start
            local grew = collectgarbage("count") - before_mem
            collectgarbage("restart")
            table.insert(ns[c][s], cpu * 1e9 / KEYS)
            kib[c][s] = kib[c][s] or {}
            table.insert(kib[c][s], grew)
        end
    end
end

local index_of = {}
for c, case in ipairs(cases) do index_of[case[1]] = c end
print(("%s, %d rounds, medians of CPU time, ns per key\n"):format(jit.version, rounds))
print("| call | 10 nodes | 100 | 1,000 | vs the C call | spread (max/min) | KiB allocated per 1,000 keys |")
print("|---|---|---|---|---|---|---|")
for c, case in ipairs(cases) do
    local cells, ratio, spread = {}, {}, {}
    for s = 1, #SIZES do
        local m = median(ns[c][s])
        cells[s] = ("%.1f"):format(m)
        local lo, hi = math.huge, 0
        for _, v in ipairs(ns[c][s]) do lo, hi = math.min(lo, v), math.max(hi, v) end
        spread[s] = ("%.2f"):format(hi / lo)
        if case[2] then
            local r = index_of[case[2]]
            assert(sums[c][s] == sums[r][s], case[1] .. " and " .. case[2] .. " disagree")
            local mr = median(ns[r][s])
            ratio[s] = ("%.2fx (%+.1f ns)"):format(m / mr, m - mr)
        end
    end
    print(("| `%s` | %s | %s | %s | %.2f |"):format(case[1], table.concat(cells, " | "),
        case[2] and table.concat(ratio, ", ") or "(reference)", table.concat(spread, ", "),
        math.max(median(kib[c][1]), median(kib[c][2]), median(kib[c][3])) * 1000 / KEYS))
end

-- Building 1,000 members.
local function cpu(f)
    local start = os.clock()
    f()
    return os.clock() - start
end
local adds, applies, one = {}, {}, {}
local changes = members(1000)
for _ = 1, rounds do
    adds[#adds + 1] = cpu(function()
        local ring = assert(chring.new())
        for i = 1, 1000 do assert(ring:add(changes[i].id, 1)) end
        ring:free()
    end)
    applies[#applies + 1] = cpu(function()
        local ring = assert(chring.new())
        assert(ring:apply(changes))
        ring:free()
    end)
    local ring = assert(chring.new())
    assert(ring:apply(changes))
    local t = 0
    for _ = 1, 20 do
        t = t + cpu(function() assert(ring:add("node-extra", 1)) end)
        assert(ring:remove("node-extra"))
    end
    one[#one + 1] = t / 20
    ring:free()
end
local a, p = median(adds), median(applies)
print(("\nBuilding 1,000 members: 1,000 single add %.1f ms, one apply %.2f ms (%.1fx); one add at 1,000 members %.0f µs")
    :format(a * 1e3, p * 1e3, a / p, median(one) * 1e6))
