-- torch.utils.benchmark's Compare table, Measurement's statistics and printout, and the Fuzzer.
-- Tables: PyTorch's layout (torch/utils/benchmark/utils/compare.py) worked out by hand below for
-- given times (the arithmetic in the comments), with Python's str.center checked against
-- CPython. Statistics: CPython's statistics module on the same times (skipped without python3).
local T = ...
local B = torch.utils.benchmark

-- run a Python program, its stdout (nil without python3)
local function python(src)
  local path = os.tmpname()
  local f = io.open(path, "w"); f:write(src); f:close()
  local p = io.popen("python3 " .. path .. " 2>/dev/null")
  local out = p and p:read("a") or ""
  if p then p:close() end
  os.remove(path)
  if out == "" then return nil end
  return out
end

local function spec(o)
  o.stmt = o.stmt or "f(x)"; o.setup = o.setup or "pass"; o.num_threads = o.num_threads or 1
  return o
end
local function m(t, o) return B.Measurement(1, { t }, spec(o)) end

-- Batched dot in microseconds: (threads, row, mul/sum, bmm)
local cases = { { 1, "[1, 1]", 5.9, 11.2 }, { 1, "[64, 64]", 8.6, 15.4 }, { 4, "[1, 1]", 6.0, 11.6 }, { 4, "[64, 64]", 8.8, 18.2 } }
local function batched(extra)
  local out = {}
  for _, c in ipairs(cases) do
    for j, d in ipairs({ "mul/sum", "bmm" }) do
      local o = { label = "Batched dot", sub_label = c[2], description = d, num_threads = c[1] }
      for k, v in pairs(extra or {}) do o[k] = v end
      out[#out + 1] = m(c[2 + j] * 1e-6, o)
    end
  end
  return out
end

T.test("Compare: the table as PyTorch lays it out", function()
  -- unit: the least median 5.9e-6 -> floor(log10 / 3) = -2 -> us. Columns: mul/sum values have one
  -- leading digit and one decimal ("%3.1f"), bmm two ("%4.1f"). Widths: the row names
  -- "  " + 4 spaces (no env) + "[64, 64]" = 14, "mul/sum" 7, bmm 4 ("11.2"). Header cells
  -- centred: "bmm" in 4 -> "bmm ". Overall width 14 + 5 + 7 + 5 + 4 = 35; the title " Batched dot "
  -- (13) centred in 33 with "-": 10 each side. "5.9" centred in 7 -> "  5.9  ".
  local want = table.concat({
    "[---------- Batched dot ----------]",
    "                |  mul/sum  |  bmm ",
    "1 threads: ------------------------",
    "      [1, 1]    |    5.9    |  11.2",
    "      [64, 64]  |    8.6    |  15.4",
    "4 threads: ------------------------",
    "      [1, 1]    |    6.0    |  11.6",
    "      [64, 64]  |    8.8    |  18.2",
    "",
    "Times are in microseconds (us).",
    "" }, "\n")
  T.eq(tostring(B.Compare(batched())), want, "plain table")
  -- trimmed: one time each -> the 90% interval is the 25 ns floor; significant figures
  -- floor(log10(median / 25 ns)): 5.9 us -> 2, 11.6 us -> 2. mul/sum keeps 2 - 1 = 1 decimal;
  -- bmm 2 - 2 = 0 decimals, width 2, values to 2 figures (11.6 -> 12, 15.4 -> 15, 18.2 -> 18);
  -- the column is as wide as its header "bmm" (3), so "11" centred in 3 is " 11" (CPython's center
  -- puts the odd space left when the width is odd)
  local c = B.Compare(batched())
  c:trim_significant_figures()
  local s = tostring(c)
  T.check(s:find("      [1, 1]    |    5.9    |   11\n", 1, true) ~= nil, "trimmed row: " .. s)
  T.check(s:find("      [1, 1]    |    6.0    |   12\n", 1, true) ~= nil, "11.6 -> 12")
  T.check(s:find("      [64, 64]  |    8.8    |   18\n", 1, true) ~= nil, "18.2 -> 18")
end)

T.test("Compare: rows in thread order, columns in first-seen order, replicates merged", function()
  local r = batched()
  -- reversed input: rows still sorted by threads (stably), columns bmm then mul/sum
  local rev = {}
  for i = #r, 1, -1 do rev[#rev + 1] = r[i] end
  local s = tostring(B.Compare(rev))
  local lines = {}
  for l in s:gmatch("[^\n]+") do lines[#lines + 1] = l end
  T.eq(lines[2], "                |  bmm   |  mul/sum", "header (\"bmm\" centred in 4 then padded to the column: 4 -> \"bmm \", width 4)")
  T.eq(lines[3]:match("^%d+ threads"), "1 threads", "thread 1 first")
  T.eq(lines[4], "      [64, 64]  |  15.4  |    8.6  ", "first-seen row order within a thread group")
  -- replicates: two measurements of one task spec become one row with their times pooled
  local a = m(2e-6, { label = "L", description = "d" })
  local b = B.Measurement(1, { 4e-6, 6e-6 }, spec({ label = "L", description = "d" }))
  local merged = B.Measurement.merge({ a, b })
  T.eq(#merged, 1, "one task spec")
  T.eq(merged[1].raw_times, { 2e-6, 4e-6, 6e-6 }, "times pooled")
  T.check(tostring(B.Compare({ a, b })):find("f(x)  |  4.0", 1, true) ~= nil, "the merged median")
  T.raises(function() B.Compare({ a, 3 }) end, "Expected an instance of `Measurement`, got <class 'int'> instead.")
end)

T.test("Compare: environments, colours, warnings", function()
  -- env rows: "(env)" padded to the longest env (22) + 4, then the stmt (no sub_label)
  local res = {}
  for _, e in ipairs({ { "environment A: mul/sum", 7e-6, 36e-3 }, { "environment B: bmm", 14e-6, 40e-3 } }) do
    res[#res + 1] = m(e[2], { stmt = "batched_dot(x, x)", label = "Batched dot", description = "[1, 1]", env = e[1] })
    res[#res + 1] = m(e[3], { stmt = "batched_dot(x, x)", label = "Batched dot", description = "[1024, 10000]", env = e[1] })
  end
  local s = tostring(B.Compare(res))
  T.check(s:find("\n  (environment A: mul/sum)  batched_dot(x, x)  |", 1, true) ~= nil, "env A row: " .. s)
  T.check(s:find("\n  (environment B: bmm)      batched_dot(x, x)  |", 1, true) ~= nil, "env B row")
  -- colorize: the column's best in bold green (\27[92m\27[1m), 2x the best dim red, 5x red
  local c = B.Compare(batched())
  c:colorize()
  s = tostring(c)
  T.check(s:find("\27[92m\27[1m  5.9  \27[0m\27[0m", 1, true) ~= nil, "best of mul/sum, 1 thread")
  T.check(s:find("|    8.6    |", 1, true) ~= nil, "8.6: within 2x of 5.9, not coloured")
  c = B.Compare({ m(1e-6, { label = "L", description = "a" }), m(2.5e-6, { label = "L", description = "b" }),
    m(6e-6, { label = "L", description = "c" }) })
  c:colorize({ rowwise = true })
  s = tostring(c)
  T.check(s:find("\27[2m\27[91m2.5\27[0m\27[0m", 1, true) ~= nil, "rowwise: 2.5x the best is dim red: " .. s)
  T.check(s:find("\27[31m\27[1m6.0\27[0m\27[0m", 1, true) ~= nil, "rowwise: 6x the best is red")
  -- highlight_warnings: a noisy measurement's cell gets " (! XX%)", others 7 spaces, and a footnote
  local noisy = B.Measurement(1, { 1e-6, 1e-6, 2e-6, 2e-6 }, spec({ label = "L", description = "a" }))
  c = B.Compare({ noisy, m(1e-6, { label = "L", description = "b", stmt = "f(x)" }) })
  c:highlight_warnings()
  s = tostring(c)
  -- p25 = 1.0 (between the two 1s), p75 = 2.0: iqr 1.0 of median 1.5 -> 67%
  T.check(s:find("1.5 (! 67%)", 1, true) ~= nil, "the warning in the cell: " .. s)
  T.check(s:find("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n", 1, true) ~= nil, "footnote")
end)

T.test("str.center, trim_sigfig and select_unit against CPython", function()
  local cm = B._common
  local pairs_ = { { "bmm", 4 }, { "bmm", 5 }, { "5.9", 7 }, { "ab", 5 }, { "ab", 6 }, { "a", 4 }, { "abc", 2 }, { "", 3 } }
  local src, got = { "out = []" }, {}
  for i, p in ipairs(pairs_) do
    src[#src + 1] = string.format("out.append(%q.center(%d, '-'))", p[1], p[2])
    got[i] = cm.center(p[1], p[2], "-")
  end
  local vals = { { 3.14159, 2 }, { 11.5, 2 }, { 12.5, 2 }, { 0.0123456, 3 }, { 98765.4, 1 }, { 2.5, 1 }, { 1234.5678, 4 } }
  for _, v in ipairs(vals) do
    src[#src + 1] = string.format("import math; x, n = %.17g, %d; s = 10 ** (math.ceil(math.log10(abs(x))) - n); out.append(repr(float(round(x / s) * s)))", v[1], v[2])
    got[#got + 1] = string.format("%.17g", cm.trim_sigfig(v[1], v[2]))
  end
  for _, t in ipairs({ 5e-10, 1e-9, 3.2e-8, 1e-6, 9.99e-4, 0.5, 2.0, 1234.0 }) do
    src[#src + 1] = string.format("out.append({-3: 'ns', -2: 'us', -1: 'ms'}.get(int(math.log10(%.17g) // 3), 's'))", t)
    got[#got + 1] = (cm.select_unit(t))
  end
  src[#src + 1] = "print('\\n'.join(out))"
  local want = python(table.concat(src, "\n"))
  if not want then return T.skip("python3 is not available", 3) end
  local w = {}
  for l in want:gmatch("([^\n]*)\n") do w[#w + 1] = l end
  for i = 1, #pairs_ do T.eq(got[i], w[i], "center " .. pairs_[i][1] .. " " .. pairs_[i][2]) end
  for i = #pairs_ + 1, #pairs_ + #vals do T.eq(tonumber(got[i]) + 0.0, tonumber(w[i]) + 0.0, "trim_sigfig " .. i - #pairs_) end
  for i = #pairs_ + #vals + 1, #w do T.eq(got[i], w[i], "select_unit " .. i) end
end)

T.test("Measurement statistics against CPython's statistics module", function()
  local times = { 3.1e-6, 2.9e-6, 3.0e-6, 3.6e-6, 2.95e-6, 3.05e-6, 4.4e-6, 3.02e-6, 2.99e-6, 3.3e-6, 3.01e-6 }
  local mm = B.Measurement(10, (function() local r = {} for i, t in ipairs(times) do r[i] = t * 10 end return r end)(),
    spec({}))
  local list = {}
  for i, t in ipairs(times) do list[i] = string.format("%.17g", t * 10) end
  local want = python(table.concat({
    "import math, statistics as S",
    "t = sorted(x / 10 for x in [" .. table.concat(list, ", ") .. "]); n = len(t)",
    "q = S.quantiles(t, n=4, method='inclusive')",
    "pts = t[n // 4:math.ceil(3 * n / 4)]",
    "ci = max(1.645 * S.pstdev(pts) / math.sqrt(len(pts)), 25e-9)",
    "figs = min(max(math.floor(math.log10(S.median(t) / ci)), 1), 4)",
    "print(repr(S.median(t)), repr(S.fmean(t)), repr(q[0]), repr(q[2]), figs)" }, "\n"))
  if not want then return T.skip("python3 is not available", 5) end
  local w = {}
  for x in want:gmatch("%S+") do w[#w + 1] = tonumber(x) end
  T.near(mm.median, w[1], 1e-18, "median")
  T.near(mm.mean, w[2], 1e-18, "mean")
  T.near(mm.iqr, w[4] - w[3], 1e-18, "iqr")
  T.eq(mm.significant_figures, math.tointeger(w[5]), "significant figures")
  T.eq(mm.has_warnings, (w[4] - w[3]) / w[1] >= 0.1, "has_warnings: IQR at least 10% of the median")
end)

T.test("Measurement printout: label, description, multi-line setup, forwarded fields", function()
  -- TaskSpec.summarize: the title (label: sub_label), the description, the setup; a multi-line
  -- section gets a blank line after it
  local mm = B.Measurement(100, { 2.3e-4 }, spec({ label = "Multithreaded batch dot", sub_label = "Implemented using bmm",
    description = "d1", setup = "x = 1\ny = 2", num_threads = 40 }))
  local got = tostring(mm):gsub("^[^\n]*\n", "")
  T.eq(got, "Multithreaded batch dot: Implemented using bmm\nd1\nsetup:\n  x = 1\n  y = 2\n\n  2.30 us\n  1 measurement, 100 runs , 40 threads")
  T.eq({ mm.label, mm.sub_label, mm.num_threads, mm.description, mm.as_row_name, mm.title },
    { "Multithreaded batch dot", "Implemented using bmm", 40, "d1", "Implemented using bmm", "Multithreaded batch dot: Implemented using bmm" })
  -- a multi-line stmt without a label: "stmt:" and the stmt indented
  mm = B.Measurement(1, { 1e-3 }, spec({ stmt = "a = 1\nb = 2", sub_label = "s" }))
  T.eq(mm.title, "stmt: (s)\n  a = 1\n  b = 2", "title of a multi-line stmt")
  -- Timer: dedented source, the leading newline dropped, trailing space stripped
  local t = B.Timer("x * y", "\n        x = torch.ones(4)\n          y = torch.ones(4)\n    ", { label = "L" })
  T.eq(t._task_spec.setup, "x = torch.ones(4)\n  y = torch.ones(4)", "setup as Timer keeps it")
  T.eq(t._task_spec:setup_str(), "setup:\n  x = torch.ones(4)\n    y = torch.ones(4)", "setup_str")
end)

T.test("Timer: expression statements, num_threads, adaptive_autorange", function()
  local before = torch.get_num_threads()
  local seen
  local t = B.Timer(function() seen = torch.get_num_threads() end, { num_threads = 1 })
  t:timeit(2)
  T.eq(seen, 1, "stmt runs with num_threads")
  T.eq(torch.get_num_threads(), before, "thread count restored")
  local x = torch.ones(3)
  local got
  B.Timer("x * y", { globals = { x = x, y = torch.full({ 3 }, 2.0) } }):timeit(1)
  local tt = B.Timer(function() got = true end)
  tt:timeit(1)
  T.check(got, "a function stmt")
  -- a fake clock: each run 1 ms, blocks of 1; adaptive stops after 4 blocks (IQR 0) once 0.01 s is spent
  local now = 0.0
  local ft = B.Timer(function() now = now + 0.001 end, { timer = function() return now end })
  local n = 0
  local mm = ft:adaptive_autorange({ callback = function() n = n + 1 end })
  T.eq(mm.number_per_run, 1, "block size: the first block already meets min_run_time / 1000 (0.05 / 1000)")
  T.eq(#mm.raw_times, n, "callback once a block")
  T.eq(#mm.raw_times, 10, "blocks until 0.01 s: ten of 1 ms")
  T.near(mm.median, 0.001, 1e-12, "median")
  T.raises(function() B.Timer("x", { language = "cpp" }) end, "Timer: language cpp is not supported (only Lua snippets run here)")
end)

T.test("Fuzzer: limits, aliases, discontiguity, reproducibility", function()
  local function fuzzer(seed)
    return B.Fuzzer({ B.FuzzedParameter("k0", { minval = 1, maxval = 10000, distribution = "loguniform" }),
      B.FuzzedParameter("k1", { minval = 1, maxval = 10000, distribution = "loguniform" }),
      B.FuzzedParameter("k2", { distribution = { { B.ParameterAlias("k0"), 0.5 }, { 1, 0.5 } } }) },
      { B.FuzzedTensor("x", { size = { "k0", "k1" }, min_elements = 128, max_elements = 1000000, probability_contiguous = 0.6 }),
        B.FuzzedTensor("y", { size = { "k2", "k1" }, steps = { 1, 2 }, probability_contiguous = 1 }) }, { seed = seed })
  end
  local f = fuzzer(0)
  local n, contiguous, aliased, first = 0, 0, 0, {}
  for tensors, props, params in f:take(200) do
    n = n + 1
    local x, y = tensors.x, tensors.y
    T.check(x:numel() >= 128 and x:numel() <= 1000000, "element limits")
    T.check(params.k0 >= 1 and params.k0 <= 10000, "k0 in range")
    T.eq(x.shape:totable(), { params.k0, params.k1 }, "x's size")
    T.eq(props.x.numel, x:numel(), "numel property")
    if props.x.is_contiguous then contiguous = contiguous + 1 end
    T.check(params.k2 == 1 or params.k2 == params.k0, "k2 aliases k0 or is 1")
    if params.k2 == params.k0 and params.k0 ~= 1 then aliased = aliased + 1 end
    T.eq(y.shape:totable(), { params.k2, params.k1 }, "y's size")
    if params.k1 > 1 then T.eq(y:stride(1), 2, "steps: every second column") end
    if n <= 3 then first[n] = { params.k0, params.k1, x:sum():item() } end
    if n > 30 then break end
  end
  T.check(contiguous > 5 and contiguous < 28, "about 60% contiguous (dims > 1): " .. contiguous)
  T.check(aliased > 5, "the alias is drawn: " .. aliased)
  local again = {}
  for tensors, _, params in fuzzer(0):take(3) do again[#again + 1] = { params.k0, params.k1, tensors.x:sum():item() } end
  T.eq(again, first, "the same seed gives the same parameters and tensors")
  -- loguniform on [1, 100]: as likely in [1, 10) as in [10, 100]
  local p = B.FuzzedParameter("k", { minval = 1, maxval = 100, distribution = "loguniform" })
  local rng = require("random").Random(1)
  local low = 0
  for _ = 1, 4000 do if p:sample(rng) < 10 then low = low + 1 end end
  T.check(low > 1800 and low < 2200, "loguniform halves: " .. low)
  T.raises(function() B.FuzzedParameter("k", { minval = 1, maxval = 2, distribution = "normal" }) end, "Unknown distribution: normal")
  T.raises(function() B.FuzzedParameter("k", { distribution = { { 1, 0.5 }, { 2, 0.4 } } }) end, "Distribution is not normalized")
  T.raises(function() B.Fuzzer({ B.FuzzedParameter("x", { minval = 1, maxval = 2, distribution = "uniform" }) },
    { B.FuzzedTensor("x", { size = { 2 } }) }) end, "Duplicate names in parameters and tensors: {'x'}")
  local cyc = B.Fuzzer({ B.FuzzedParameter("a", { distribution = { { B.ParameterAlias("b"), 1.0 } } }),
    B.FuzzedParameter("b", { distribution = { { B.ParameterAlias("a"), 1.0 } } }) }, {}, { seed = 1 })
  T.raises(function() cyc:take(1)() end, "ParameterAlias cycle detected")
  local never = B.Fuzzer({ B.FuzzedParameter("k", { minval = 1, maxval = 4, distribution = "uniform" }) },
    { B.FuzzedTensor("t", { size = { "k" }, min_elements = 10 }) }, { seed = 1 })
  T.raises(function() never:take(1)() end, "Failed to generate a set of valid parameters.")
  T.eq(never.rejection_rate, 1.0, "rejection_rate")
  for tensors, _, params in B.op_fuzzers.binary.BinaryOpFuzzer(0):take(3) do
    T.check(params.dim >= 1 and params.dim <= 3 and tensors.x:dim() == params.dim, "BinaryOpFuzzer: x of dim 1 to 3")
    T.check(tensors.x:numel() >= 4096, "BinaryOpFuzzer: at least 4096 elements")
  end
end)
