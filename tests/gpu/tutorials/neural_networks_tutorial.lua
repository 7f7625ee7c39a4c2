-- Parity of scripts/tutorials/blitz/neural_networks_tutorial.lua, nnrepl's side of
-- tests/gpu/tutorials/neural_networks_tutorial.py (its header describes the steps and files).
--   nnrepl tests/gpu/tutorials/neural_networks_tutorial.lua DIR [cuda|cpu] [--generate]
-- Trains the port's own Net (scripts/tutorials/blitz/neural_networks_model.lua); --generate
-- makes the init and data files with nnrepl when they are missing (a run without PyTorch).
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
local Net = dofile(here .. "/../../../scripts/tutorials/blitz/neural_networks_model.lua")
dofile(here .. "/_steps.lua")("neural_networks_tutorial", Net, 12,
  function(g) return torch.randn(1, 1, 32, 32, { generator = g }), torch.randn(10, { generator = g }):view(1, -1) end,
  nn.MSELoss(), function(params) return optim.SGD(params, { lr = 0.01 }) end, ...)
