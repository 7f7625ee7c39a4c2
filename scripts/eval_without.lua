-- Document 004 (../shared/seeds/004_*.txt), eval_without.py: AlexNet loaded from
-- --checkpoint/AlexNet.pth (train_without.lua, train_autocast.lua, train_GradScaler.lua),
-- its accuracy on CIFAR-10's test set resized to --img_size, on the CPU.
--
--   build/nnrepl scripts/eval_without.lua [--dataset_root ../data] [--img_size 227] [--batch_size 64]
--       [--checkpoint ../checkpoint] [--fake-data [--fake-size 256]]
--
-- A checkpoint of DataParallel or DistributedDataParallel (keys "module.<name>") loads too,
-- with the prefix taken off. --fake-data evaluates on random images (cifar_common.lua).
local common = require "cifar_common"
local alexnet = require("torchvision").models.alexnet

local args = common.parse_args({ ... }, { eval = true })
-- 1.Create model
local model = alexnet()

-- 2-5 and the test loop
common.evaluate(args, model, false, common.strip_module)
