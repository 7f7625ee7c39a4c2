-- pytorch/examples distributed/minGPT-ddp/mingpt/trainer.py in Lua: a generic DDP training loop
-- with gradient clipping, optional float16 autocast with a GradScaler, an evaluation pass, and
-- snapshots (model and optimizer state and the finished epoch) that a restarted run resumes from.
--   local tr = require "trainer"   -- tr.Trainer, tr.TrainerConfig, tr.Snapshot, tr.accelerator
-- Differences from the original:
-- - snapshots go to local files only: an s3:// snapshot_path raises an error (no boto3 here).
-- - tr.accelerator(): the accelerator when there is one per local rank, else nil: the ranks then
--   run on the CPU (the original needs the GPUs).
local dataclass = require("dataclass")
local DataLoader = torch.utils.data.DataLoader
local DistributedSampler = torch.utils.data.distributed.DistributedSampler
local DDP = nn.parallel.DistributedDataParallel

local M = {}

M.TrainerConfig = dataclass.dataclass("TrainerConfig", {
  { "max_epochs" },
  { "batch_size" },
  { "data_loader_workers" },
  { "grad_norm_clip" },
  { "snapshot_path" },
  { "save_every" },
  { "use_amp" },
})

M.Snapshot = dataclass.dataclass("Snapshot", {
  { "model_state" },
  { "optimizer_state" },
  { "finished_epoch" },
})

function M.accelerator()
  local ranks = tonumber(os.getenv("LOCAL_WORLD_SIZE") or "1")
  if torch.accelerator.is_available() and torch.accelerator.device_count() >= ranks then
    return torch.accelerator.current_accelerator()
  end
  return nil
end

-- a launcher variable (os.environ[name] in the original), with an error saying how to start the ranks
function M.env_rank(name)
  local v = os.getenv(name)
  if not v then
    error(name .. " is not set: start the ranks with nnrepl's launcher (nnrepl --nproc-per-node N main.lua)", 0)
  end
  return tonumber(v)
end

local Trainer = {}
Trainer.__index = Trainer
M.Trainer = Trainer

function Trainer.new(trainer_config, model, optimizer, train_dataset, test_dataset)
  local self = setmetatable({}, Trainer)
  self.config = trainer_config
  -- the launcher's variables
  self.local_rank = M.env_rank("LOCAL_RANK")
  self.global_rank = M.env_rank("RANK")
  -- the device
  self.acc = M.accelerator()
  self.device = self.acc and torch.device(string.format("%s:%d", self.acc.type, self.local_rank)) or torch.device("cpu")
  self.device_type = self.device.type
  -- the data
  self.train_dataset = train_dataset
  self.train_loader = self:_prepare_dataloader(train_dataset)
  self.test_loader = test_dataset and self:_prepare_dataloader(test_dataset) or nil
  -- the training state
  self.epochs_run = 0
  self.model = model:to(self.device)
  self.optimizer = optimizer
  self.save_every = self.config.save_every
  if self.config.use_amp then
    self.scaler = torch.amp.GradScaler(self.device_type)
  end
  -- resume from the snapshot when there is one
  if self.config.snapshot_path == nil then
    self.config.snapshot_path = "snapshot.pt"
  end
  self:_load_snapshot()
  -- DDP makes every rank start from rank 0's weights
  self.model = DDP(self.model, { device_ids = self.acc and { self.local_rank } or nil })
  return self
end

function Trainer:_prepare_dataloader(dataset)
  return DataLoader(dataset, {
    batch_size = self.config.batch_size,
    pin_memory = true,
    shuffle = false,
    num_workers = self.config.data_loader_workers,
    sampler = DistributedSampler(dataset),
  })
end

function Trainer:_load_snapshot()
  local path = self.config.snapshot_path
  if path:match("^s3://") then error("Trainer: s3:// snapshots are not supported in nnrepl: use a local path", 0) end
  local f = io.open(path, "rb")
  if not f then
    print("Snapshot not found. Training model from scratch")
    return
  end
  f:close()
  local snapshot_data = torch.load(path, { map_location = "cpu" })

  local snapshot = M.Snapshot(snapshot_data)
  self.model:load_state_dict(snapshot.model_state)
  self.optimizer:load_state_dict(snapshot.optimizer_state)
  self.epochs_run = snapshot.finished_epoch
  print(string.format("Resuming training from snapshot at Epoch %d", self.epochs_run))
end

function Trainer:_run_batch(source, targets, train)
  if train == nil then train = true end
  local _, loss
  do
    local _g <close> = torch.set_grad_enabled(train)
    local _a <close> = torch.autocast(self.device_type, { dtype = torch.float16, enabled = self.config.use_amp })
    _, loss = self.model(source, targets)
  end

  if train then
    self.optimizer:zero_grad({ set_to_none = true })
    if self.config.use_amp then
      self.scaler:scale(loss):backward()
      nn.utils.clip_grad_norm_(self.model:parameters(), self.config.grad_norm_clip)
      self.scaler:step(self.optimizer)
      self.scaler:update()
    else
      loss:backward()
      nn.utils.clip_grad_norm_(self.model:parameters(), self.config.grad_norm_clip)
      self.optimizer:step()
    end
  end

  return loss:item()
end

function Trainer:_run_epoch(epoch, dataloader, train)
  if train == nil then train = true end
  if train then
    dataloader.sampler:set_epoch(epoch)
  end
  for iter, source, targets in dataloader:enumerate() do
    local step_type = train and "Train" or "Eval"
    source = source:to(self.device)
    targets = targets:to(self.device)
    local batch_loss = self:_run_batch(source, targets, train)
    if iter % 100 == 0 then
      print(string.format("[RANK%d] Epoch %d | Iter %d | %s Loss %.5f", self.global_rank, epoch, iter, step_type,
        batch_loss))
    end
  end
end

function Trainer:_save_snapshot(epoch)
  -- what to save
  local model = self.model
  local raw_model = model.module or model
  local snapshot = M.Snapshot({
    model_state = raw_model:state_dict(),
    optimizer_state = self.optimizer:state_dict(),
    finished_epoch = epoch,
  })
  -- save it
  snapshot = dataclass.asdict(snapshot)
  if self.config.snapshot_path:match("^s3://") then
    error("Trainer: s3:// snapshots are not supported in nnrepl: use a local path", 0)
  else
    torch.save(snapshot, self.config.snapshot_path)
  end

  print(string.format("Snapshot saved at epoch %d", epoch))
end

function Trainer:train()
  for e = self.epochs_run, self.config.max_epochs - 1 do
    local epoch = e + 1
    self:_run_epoch(epoch, self.train_loader, true)
    if self.local_rank == 0 and epoch % self.save_every == 0 then
      self:_save_snapshot(epoch)
    end
    -- evaluation
    if self.test_loader then
      self:_run_epoch(epoch, self.test_loader, false)
    end
  end
end

return M
