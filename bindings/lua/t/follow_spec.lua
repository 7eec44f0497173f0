-- chring.watch_file on the library's follower (chr_follower_*): the first
-- step applies, an unchanged file is not read again, a bad replacement is
-- refused once with its line and the ring keeps its fingerprint, the
-- state table, a missing file, and the watcher's hold on its ring.
local chring = require "chring"
local T = require "testlib"
local S = chring.status

local function tmpdir()
    local d = os.tmpname()
    os.remove(d)
    assert(os.execute("mkdir -p '" .. d .. "'") == 0)
    return d
end

-- Replaces the followed file by rename, as chring's writers do.
local function replace(path, text)
    local f = assert(io.open(path .. ".tmp", "wb"))
    f:write(text)
    f:close()
    assert(os.rename(path .. ".tmp", path))
end

local GOOD = "%%revision 7\na 1\nb 2 zone-b\n"
local function fingerprint_of(text)
    return assert(chring.new_from_text(text)):fingerprint()
end

-- A followed file holding GOOD, its ring (empty) and watcher.
local function fixture()
    local dir = tmpdir()
    local path = dir .. "/ring.txt"
    replace(path, GOOD)
    local ring = assert(chring.new())
    local w = assert(chring.watch_file(ring, path))
    return dir, path, ring, w
end

local function cleanup(dir) os.execute("rm -rf '" .. dir .. "'") end

return {
    { "the first step applies the file", function()
        local dir, _, ring, w = fixture()
        T.eq(ring:node_count(), 0, "nothing read before the first step")
        local ok, info = w:step()
        T.eq(ok, true, "first step")
        T.eq(info.added, 2, "added"); T.eq(info.members, 2, "members")
        T.eq(info.revision, 7, "revision")
        T.eq(info.fingerprint, fingerprint_of(GOOD), "info fingerprint")
        T.eq(ring:fingerprint(), fingerprint_of(GOOD), "the ring is the file's")
        local nodes = ring:nodes()
        T.eq(nodes[2].id, "b", "id"); T.eq(nodes[2].zone, "zone-b", "zone"); T.eq(nodes[2].weight, 2, "weight")
        cleanup(dir)
    end },

    { "an unchanged file does nothing", function()
        local dir, _, ring, w = fixture()
        assert(w:step())
        -- A change made to the ring by hand stays: the file is not applied again.
        assert(ring:add("by-hand", 1))
        local changed = ring:fingerprint()
        for i = 1, 3 do T.eq(w:step(), nil, "step " .. i .. " after the first") end
        T.eq(ring:fingerprint(), changed, "an unchanged file was applied again")
        local s = w:state()
        T.eq(s.checks, 4, "checks"); T.eq(s.applied, 1, "applied"); T.eq(s.refused, 0, "refused")
        T.eq(s.last_outcome, "unchanged", "last outcome")
        cleanup(dir)
    end },

    { "a malformed replacement is refused once with its line", function()
        local dir, path, ring, w = fixture()
        assert(w:step())
        local good = ring:fingerprint()
        replace(path, "%%revision 8\n%%fingerprint 0x0123456789ABCDEF\na 1\nb 2x\nc 1\n")
        local ok, err, code, line = w:step()
        T.eq(ok, false, "refused"); T.eq(code, S.EFORMAT, "code"); T.eq(line, 4, "line")
        T.ok(err:find(path .. ":4:", 1, true), "message names file and line: " .. err)
        T.eq(ring:fingerprint(), good, "the ring keeps its fingerprint")
        T.eq(ring:node_count(), 2, "members")
        T.eq(w:step(), nil, "the same bad file is reported once")
        T.eq(w:step(), nil, "and only once")
        T.eq(ring:fingerprint(), good, "still the last good ring")
        -- A good file after it is applied again.
        replace(path, "a 1\n")
        local ok2, info = w:step()
        T.eq(ok2, true, "recovery"); T.eq(info.removed, 1, "removed")
        T.eq(ring:fingerprint(), fingerprint_of("a 1\n"), "the new file's ring")
        cleanup(dir)
    end },

    { "the state table", function()
        local dir, path, ring, w = fixture()
        local s = w:state()
        T.eq(s.checks, 0, "checks before a step"); T.eq(s.last_outcome, "unchanged", "outcome")
        T.eq(s.applied_fingerprint, nil, "nothing applied"); T.eq(s.applied_revision, nil, "revision")
        T.eq(s.status, 0, "status"); T.eq(s.line, 0, "line"); T.eq(s.message, "", "message")

        assert(w:step())
        s = w:state()
        T.eq(s.checks, 1, "checks"); T.eq(s.applied, 1, "applied"); T.eq(s.refused, 0, "refused")
        T.eq(s.last_outcome, "applied", "outcome")
        T.eq(s.applied_revision, 7, "applied revision")
        T.eq(s.applied_fingerprint, ring:fingerprint(), "applied fingerprint")
        T.eq(s.refused_revision, nil, "no refused revision")
        T.eq(s.refused_fingerprint, nil, "no refused fingerprint")

        replace(path, "%%revision 8\n%%fingerprint 0x0123456789ABCDEF\na 1\nb 2x\n")
        local _, err = w:step()
        s = w:state()
        T.eq(s.checks, 2, "checks"); T.eq(s.applied, 1, "applied"); T.eq(s.refused, 1, "refused")
        T.eq(s.last_outcome, "refused", "outcome")
        T.eq(s.status, S.EFORMAT, "status"); T.eq(s.line, 4, "line"); T.eq(s.message, err, "message")
        T.eq(s.refused_revision, 8, "refused revision")
        T.eq(s.refused_fingerprint, "0123456789abcdef", "refused fingerprint (what it claimed)")
        T.eq(s.applied_revision, 7, "the applied revision stays")
        T.eq(s.applied_fingerprint, fingerprint_of(GOOD), "the applied fingerprint stays")

        assert(w:step() == nil)
        s = w:state()
        T.eq(s.last_outcome, "unchanged", "outcome after the report")
        T.eq(s.status, S.EFORMAT, "the refusal is still the state"); T.eq(s.refused, 1, "refused once")

        -- A file without %%revision, applied: the refusal is cleared.
        replace(path, "a 1\nc 1\n")
        assert(w:step())
        s = w:state()
        T.eq(s.applied, 2, "applied"); T.eq(s.applied_revision, nil, "no revision in the file")
        T.eq(s.applied_fingerprint, fingerprint_of("a 1\nc 1\n"), "applied fingerprint")
        T.eq(s.status, 0, "status cleared"); T.eq(s.line, 0, "line cleared")
        T.eq(s.message, "", "message cleared")
        T.eq(s.refused_revision, nil, "refused revision cleared")
        T.eq(s.refused_fingerprint, nil, "refused fingerprint cleared")
        cleanup(dir)
    end },

    { "a missing file is refused once, then followed when it appears", function()
        local dir = tmpdir()
        local path = dir .. "/ring.txt"
        local ring = assert(chring.new())
        local w = assert(chring.watch_file(ring, path))
        local ok, err, code, line = w:step()
        T.eq(ok, false, "missing"); T.eq(code, S.EIO, "code"); T.eq(line, 0, "line")
        T.ok(err:find(path, 1, true), "message names the file: " .. err)
        T.eq(w:step(), nil, "reported once")
        local s = w:state()
        T.eq(s.status, S.EIO, "status"); T.eq(s.refused, 1, "refused"); T.eq(s.applied, 0, "applied")
        T.eq(s.applied_fingerprint, nil, "nothing applied")
        T.eq(ring:node_count(), 0, "ring unchanged")
        replace(path, GOOD)
        T.eq(w:step(), true, "applied once it exists")
        T.eq(ring:fingerprint(), fingerprint_of(GOOD), "the file's ring")
        os.remove(path)
        T.eq(w:step(), false, "removed again")
        T.eq(ring:fingerprint(), fingerprint_of(GOOD), "the last good ring stays")
        cleanup(dir)
    end },

    { "the watcher keeps its ring alive", function()
        local dir = tmpdir()
        local path = dir .. "/ring.txt"
        replace(path, GOOD)
        local weak = setmetatable({}, { __mode = "v" })
        local w = (function()
            local ring = assert(chring.new())
            weak[1] = ring
            return assert(chring.watch_file(ring, path))
        end)()
        collectgarbage(); collectgarbage()
        T.ok(weak[1] ~= nil, "the ring was collected while its watcher lives")
        T.eq(w:step(), true, "step")
        T.eq(w:state().applied_fingerprint, fingerprint_of(GOOD), "applied to the kept ring")
        cleanup(dir)
    end },

    { "argument errors, a freed ring, a freed watcher", function()
        local ring = assert(chring.new())
        T.raises("ring expected", chring.watch_file, {}, "/x")
        T.raises("string expected", chring.watch_file, ring, 42)
        T.raises("without NUL", chring.watch_file, ring, "a\0b")
        T.fails(S.EINVAL, "chr_follower_new", chring.watch_file(ring, ""))
        local w = assert(chring.watch_file(ring, "/nonexistent/ring"))
        ring:free()
        T.raises("freed ring", w.step, w)
        local w2 = assert(chring.watch_file(assert(chring.new()), "/nonexistent/ring"))
        w2:free()
        w2:free()   -- twice is a no-op
        T.raises("freed watcher", w2.step, w2)
        T.raises("freed watcher", w2.state, w2)
    end },
}
