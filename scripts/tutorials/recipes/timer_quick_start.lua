-- PyTorch recipe "Timer quick start" (recipes_source/recipes/timer_quick_start.py) in Lua:
-- defining a torch.utils.benchmark.Timer and measuring wall time with blocked_autorange.
--
--   nnrepl scripts/tutorials/recipes/timer_quick_start.lua
--
-- Differences from the original:
-- * The statement and setup are Lua source: "x * y" (an expression, accepted as the recipe's
--   Python one) and `x = torch.ones(128)` for `x = torch.ones((128,))`.
-- * Sections 3-6 are left out: they time C++ snippets (language=Language.CPP) and count
--   instructions with Callgrind (collect_callgrind, CallgrindStats, FunctionCounts), which need a
--   C++ toolchain against libtorch and valgrind; nnrepl's Timer runs Lua snippets only and
--   Language.CPP is an error that says so.
-- * (extra) The footnote's "implied import torch" is shown: Timer("torch.empty({})") needs no
--   globals. RECIPE_TIMER_MIN_RUN_TIME (1) sets min_run_time.
local Timer = torch.utils.benchmark.Timer
local MIN_RUN_TIME = tonumber(os.getenv("RECIPE_TIMER_MIN_RUN_TIME") or "1")

-- 1. Defining a Timer

local timer = Timer({
  -- The computation which will be run in a loop and timed.
  stmt = "x * y",

  -- `setup` will be run before calling the measurement loop, and is used to
  -- populate any state which is needed by `stmt`
  setup = [[
        x = torch.ones(128)
        y = torch.ones(128)
    ]],

  -- Alternatively, `globals` can be used to pass variables from the outer scope.
  --
  --    globals = {
  --      x = torch.ones(128),
  --      y = torch.ones(128),
  --    },

  -- Control the number of threads that PyTorch uses. (Default: 1)
  num_threads = 1,
})

-- 2. Wall time: Timer.blocked_autorange(...)

-- Measurement objects store the results of multiple repeats, and provide
-- various utility features.
local Measurement = torch.utils.benchmark.Measurement

local m = timer:blocked_autorange({ min_run_time = MIN_RUN_TIME })
assert(getmetatable(m) == Measurement)
print(m)

-- 8. Footnotes: implied `import torch` (extra)
print(Timer("torch.empty({})"):timeit(100))
