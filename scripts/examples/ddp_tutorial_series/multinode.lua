-- pytorch/examples distributed/ddp-tutorial-series/multinode.py in Lua: multigpu_torchrun.lua
-- over several machines. Each node runs the launcher; the lines name the global rank, and only
-- global rank 0 writes snapshot.pt ({MODEL_STATE =, EPOCHS_RUN =}) every `save_every` epochs;
-- every rank resumes from snapshot.pt when it finds it (the file must be on each node).
--
--   nnrepl --nnodes 2 --node-rank 0 --nproc-per-node 4 --master-addr HOST --master-port 29500 \
--       scripts/examples/ddp_tutorial_series/multinode.lua TOTAL_EPOCHS SAVE_EVERY [--batch_size 32]
--   (the same on the other node with --node-rank 1; one node: nnrepl --nproc-per-node 2 ...)
--
-- nnrepl's launcher is torchrun's stand-in (its --rdzv options are not there: give the master's
-- address and port). Difference from the original: without one GPU per local rank it runs on
-- the CPU with gloo (the lines still say [GPU<global rank>]).
local F = torch.nn.functional
local DataLoader = torch.utils.data.DataLoader
local DistributedSampler = torch.utils.data.distributed.DistributedSampler
local DDP = nn.parallel.DistributedDataParallel
local dist = torch.distributed
local MyTrainDataset = require("datautils").MyTrainDataset
local argparse = require "argparse"

local use_gpu = torch.cuda.is_available() and torch.cuda.device_count() >= tonumber(os.getenv("LOCAL_WORLD_SIZE") or 1)

local function ddp_setup()
  if use_gpu then torch.cuda.set_device(tonumber(os.getenv("LOCAL_RANK"))) end
  dist.init_process_group(use_gpu and "nccl" or "gloo")
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local Trainer = {}
Trainer.__index = Trainer

function Trainer.new(model, train_data, optimizer, save_every, snapshot_path)
  local self = setmetatable({}, Trainer)
  self.local_rank = tonumber(os.getenv("LOCAL_RANK"))
  self.global_rank = tonumber(os.getenv("RANK"))
  self.device = use_gpu and torch.device("cuda", self.local_rank) or torch.device("cpu")
  self.model = model:to(self.device)
  self.train_data = train_data
  self.optimizer = optimizer
  self.save_every = save_every
  self.epochs_run = 0
  self.snapshot_path = snapshot_path
  if exists(snapshot_path) then
    print("Loading snapshot")
    self:_load_snapshot(snapshot_path)
  end
  self.model = DDP(self.model, { device_ids = use_gpu and { self.local_rank } or nil })
  return self
end

function Trainer:_load_snapshot(snapshot_path)
  local loc = tostring(self.device)
  local snapshot = torch.load(snapshot_path, { map_location = loc })
  self.model:load_state_dict(snapshot["MODEL_STATE"])
  self.epochs_run = snapshot["EPOCHS_RUN"]
  print(string.format("Resuming training from snapshot at Epoch %d", self.epochs_run))
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
  print(string.format("[GPU%d] Epoch %d | Batchsize: %d | Steps: %d", self.global_rank, epoch, b_sz, #self.train_data))
  self.train_data.sampler:set_epoch(epoch)
  for source, targets in self.train_data:iter() do
    source = source:to(self.device)
    targets = targets:to(self.device)
    self:_run_batch(source, targets)
  end
end

function Trainer:_save_snapshot(epoch)
  local snapshot = {
    MODEL_STATE = self.model.module:state_dict(),
    EPOCHS_RUN = epoch,
  }
  torch.save(snapshot, self.snapshot_path)
  print(string.format("Epoch %d | Training snapshot saved at %s", epoch, self.snapshot_path))
end

function Trainer:train(max_epochs)
  for epoch = self.epochs_run, max_epochs - 1 do
    self:_run_epoch(epoch)
    if self.global_rank == 0 and epoch % self.save_every == 0 then
      self:_save_snapshot(epoch)
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

local function main(save_every, total_epochs, batch_size, snapshot_path)
  snapshot_path = snapshot_path or "snapshot.pt"
  ddp_setup()
  local dataset, model, optimizer = load_train_objs()
  local train_data = prepare_dataloader(dataset, batch_size)
  local trainer = Trainer.new(model, train_data, optimizer, save_every, snapshot_path)
  trainer:train(total_epochs)
  dist.destroy_process_group()
end

local parser = argparse.ArgumentParser({ description = "simple distributed training job" })
parser:add_argument("total_epochs", { type = "int", help = "Total epochs to train the model" })
parser:add_argument("save_every", { type = "int", help = "How often to save a snapshot" })
parser:add_argument("--batch_size", { default = 32, type = "int",
  help = "Input batch size on each device (default: 32)" })
local args = parser:parse_args({ ... })

main(args.save_every, args.total_epochs, args.batch_size)
