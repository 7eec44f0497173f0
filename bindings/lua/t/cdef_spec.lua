-- Checks the module's ffi.cdef against the real headers with the C
-- compiler: every function declaration becomes a function-pointer
-- initialisation (a mismatched parameter is an error under -Werror), every
-- plain typedef is repeated (C11 allows an identical one), every struct's
-- size and field offsets as LuaJIT laid them out are static assertions,
-- and so is every constant. The header's functions and integer constants
-- must all be declared by the module.
local ffi = require "ffi"
local chring = require "chring"
local T = require "testlib"

local include = os.getenv("CHRING_INCLUDE_DIR")
local cc = os.getenv("CC") or "cc"

local function read(path)
    local f = assert(io.open(path))
    local s = f:read("*a")
    f:close()
    return s
end

local function headers()
    return read(include .. "/chring.h") .. "\n" .. read(include .. "/chring_plugin.h")
end

-- The cdef split into top-level declarations (one per ';' outside braces).
local function declarations(cdef)
    local decls, depth, start = {}, 0, 1
    for i = 1, #cdef do
        local ch = cdef:sub(i, i)
        if ch == "{" then depth = depth + 1
        elseif ch == "}" then depth = depth - 1
        elseif ch == ";" and depth == 0 then
            decls[#decls + 1] = cdef:sub(start, i - 1):gsub("^%s+", "")
            start = i + 1
        end
    end
    return decls
end

-- `ctype_of(name)` names the LuaJIT type whose layout stands for the C
-- struct `name` (itself, except in the test that proves a mismatch fails).
local function generated_c(cdef, ctype_of)
    ctype_of = ctype_of or function(name) return name end
    local out = { "#include <stddef.h>", "#include <chring.h>", "" }
    local refs = {}
    for _, d in ipairs(declarations(cdef)) do
        local struct, body, name = d:match("^typedef struct (%S+) (%b{}) (%S+)$")
        if struct then
            local ctype = ctype_of(name)
            out[#out + 1] = ("_Static_assert(sizeof(%s) == %d, \"sizeof %s\");"):format(name, ffi.sizeof(ctype), name)
            for field in body:gmatch("([%w_]+)%s*%[?%d*%]?;") do
                out[#out + 1] = ("_Static_assert(offsetof(%s, %s) == %d, \"offset of %s.%s\");")
                    :format(name, field, ffi.offsetof(ctype, field) or -1, name, field)  -- -1: a field ctype lacks
            end
        elseif d:match("^typedef") then
            out[#out + 1] = d .. ";"
        else
            local fname = d:match("([%w_]+)%(")
            out[#out + 1] = (d:gsub(fname .. "%(", "(*const check_" .. fname .. ")(", 1)) .. " = " .. fname .. ";"
            refs[#refs + 1] = "(const void *)&check_" .. fname
        end
    end
    for name, value in pairs(chring._constants) do
        out[#out + 1] = ("_Static_assert((%s) == (%d), \"%s differs\");"):format(name, value, name)
    end
    out[#out + 1] = "const void *chring_lua_checks[] = { " .. table.concat(refs, ", ") .. " };"
    return table.concat(out, "\n") .. "\n"
end

local function compile(source)
    local base = os.tmpname()
    local f = assert(io.open(base .. ".c", "w"))
    f:write(source)
    f:close()
    local log = base .. ".log"
    local cmd = ("%s -std=c11 -Wall -Wextra -Werror -pedantic -I'%s' -c -o '%s.o' '%s.c' >'%s' 2>&1")
        :format(cc, include, base, base, log)
    local status = os.execute(cmd)
    local errors = read(log)
    os.remove(base); os.remove(base .. ".c"); os.remove(base .. ".o"); os.remove(log)
    return status == 0, errors
end

local function skip_without_headers()
    if include then return false end
    print("  (skipped: CHRING_INCLUDE_DIR is not set; run-tests.sh sets it)")
    return true
end

return {
    { "the cdef compiles against the headers", function()
        if skip_without_headers() then return end
        local ok, errors = compile(generated_c(chring._cdef))
        T.ok(ok, "the cdef does not match chring.h:\n" .. errors)
    end },

    { "the check rejects a wrong declaration", function()
        if skip_without_headers() then return end
        local bad = chring._cdef:gsub("chr_ring_lookup%(const chr_ring %*", "chr_ring_lookup(chr_ring *", 1)
        T.ok(bad ~= chring._cdef, "chr_ring_lookup not found in the cdef")
        T.ok(not compile(generated_c(bad)), "a wrong parameter type compiled")
        -- chr_options as LuaJIT would lay it out with a uint64_t field.
        ffi.cdef [[
            typedef struct { uint32_t version; uint64_t tokens_per_weight; uint64_t seed;
                             const char *hasher; int32_t placement; uint32_t reserved0;
                             const char *plugin_dir; } chring_test_options_shifted;
        ]]
        local ok = compile(generated_c(chring._cdef, function(name)
            return name == "chr_options" and "chring_test_options_shifted" or name
        end))
        T.ok(not ok, "a wrong struct layout compiled")
    end },

    { "the check rejects a version-1 struct", function()
        if skip_without_headers() then return end
        -- chr_follow_state as version 1 laid it out: no applied_availability.
        local body = chring._cdef:match("typedef struct chr_follow_state (%b{}) chr_follow_state;")
        local v1, found = body:gsub("uint64_t applied_availability;", "", 1)
        T.eq(found, 1, "applied_availability in the cdef")
        ffi.cdef("typedef struct " .. v1 .. " chring_test_follow_state_v1;")
        local ok = compile(generated_c(chring._cdef, function(name)
            return name == "chr_follow_state" and "chring_test_follow_state_v1" or name
        end))
        T.ok(not ok, "chr_follow_state without its version-2 field compiled")
    end },

    { "every header function and integer constant is declared", function()
        if skip_without_headers() then return end
        local text = headers()
        local declared = {}
        for _, d in ipairs(declarations(chring._cdef)) do
            local fname = not d:match("^typedef") and d:match("([%w_]+)%(")
            if fname then declared[fname] = true end
        end
        local count = 0
        for decl in text:gmatch("\nCHR_API ([^(]+)%(") do
            local fname = decl:match("([%w_]+)$")
            count = count + 1
            T.ok(declared[fname], fname .. " is missing from the cdef")
        end
        T.ok(count >= 30, "parsed only " .. count .. " functions from the header")
        for name, value in text:gmatch("\n#define (CHR_[%w_]+)[ \t]+([%d%(%-][^\n]*)") do
            T.ok(chring._constants[name] ~= nil, name .. " (" .. value .. ") is missing from the constants")
        end
    end },
}
