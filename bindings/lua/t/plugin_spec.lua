-- plugin_dir and the plugin calls, with bindings/testdata/bindtest_plugin.c
-- that meson builds into a directory discovery does not search
-- (CHRING_TEST_PLUGIN_DIR names it).
local chring = require "chring"
local bit = require "bit"
local T = require "testlib"
local S = chring.status
local NAME = "bindtest_fnv1a"

-- The fixture's hash: FNV-1a 64 with the seed XORed into the offset basis.
local function fnv1a(data, seed)
    local h = bit.bxor(0xcbf29ce484222325ULL, seed)
    for i = 1, #data do
        h = bit.bxor(h, data:byte(i)) * 0x100000001b3ULL
    end
    return bit.tohex(h, 16)
end

local function scratch_dir()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p '" .. dir .. "'") == 0)
    return dir
end

return {
    { "plugin_dir reaches the library", function()
        local dir = os.getenv("CHRING_TEST_PLUGIN_DIR")
        if not dir then
            print("  (skipped: CHRING_TEST_PLUGIN_DIR is not set; run through meson test)")
            return
        end
        T.fails(S.ENOHASHER, "chr_ring_new", chring.new { hasher = NAME })
        local ring = assert(chring.new { hasher = NAME, seed = 99, plugin_dir = dir })
        assert(ring:add("only", 1))
        T.eq(ring:lookup("k"), "only", "owner")
        for _, data in ipairs { "", "a", "\0\255\7" } do
            T.eq(chring.hash(NAME, data, 99), fnv1a(data, 99ULL), "hash of " .. #data .. " bytes")
        end
        local want = fnv1a("a", 0ULL):gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end)
        T.eq(chring.digest(NAME, "a"), want, "digest")
        local listed
        for _, h in ipairs(assert(chring.hashers())) do
            if h.name == NAME then listed = h end
        end
        T.ok(listed, "hashers() lists the plugin")
        T.eq(listed.digest_size, 8, "digest size")
        T.eq(listed.origin:match("^(.*)/[^/]*$"), dir:gsub("/$", ""), "origin directory")
    end },

    { "plugin errors", function()
        local dir = scratch_dir()
        T.fails(S.EPLUGIN_NOFILE, "chr_plugin_load", chring.load_plugin(dir .. "/chring-missing.so"))
        local f = assert(io.open(dir .. "/chring-text.so", "w"))
        f:write("not an ELF file"); f:close()
        T.fails(S.EPLUGIN_NOTSO, "chr_plugin_load", chring.load_plugin(dir .. "/chring-text.so"))
        os.execute("rm -rf '" .. dir .. "'")
        T.fails(S.ENOHASHER, "chr_hasher_digest", chring.digest("no-such-hasher", "a"))
        for _, h in ipairs(assert(chring.hashers())) do
            if h.digest_size == 0 then
                T.fails(S.ENOTSUP, "chr_hasher_digest", chring.digest(h.name, "a"))
                break
            end
        end
    end },
}
