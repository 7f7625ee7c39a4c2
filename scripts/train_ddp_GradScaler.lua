-- Document 004 (../shared/seeds/004_*.txt), train_DDP_GradScaler.py: train_ddp_autocast.lua
-- with a GradScaler (loss scaling against float16 gradient underflow). Started as
-- train_ddp_without.lua:
--
--   build/nnrepl scripts/train_ddp_GradScaler.lua --rank R --world_size N [--master_addr A] [--master_port P] ...
--   build/nnrepl --nproc-per-node N scripts/train_ddp_GradScaler.lua ...
--
-- autocast and the GradScaler follow the device the model runs on (bfloat16 on CPUs).
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
  dist.destroy_process_group()
end

common.main(train) -- the document's __main__: prints local_size, then train()
