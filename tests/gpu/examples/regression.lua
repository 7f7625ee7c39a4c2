-- Parity of scripts/examples/regression with pytorch/examples regression, nnrepl's side of
-- tests/gpu/examples/regression.py (its header describes the steps and files).
--
--   nnrepl tests/gpu/examples/regression.lua DIR [cuda|cpu] [--generate]
--
-- Runs the port's loop body with its own make_features (scripts/examples/regression/model.lua)
-- from DIR/regression_init and _data.safetensors, and writes DIR/regression_nnrepl_losses.txt
-- and DIR/regression_nnrepl_final.safetensors. --generate makes the init and data files with
-- nnrepl when they are missing (a run without PyTorch).
local NAME, STEPS, BATCH = "regression", 20, 32
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
package.path = here .. "/../../../scripts/examples/regression/?.lua;" .. package.path
local model = require "model"
local POLY_DEGREE, make_features = model.POLY_DEGREE, model.make_features

local P = dofile(here .. "/example_parity.lua")
local run = P.start(NAME, ...)
local device, path = run.device, run.path

if run.generate then
  torch.manual_seed(0)
  local W_target = torch.randn(POLY_DEGREE, 1) * 5
  local b_target = torch.randn(1) * 5
  torch.save(nn.Linear(W_target:size(0), 1):state_dict(), path("init.safetensors"))
  local data = { W_target = W_target, b_target = b_target }
  for i = 0, STEPS - 1 do data["random." .. i] = torch.randn(BATCH) end
  torch.save(data, path("data.safetensors"))
end

local fc = nn.Linear(POLY_DEGREE, 1)
fc:load_state_dict(torch.load(path("init.safetensors")))
fc = fc:to(device)
local data = torch.load(path("data.safetensors"))
local W_target, b_target = data.W_target:to(device), data.b_target:to(device)
local losses = {}
for i = 0, STEPS - 1 do
  local batch_x = make_features(data["random." .. i]:to(device))
  local batch_y = batch_x:mm(W_target) + b_target:item()
  fc:zero_grad()
  local output = F.smooth_l1_loss(fc(batch_x), batch_y)
  local loss = output:item()
  output:backward()
  for _, param in ipairs(fc:parameters()) do
    param.data:add_(-0.1 * param.grad)
  end
  losses[#losses + 1] = loss
end
P.finish(run, losses, fc)
