-- Parity of scripts/tutorials/blitz/cifar10_tutorial.lua, nnrepl's side of
-- tests/gpu/tutorials/cifar10_tutorial.py (its header describes the steps and files).
--   nnrepl tests/gpu/tutorials/cifar10_tutorial.lua DIR [cuda|cpu] [--generate]
-- Trains the port's own Net (scripts/tutorials/blitz/cifar10_model.lua); --generate makes the
-- init and data files with nnrepl when they are missing (a run without PyTorch).
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
local Net = dofile(here .. "/../../../scripts/tutorials/blitz/cifar10_model.lua")
dofile(here .. "/_steps.lua")("cifar10_tutorial", Net, 12,
  function(g) return torch.randn(4, 3, 32, 32, { generator = g }), torch.randint(0, 10, { 4 }, { generator = g }) end,
  nn.CrossEntropyLoss(), function(params) return optim.SGD(params, { lr = 0.001, momentum = 0.9 }) end, ...)
