-- Document 004 (../shared/seeds/004_*.txt), eval_DP.py: AlexNet in nn.DataParallel, so the
-- checkpoint of train_dp_*.lua (keys "module.<name>") loads as it is, evaluated on
-- CIFAR-10's test set resized to --img_size, on the CPU.
--
--   build/nnrepl scripts/eval_dp.lua [--dataset_root ../data] [--img_size 227] [--batch_size 64]
--       [--checkpoint ../checkpoint] [--fake-data [--fake-size 256]]
local common = require "cifar_common"
local alexnet = require("torchvision").models.alexnet

local args = common.parse_args({ ... }, { eval = true })
-- 1.Create model
local model = alexnet()
model = torch.nn.DataParallel(model)

-- 2-5 and the test loop
common.evaluate(args, model)
