-- Document 004 (../shared/seeds/004_*.txt), train_DP_autocast.py: train_dp_without.lua with
-- autocast. As the document explains, `with autocast()` around a DataParallel call does not
-- reach the replicas, so the model is the document's alexnet.py, AlexNet with autocast on
-- its forward (common.autocast_alexnet); the loop keeps its own region for the loss.
--
--   build/nnrepl scripts/train_dp_autocast.lua [--dataset_root ../data] [--img_size 227] [--batch_size 64]
--       [--lr 1e-4] [--epochs 20] [--tensorboard True] [--tensorboard_log ../tensorboard]
--       [--cuda True] [--checkpoint ../checkpoint] [--fake-data [--fake-size 256]] [--print-every 100]
--
-- autocast follows the device the model runs on: float16 on GPUs, bfloat16 on a CPU.
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
