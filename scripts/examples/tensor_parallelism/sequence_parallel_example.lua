-- pytorch/examples distributed/tensor_parallelism/sequence_parallel_example.py in Lua: sequence
-- parallelism on the toy MLP of tensor_parallel_example.lua. Each rank's input is its own piece
-- of the batch (dim 0, Shard(0)): the first Linear, cut by columns, all-gathers it; the second,
-- cut by rows, reduce-scatters its output back into this rank's piece. 10 iterations of AdamW
-- on the sum of the output.
--
--   nnrepl --nproc-per-node 2 scripts/examples/tensor_parallelism/sequence_parallel_example.lua
--
-- Differences from the original: with a GPU per rank each rank takes cuda:LOCAL_RANK and NCCL;
-- otherwise the ranks run on the CPU over Gloo (the original exits without 2 GPUs). As in the
-- original no seed is set: every process starts from the same default seed (PyTorch's), so the
-- ranks draw the same 20 rows, each taken as its piece of a batch of 20 x world rows; the
-- gradients are never zeroed.
local log_utils = require "log_utils"
local dist = torch.distributed
local tp = dist.tensor.parallel
local Shard = dist.tensor.Shard
local parallelize_module, ColwiseParallel, RowwiseParallel = tp.parallelize_module, tp.ColwiseParallel, tp.RowwiseParallel
local init_device_mesh = dist.device_mesh.init_device_mesh
local rank_log, get_logger = log_utils.rank_log, log_utils.get_logger

local ToyModel = require "toy_model" -- the MLP, in toy_model.lua

local logger = get_logger()

local _world_size = tonumber(os.getenv("WORLD_SIZE"))
local device_type = log_utils.device_type(_world_size)
local device_mesh = init_device_mesh(device_type, { _world_size })
local _rank = device_mesh:get_rank()

print(string.format("Starting PyTorch Sequence Parallel example on rank %d.", _rank))

rank_log(_rank, logger, "Device Mesh created: device_mesh=" .. tostring(device_mesh))

local model = ToyModel():to(device_type)

-- the input and output sharded on dim 0
local sp_model = parallelize_module(model, device_mesh, {
  in_proj = ColwiseParallel({ input_layouts = Shard(0) }),
  out_proj = RowwiseParallel({ output_layouts = Shard(0) }),
})

local lr = 0.25
local optimizer = torch.optim.AdamW(sp_model:parameters(), { lr = lr, foreach = true })

local num_iters = 10
rank_log(_rank, logger, "Sequence Parallel training starting...")

for i = 0, num_iters - 1 do
  local inp = torch.rand(20, 10, { device = device_type })
  local output = sp_model(inp)
  output:sum():backward()
  optimizer:step()
  rank_log(_rank, logger, string.format("Sequence Parallel iter %d completed", i))
end

rank_log(_rank, logger, "Sequence Parallel training completed!")

if dist.is_initialized() then dist.destroy_process_group() end
