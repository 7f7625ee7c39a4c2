-- Document 004 (../shared/seeds/004_*.txt), eval_DDP.py: AlexNet in DistributedDataParallel
-- (Gloo, on the CPU), so the checkpoint of train_ddp_*.lua (keys "module.<name>") loads as
-- it is; each rank evaluates its DistributedSampler share of CIFAR-10's test set. The
-- document divides each rank's count by the whole set's size; here the counts are summed
-- over the ranks first, so every rank prints the accuracy over the whole set.
--
--   build/nnrepl scripts/eval_ddp.lua [--rank 0] [--world_size 1] [--master_addr 127.0.0.1] [--master_port 12355]
--       [--dataset_root ../data] [--img_size 227] [--batch_size 64] [--checkpoint ../checkpoint]
--       [--fake-data [--fake-size 256]]
--   build/nnrepl --nproc-per-node N scripts/eval_ddp.lua ...
local common = require "cifar_common"
local alexnet = require("torchvision").models.alexnet
local dist = torch.distributed

local args = common.parse_args({ ... }, { eval = true, ddp = true })

local function eval()
  common.init_process_group(args) -- Gloo: evaluation runs on the CPU
  -- 1.Create model
  local model = alexnet()
  model = torch.nn.parallel.DistributedDataParallel(model)

  -- 2-5 and the test loop
  common.evaluate(args, model, true)
  dist.destroy_process_group()
end

common.main(eval) -- the document's __main__: prints local_size, then eval()
