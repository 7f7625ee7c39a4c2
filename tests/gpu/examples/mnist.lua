-- Parity of scripts/examples/mnist with pytorch/examples mnist, nnrepl's side of
-- tests/gpu/examples/mnist.py (its header describes the steps and files).
--
--   nnrepl tests/gpu/examples/mnist.lua DIR [cuda|cpu] [--generate]
--
-- Trains the port's own Net (scripts/examples/mnist/model.lua) from DIR/mnist_init
-- and _data.safetensors as the example's train() does, and writes
-- DIR/mnist_nnrepl_losses.txt and DIR/mnist_nnrepl_final.safetensors. --generate
-- makes the init and data files with nnrepl when they are missing (a run without PyTorch).
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
dofile(here .. "/_classifier.lua")("mnist", 1.0, ...)
