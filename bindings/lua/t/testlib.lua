-- Assertions and fixtures for the specs.
local chring = require "chring"

local T = {}

function T.eq(got, want, what)
    if got ~= want then
        error(("%s: got %s, want %s"):format(what or "value", tostring(got), tostring(want)), 2)
    end
end

function T.ok(cond, what)
    if not cond then error(what or "assertion failed", 2) end
end

-- A call that must fail with `code` and a message naming `fn`.
function T.fails(code, fn, ok, err, got_code)
    if ok ~= nil then error(("expected failure %s, got %s"):format(code, tostring(ok)), 2) end
    if got_code ~= code then
        error(("expected status %d, got %s (%s)"):format(code, tostring(got_code), tostring(err)), 2)
    end
    if fn and not tostring(err):find(fn, 1, true) then
        error(("message %q does not name %s"):format(tostring(err), fn), 2)
    end
    return err
end

-- A call that must raise an error whose text contains `pattern`.
function T.raises(pattern, f, ...)
    local ok, err = pcall(f, ...)
    if ok then error("expected an error matching " .. pattern, 2) end
    if not tostring(err):find(pattern, 1, true) then
        error(("error %q does not contain %q"):format(tostring(err), pattern), 2)
    end
end

function T.node_id(i) return "node-" .. i end
function T.key(i) return "key:" .. i end

-- Keys "key:<i>" for i = 1..n.
function T.keys(n)
    local keys = {}
    for i = 1, n do keys[i] = T.key(i) end
    return keys
end

-- KiB the Lua heap grows while f runs, the collector stopped (so nothing
-- allocated is freed before it is counted).
function T.allocated(f)
    collectgarbage(); collectgarbage("stop")
    local before = collectgarbage("count")
    f()
    local grew = collectgarbage("count") - before
    collectgarbage("restart")
    return grew
end

-- A ring with `count` members "node-<i>" of weight 1 + i % 3 and tag i.
function T.ring(opts, count)
    local ring = assert(chring.new(opts))
    for i = 0, (count or 0) - 1 do
        assert(ring:add(T.node_id(i), 1 + i % 3, nil, i))
    end
    return ring
end

return T
