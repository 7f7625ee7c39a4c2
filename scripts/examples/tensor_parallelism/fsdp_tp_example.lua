-- pytorch/examples distributed/tensor_parallelism/fsdp_tp_example.py in Lua: 2-D parallelism on
-- the Llama 2 model of llama2_model.lua. The ranks form a (dp, tp) device mesh with tp = 2:
-- within a "tp" row, tensor and sequence parallelism (the attention's and feed-forward's Linears
-- cut by columns then rows, the norms run on this rank's piece of the sequence); across it,
-- fully_shard over "dp" shards what each rank holds and averages the gradients. Each dp rank
-- trains on its own random tokens, 10 iterations of AdamW on the output's sum.
--
--   nnrepl --nproc-per-node 4 scripts/examples/tensor_parallelism/fsdp_tp_example.lua
--
-- Differences from the original:
-- - with a GPU per rank each rank takes cuda:LOCAL_RANK and NCCL; otherwise the ranks run on the
--   CPU over Gloo (the original exits without 4 GPUs).
-- - the attention's wq / wk / wv are ColwiseParallel() rather than ColwiseParallel{
--   use_local_output = false}: nnrepl has no DTensor, the attention gets this rank's heads as a
--   plain tensor and counts them from it (llama2_model.lua).
-- - --dim, --n-layers, --n-heads, --vocab-size, --batch-size and --seq-len are new, with the
--   original's values as defaults (256, 2, 16, 32000, 8, 256), so tests can run it small.
-- - as in the original, the gradients are never zeroed: they add up over the iterations.
local argparse = require "argparse"
local log_utils = require "log_utils"
local llama = require "llama2_model"
local dist = torch.distributed
local tp = dist.tensor.parallel
local Transformer, ModelArgs = llama.Transformer, llama.ModelArgs
local init_device_mesh = dist.device_mesh.init_device_mesh
local fully_shard = dist.fsdp.fully_shard
local Shard, Replicate = dist.tensor.Shard, dist.tensor.Replicate
local parallelize_module, ColwiseParallel, RowwiseParallel = tp.parallelize_module, tp.ColwiseParallel, tp.RowwiseParallel
local PrepareModuleInput, SequenceParallel = tp.PrepareModuleInput, tp.SequenceParallel
local rank_log, get_logger = log_utils.rank_log, log_utils.get_logger

local parser = argparse.ArgumentParser({ description = "2-D (FSDP + TP) example on a Llama 2 model" })
parser:add_argument("--dim", { type = "int", default = 256, help = "model dimension (default: 256)" })
parser:add_argument("--n-layers", { type = "int", default = 2, help = "Transformer blocks (default: 2)" })
parser:add_argument("--n-heads", { type = "int", default = 16, help = "attention heads (default: 16)" })
parser:add_argument("--vocab-size", { type = "int", default = 32000, help = "vocabulary size (default: 32000)" })
parser:add_argument("--batch-size", { type = "int", default = 8, help = "sequences per dp rank (default: 8)" })
parser:add_argument("--seq-len", { type = "int", default = 256, help = "tokens per sequence (default: 256)" })
local args = parser:parse_args({ ... })

local tp_size = 2
local logger = get_logger()

local _rank = tonumber(os.getenv("RANK"))
local _world_size = tonumber(os.getenv("WORLD_SIZE"))

print(string.format("Starting PyTorch 2D (FSDP + TP) example on rank %d.", _rank))
assert(_world_size % tp_size == 0, string.format("World size %d needs to be divisible by TP size %d", _world_size, tp_size))

-- a 2-D mesh: dp_size x tp_size
local dp_size = _world_size // tp_size

local device_type = log_utils.device_type(_world_size)
local device_mesh = init_device_mesh(device_type, { dp_size, tp_size }, { mesh_dim_names = { "dp", "tp" } })

rank_log(_rank, logger, "Device Mesh created: device_mesh=" .. tostring(device_mesh))
local tp_mesh = device_mesh["tp"]
local dp_mesh = device_mesh["dp"]

-- this rank's coordinate along dp: ranks of one tp group must see the same input
local dp_rank = dp_mesh:get_local_rank()

local simple_llama2_config = ModelArgs { dim = args.dim, n_layers = args.n_layers, n_heads = args.n_heads, vocab_size = args.vocab_size }

local model = Transformer.from_model_args(simple_llama2_config):to(device_type)
model:init_weights()

-- the root: embeddings by rows with a sequence-sharded output, the final norm on the sequence
-- pieces, the output projection by columns with a replicated output
model = parallelize_module(model, tp_mesh, {
  tok_embeddings = RowwiseParallel { input_layouts = Replicate(), output_layouts = Shard(1) },
  norm = SequenceParallel(),
  output = ColwiseParallel { input_layouts = Shard(1), output_layouts = Replicate() },
})

for _, transformer_block in pairs(model.layers) do
  local layer_tp_plan = {
    attention_norm = SequenceParallel(),
    attention = PrepareModuleInput {
      input_layouts = { Shard(1), Replicate() },
      desired_input_layouts = { Replicate(), Replicate() },
    },
    ["attention.wq"] = ColwiseParallel(),
    ["attention.wk"] = ColwiseParallel(),
    ["attention.wv"] = ColwiseParallel(),
    ["attention.wo"] = RowwiseParallel { output_layouts = Shard(1) },
    ffn_norm = SequenceParallel(),
    feed_forward = PrepareModuleInput {
      input_layouts = { Shard(1) },
      desired_input_layouts = { Replicate() },
    },
    ["feed_forward.w1"] = ColwiseParallel(),
    ["feed_forward.w2"] = RowwiseParallel { output_layouts = Shard(1) },
    ["feed_forward.w3"] = ColwiseParallel(),
  }
  parallelize_module(transformer_block, tp_mesh, layer_tp_plan)
end

-- FSDP over the dp dimension
local sharded_model = fully_shard(model, { mesh = dp_mesh })

rank_log(_rank, logger, "Model after parallelization sharded_model=" .. tostring(sharded_model) .. "\n")

local lr = 3e-3
rank_log(_rank, logger, string.format("Creating AdamW optimizer with learning rate %s", lr))
local optimizer = torch.optim.AdamW(sharded_model:parameters(), { lr = lr, foreach = true })

rank_log(_rank, logger, "\nStarting 2D training...")
local num_iterations = 10

for i = 0, num_iterations - 1 do
  -- the same seed within a tp group, different ones across dp
  torch.manual_seed(i + dp_rank)
  local inp = torch.randint(args.vocab_size, { args.batch_size, args.seq_len }, { device = device_type })

  local output = sharded_model(inp)
  output:sum():backward()
  optimizer:step()
  rank_log(_rank, logger, string.format("2D iter %d complete", i))
end

rank_log(_rank, logger, "2D training successfully completed!")

if dist.is_initialized() then dist.destroy_process_group() end
