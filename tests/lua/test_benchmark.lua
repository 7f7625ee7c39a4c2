-- torch.utils.benchmark.Timer / Measurement with a fake clock (exact times), statistics against
-- numpy's linear-interpolation quantiles worked by hand, source statements, and torch.seed.
local T = ...
local bench = torch.utils.benchmark

T.test("Timer with a fake clock", function()
  local now, runs = 0.0, 0
  local function tick() now = now + 0.001; runs = runs + 1 end
  local t = bench.Timer(tick, { timer = function() return now end })
  local m = t:timeit(40)
  T.eq(runs, 41, "40 runs after a warm-up of max(40 // 100, 1) = 1")
  T.eq(m.number_per_run, 40, "number_per_run")
  T.near(m.mean, 0.001, 1e-12, "mean per run")
  T.eq(#m.raw_times, 1, "one block")
  runs = 0
  m = t:blocked_autorange({ min_run_time = 0.05 })
  T.eq(m.number_per_run, 1, "block size: one run already dwarfs the (zero) overhead")
  T.check(#m.raw_times >= 50 and #m.raw_times <= 51, "blocks until 0.05 s: " .. #m.raw_times)
  T.near(m.median, 0.001, 1e-12, "median")
  T.near(m.iqr, 0, 1e-12, "iqr")
  m = t:autorange()
  T.check(m.raw_times[1] >= 0.2, "autorange: a block of at least 0.2 s")
  T.eq(m.number_per_run, 200, "the first of 1, 2, 5, 10, 20, 50, ... to reach it")
end)

T.test("Measurement statistics and printing", function()
  local m = bench.Measurement.new(1, { 4e-6, 1e-6, 3e-6, 2e-6 }, { stmt = "f()", setup = "pass", num_threads = 1 })
  T.near(m.mean, 2.5e-6, 1e-18, "mean")
  T.near(m.median, 2.5e-6, 1e-18, "median")
  T.near(m.iqr, 1.5e-6, 1e-18, "iqr: 3.25 - 1.75 (linear interpolation)")
  local s = tostring(m)
  T.check(s:find("  Median: 2.50 us", 1, true) ~= nil, "median line: " .. s)
  T.check(s:find("  IQR:    1.50 us (1.75 to 3.25)", 1, true) ~= nil, "iqr line")
  T.check(s:find("4 measurements, 1 runs per measurement, 1 thread", 1, true) ~= nil, "count line")
end)

T.test("source statements, setup, errors, torch.seed", function()
  local c = { x = 0, y = 0 }
  local g = { c = c }
  local t = bench.Timer("c.x = c.x + 1", { setup = "c.y = c.y + 1; z = 5", globals = g })
  t:timeit(10)
  T.eq(c.x, 11, "stmt runs in globals: 10 runs after a warm-up of 1")
  T.eq(c.y, 2, "setup once per block (warm-up and timed)")
  T.eq(g.z, nil, "globals are copied: setup's assignments do not leak (as PyTorch's dict copy)")
  T.raises(function() bench.Timer("x = = 1") end, "~Timer: stmt does not compile")
  T.raises(function() bench.Timer(function() end):timeit(0) end, "timeit: number must be a positive integer, got 0")
  local a = torch.seed()
  T.eq(torch.initial_seed(), a, "seed() seeds the default generator")
  T.check(torch.seed() ~= a, "a fresh seed each time")
  torch.manual_seed(3)
  local r = torch.rand(3):tolist()
  torch.manual_seed(3)
  T.eq(torch.rand(3):tolist(), r, "manual_seed still reproduces")
end)

-- Measurement's printout against PyTorch's f-string (torch/utils/benchmark/utils/common.py,
-- Measurement.__repr__, its IQR warnings included) evaluated by CPython on the same times: one, two
-- five (a gross IQR warning) and four blocks (the milder warning)
T.test("Measurement prints as PyTorch's formula gives (CPython)", function()
  local B = torch.utils.benchmark
  for _, times in ipairs({ { 3.7929e-2 }, { 0.162, 0.17 }, { 2e-4, 3e-4, 2.5e-4, 9e-4, 1e-4 }, { 1e-3, 1.1e-3, 1.2e-3, 1.3e-3 } }) do
    local m = B.Measurement.new(100, times, { stmt = "f(x)", setup = "pass", num_threads = 1 })
    local got = tostring(m):gsub("^[^\n]*\n", "")
    local list = {}
    for i, t in ipairs(times) do list[i] = string.format("%.17g", t) end
    local py = table.concat({
      "import math, statistics",
      "raw = [" .. table.concat(list, ", ") .. "]; times = sorted(t / 100 for t in raw); n = len(times)",
      "q = lambda p: (lambda pos: times[int(pos)] + (times[min(int(pos) + 1, n - 1)] - times[int(pos)]) * (pos - int(pos)))((n - 1) * p)",
      "med = statistics.median(times); p25, p75 = q(0.25), q(0.75)",
      "u = {-3: 'ns', -2: 'us', -1: 'ms'}.get(int(math.log10(med) // 3), 's'); sc = {'ns': 1e-9, 'us': 1e-6, 'ms': 1e-3, 's': 1}[u]",
      "lines = ['f(x)', f\"  {'Median: ' if n > 1 else ''}{med / sc:.2f} {u}\"]",
      "lines += [f'  IQR:    {(p75 - p25) / sc:.2f} {u} ({p25 / sc:.2f} to {p75 / sc:.2f})'] if n >= 4 else []",
      "lines += [f\"  {n} measurement{'s' if n > 1 else ''}, 100 runs {'per measurement,' if n > 1 else ','} 1 thread\"]",
      "r = (p75 - p25) / med",
      "w = 'This suggests significant environmental influence.' if not r < 0.25 else 'This could indicate system fluctuation.' if not r < 0.1 else ''",
      "lines += [f'  WARNING: Interquartile range is {r * 100:.1f}% of the median measurement.\\n           {w}'] if w else []",
      "print('\\n'.join(lines))" }, "\n")
    local path = os.tmpname()
    local f = io.open(path, "w"); f:write(py); f:close()
    local p = io.popen("python3 " .. path .. " 2>/dev/null")
    local want = p and p:read("a") or ""
    if p then p:close() end
    os.remove(path)
    if want == "" then return T.skip("python3 is not available") end
    T.eq(got, (want:gsub("\n$", "")), #times .. " blocks")
  end
end)
