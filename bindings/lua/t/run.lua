-- A small test runner: each t/*_spec.lua returns a list of
-- { "name", function } cases; a case passes if it returns without error.
-- Prints one line per failure and ends with "N passed, N failed".
--   luajit t/run.lua [spec files...]   (run-tests.sh sets the paths)
local specs = { ... }
if #specs == 0 then
    local dir = (arg and arg[0] or "t/run.lua"):match("^(.*)/[^/]*$") or "."
    for _, name in ipairs { "ring", "snapshot", "bad_input", "coroutines", "plugin", "cdef", "ringfile", "follow", "zones", "diff", "bounded", "availability", "layout" } do
        specs[#specs + 1] = dir .. "/" .. name .. "_spec.lua"
    end
end

local passed, failed = 0, 0
for _, file in ipairs(specs) do
    local ok, cases = pcall(dofile, file)
    if not ok then
        failed = failed + 1
        print(("FAIL %s: cannot load: %s"):format(file, cases))
    else
        for _, case in ipairs(cases) do
            local name, fn = case[1], case[2]
            local good, err = xpcall(fn, debug.traceback)
            if good then
                passed = passed + 1
            else
                failed = failed + 1
                print(("FAIL %s: %s\n%s"):format(file:match("[^/]*$"), name, err))
            end
        end
    end
end
print(("%d passed, %d failed"):format(passed, failed))
os.exit(failed == 0 and 0 or 1)
