-- pytorch/examples distributed/ddp-tutorial-series/multigpu.py in Lua: single_gpu.lua made
-- distributed, one process per GPU, DistributedDataParallel and a DistributedSampler; rank 0
-- writes checkpoint.pt (the bare model's state_dict) every `save_every` epochs.
--
--   nnrepl scripts/examples/ddp_tutorial_series/multigpu.lua TOTAL_EPOCHS SAVE_EVERY [--batch_size 32]
--
-- Differences from the original:
-- - nnrepl has no torch.multiprocessing.spawn (Lua states are not forked into workers). Its
--   place is taken by spawn() below, which starts this same script again under nnrepl's
--   launcher, `nnrepl --nproc-per-node N multigpu.lua ARGS`, and waits for it; each rank then
--   calls main(rank, ...) as mp.spawn's workers do (rank = LOCAL_RANK). Running that launcher
--   line yourself does the same. Every output line of a rank is prefixed [rankR]: by the
--   launcher.
-- - ddp_setup() meets at localhost:12355 as the original does, unless MASTER_PORT is set (the
--   launcher sets a free one): init_method "tcp://" with rank and world_size, as
--   init_process_group(rank=, world_size=) reads MASTER_ADDR / MASTER_PORT.
-- - --nprocs N (a new flag) starts N ranks instead of one per GPU (the default; 2 without GPUs).
--   With fewer GPUs than ranks they run on the CPU with gloo; the lines still say [GPU<rank>].
local F = torch.nn.functional
local DataLoader = torch.utils.data.DataLoader
local DistributedSampler = torch.utils.data.distributed.DistributedSampler
local DDP = nn.parallel.DistributedDataParallel
local dist = torch.distributed
local MyTrainDataset = require("datautils").MyTrainDataset
local argparse = require "argparse"

local use_gpu -- one GPU per rank, or the CPU (set by ddp_setup)

local function ddp_setup(rank, world_size)
  -- rank: this process's number; world_size: how many processes
  local addr, port = "localhost", os.getenv("MASTER_PORT") or "12355"
  use_gpu = torch.cuda.is_available() and torch.cuda.device_count() >= world_size
  if use_gpu then torch.cuda.set_device(rank) end
  dist.init_process_group(use_gpu and "nccl" or "gloo",
    { init_method = string.format("tcp://%s:%s", addr, port), rank = rank, world_size = world_size })
end

local Trainer = {}
Trainer.__index = Trainer

function Trainer.new(model, train_data, optimizer, gpu_id, save_every)
  local self = setmetatable({}, Trainer)
  self.gpu_id = gpu_id
  self.device = use_gpu and torch.device("cuda", gpu_id) or torch.device("cpu")
  self.model = model:to(self.device)
  self.train_data = train_data
  self.optimizer = optimizer
  self.save_every = save_every
  self.model = DDP(model, { device_ids = use_gpu and { gpu_id } or nil })
  return self
end

function Trainer:_run_batch(source, targets)
  self.optimizer:zero_grad()
  local output = self.model(source)
  local loss = F.cross_entropy(output, targets)
  loss:backward()
  self.optimizer:step()
end

function Trainer:_run_epoch(epoch)
  local b_sz = #(self.train_data:iter()())
  print(string.format("[GPU%d] Epoch %d | Batchsize: %d | Steps: %d", self.gpu_id, epoch, b_sz, #self.train_data))
  self.train_data.sampler:set_epoch(epoch)
  for source, targets in self.train_data:iter() do
    source = source:to(self.device)
    targets = targets:to(self.device)
    self:_run_batch(source, targets)
  end
end

function Trainer:_save_checkpoint(epoch)
  local ckp = self.model.module:state_dict()
  local PATH = "checkpoint.pt"
  torch.save(ckp, PATH)
  print(string.format("Epoch %d | Training checkpoint saved at %s", epoch, PATH))
end

function Trainer:train(max_epochs)
  for epoch = 0, max_epochs - 1 do
    self:_run_epoch(epoch)
    if self.gpu_id == 0 and epoch % self.save_every == 0 then
      self:_save_checkpoint(epoch)
    end
  end
end

local function load_train_objs()
  local train_set = MyTrainDataset(2048) -- the data set
  local model = nn.Linear(20, 1)         -- the model
  local optimizer = optim.SGD(model:parameters(), { lr = 1e-3 })
  return train_set, model, optimizer
end

local function prepare_dataloader(dataset, batch_size)
  return DataLoader(dataset, { batch_size = batch_size, pin_memory = true, shuffle = false,
    sampler = DistributedSampler(dataset) })
end

local function main(rank, world_size, save_every, total_epochs, batch_size)
  ddp_setup(rank, world_size)
  local dataset, model, optimizer = load_train_objs()
  local train_data = prepare_dataloader(dataset, batch_size)
  local trainer = Trainer.new(model, train_data, optimizer, rank, save_every)
  trainer:train(total_epochs)
  dist.destroy_process_group()
end

-- mp.spawn's stand-in: this script again under the launcher, nprocs ranks; returns its status
local function spawn(nprocs)
  local function quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
  local cmd = { quote(arg[-1]), "--nproc-per-node", nprocs, quote(arg[0]) }
  for _, a in ipairs(arg) do cmd[#cmd + 1] = quote(a) end
  local ok, how, code = os.execute(table.concat(cmd, " "))
  return ok and 0 or (how == "exit" and code or 128 + code)
end

local parser = argparse.ArgumentParser({ description = "simple distributed training job" })
parser:add_argument("total_epochs", { type = "int", help = "Total epochs to train the model" })
parser:add_argument("save_every", { type = "int", help = "How often to save a snapshot" })
parser:add_argument("--batch_size", { default = 32, type = "int",
  help = "Input batch size on each device (default: 32)" })
parser:add_argument("--nprocs", { type = "int",
  help = "processes to start (default: the number of GPUs, 2 without any)" })
local args = parser:parse_args({ ... })

if os.getenv("LOCAL_RANK") then -- a rank started by spawn() or by the launcher
  main(tonumber(os.getenv("LOCAL_RANK")), tonumber(os.getenv("WORLD_SIZE")), args.save_every, args.total_epochs,
    args.batch_size)
else
  local world_size = args.nprocs or (torch.cuda.is_available() and torch.cuda.device_count() or 2)
  os.exit(spawn(world_size))
end
