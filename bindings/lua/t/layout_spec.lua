-- The module's files: chring.lua gathers every module of lib/chring/, and
-- each of them is installed by the rockspec and by meson install (the OPM
-- package and the Debian package take lib/chring/ whole).
local chring = require "chring"
local T = require "testlib"

local lib = assert(package.searchpath("chring", package.path)):match("^(.*)/chring%.lua$")
local binding = lib:match("^(.*)/lib$")

local function read(path)
    local f = assert(io.open(path))
    local s = f:read("*a")
    f:close()
    return s
end

local function modules()
    local names = {}
    local ls = assert(io.popen("ls '" .. lib .. "/chring'"))
    for file in ls:lines() do
        local name = file:match("^(.+)%.lua$")
        if name then names[#names + 1] = name end
    end
    ls:close()
    table.sort(names)
    return names
end

local function skip_outside_checkout()
    if binding and io.open(binding .. "/meson.build") then return false end
    print("  (skipped: chring.lua is not in a checkout's bindings/lua/lib)")
    return true
end

return {
    { "chring.lua loads every module of lib/chring/", function()
        local names = modules()
        T.ok(#names >= 10, "found only " .. #names .. " modules")
        T.ok(chring.watch_file and chring.diff and chring.tracker, "the API")
        for _, name in ipairs(names) do
            T.ok(package.loaded["chring." .. name], "chring." .. name .. " is not loaded by chring.lua")
        end
    end },

    { "the rockspec and meson install every module", function()
        if skip_outside_checkout() then return end
        local ls = assert(io.popen("ls '" .. binding .. "'/*.rockspec"))
        local rockspec = read(ls:read("*l"))
        ls:close()
        local meson = read(binding .. "/../meson.build")
        for _, name in ipairs(modules()) do
            T.ok(rockspec:find(('["chring.%s"] = "lib/chring/%s.lua"'):format(name, name), 1, true),
                 "the rockspec does not install chring." .. name)
            T.ok(meson:find(("'lua/lib/chring/%s.lua'"):format(name), 1, true),
                 "bindings/meson.build does not install chring/" .. name .. ".lua")
        end
    end },
}
