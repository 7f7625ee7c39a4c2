-- Document 004 (../shared/seeds/004_*.txt), train_autocast_without.py: train_without.lua
-- with the forward pass and the loss under autocast (float16 on a GPU).
--
--   build/nnrepl scripts/train_autocast.lua [--dataset_root ../data] [--img_size 227] [--batch_size 64]
--       [--lr 1e-4] [--epochs 20] [--tensorboard True] [--tensorboard_log ../tensorboard]
--       [--cuda True] [--checkpoint ../checkpoint] [--fake-data [--fake-size 256]] [--print-every 100]
--
-- The document imports torch.cuda.amp.autocast, which does nothing for CPU tensors; here
-- autocast follows the device the model runs on, so a CPU run uses CPU autocast (bfloat16).
local common = require "cifar_common"
local alexnet = require("torchvision").models.alexnet
local nn = torch.nn

local args = common.parse_args({ ... })
local run = common.setup(args) -- 1-4: SummaryWriter, dataset, DataLoader
local function autocast() return torch.autocast(run.device_type) end

-- 5.Create model: on the GPU when there is one
local model = common.place(run, alexnet())

-- 6.Create loss
local cross_entropy_loss = nn.CrossEntropyLoss()

-- 7.Optimizer
local optim, scheduler = common.optimizer(args, model) -- AdamW(lr), ReduceLROnPlateau(patience=3)

-- 8. The loop; one step per batch:
common.train(args, run, model, optim, scheduler, function(imgs, targets)
  local outputs, loss_train
  do
    local _ <close> = autocast()
    outputs = model(imgs)
    loss_train = cross_entropy_loss(outputs, targets)
  end
  optim:zero_grad()
  loss_train:backward()
  optim:step()
  return loss_train
end)
