-- Parity of scripts/tutorials/introyt/autogradyt_tutorial.lua, nnrepl's side of
-- tests/gpu/tutorials/autogradyt.py (its header describes the steps and files).
--   nnrepl tests/gpu/tutorials/autogradyt.lua DIR [cuda|cpu] [--generate]
-- Trains the port's own TinyModel (scripts/tutorials/introyt/tiny_model.lua); --generate makes the
-- init and data files with nnrepl when they are missing (a run without PyTorch).
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
local TinyModel = dofile(here .. "/../../../scripts/tutorials/introyt/tiny_model.lua")
dofile(here .. "/_steps.lua")("autogradyt", TinyModel, 12,
  function(g) return torch.randn(16, 1000, { generator = g }), torch.randn(16, 10, { generator = g }) end,
  function(prediction, ideal_output) return (ideal_output - prediction):pow(2):sum() end,
  function(params) return torch.optim.SGD(params, { lr = 0.001 }) end, ...)
