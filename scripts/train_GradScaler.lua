-- Document 004 (../shared/seeds/004_*.txt), train_GradScaler_without.py: train_without.lua
-- with autocast and a GradScaler (loss scaling against float16 gradient underflow).
--
--   build/nnrepl scripts/train_GradScaler.lua [--dataset_root ../data] [--img_size 227] [--batch_size 64]
--       [--lr 1e-4] [--epochs 20] [--tensorboard True] [--tensorboard_log ../tensorboard]
--       [--cuda True] [--checkpoint ../checkpoint] [--fake-data [--fake-size 256]] [--print-every 100]
--
-- The document imports torch.cuda.amp's autocast and GradScaler, which do nothing on a
-- machine without a GPU; here both follow the device the model runs on, so a CPU run uses
-- CPU autocast (bfloat16) and a CPU GradScaler.
local common = require "cifar_common"
local alexnet = require("torchvision").models.alexnet
local nn = torch.nn

local args = common.parse_args({ ... })
local run = common.setup(args) -- 1-4: SummaryWriter, dataset, DataLoader
local device_type = run.device_type
local function autocast() return torch.autocast(device_type) end

-- 5.Create model: on the GPU when there is one
local model = common.place(run, alexnet())

-- 6.Create loss
local cross_entropy_loss = nn.CrossEntropyLoss()

-- 7.Optimizer
local optim, scheduler = common.optimizer(args, model) -- AdamW(lr), ReduceLROnPlateau(patience=3)
local scaler = torch.amp.GradScaler(device_type)

-- 8. The loop; one step per batch:
common.train(args, run, model, optim, scheduler, function(imgs, targets)
  optim:zero_grad()
  local outputs, loss_train
  do
    local _ <close> = autocast()
    outputs = model(imgs)
    loss_train = cross_entropy_loss(outputs, targets)
  end
  scaler:scale(loss_train):backward()
  scaler:step(optim)
  scaler:update()
  return loss_train
end)
