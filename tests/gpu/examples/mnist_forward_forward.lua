-- Parity of scripts/examples/mnist_forward_forward with pytorch/examples mnist_forward_forward,
-- nnrepl's side of tests/gpu/examples/mnist_forward_forward.py (its header describes the steps
-- and files).
--
--   nnrepl tests/gpu/examples/mnist_forward_forward.lua DIR [cuda|cpu] [--generate]
--
-- Builds the port's own Net (scripts/examples/mnist_forward_forward/model.lua), loads its
-- layers from DIR/mnist_forward_forward_init.safetensors, runs its net:train on the overlaid
-- data and reads the per-step losses from the "Loss:" lines it prints; writes
-- DIR/mnist_forward_forward_nnrepl_losses.txt and _nnrepl_final.safetensors. --generate makes
-- the init and data files with nnrepl when they are missing (a run without PyTorch).
local NAME, N, EPOCHS = "mnist_forward_forward", 64, 8
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
package.path = here .. "/../../../scripts/examples/mnist_forward_forward/?.lua;" .. package.path
local model = require "model"

local P = dofile(here .. "/example_parity.lua")
local run = P.start(NAME, ...)
local path = run.path
model.args = { lr = 0.03, threshold = 2.0, epochs = EPOCHS, log_interval = 1 }
model.device = torch.device("cpu")

if run.generate then
  torch.manual_seed(0)
  torch.save(nn.ModuleList(model.Net({ 784, 500, 500 }).layers):state_dict(), path("init.safetensors"))
  local g = torch.Generator():manual_seed(1)
  local y = torch.randint(10, { N }, { generator = g })
  local y_neg = (y + torch.randint(1, 10, { N }, { generator = g })) % 10
  torch.save({ x = torch.randn(N, 784, { generator = g }), y = y, y_neg = y_neg }, path("data.safetensors"))
end

model.device = run.device
local net = model.Net({ 784, 500, 500 })
local layers = nn.ModuleList(net.layers)
layers:load_state_dict(torch.load(path("init.safetensors")))
local data = torch.load(path("data.safetensors"))
local x, y, y_neg = data.x:to(run.device), data.y:to(run.device), data.y_neg:to(run.device)
local losses, print_ = {}, print
print = function(line) -- the "Loss:  x" lines are Python's float repr: they read back exactly
  local v = tostring(line):match("^Loss:%s+(%S+)$")
  if v then losses[#losses + 1] = tonumber(v) end
end
net:train(model.overlay_y_on_x(x, y), model.overlay_y_on_x(x, y_neg))
print = print_
P.finish(run, losses, layers)
