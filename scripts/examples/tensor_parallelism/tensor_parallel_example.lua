-- pytorch/examples distributed/tensor_parallelism/tensor_parallel_example.py in Lua: tensor
-- parallelism (Megatron-LM style) on a toy MLP, Linear(10, 32) -> ReLU -> Linear(32, 5): the
-- first layer cut by columns (output features), the second by rows (input features), so one
-- all-reduce after the second gives every rank the whole output. 10 iterations of AdamW on
-- the sum of the output, the same random input on every rank.
--
--   nnrepl --nproc-per-node 2 scripts/examples/tensor_parallelism/tensor_parallel_example.lua
--
-- nnrepl's tensor parallelism: docs/distributed.md, "Tensor parallelism". Differences from the
-- original: with a GPU per rank each rank takes cuda:LOCAL_RANK and NCCL; otherwise the ranks
-- run on the CPU over Gloo (the original exits without 2 GPUs). As in the original, the
-- gradients are never zeroed, so they add up over the iterations.
local log_utils = require "log_utils"
local dist = torch.distributed
local tp = dist.tensor.parallel
local parallelize_module, ColwiseParallel, RowwiseParallel = tp.parallelize_module, tp.ColwiseParallel, tp.RowwiseParallel
local init_device_mesh = dist.device_mesh.init_device_mesh
local rank_log, get_logger = log_utils.rank_log, log_utils.get_logger

local ToyModel = require "toy_model" -- the MLP, in toy_model.lua

local logger = get_logger()

local _world_size = tonumber(os.getenv("WORLD_SIZE"))
local device_type = log_utils.device_type(_world_size)
local device_mesh = init_device_mesh(device_type, { _world_size })
local _rank = device_mesh:get_rank()

print(string.format("Starting PyTorch TP example on rank %d.", _rank))
assert(_world_size % 2 == 0, string.format("TP examples require even number of GPUs, but got %d gpus", _world_size))

rank_log(_rank, logger, "Device Mesh created: device_mesh=" .. tostring(device_mesh))

local tp_model = ToyModel():to(device_type)

-- the first Linear by columns, the second by rows
tp_model = parallelize_module(tp_model, device_mesh, {
  in_proj = ColwiseParallel(),
  out_proj = RowwiseParallel(),
})

local lr = 0.25
local optimizer = torch.optim.AdamW(tp_model:parameters(), { lr = lr, foreach = true })

local num_iters = 10
rank_log(_rank, logger, "Tensor Parallel training starting...")

for i = 0, num_iters - 1 do
  torch.manual_seed(i) -- the same input on every rank of the TP group
  local inp = torch.rand(20, 10, { device = device_type })
  local output = tp_model(inp)
  output:sum():backward()
  optimizer:step()
  rank_log(_rank, logger, string.format("Tensor Parallel iter %d completed", i))
end

rank_log(_rank, logger, "Tensor Parallel training completed!")

if dist.is_initialized() then dist.destroy_process_group() end
