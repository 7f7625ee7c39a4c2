-- Adam (and SGD with momentum) steps on CPU over the parameters of a 784-256-10 MLP
-- (weights [256, 784], [10, 256] and their biases: 203,530 float32 values) with random
-- gradients: the median over repeats of the time per optimizer step, in microseconds.
-- Each step is one fused engine pass over the group. bench/optim_cpu.py is PyTorch's side.
-- Usage: nnrepl bench/optim_cpu.lua [steps per repeat] [repeats]
local steps = tonumber(arg and arg[1]) or 200
local reps = tonumber(arg and arg[2]) or 7

torch.manual_seed(0)
local shapes = { { 256, 784 }, { 256 }, { 10, 256 }, { 10 } }

local function bench(name, make)
  local params, n = {}, 0
  for i, s in ipairs(shapes) do
    params[i] = torch.randn(s) * 0.05
    params[i].requires_grad = true
    params[i].grad = torch.randn(s)
    n = n + params[i]:numel()
  end
  local opt = make(params)
  for _ = 1, 20 do opt:step() end
  local times = {}
  for r = 1, reps do
    collectgarbage()
    local t0 = time.perf_counter()
    for _ = 1, steps do opt:step() end
    times[r] = (time.perf_counter() - t0) / steps * 1e6
  end
  table.sort(times)
  local median = times[(reps + 1) // 2]
  print(string.format("nnrepl %s: median %.1f us/step (min %.1f, max %.1f; %d params, %.2f ns/param; %d x %d steps)",
    name, median, times[1], times[reps], n, median * 1e3 / n, reps, steps))
  return median
end

local adam = bench("Adam", function(ps) return optim.Adam(ps, { lr = 1e-3 }) end)
bench("SGD momentum", function(ps) return optim.SGD(ps, { lr = 1e-3, momentum = 0.9 }) end)
return adam
