-- pytorch/tutorials intermediate_source/ddp_tutorial.rst ("Getting Started with Distributed Data
-- Parallel") in Lua: basic DDP on a ToyModel, saving a checkpoint on rank 0 and loading it on
-- every rank (barrier, map_location), and DDP over a model split across two devices. The
-- torchrun section is elastic_ddp.lua beside this file.
--
--   nnrepl --nproc-per-node 2 scripts/tutorials/distributed/ddp_tutorial.lua [--backend gloo|nccl]
--
-- Differences from the tutorial:
-- * The tutorial's run_demo starts world_size fresh processes per demo with mp.spawn; nnrepl
--   starts the ranks once with its launcher (world_size is its WORLD_SIZE), and run_demo calls the
--   demo in each of them (the same processes set up three process groups in turn). setup() uses
--   the launcher's MASTER_ADDR and MASTER_PORT instead of setting localhost:12355 (Lua cannot
--   set environment variables).
-- * The tutorial needs 2 GPUs or more (one per rank). With fewer, the port says so and runs every
--   rank on the CPU (each model, both halves of ToyMpModel included, on "cpu").
-- * demo_model_parallel picks its devices as the tutorial does, modulo the halved world_size (on 2
--   GPUs both halves land on GPU 0; on 4, rank r uses GPUs 2r mod 2 and 2r+1 mod 2).
-- * --backend (new; default gloo, the tutorial's) picks nccl for the GPU run.
-- * demo_checkpoint prints (new) a fingerprint of the parameters after loading the checkpoint
--   and after the step (sum and index-weighted sum, %.8e), which must agree on every rank.
local argparse = require "argparse"
local dist = torch.distributed
local DDP = nn.parallel.DistributedDataParallel

local parser = argparse.ArgumentParser({ description = "Getting Started with Distributed Data Parallel" })
parser:add_argument("--backend", { default = "gloo", choices = { "gloo", "nccl" } })
local args = parser:parse_args({ ... })

local n_gpus = torch.cuda.is_available() and torch.cuda.device_count() or 0
local use_gpu = n_gpus >= 2
local function dev(i) return use_gpu and i or "cpu" end -- the tutorial's .to(rank)

local function setup(rank, world_size)
  -- initialize the process group
  dist.init_process_group(args.backend, { rank = rank, world_size = world_size })
end

local function cleanup()
  dist.destroy_process_group()
end

local ToyModel = nn.Module:extend("ToyModel")

function ToyModel:__init()
  self.net1 = nn.Linear(10, 10)
  self.relu = nn.ReLU()
  self.net2 = nn.Linear(10, 5)
end

function ToyModel:forward(x)
  return self.net2(self.relu(self.net1(x)))
end

local function demo_basic(rank, world_size)
  print(string.format("Running basic DDP example on rank %d.", rank))
  setup(rank, world_size)

  -- the model on this rank's GPU (or the CPU)
  local model = ToyModel():to(dev(rank))
  local ddp_model = DDP(model, { device_ids = use_gpu and { rank } or nil })

  local loss_fn = nn.MSELoss()
  local optimizer = optim.SGD(ddp_model:parameters(), { lr = 0.001 })

  optimizer:zero_grad()
  local outputs = ddp_model(torch.randn(20, 10))
  local labels = torch.randn(20, 5):to(dev(rank))
  loss_fn(outputs, labels):backward()
  optimizer:step()

  cleanup()
end

local function run_demo(demo_fn, world_size)
  local rank = tonumber(os.getenv("RANK"))
  if rank < world_size then demo_fn(rank, world_size) end
end

-- sum and index-weighted sum of all parameters: equal on every rank when the weights are
local function fingerprint(module)
  local flat = {}
  for i, p in ipairs(module:parameters()) do flat[i] = p:detach():double():cpu():reshape(-1) end
  local v = torch.cat(flat)
  return string.format("%.8e %.8e", v:sum():item(), (v * torch.arange(v:numel(), { dtype = torch.float64 })):sum():item())
end

local function demo_checkpoint(rank, world_size)
  print(string.format("Running DDP checkpoint example on rank %d.", rank))
  setup(rank, world_size)

  local model = ToyModel():to(dev(rank))
  local ddp_model = DDP(model, { device_ids = use_gpu and { rank } or nil })

  local CHECKPOINT_PATH = (os.getenv("TMPDIR") or "/tmp") .. "/model.checkpoint"
  if rank == 0 then
    -- every rank holds the same parameters (DDP broadcast rank 0's), so one file is enough
    torch.save(ddp_model:state_dict(), CHECKPOINT_PATH)
  end

  -- the other ranks load only once rank 0 has saved
  dist.barrier()
  -- rank 0's GPU tensors go to this rank's GPU
  local map_location = { ["cuda:0"] = string.format("cuda:%d", rank) }
  ddp_model:load_state_dict(torch.load(CHECKPOINT_PATH, { map_location = map_location }))
  print(string.format("rank %d: parameters after loading the checkpoint: %s", rank, fingerprint(ddp_model)))

  local loss_fn = nn.MSELoss()
  local optimizer = optim.SGD(ddp_model:parameters(), { lr = 0.001 })

  optimizer:zero_grad()
  local outputs = ddp_model(torch.randn(20, 10))
  local labels = torch.randn(20, 5):to(dev(rank))

  loss_fn(outputs, labels):backward()
  optimizer:step()
  print(string.format("rank %d: parameters after the step: %s", rank, fingerprint(ddp_model)))

  -- the backward's all-reduce already synchronized the ranks: no barrier before removing the file
  if rank == 0 then
    os.remove(CHECKPOINT_PATH)
  end

  cleanup()
end

local ToyMpModel = nn.Module:extend("ToyMpModel")

function ToyMpModel:__init(dev0, dev1)
  self.dev0 = dev0
  self.dev1 = dev1
  self.net1 = nn.Linear(10, 10):to(dev0)
  self.relu = nn.ReLU()
  self.net2 = nn.Linear(10, 5):to(dev1)
end

function ToyMpModel:forward(x)
  x = x:to(self.dev0)
  x = self.relu(self.net1(x))
  x = x:to(self.dev1)
  return self.net2(x)
end

local function demo_model_parallel(rank, world_size)
  print(string.format("Running DDP with model parallel example on rank %d.", rank))
  setup(rank, world_size)

  -- this rank's two devices
  local dev0 = dev((rank * 2) % world_size)
  local dev1 = dev((rank * 2 + 1) % world_size)
  local mp_model = ToyMpModel(dev0, dev1)
  local ddp_mp_model = DDP(mp_model)

  local loss_fn = nn.MSELoss()
  local optimizer = optim.SGD(ddp_mp_model:parameters(), { lr = 0.001 })

  optimizer:zero_grad()
  -- the outputs come out on dev1
  local outputs = ddp_mp_model(torch.randn(20, 10))
  local labels = torch.randn(20, 5):to(dev1)
  loss_fn(outputs, labels):backward()
  optimizer:step()

  cleanup()
end

local world_size = tonumber(os.getenv("WORLD_SIZE") or error("WORLD_SIZE is not set: start the ranks with "
  .. "nnrepl's launcher, nnrepl --nproc-per-node 2 ddp_tutorial.lua", 0))
if not use_gpu then
  print(string.format("Requires at least 2 GPUs to run, but got %d: running every rank on the CPU.", n_gpus))
end
run_demo(demo_basic, world_size)
run_demo(demo_checkpoint, world_size)
world_size = world_size // 2
run_demo(demo_model_parallel, world_size)
