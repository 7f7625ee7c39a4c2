-- pytorch/examples distributed/ddp-tutorial-series/single_gpu.py in Lua: the tutorial's starting
-- point, one process training nn.Linear(20, 1) with SGD on MyTrainDataset(2048), writing
-- checkpoint.pt (the model's state_dict) every `save_every` epochs.
--
--   nnrepl scripts/examples/ddp_tutorial_series/single_gpu.lua TOTAL_EPOCHS SAVE_EVERY [--batch_size 32]
--
-- Difference from the original: it trains on GPU 0 when there is one and on the CPU otherwise
-- (the original needs a GPU); the lines still say [GPU0]. The loss is F.cross_entropy of a
-- one-column output against a float target, as in the original: a softmax over one class, so
-- the loss and gradients are zero and the weights do not move (the tutorial is about the
-- plumbing, not the model).
local F = torch.nn.functional
local DataLoader = torch.utils.data.DataLoader
local MyTrainDataset = require("datautils").MyTrainDataset
local argparse = require "argparse"

local Trainer = {}
Trainer.__index = Trainer

function Trainer.new(model, train_data, optimizer, gpu_id, save_every)
  local self = setmetatable({}, Trainer)
  self.gpu_id = gpu_id
  self.device = torch.cuda.is_available() and torch.device("cuda", gpu_id) or torch.device("cpu")
  self.model = model:to(self.device)
  self.train_data = train_data
  self.optimizer = optimizer
  self.save_every = save_every
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
  for source, targets in self.train_data:iter() do
    source = source:to(self.device)
    targets = targets:to(self.device)
    self:_run_batch(source, targets)
  end
end

function Trainer:_save_checkpoint(epoch)
  local ckp = self.model:state_dict()
  local PATH = "checkpoint.pt"
  torch.save(ckp, PATH)
  print(string.format("Epoch %d | Training checkpoint saved at %s", epoch, PATH))
end

function Trainer:train(max_epochs)
  for epoch = 0, max_epochs - 1 do
    self:_run_epoch(epoch)
    if epoch % self.save_every == 0 then
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
  return DataLoader(dataset, { batch_size = batch_size, pin_memory = true, shuffle = true })
end

local function main(device, total_epochs, save_every, batch_size)
  local dataset, model, optimizer = load_train_objs()
  local train_data = prepare_dataloader(dataset, batch_size)
  local trainer = Trainer.new(model, train_data, optimizer, device, save_every)
  trainer:train(total_epochs)
end

local parser = argparse.ArgumentParser({ description = "simple distributed training job" })
parser:add_argument("total_epochs", { type = "int", help = "Total epochs to train the model" })
parser:add_argument("save_every", { type = "int", help = "How often to save a snapshot" })
parser:add_argument("--batch_size", { default = 32, type = "int",
  help = "Input batch size on each device (default: 32)" })
local args = parser:parse_args({ ... })

local device = 0 -- GPU 0 (the CPU when there is none)
main(device, args.total_epochs, args.save_every, args.batch_size)
