-- The fused activations' forward + backward (one kernel each way since session 26): gelu (both
-- forms), silu, mish, softplus, logsigmoid, leaky_relu, elu, hardswish, hardsigmoid, float32, on a
-- [64, 512] batch (launch-bound) and a [4096, 4096] one; CUDA events, median of 5 repeats of 20
-- calls after a warm-up. bench/activations.py is PyTorch's side; bench/activations_run.sh both.
--   nnrepl bench/activations.lua [cpu]
-- With cpu: on the CPU, [64, 512] and [1024, 1024], wall-clock medians (both sides' threads as
-- ACT_THREADS says, else torch.get_num_threads()'s default). Prints per case: "act <name> <rows>x<cols> us <t>"
local F = torch.nn.functional
if os.getenv("ACT_THREADS") then torch.set_num_threads(tonumber(os.getenv("ACT_THREADS"))) end
local timing = require "gpu_step_timing" -- bench/gpu_step_timing.lua, next to this file
local reps, calls = 5, 20
local device = arg[1] or "cuda"

local ACTS = {
  { "gelu", function(x) return F.gelu(x) end },
  { "gelu_tanh", function(x) return F.gelu(x, { approximate = "tanh" }) end },
  { "silu", function(x) return F.silu(x) end },
  { "mish", function(x) return F.mish(x) end },
  { "softplus", function(x) return F.softplus(x) end },
  { "logsigmoid", function(x) return F.logsigmoid(x) end },
  { "leaky_relu", function(x) return F.leaky_relu(x, 0.2) end },
  { "elu", function(x) return F.elu(x) end },
  { "hardswish", function(x) return F.hardswish(x) end },
  { "hardsigmoid", function(x) return F.hardsigmoid(x) end },
}
for _, size in ipairs({ { 64, 512 }, device == "cpu" and { 1024, 1024 } or { 4096, 4096 } }) do
  torch.manual_seed(0)
  local x = torch.randn(size[1], size[2], { device = device, requires_grad = true })
  local g = torch.randn(size[1], size[2], { device = device })
  for _, a in ipairs(ACTS) do
    local f = a[2]
    for _ = 1, 5 do f(x):backward(g) end
    local step = function() f(x):backward(g) end
    local ms = (device == "cpu" and timing.wall_timed or timing.timed)(step, calls, reps)
    print(string.format("act %s %dx%d us %.1f", a[1], size[1], size[2], ms * 1e3))
  end
end
