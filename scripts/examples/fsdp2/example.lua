-- pytorch/examples distributed/FSDP2/example.py in Lua: a small Transformer (model.lua) sharded
-- with FSDP2's fully_shard (each block, then the root), trained 10 steps with Adam on random
-- tokens (the loss is the logits' sum), with gradient clipping; the model and optimizer are
-- saved as full state dicts (checkpoint.lua), and a later run resumes from the newest one.
--
--   nnrepl --nproc-per-node 2 scripts/examples/fsdp2/example.lua [--explicit-prefetching]
--       [--mixed-precision] [--dcp-api]
--
-- The checkpoints go to checkpoints/ under the current folder. Differences from the original:
-- - device and backend: with a GPU per rank each rank takes cuda:LOCAL_RANK and NCCL; otherwise
--   every rank runs on the CPU over Gloo (the original exits without 2 GPUs).
-- - nnrepl has no meta device: the model is built on the CPU with its initial values, sharded,
--   and moved to the device, so the original's to_empty + reset_parameters (which re-initialise
--   only the root's own layers, leaving the blocks' weights uninitialised) are not needed.
--   Every rank builds the same model from seed 0, so the run equals one process training the
--   whole model on the same batches.
-- - --n-layers, --vocab-size, --batch-size, --seq-len and --steps are new, with the original's
--   values as defaults (10, 1024, 32, 64, 10), so tests can run it small.
-- - with --mixed-precision on the CPU the parameters are gathered in bfloat16 too.
local argparse = require "argparse"
local model_lib = require "model"
local utils = require "utils"
local Checkpointer = (require "checkpoint").Checkpointer
local fsdp = torch.distributed.fsdp
local fully_shard, MixedPrecisionPolicy = fsdp.fully_shard, fsdp.MixedPrecisionPolicy
local ModelArgs, Transformer = model_lib.ModelArgs, model_lib.Transformer
local inspect_mixed_precision, inspect_model = utils.inspect_mixed_precision, utils.inspect_model

-- one GPU per rank: NCCL; fewer: Gloo on the CPU
local function use_accelerator()
  local world = tonumber(os.getenv("WORLD_SIZE") or "1")
  return torch.accelerator.is_available() and torch.accelerator.device_count() >= world
end

local function set_modules_to_forward_prefetch(model, num_to_forward_prefetch)
  local n = #model.layers
  for i, layer in model.layers:enumerate() do
    if i >= n - num_to_forward_prefetch then break end
    local layers_to_prefetch = {}
    for j = 1, num_to_forward_prefetch do layers_to_prefetch[j] = model.layers[i + j] end
    layer:set_modules_to_forward_prefetch(layers_to_prefetch)
  end
end

local function set_modules_to_backward_prefetch(model, num_to_backward_prefetch)
  for i, layer in model.layers:enumerate() do
    if i >= num_to_backward_prefetch then
      local layers_to_prefetch = {}
      for j = 1, num_to_backward_prefetch do layers_to_prefetch[j] = model.layers[i - j] end
      layer:set_modules_to_backward_prefetch(layers_to_prefetch)
    end
  end
end

local function main(args)
  local rank = tonumber(os.getenv("LOCAL_RANK") or "0")
  local device
  if use_accelerator() then
    local device_type = torch.accelerator.current_accelerator()
    device = torch.device(string.format("%s:%d", device_type.type, rank))
    torch.accelerator.set_device_index(rank)
    print(string.format("Running on rank %d on device %s", rank, device))
  else
    device = torch.device("cpu")
    print(string.format("Running on device %s", device))
  end

  local backend = torch.distributed.get_default_backend_for_device(device)
  torch.distributed.init_process_group(backend, { device_id = device })

  torch.manual_seed(0)
  local vocab_size = args.vocab_size
  local batch_size = args.batch_size
  local seq_len = args.seq_len
  local model_args = ModelArgs {
    n_layers = args.n_layers,
    n_heads = 4,
    vocab_size = vocab_size,
    max_seq_len = seq_len,
    dropout_p = 0,
  }
  local model = Transformer(model_args)
  local fsdp_kwargs = {}
  if args.mixed_precision then
    fsdp_kwargs.mp_policy = MixedPrecisionPolicy {
      param_dtype = torch.bfloat16,
      reduce_dtype = torch.float32,
    }
  end
  for _, layer in pairs(model.layers) do fully_shard(layer, fsdp_kwargs) end
  fully_shard(model, fsdp_kwargs)
  model:to(device)

  inspect_model(model)

  if args.explicit_prefetching then
    set_modules_to_forward_prefetch(model, 2)
    set_modules_to_backward_prefetch(model, 2)
  end

  local checkpointer = Checkpointer("checkpoints", args.dcp_api)
  if checkpointer.last_training_time ~= nil then checkpointer:load_model(model) end

  if args.mixed_precision then inspect_mixed_precision(model) end

  local optim = torch.optim.Adam(model:parameters(), { lr = 1e-2 })
  if checkpointer.last_training_time ~= nil then checkpointer:load_optim(model, optim) end

  for _ = 1, args.steps do
    if args.explicit_prefetching then model:unshard() end
    local x = torch.randint(0, vocab_size, { batch_size, seq_len }, { device = device })
    local loss = model(x):sum()
    loss:backward()
    torch.nn.utils.clip_grad_norm_(model:parameters(), { max_norm = 1.0 })
    optim:step()
    optim:zero_grad()
  end

  checkpointer:save(model, optim)
  torch.distributed.destroy_process_group()
end

local parser = argparse.ArgumentParser({ description = "PyTorch FSDP2 example" })
parser:add_argument("--explicit-prefetching", { action = "store_true", default = false })
parser:add_argument("--mixed-precision", { action = "store_true", default = false })
parser:add_argument("--dcp-api", { action = "store_true", default = false })
parser:add_argument("--n-layers", { type = "int", default = 10, help = "Transformer blocks (default: 10)" })
parser:add_argument("--vocab-size", { type = "int", default = 1024, help = "vocabulary size (default: 1024)" })
parser:add_argument("--batch-size", { type = "int", default = 32, help = "batch size (default: 32)" })
parser:add_argument("--seq-len", { type = "int", default = 64, help = "tokens per sequence (default: 64)" })
parser:add_argument("--steps", { type = "int", default = 10, help = "training steps (default: 10)" })
local args = parser:parse_args({ ... })

main(args)
