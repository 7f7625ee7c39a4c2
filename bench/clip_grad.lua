-- torch.nn.utils.clip_grad_norm_ and clip_grad_value_ over AlexNet's 16 parameters' gradients
-- on cuda:0: wall time per call over `iters` calls ending in one synchronisation (the calls are
-- host-bound: 16 norms, a stack and 16 multiplies), median of `reps` repeats after a warm-up,
-- with Lua's collector running as in a training loop. bench/clip_grad.py is PyTorch's side.
--   nnrepl bench/clip_grad.lua [iters 200] [reps 7]
local iters, reps = tonumber(arg[1]) or 200, tonumber(arg[2]) or 7
if not torch.cuda.is_available() then
  print("clip_grad: no GPU, nothing to time")
  return
end
local time = require "time"
torch.manual_seed(0)
local model = require("torchvision").models.alexnet():to("cuda")
local params = model:parameters()
for _, p in ipairs(params) do p.grad = torch.randn_like(p) end

local function bench(name, fn)
  for _ = 1, 10 do fn() end
  torch.cuda.synchronize()
  local t = {}
  for r = 1, reps do
    local t0 = time.perf_counter()
    for _ = 1, iters do fn() end
    torch.cuda.synchronize()
    t[r] = (time.perf_counter() - t0) * 1e6 / iters
  end
  table.sort(t)
  print(string.format("clip %-16s %9.2f us", name, t[(reps + 1) // 2]))
end
bench("norm", function() torch.nn.utils.clip_grad_norm_(params, 1.0) end)
bench("value", function() torch.nn.utils.clip_grad_value_(params, 1.0) end)
