-- Parity of scripts/examples/fsdp2's model with pytorch/examples distributed/FSDP2, nnrepl's
-- side of tests/gpu/examples/fsdp2.py (its header describes the steps and files): one device,
-- the unsharded Transformer of the port's model.lua, the example's step (the logits' sum,
-- clip_grad_norm_ to 1, Adam lr 1e-2).
--
--   nnrepl tests/gpu/examples/fsdp2.lua DIR [cuda|cpu] [--generate]
--
-- --generate makes the init and data files with nnrepl when they are missing.
local NAME, STEPS, BATCH, SEQ, VOCAB = "fsdp2", 12, 4, 16, 64
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
package.path = here .. "/../../../scripts/examples/fsdp2/?.lua;" .. package.path
local model_lib = require "model"

local P = dofile(here .. "/example_parity.lua")
local run = P.start(NAME, ...)
local device, path = run.device, run.path
local args = model_lib.ModelArgs { n_layers = 2, n_heads = 4, vocab_size = VOCAB, max_seq_len = SEQ, dropout_p = 0 }

if run.generate then
  torch.manual_seed(0)
  torch.save(model_lib.Transformer(args):state_dict(), path("init.safetensors"))
  local g = torch.Generator():manual_seed(1)
  local data = {}
  for i = 0, STEPS - 1 do data["x." .. i] = torch.randint(0, VOCAB, { BATCH, SEQ }, { generator = g }) end
  torch.save(data, path("data.safetensors"))
end

local model = model_lib.Transformer(args)
model:load_state_dict(torch.load(path("init.safetensors")))
model = model:to(device)
local batches = torch.load(path("data.safetensors"))
local optimizer = torch.optim.Adam(model:parameters(), { lr = 1e-2 })
local losses = {}
for i = 0, STEPS - 1 do -- example.lua's loop
  local x = batches["x." .. i]:to(device)
  local loss = model(x):sum()
  loss:backward()
  torch.nn.utils.clip_grad_norm_(model:parameters(), { max_norm = 1.0 })
  optimizer:step()
  optimizer:zero_grad()
  losses[#losses + 1] = loss:item()
end
P.finish(run, losses, model)
