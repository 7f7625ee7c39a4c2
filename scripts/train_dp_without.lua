-- Document 004 (../shared/seeds/004_*.txt), train_DP.py: train_without.lua with the model
-- in nn.DataParallel, which splits each batch over the GPUs (with none, it runs the model
-- as is). Checkpoint keys carry DataParallel's "module." prefix; scripts/eval_dp.lua
-- evaluates them.
--
--   build/nnrepl scripts/train_dp_without.lua [--dataset_root ../data] [--img_size 227] [--batch_size 64]
--       [--lr 1e-4] [--epochs 20] [--tensorboard True] [--tensorboard_log ../tensorboard]
--       [--cuda True] [--checkpoint ../checkpoint] [--fake-data [--fake-size 256]] [--print-every 100]
local common = require "cifar_common"
local alexnet = require("torchvision").models.alexnet
local nn = torch.nn

local args = common.parse_args({ ... })
local run = common.setup(args) -- 1-4: SummaryWriter, dataset, DataLoader

-- 5.Create model: on the GPU when there is one, then wrapped
local model = common.place(run, alexnet(), nn.DataParallel)

-- 6.Create loss
local cross_entropy_loss = nn.CrossEntropyLoss()

-- 7.Optimizer
local optim, scheduler = common.optimizer(args, model) -- AdamW(lr), ReduceLROnPlateau(patience=3)

-- 8. The loop; one step per batch:
common.train(args, run, model, optim, scheduler, function(imgs, targets)
  local outputs = model(imgs)
  local loss_train = cross_entropy_loss(outputs, targets)
  optim:zero_grad()
  loss_train:backward()
  optim:step()
  return loss_train
end)
