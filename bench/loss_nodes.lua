-- The pointwise losses' forward + backward on the GPU (one autograd node each since session 25, one fused
-- kernel each way since session 26):
-- mse_loss, smooth_l1_loss, huber_loss, binary_cross_entropy, binary_cross_entropy_with_logits
-- on a small [64, 10] batch (launch-bound) and a large [4096, 4096] one; CUDA events, median of 5
-- repeats of 20 calls after a warm-up. bench/loss_nodes.py is PyTorch's side.
--   nnrepl bench/loss_nodes.lua [cpu]
-- With cpu: on the CPU, [64, 10] and [1024, 1024], wall-clock medians (both sides' threads as
-- LOSS_THREADS says, else torch.get_num_threads()'s default). Prints per case: "loss <name> <rows>x<cols> us <t>"
local F = torch.nn.functional
if os.getenv("LOSS_THREADS") then torch.set_num_threads(tonumber(os.getenv("LOSS_THREADS"))) end
local timing = require "gpu_step_timing" -- bench/gpu_step_timing.lua, next to this file
local reps, calls = 5, 20
local device = arg[1] or "cuda"

local function median_us(fn)
  for _ = 1, 5 do fn() end
  return ((device == "cpu" and timing.wall_timed or timing.timed)(fn, calls, reps)) * 1e3
end

local LOSSES = {
  { "mse_loss", function(x, t) return F.mse_loss(x, t) end },
  { "smooth_l1_loss", function(x, t) return F.smooth_l1_loss(x, t) end },
  { "huber_loss", function(x, t) return F.huber_loss(x, t) end },
  { "binary_cross_entropy", function(x, t) return F.binary_cross_entropy(x:sigmoid(), t) end },
  { "binary_cross_entropy_with_logits", function(x, t) return F.binary_cross_entropy_with_logits(x, t) end },
  -- what mse_loss was before its node: three ops and their three nodes (nnrepl only)
  { "mse_composite", function(x, t) return ((x - t) ^ 2):mean() end },
}
for _, size in ipairs({ { 64, 10 }, device == "cpu" and { 1024, 1024 } or { 4096, 4096 } }) do
  torch.manual_seed(0)
  local x = torch.randn(size[1], size[2], { device = device, requires_grad = true })
  local t = torch.rand(size[1], size[2], { device = device })
  for _, l in ipairs(LOSSES) do
    local us = median_us(function()
      l[2](x, t):backward()
    end)
    print(string.format("loss %s %dx%d us %.1f", l[1], size[1], size[2], us))
  end
end
