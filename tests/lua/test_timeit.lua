-- timeit (Python's module) against CPython's timeit running the same fake clock: the numbers
-- autorange tries and its result, repeat's list, how often setup runs; source snippets.
local T = ...
local timeit = require "timeit"

T.test("timeit with a fake clock matches CPython's", function()
  local now, setups, log = 0.0, 0, {}
  local t = timeit.Timer(function() now = now + 0.001 end, function() setups = setups + 1 end, { timer = function() return now end })
  local n, taken = t:autorange(function(k, s) log[#log + 1] = string.format("%d %.17g", k, s) end)
  log[#log + 1] = string.format("auto %d %.17g", n, taken)
  for _, s in ipairs(t:repeat_(3, 7)) do log[#log + 1] = string.format("rep %.17g", s) end
  log[#log + 1] = string.format("one %.17g", t:timeit(0))
  log[#log + 1] = "setups " .. setups
  local src = table.concat({
    "import timeit",
    "now = [0.0]; setups = [0]; log = []",
    "def stmt(): now[0] += 0.001",
    "def setup(): setups[0] += 1",
    "t = timeit.Timer(stmt, setup, timer=lambda: now[0])",
    "n, taken = t.autorange(lambda k, s: log.append('%d %.17g' % (k, s)))",
    "log.append('auto %d %.17g' % (n, taken))",
    "log += ['rep %.17g' % s for s in t.repeat(3, 7)]",
    "log.append('one %.17g' % t.timeit(0))",
    "log.append('setups %d' % setups[0])",
    "print('\\n'.join(log))" }, "\n")
  local path = os.tmpname()
  local f = io.open(path, "w"); f:write(src); f:close()
  local p = io.popen("python3 " .. path .. " 2>/dev/null")
  local want = p and p:read("a") or ""
  if p then p:close() end
  os.remove(path)
  if want == "" then return T.skip("python3 is not available") end
  T.eq(table.concat(log, "\n"), (want:gsub("\n$", "")), "the same runs, times and setups")
end)

T.test("source snippets, globals, module functions", function()
  local box = { n = 0 }
  local t = timeit.Timer("box.n = box.n + 1", "y = 5", { globals = { box = box } })
  t:timeit(10)
  T.eq(box.n, 10, "stmt reads globals")
  T.eq(rawget(_G, "y"), nil, "setup's assignment stays in the snippet's namespace")
  timeit.Timer("box.n * 2", { globals = { box = box } }):timeit(3) -- an expression statement
  local calls = 0
  T.check(timeit.timeit(function() calls = calls + 1 end, { number = 4 }) >= 0, "timeit.timeit")
  T.eq(calls, 4, "number")
  T.eq(#timeit.repeat_(function() end, { ["repeat"] = 3, number = 2 }), 3, "repeat_")
  T.eq(#timeit["repeat"](function() end, { number = 1 }), 5, "repeat defaults to 5")
  T.raises(function() timeit.Timer(3) end, "stmt is neither a string nor callable")
  T.raises(function() timeit.Timer("x = = 1") end, "~stmt does not compile")
end)
