-- Document 004 (../shared/seeds/004_*.txt), train_DDP_autocast.py: train_ddp_without.lua
-- with autocast; the model is the document's alexnet.py (AlexNet with autocast on its
-- forward), and the loop keeps its own region for the loss. Started as train_ddp_without.lua:
--
--   build/nnrepl scripts/train_ddp_autocast.lua --rank R --world_size N [--master_addr A] [--master_port P] ...
--   build/nnrepl --nproc-per-node N scripts/train_ddp_autocast.lua ...
--
-- autocast follows the device the model runs on: float16 on GPUs, bfloat16 on CPUs.
local common = require "cifar_common"
local nn = torch.nn
local dist = torch.distributed

local args = common.parse_args({ ... }, { ddp = true })

local function train()
  common.init_process_group(args) -- NCCL on GPUs (a GPU per rank), Gloo on CPUs
  local run = common.setup(args, true) -- 1-4: SummaryWriter (rank 0), dataset, DistributedSampler, DataLoader
  local device_type = run.device_type
  local function autocast() return torch.autocast(device_type) end

  -- 5.Create model: on the GPU when there is one, then wrapped
  local model = common.place(run, common.autocast_alexnet(device_type), nn.parallel.DistributedDataParallel)

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
  dist.destroy_process_group()
end

common.main(train) -- the document's __main__: prints local_size, then train()
