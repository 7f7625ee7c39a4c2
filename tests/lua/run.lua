-- Runs every tests/lua/test_*.lua with a small assertion helper and prints
-- "N passed, N failed[, N skipped]" as its last line (T.skip counts checks that cannot
-- run here, such as CUDA ones without a GPU). Usage: build/nnrepl tests/lua/run.lua [pattern]
-- Each test file gets the helper as its first argument (`local T = ...`).
local dir = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local only = arg and arg[1]

local T = { passed = 0, failed = 0, skipped = 0, file = "?" }

local function where(level)
  local info = debug.getinfo(level + 1, "Sl")
  return info and (info.short_src .. ":" .. info.currentline) or "?"
end

local function fail(msg, level)
  T.failed = T.failed + 1
  io.stderr:write(string.format("FAIL %s: %s\n", where(level + 1), msg))
end

local function show(v)
  if type(v) == "string" then return string.format("%q", v) end
  if type(v) == "table" and getmetatable(v) == nil then
    local parts = {}
    for i = 1, #v do parts[i] = show(v[i]) end
    local extra = {}
    for k, x in pairs(v) do
      if not (math.type(k) == "integer" and k >= 1 and k <= #v) then extra[#extra + 1] = "[" .. show(k) .. "] = " .. show(x) end
    end
    table.sort(extra)
    table.move(extra, 1, #extra, #parts + 1, parts)
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  return tostring(v)
end
T.show = show

function T.check(cond, msg)
  if cond then T.passed = T.passed + 1 else fail(msg or "check failed", 2) end
  return cond
end

-- Deep equality for plain values and plain tables: nested lists, and every other key too
-- (a 0 key, string keys), so that {[0] = 1} and {} differ.
local function same(a, b)
  if type(a) == "table" and type(b) == "table" and getmetatable(a) == nil and getmetatable(b) == nil then
    if #a ~= #b then return false end
    for i = 1, #a do if not same(a[i], b[i]) then return false end end
    for k, v in pairs(a) do
      if not (math.type(k) == "integer" and k >= 1 and k <= #a) and not same(v, b[k]) then return false end
    end
    for k in pairs(b) do
      if a[k] == nil then return false end
    end
    return true
  end
  return a == b and math.type(a) == math.type(b)
end

function T.eq(got, want, msg)
  if same(got, want) then T.passed = T.passed + 1; return true end
  fail(string.format("%s: got %s, want %s", msg or "eq", show(got), show(want)), 2)
  return false
end

-- Numbers or nested lists equal within tol (relative to the larger magnitude, or absolute below 1).
local function close(a, b, tol)
  if type(a) == "table" and type(b) == "table" then
    if #a ~= #b then return false end
    for i = 1, #a do if not close(a[i], b[i], tol) then return false end end
    return true
  end
  if type(a) ~= "number" or type(b) ~= "number" then return a == b end
  if a ~= a or b ~= b then return a ~= a and b ~= b end
  if a == b then return true end
  return math.abs(a - b) <= tol * math.max(1, math.abs(a), math.abs(b))
end

function T.near(got, want, tol, msg)
  if close(got, want, tol or 1e-5) then T.passed = T.passed + 1; return true end
  fail(string.format("%s: got %s, want %s", msg or "near", show(got), show(want)), 2)
  return false
end

-- The message of the error fn raises, without its "file:line: " prefix (nil if none).
function T.errmsg(fn, ...)
  local ok, err = pcall(fn, ...)
  if ok then return nil end
  err = tostring(err)
  return (err:gsub("^[^:\n]*:%d+: ", ""))
end

-- fn must raise an error whose message (position stripped) equals want exactly,
-- or contains it when want starts with "~".
function T.raises(fn, want, msg)
  local err = T.errmsg(fn)
  local ok
  if err == nil then ok = false
  elseif want:sub(1, 1) == "~" then ok = err:find(want:sub(2), 1, true) ~= nil
  else ok = err == want end
  if ok then T.passed = T.passed + 1; return true end
  fail(string.format("%s: error %s, want %s", msg or "raises", show(err), show(want)), 2)
  return false
end

-- n checks (default 1) that cannot run here (no GPU, a missing file): counted as skipped.
function T.skip(why, n)
  T.skipped = T.skipped + (n or 1)
  io.stderr:write(string.format("skip %s: %s\n", T.file, why))
end

-- A named group of checks: an error inside counts as one failure and the file goes on.
function T.test(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if not ok then
    T.failed = T.failed + 1
    io.stderr:write(string.format("FAIL %s [%s]: %s\n", T.file, name, tostring(err)))
  end
end

local files = {}
local ls = io.popen('ls "' .. dir .. '"/test_*.lua 2>/dev/null')
for path in ls:lines() do
  if not only or path:find(only, 1, true) then files[#files + 1] = path end
end
ls:close()
table.sort(files)

for _, path in ipairs(files) do
  T.file = path:match("[^/]*$")
  local before_p, before_f, before_s = T.passed, T.failed, T.skipped
  local chunk, err = loadfile(path)
  if not chunk then
    T.failed = T.failed + 1
    io.stderr:write("FAIL " .. err .. "\n")
  else
    local ok, e = xpcall(chunk, debug.traceback, T)
    if not ok then
      T.failed = T.failed + 1
      io.stderr:write(string.format("FAIL %s: %s\n", T.file, tostring(e)))
    end
  end
  collectgarbage()
  local s = T.skipped - before_s
  print(string.format("%-24s %d passed, %d failed%s", T.file, T.passed - before_p, T.failed - before_f,
    s > 0 and string.format(", %d skipped", s) or ""))
end
print(string.format("%d passed, %d failed%s", T.passed, T.failed,
  T.skipped > 0 and string.format(", %d skipped", T.skipped) or ""))
os.exit(T.failed == 0 and 0 or 1, true)
