-- Document 004 (../shared/seeds/004_*.txt), train_without.py: AlexNet on CIFAR-10 resized
-- to --img_size, AdamW (lr 1e-4), ReduceLROnPlateau(patience=3), TensorBoard logs and a
-- checkpoint per epoch; the float32 baseline of train_autocast.lua and train_GradScaler.lua.
--
--   build/nnrepl scripts/train_without.lua [--dataset_root ../data] [--img_size 227] [--batch_size 64]
--       [--lr 1e-4] [--epochs 20] [--tensorboard True] [--tensorboard_log ../tensorboard]
--       [--cuda True] [--checkpoint ../checkpoint] [--fake-data [--fake-size 256]] [--print-every 100]
--
-- The shared part (flags, dataset, loop, checkpoints, logs) is cifar_common.lua; its header
-- lists the flags beyond the document's. Without a GPU it runs on the CPU. Checkpoints are
-- safetensors files with PyTorch's keys; scripts/eval_without.lua evaluates them.
local common = require "cifar_common"
local alexnet = require("torchvision").models.alexnet
local nn = torch.nn

local args = common.parse_args({ ... })
local run = common.setup(args) -- 1-4: SummaryWriter, dataset, DataLoader

-- 5.Create model: on the GPU when there is one
local model = common.place(run, alexnet())

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
