-- pytorch/tutorials intermediate_source/ddp_tutorial.rst, section "Initialize DDP with
-- torch.distributed.run/torchrun" (elastic_ddp.py) in Lua: the ToyModel's DDP step with the
-- process group made from the launcher's environment.
--
--   nnrepl --nproc-per-node 2 scripts/tutorials/distributed/elastic_ddp.lua
--   (the tutorial: torchrun --nnodes=2 --nproc_per_node=8 --rdzv_id=100 --rdzv_backend=c10d
--    --rdzv_endpoint=$MASTER_ADDR:29400 elastic_ddp.py; nnrepl's launcher takes --nnodes,
--    --node-rank, --master-addr and --master-port for several nodes, see docs/distributed.md)
--
-- Difference from the tutorial: without CUDA the process group is gloo and the model stays on
-- the CPU (the tutorial's "nccl" needs a GPU per rank), and the port says so.
local dist = torch.distributed
local DDP = nn.parallel.DistributedDataParallel

local ToyModel = nn.Module:extend("ToyModel")

function ToyModel:__init()
  self.net1 = nn.Linear(10, 10)
  self.relu = nn.ReLU()
  self.net2 = nn.Linear(10, 5)
end

function ToyModel:forward(x)
  return self.net2(self.relu(self.net1(x)))
end

local use_gpu = torch.cuda.is_available()

local function demo_basic()
  if not use_gpu then print("No CUDA device: gloo on the CPU instead of nccl.") end
  dist.init_process_group(use_gpu and "nccl" or "gloo")
  local rank = dist.get_rank()
  print(string.format("Start running basic DDP example on rank %d.", rank))

  -- the model on this rank's GPU (or the CPU)
  local device_id = use_gpu and rank % torch.cuda.device_count() or "cpu"
  local model = ToyModel():to(device_id)
  local ddp_model = DDP(model, { device_ids = use_gpu and { device_id } or nil })

  local loss_fn = nn.MSELoss()
  local optimizer = optim.SGD(ddp_model:parameters(), { lr = 0.001 })

  optimizer:zero_grad()
  local outputs = ddp_model(torch.randn(20, 10))
  local labels = torch.randn(20, 5):to(device_id)
  loss_fn(outputs, labels):backward()
  optimizer:step()
end

demo_basic()
