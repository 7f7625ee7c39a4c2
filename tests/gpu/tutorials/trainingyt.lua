-- Parity of scripts/tutorials/introyt/trainingyt.lua, nnrepl's side of
-- tests/gpu/tutorials/trainingyt.py (its header describes the steps and files).
--   nnrepl tests/gpu/tutorials/trainingyt.lua DIR [cuda|cpu] [--generate]
-- Trains the port's own GarmentClassifier (scripts/tutorials/introyt/garment_classifier.lua);
-- --generate makes the init and data files with nnrepl when they are missing (a run without PyTorch).
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
local GarmentClassifier = dofile(here .. "/../../../scripts/tutorials/introyt/garment_classifier.lua")
dofile(here .. "/_steps.lua")("trainingyt", GarmentClassifier, 16,
  function(g) return torch.randn(4, 1, 28, 28, { generator = g }), torch.randint(0, 10, { 4 }, { generator = g }) end,
  torch.nn.CrossEntropyLoss(), function(params) return torch.optim.SGD(params, { lr = 0.001, momentum = 0.9 }) end, ...)
