-- Parity of scripts/examples/mingpt_ddp with pytorch/examples distributed/minGPT-ddp, nnrepl's
-- side of tests/gpu/examples/mingpt_ddp.py (its header describes the model, steps and files).
--
--   nnrepl tests/gpu/examples/mingpt_ddp.lua DIR [cuda|cpu] [--generate]
--
-- Builds the port's own GPT (scripts/examples/mingpt_ddp/model.lua) and optimizer
-- (create_optimizer), loads DIR/mingpt_ddp_init.safetensors, and runs the port's own training
-- step, Trainer._run_batch (trainer.lua; AMP off, clipping at 1.0), on the 12 batches of
-- _data.safetensors, on one device without DDP. Writes DIR/mingpt_ddp_nnrepl_losses.txt and
-- _nnrepl_final.safetensors. --generate makes the init and data files with nnrepl when they
-- are missing (a run without PyTorch).
local NAME, STEPS, BATCH, VOCAB, BLOCK = "mingpt_ddp", 12, 8, 24, 16
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
package.path = here .. "/../../../scripts/examples/mingpt_ddp/?.lua;" .. package.path
local model_lib = require "model"
local Trainer = require("trainer").Trainer

local P = dofile(here .. "/example_parity.lua")
local run = P.start(NAME, ...)
local device, path = run.device, run.path

local function config()
  return model_lib.GPTConfig({ n_layer = 2, n_head = 2, n_embd = 32, vocab_size = VOCAB, block_size = BLOCK,
    embd_pdrop = 0.0, resid_pdrop = 0.0, attn_pdrop = 0.0 })
end

if run.generate then
  torch.manual_seed(0)
  torch.save(model_lib.GPT(config()):state_dict(), path("init.safetensors"), { format = "safetensors" })
  local g = torch.Generator():manual_seed(1)
  local data = {}
  for i = 0, STEPS - 1 do
    local seq = torch.randint(0, VOCAB, { BATCH, BLOCK + 1 }, { generator = g })
    data["x." .. i] = seq[":, :-1"]:contiguous()
    data["y." .. i] = seq[":, 1:"]:contiguous()
  end
  torch.save(data, path("data.safetensors"), { format = "safetensors" })
end

local model = model_lib.GPT(config())
model:load_state_dict(torch.load(path("init.safetensors")))
model = model:to(device)
local optimizer = model_lib.create_optimizer(model, model_lib.OptimizerConfig())
local batches = torch.load(path("data.safetensors"))
-- the Trainer's own step, on a trainer holding just what _run_batch reads
local trainer = setmetatable({ model = model, optimizer = optimizer,
  config = require("trainer").TrainerConfig({ grad_norm_clip = 1.0, use_amp = false }), device_type = device.type },
  { __index = Trainer })
local losses = {}
for i = 0, STEPS - 1 do
  local source, targets = batches["x." .. i]:to(device), batches["y." .. i]:to(device)
  losses[#losses + 1] = trainer:_run_batch(source, targets, true)
end
P.finish(run, losses, model)
