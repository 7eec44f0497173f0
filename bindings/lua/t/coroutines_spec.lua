-- Many coroutines interleave lookups, snapshot reads and updates on one
-- ring (the way nginx request handlers share a worker's ring): the shared
-- out-structs must never leak one coroutine's answer into another's.
local T = require "testlib"

return {
    { "coroutines interleaving reads and updates", function()
        local ring = T.ring()
        for i = 0, 7 do assert(ring:add("stable-" .. i, 1 + i % 3)) end
        local workers = {}
        for g = 1, 6 do
            workers[g] = coroutine.wrap(function()
                local snap = ring:snapshot()
                for i = 1, 2000 do
                    local key = "k" .. g .. "-" .. i
                    local id = ring:lookup(key)
                    T.ok(id:find("^stable%-") or id:find("^churn%-"), "owner " .. tostring(id))
                    local a = snap:lookup(key)
                    coroutine.yield()
                    T.ok(snap:lookup(key) == a, "a snapshot answered twice differently")
                    local reps = snap:replicas(key, 3)
                    T.ok(reps[1] == a, "coordinator is the owner")
                    if i % 100 == 0 then snap:release(); snap = ring:snapshot() end
                end
                return true
            end)
        end
        local writer = coroutine.wrap(function()
            for u = 0, 2999 do
                local id = "churn-" .. (u % 5)
                local phase = math.floor(u / 5) % 3
                if phase == 0 then assert(ring:add(id, 1 + u % 4))
                elseif phase == 1 then assert(ring:set_weight(id, u % 3))
                else assert(ring:remove(id)) end
                coroutine.yield()
            end
        end)
        local done = 0
        while done < #workers do
            done = 0
            for g = 1, #workers do
                if workers[g] then
                    if workers[g]() then workers[g] = false end
                else
                    done = done + 1
                end
            end
            writer()
        end
    end },
}
