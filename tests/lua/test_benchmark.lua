-- torch.utils.benchmark.Timer / Measurement with a fake clock (exact times), statistics against
-- numpy's linear-interpolation quantiles worked by hand, source statements, and torch.seed.
local T = ...
local bench = torch.utils.benchmark

T.test("Timer with a fake clock", function()
  local now, runs = 0.0, 0
  local function tick() now = now + 0.001; runs = runs + 1 end
  local t = bench.Timer(tick, { timer = function() return now end })
  local m = t:timeit(40)
  T.eq(runs, 43, "40 runs after a warm-up of 3")
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
  local m = bench.Measurement.new(1, { 4e-6, 1e-6, 3e-6, 2e-6 }, { stmt_text = "f()", setup_text = "pass", num_threads = 1 })
  T.near(m.mean, 2.5e-6, 1e-18, "mean")
  T.near(m.median, 2.5e-6, 1e-18, "median")
  T.near(m.iqr, 1.5e-6, 1e-18, "iqr: 3.25 - 1.75 (linear interpolation)")
  local s = tostring(m)
  T.check(s:find("  Median: 2.50 us", 1, true) ~= nil, "median line: " .. s)
  T.check(s:find("  IQR:    1.50 us (1.75 to 3.25)", 1, true) ~= nil, "iqr line")
  T.check(s:find("4 measurements, 1 runs per measurement, 1 thread", 1, true) ~= nil, "count line")
end)

T.test("source statements, setup, errors, torch.seed", function()
  local g = { x = 0, y = 0 }
  local t = bench.Timer("x = x + 1", { setup = "y = y + 1", globals = g })
  t:timeit(10)
  T.eq(g.x, 13, "stmt runs in globals")
  T.eq(g.y, 2, "setup once per block (warm-up and timed)")
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
