-- Parity of scripts/tutorials/basics/optimization.lua with the PyTorch tutorial, nnrepl's side of
-- tests/gpu/tutorials/optimization.py (_basics.py describes the steps and files).
--
--   nnrepl tests/gpu/tutorials/optimization.lua DIR [cuda|cpu] [--generate]
--
-- Trains the port's own NeuralNetwork (scripts/tutorials/basics/model.lua) as the tutorial's
-- training loop does; --generate makes the init and data files with nnrepl when they are missing.
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
dofile(here .. "/_basics.lua")("optimization", ...)
