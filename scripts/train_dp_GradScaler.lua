-- Document 004 (../shared/seeds/004_*.txt), train_DP_GradScaler.py: train_dp_autocast.lua
-- with a GradScaler (loss scaling against float16 gradient underflow). The model is the
-- document's alexnet.py, AlexNet with autocast on its forward, so the policy holds in
-- DataParallel's replicas.
--
--   build/nnrepl scripts/train_dp_GradScaler.lua [--dataset_root ../data] [--img_size 227] [--batch_size 64]
--       [--lr 1e-4] [--epochs 20] [--tensorboard True] [--tensorboard_log ../tensorboard]
--       [--cuda True] [--checkpoint ../checkpoint] [--fake-data [--fake-size 256]] [--print-every 100]
--
-- autocast and the GradScaler follow the device the model runs on (bfloat16 on a CPU).
local common = require "cifar_common"
local nn = torch.nn

local args = common.parse_args({ ... })
local run = common.setup(args) -- 1-4: SummaryWriter, dataset, DataLoader
local device_type = run.device_type
local function autocast() return torch.autocast(device_type) end

-- 5.Create model: on the GPU when there is one, then wrapped
local model = common.place(run, common.autocast_alexnet(device_type), nn.DataParallel)

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
