-- Document 004 (../shared/seeds/004_*.txt), train_DDP.py: train_without.lua as one rank of
-- DistributedDataParallel: the ranks meet at tcp://--master_addr:--master_port, each
-- trains on its DistributedSampler share, gradients are averaged over the ranks. Rank 0
-- writes the checkpoints (keys with DDP's "module." prefix; scripts/eval_ddp.lua evaluates
-- them) and the TensorBoard logs. One process per rank, started by hand as the document does:
--
--   build/nnrepl scripts/train_ddp_without.lua --rank 0 --world_size 2 [--master_addr 127.0.0.1] [--master_port 12355] ... &
--   build/nnrepl scripts/train_ddp_without.lua --rank 1 --world_size 2 ...
--
-- or by the launcher, whose RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT become the flags'
-- defaults: build/nnrepl --nproc-per-node 2 scripts/train_ddp_without.lua [...]
-- The other flags are train_without.lua's; --batch_size is per rank. The backend is NCCL
-- on GPUs (one per rank) and Gloo on CPUs.
local common = require "cifar_common"
local alexnet = require("torchvision").models.alexnet
local nn = torch.nn
local dist = torch.distributed

local args = common.parse_args({ ... }, { ddp = true })

local function train()
  common.init_process_group(args) -- NCCL on GPUs (a GPU per rank), Gloo on CPUs
  local run = common.setup(args, true) -- 1-4: SummaryWriter (rank 0), dataset, DistributedSampler, DataLoader

  -- 5.Create model: on the GPU when there is one, then wrapped
  local model = common.place(run, alexnet(), nn.parallel.DistributedDataParallel)

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
  dist.destroy_process_group()
end

common.main(train) -- the document's __main__: prints local_size, then train()
