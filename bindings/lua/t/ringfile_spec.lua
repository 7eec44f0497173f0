-- Ring files through the Lua binding: create, apply, export, errors and
-- the watch_file step function (t/follow_spec.lua has the follower in detail).
local chring = require "chring"
local T = require "testlib"
local S = chring.status

local function tmpdir()
    local d = os.tmpname()
    os.remove(d)
    assert(os.execute("mkdir -p '" .. d .. "'") == 0)
    return d
end

local function replace(path, text)
    local f = assert(io.open(path .. ".tmp", "wb"))
    f:write(text)
    f:close()
    assert(os.rename(path .. ".tmp", path))
end

return {
    { "export is canonical and round trips", function()
        local ring = assert(chring.new { seed = 7, tokens_per_weight = 40 })
        assert(ring:add("cache-b", 2))
        assert(ring:add("cache-a", 1, "eu-west-1a"))
        local text = assert(ring:export())
        T.eq(text, "%%ring-file 1\n%%placement native\n%%hasher xxh3\n%%seed 7\n%%tokens-per-weight 40\n"
            .. "%%fingerprint 0x" .. ring:fingerprint() .. "\ncache-a 1 eu-west-1a\ncache-b 2\n", "export")
        local again, info = assert(chring.new_from_text(text, "canon"))
        T.eq(info.fingerprint, ring:fingerprint(), "fingerprint")
        T.eq(info.members, 2, "members")
        T.ok(info.has_options and info.has_fingerprint and info.revision == nil, "flags")
        T.eq(again:export(), text, "export(parse(text))")
        local _, rinfo = assert(chring.new_from_text(ring:export { revision = 42 }))
        T.eq(rinfo.revision, 42, "revision")
        local json = assert(ring:export { json = true })
        T.ok(json:match("^%s*{") and json:find("cache-a", 1, true), json)
        T.eq(ring:snapshot():export(), text, "snapshot export")
    end },

    { "apply is one batch and refuses other options", function()
        local dir = tmpdir()
        local path = dir .. "/ring.txt"
        local ring = assert(chring.new_from_text("a 1\nb 1\nc 1\n", nil, { seed = 3 }))
        replace(path, "a 1\nb 3 zone-b\nd 1\n")
        local info = assert(ring:apply_file(path))
        T.eq(info.added, 1, "added"); T.eq(info.removed, 1, "removed")
        local fresh = assert(chring.new_from_file(path, { seed = 3 }))
        T.eq(info.fingerprint, fresh:fingerprint(), "apply == fresh")
        local ok, err, code, line = ring:apply_text("%%seed 4\na 1\n", "other")
        T.fails(S.EOPTIONS, "other", ok, err, code)
        T.eq(line, 1, "line")
        T.eq(ring:fingerprint(), fresh:fingerprint(), "unchanged")
        os.execute("rm -rf '" .. dir .. "'")
    end },

    { "errors carry status, message and line", function()
        local ok, err, code, line = chring.new_from_text("a 1\nb 1\na 2\n", "dup.txt")
        T.fails(S.EFORMAT, "dup.txt:3:", ok, err, code)
        T.eq(line, 3, "line")
        local info = chring.last_error()
        T.eq(info.source, "dup.txt", "record source"); T.eq(info.line, 3, "record line")
        T.eq(info.other_line, 1, "record other line"); T.eq(info.member, "a", "record member")
        T.eq(info.func, "chr_ring_new_from_text", "record function")
        T.eq(info.reason, "duplicate id 'a' (first on line 1)", "record reason")
        local dir = tmpdir()
        T.fails(S.EIO, "missing", chring.new_from_file(dir .. "/missing"))
        T.fails(S.EIO, nil, chring.new_from_file(dir))
        T.raises("without NUL", chring.new_from_text, "a 1\n", "n\0ul")
        T.raises("string expected", chring.new_from_text, 42)
        local empty, info = assert(chring.new_from_text(""))
        T.eq(empty:node_count(), 0, "empty file"); T.eq(info.members, 0, "members")
        os.execute("rm -rf '" .. dir .. "'")
    end },

    { "watch_file applies changes once and keeps the last good ring", function()
        local dir = tmpdir()
        local path = dir .. "/ring.txt"
        replace(path, "a 1\nb 1\n")
        local ring = assert(chring.new())
        local w = chring.watch_file(ring, path)
        local ok, info = w:step()
        T.eq(ok, true, "first step applies"); T.eq(info.added, 2, "added")
        T.eq(w:step(), nil, "no change, no report")
        local good = ring:fingerprint()
        replace(path, "a 1\nb 1\nb 2\n")
        local ok2, err, code, line = w:step()
        T.eq(ok2, false, "bad file"); T.eq(code, S.EFORMAT, "code"); T.eq(line, 3, "line")
        T.ok(err:find(path .. ":3:", 1, true), err)
        T.eq(ring:fingerprint(), good, "bad file changed the ring")
        T.eq(w:step(), nil, "reported once")
        os.remove(path)
        local ok3, _, code3 = w:step()
        T.eq(ok3, false, "missing"); T.eq(code3, S.EIO, "code")
        replace(path, "c 1\n")
        local ok4, info4 = w:step()
        T.eq(ok4, true, "recovery"); T.eq(info4.removed, 2, "removed"); T.eq(info4.added, 1, "added")
        T.raises("ring expected", chring.watch_file, {}, path)
        os.execute("rm -rf '" .. dir .. "'")
    end },
}
