-- Parity of scripts/examples/mnist_rnn with pytorch/examples mnist_rnn, nnrepl's side of
-- tests/gpu/examples/mnist_rnn.py (its header describes the steps and files).
--
--   nnrepl tests/gpu/examples/mnist_rnn.lua DIR [cuda|cpu] [--generate]
--
-- Trains the port's own Net (scripts/examples/mnist_rnn/model.lua) from DIR/mnist_rnn_init
-- and _data.safetensors as the example's train() does, and writes
-- DIR/mnist_rnn_nnrepl_losses.txt and DIR/mnist_rnn_nnrepl_final.safetensors. --generate
-- makes the init and data files with nnrepl when they are missing (a run without PyTorch).
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
dofile(here .. "/_classifier.lua")("mnist_rnn", 0.1, ...)
