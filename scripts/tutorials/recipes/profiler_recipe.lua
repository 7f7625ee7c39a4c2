-- PyTorch recipe "PyTorch Profiler" (recipes_source/recipes/profiler_recipe.py) in Lua: a ResNet-18
-- forward profiled for time, input shapes, memory, a Chrome trace, stacks and a schedule.
--
--   nnrepl scripts/tutorials/recipes/profiler_recipe.lua
--
-- Differences from the original:
-- * `with profile(...) as prof:` is `local prof <close> = profile(...)` in a do ... end block;
--   `with record_function(name):` is `local _ <close> = record_function(name)`.
-- * Op names are nnrepl's engine's ("conv2d", "batch_norm"), not aten::...; times in microseconds.
-- * No XPU. Without a GPU the original stops after section 3 (sys.exit(0)), and so does this port,
--   unless RECIPE_PROFILER_DEVICE=cpu runs sections 5-7 on the CPU (then sorted by CPU time).
-- * Section 7's trace handler writes trace_<step>.json in the current folder, not /tmp.
-- * prof.export_memory_timeline's HTML plot needs matplotlib: the .html call prints what PyTorch
--   prints without it; (extra) the timeline's points go to memory_timeline.json (PyTorch's
--   [times, sizes] layout, every byte in the unknown category) and the memory table is printed.
-- * Sizes: RECIPE_PROFILER_BATCH (5) images of RECIPE_PROFILER_SIZE (224) pixels.
local models = require("torchvision").models
local profiler = torch.profiler
local profile, record_function, ProfilerActivity = profiler.profile, profiler.record_function, profiler.ProfilerActivity

local BATCH = tonumber(os.getenv("RECIPE_PROFILER_BATCH") or "5")
local SIZE = tonumber(os.getenv("RECIPE_PROFILER_SIZE") or "224")

-- 2. Instantiate a simple Resnet model
local model = models.resnet18()
local inputs = torch.randn(BATCH, 3, SIZE, SIZE)

-- 3. Using profiler to analyze execution time
local prof
do
  prof = profile({ activities = { ProfilerActivity.CPU }, record_shapes = true })
  local _ <close> = prof
  local _r <close> = record_function("model_inference")
  model(inputs)
end

print(prof:key_averages():table({ sort_by = "cpu_time_total", row_limit = 10 }))

print(prof:key_averages({ group_by_input_shape = true }):table({ sort_by = "cpu_time_total", row_limit = 10 }))

local activities = { ProfilerActivity.CPU }
local device
if torch.cuda.is_available() then
  device = "cuda"
  activities[#activities + 1] = ProfilerActivity.CUDA
elseif os.getenv("RECIPE_PROFILER_DEVICE") == "cpu" then
  device = "cpu" -- (extra) the rest on the CPU
else
  print("Neither CUDA nor XPU devices are available to demonstrate profiling on acceleration devices")
  os.exit(0)
end

local sort_by_keyword = device .. "_time_total"

model = models.resnet18():to(device)
inputs = torch.randn(BATCH, 3, SIZE, SIZE):to(device)

do
  prof = profile({ activities = activities, record_shapes = true })
  local _ <close> = prof
  local _r <close> = record_function("model_inference")
  model(inputs)
end

print(prof:key_averages():table({ sort_by = sort_by_keyword, row_limit = 10 }))

-- 4. Using profiler to analyze memory consumption
model = models.resnet18()
inputs = torch.randn(BATCH, 3, SIZE, SIZE)

do
  prof = profile({ activities = { ProfilerActivity.CPU }, profile_memory = true, record_shapes = true })
  local _ <close> = prof
  model(inputs)
end

print(prof:key_averages():table({ sort_by = "self_cpu_memory_usage", row_limit = 10 }))

print(prof:key_averages():table({ sort_by = "cpu_memory_usage", row_limit = 10 }))

-- 5. Using tracing functionality
model = models.resnet18():to(device)
inputs = torch.randn(BATCH, 3, SIZE, SIZE):to(device)

do
  prof = profile({ activities = activities })
  local _ <close> = prof
  model(inputs)
end

prof:export_chrome_trace("trace.json")

-- 6. Examining stack traces
sort_by_keyword = "self_" .. device .. "_time_total"

do
  prof = profile({ activities = activities, with_stack = true })
  local _ <close> = prof
  model(inputs)
end

-- Print aggregated stats
print(prof:key_averages({ group_by_stack_n = 5 }):table({ sort_by = sort_by_keyword, row_limit = 2 }))

-- 7. Using profiler to analyze long-running jobs
local schedule = profiler.schedule

local my_schedule = schedule({ skip_first = 10, wait = 5, warmup = 1, active = 3, ["repeat"] = 2 }) -- luacheck: ignore

local function trace_handler(p)
  local output = p:key_averages():table({ sort_by = sort_by_keyword, row_limit = 10 })
  print(output)
  p:export_chrome_trace("trace_" .. tostring(p.step_num) .. ".json")
end

do
  local p <close> = profile({ activities = activities, schedule = profiler.schedule({ wait = 1, warmup = 1, active = 2 }),
    on_trace_ready = trace_handler })
  for _ = 0, 7 do
    model(inputs)
    p:step()
  end
end

-- Memory Timeline Visualization
do
  prof = profile({ activities = { ProfilerActivity.CPU }, profile_memory = true, record_shapes = true, with_stack = true })
  local _ <close> = prof
  model(inputs)
end

local mem_device = device == "cuda" and "cuda:0" or device
prof:export_memory_timeline("memory_timeline.html", mem_device)
-- (extra) the timeline's points as JSON, and the memory table
prof:export_memory_timeline("memory_timeline.json", mem_device)
print(prof:key_averages():table({ sort_by = "self_cpu_memory_usage", row_limit = 5 }))
