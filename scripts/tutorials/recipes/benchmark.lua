-- PyTorch recipe "PyTorch Benchmark" (recipes_source/recipes/benchmark.py) in Lua: batched dot
-- product by mul/sum and by bmm, timed with timeit and torch.utils.benchmark (Timer, timeit,
-- blocked_autorange, Compare, the Fuzzer).
--
--   nnrepl scripts/tutorials/recipes/benchmark.lua
--
-- Differences from the original:
-- * Statements are Lua source ("batched_dot_mul_sum(x, x)"), as the recipe's Python strings; the
--   two functions are globals of this script, which is what the recipe's
--   setup='from __main__ import ...' reaches, so setup stays "pass" and the printouts have no
--   "setup:" line.
-- * Without a GPU the CUDA part of section 3 is left out (the original needs one) with a line
--   that says so.
-- * Section 6 round-trips the Measurements through json (a table of number_per_run, raw_times
--   and the task's fields) instead of pickle.
-- * The Fuzzer's random stream is CPython's random (nnrepl's `random` module), not numpy's, so
--   the fuzzed sizes differ from the recipe's for the same seed.
-- * Section 8 (Callgrind instruction counts of a C++ extension) is left out: nnrepl has neither
--   cpp_extension nor Timer.collect_callgrind.
-- * Sizes and times (the originals in brackets): RECIPE_BENCH_ROWS (10000) x RECIPE_BENCH_COLS (64)
--   for x; RECIPE_BENCH_SIZES ("1,64,1024,10000") and RECIPE_BENCH_THREADS ("1,4,16,32") for the
--   Compare table; RECIPE_BENCH_MIN_RUN_TIME (1) seconds per blocked_autorange;
--   RECIPE_BENCH_TAKE (10) fuzzed inputs; RECIPE_BENCH_MAX_ELEMENTS (10000000) the first
--   fuzzer's largest tensor.
local json = require "json"
local timeit = require "timeit"
local benchmark = torch.utils.benchmark

local function env_list(name, default)
  local out = {}
  for v in (os.getenv(name) or default):gmatch("[^,]+") do out[#out + 1] = math.tointeger(tonumber(v)) end
  return out
end
local ROWS = math.tointeger(tonumber(os.getenv("RECIPE_BENCH_ROWS") or "10000"))
local COLS = math.tointeger(tonumber(os.getenv("RECIPE_BENCH_COLS") or "64"))
local MIN_RUN_TIME = tonumber(os.getenv("RECIPE_BENCH_MIN_RUN_TIME") or "1")
local TAKE = math.tointeger(tonumber(os.getenv("RECIPE_BENCH_TAKE") or "10"))
local MAX_ELEMENTS = math.tointeger(tonumber(os.getenv("RECIPE_BENCH_MAX_ELEMENTS") or "10000000"))

-- 1. Defining functions to benchmark

-- Computes batched dot by multiplying and summing
function batched_dot_mul_sum(a, b)
  return a:mul(b):sum(-1)
end

-- Computes batched dot by reducing to bmm
function batched_dot_bmm(a, b)
  a = a:reshape(-1, 1, a.shape[-1])
  b = b:reshape(-1, b.shape[-1], 1)
  return torch.bmm(a, b):flatten(-3)
end

-- Input for benchmarking
local x = torch.randn(ROWS, COLS)

-- Ensure that both functions compute the same output
assert(batched_dot_mul_sum(x, x):allclose(batched_dot_bmm(x, x)))

-- 2. Benchmarking with timeit.Timer

local t0 = timeit.Timer("batched_dot_mul_sum(x, x)", { globals = { x = x } })
local t1 = timeit.Timer("batched_dot_bmm(x, x)", { globals = { x = x } })

print(string.format("mul_sum(x, x):  %5.1f us", t0:timeit(100) / 100 * 1e6))
print(string.format("bmm(x, x):      %5.1f us", t1:timeit(100) / 100 * 1e6))

-- 3. Benchmarking with torch.utils.benchmark.Timer

t0 = benchmark.Timer("batched_dot_mul_sum(x, x)", { globals = { x = x } })
t1 = benchmark.Timer("batched_dot_bmm(x, x)", { globals = { x = x } })

print(t0:timeit(100))
print(t1:timeit(100))

local num_threads = torch.get_num_threads()
print(string.format("Benchmarking on %d threads", num_threads))

t0 = benchmark.Timer("batched_dot_mul_sum(x, x)", { globals = { x = x }, num_threads = num_threads,
  label = "Multithreaded batch dot", sub_label = "Implemented using mul and sum" })
t1 = benchmark.Timer("batched_dot_bmm(x, x)", { globals = { x = x }, num_threads = num_threads,
  label = "Multithreaded batch dot", sub_label = "Implemented using bmm" })

print(t0:timeit(100))
print(t1:timeit(100))

if torch.cuda.is_available() then
  x = torch.randn(ROWS, 1024, { device = "cuda" })

  t0 = timeit.Timer("batched_dot_mul_sum(x, x)", { globals = { x = x } })
  t1 = timeit.Timer("batched_dot_bmm(x, x)", { globals = { x = x } })

  -- Ran each twice to show difference before/after warm-up
  print(string.format("mul_sum(x, x):  %5.1f us", t0:timeit(100) / 100 * 1e6))
  print(string.format("mul_sum(x, x):  %5.1f us", t0:timeit(100) / 100 * 1e6))
  print(string.format("bmm(x, x):      %5.1f us", t1:timeit(100) / 100 * 1e6))
  print(string.format("bmm(x, x):      %5.1f us", t1:timeit(100) / 100 * 1e6))

  t0 = benchmark.Timer("batched_dot_mul_sum(x, x)", { globals = { x = x } })
  t1 = benchmark.Timer("batched_dot_bmm(x, x)", { globals = { x = x } })

  -- Run only once since benchmark module does warm-up for us
  print(t0:timeit(100))
  print(t1:timeit(100))
else
  print("(no GPU: the CUDA timings are left out)")
end

-- 4. Benchmarking with Blocked Autorange

local m0 = t0:blocked_autorange()
local m1 = t1:blocked_autorange()

print(m0)
print(m1)

print(string.format("Mean:   %6.2f us", m0.mean * 1e6))
print(string.format("Median: %6.2f us", m0.median * 1e6))

-- 5. Comparing benchmark results

-- Compare takes a list of measurements which we'll save in results.
local results = {}

local sizes = env_list("RECIPE_BENCH_SIZES", "1,64,1024,10000")
for _, b in ipairs(sizes) do
  for _, n in ipairs(sizes) do -- product(sizes, sizes)
    -- label and sub_label are the rows
    -- description is the column
    local label = "Batched dot"
    local sub_label = string.format("[%d, %d]", b, n)
    x = torch.ones(b, n)
    for _, threads in ipairs(env_list("RECIPE_BENCH_THREADS", "1,4,16,32")) do
      results[#results + 1] = benchmark.Timer("batched_dot_mul_sum(x, x)", { globals = { x = x }, num_threads = threads,
        label = label, sub_label = sub_label, description = "mul/sum" }):blocked_autorange({ min_run_time = MIN_RUN_TIME })
      results[#results + 1] = benchmark.Timer("batched_dot_bmm(x, x)", { globals = { x = x }, num_threads = threads,
        label = label, sub_label = sub_label, description = "bmm" }):blocked_autorange({ min_run_time = MIN_RUN_TIME })
    end
  end
end

local compare = benchmark.Compare(results)
compare:print()

compare:trim_significant_figures()
compare:colorize()
compare:print()

-- 6. Saving/Loading benchmark results (json instead of pickle)

local function dumps(m)
  local spec = {}
  for _, k in ipairs({ "stmt", "setup", "label", "sub_label", "description", "env", "num_threads" }) do spec[k] = m.task_spec[k] end
  return json.dumps({ number_per_run = m.number_per_run, raw_times = m.raw_times, task_spec = spec })
end
local function loads(s)
  local o = json.loads(s)
  return benchmark.Measurement(o.number_per_run, o.raw_times, o.task_spec)
end

local ab_test_results = {}
for _, env in ipairs({ "environment A: mul/sum", "environment B: bmm" }) do
  for _, bn in ipairs({ { 1, 1 }, { 1024, 10000 }, { 10000, 1 } }) do
    local b, n = bn[1], bn[2]
    x = torch.ones(b, n)
    local dot_fn = env == "environment A: mul/sum" and batched_dot_mul_sum or batched_dot_bmm
    local m = benchmark.Timer("batched_dot(x, x)", { globals = { x = x, batched_dot = dot_fn }, num_threads = 1,
      label = "Batched dot", description = string.format("[%d, %d]", b, n), env = env }):blocked_autorange({ min_run_time = MIN_RUN_TIME })
    ab_test_results[#ab_test_results + 1] = dumps(m)
  end
end

local ab_results = {}
for i, s in ipairs(ab_test_results) do ab_results[i] = loads(s) end
compare = benchmark.Compare(ab_results)
compare:trim_significant_figures()
compare:colorize()
compare:print()

-- And just to show that we can round trip all of the results from earlier:
local round_tripped_results = {}
for i, m in ipairs(results) do round_tripped_results[i] = loads(dumps(m)) end
assert(tostring(benchmark.Compare(results)) == tostring(benchmark.Compare(round_tripped_results)))

-- 7. Generating inputs with Fuzzed Parameters

local Fuzzer, FuzzedParameter, FuzzedTensor = benchmark.Fuzzer, benchmark.FuzzedParameter, benchmark.FuzzedTensor

-- Generates random tensors with 128 to 10000000 elements and sizes k0 and k1 chosen from a
-- loguniform distribution in [1, 10000], 40% of which will be discontiguous on average.
local example_fuzzer = Fuzzer({
  FuzzedParameter("k0", { minval = 1, maxval = 10000, distribution = "loguniform" }),
  FuzzedParameter("k1", { minval = 1, maxval = 10000, distribution = "loguniform" }),
}, {
  FuzzedTensor("x", { size = { "k0", "k1" }, min_elements = 128, max_elements = MAX_ELEMENTS, probability_contiguous = 0.6 }),
}, { seed = 0 })

local function fuzzed_results(fuzzer)
  local out = {}
  for tensors, tensor_params, params in fuzzer:take(TAKE) do
    -- description is the column label
    local sub_label = string.format("%-6d x %-4d %s", params.k0, params.k1, tensor_params.x.is_contiguous and "" or "(discontiguous)")
    out[#out + 1] = benchmark.Timer("batched_dot_mul_sum(x, x)", { globals = tensors, label = "Batched dot",
      sub_label = sub_label, description = "mul/sum" }):blocked_autorange({ min_run_time = MIN_RUN_TIME })
    out[#out + 1] = benchmark.Timer("batched_dot_bmm(x, x)", { globals = tensors, label = "Batched dot",
      sub_label = sub_label, description = "bmm" }):blocked_autorange({ min_run_time = MIN_RUN_TIME })
  end
  return out
end

compare = benchmark.Compare(fuzzed_results(example_fuzzer))
compare:trim_significant_figures()
compare:print()

local binary = benchmark.op_fuzzers.binary

compare = benchmark.Compare(fuzzed_results(binary.BinaryOpFuzzer(0)))
compare:trim_significant_figures()
compare:colorize({ rowwise = true })
compare:print()
