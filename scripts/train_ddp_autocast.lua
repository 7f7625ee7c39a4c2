-- Document 004 (../shared/seeds/004_*.txt), train_DDP_autocast.py: train_ddp_without.lua
-- with autocast; the model is the document's alexnet.py (AlexNet with autocast on its
-- forward), and the loop keeps its own region for the loss. Started as train_ddp_without.lua:
--
--   build/nnrepl scripts/train_ddp_autocast.lua --rank R --world_size N [--master_addr A] [--master_port P] ...
--   build/nnrepl --nproc-per-node N scripts/train_ddp_autocast.lua ...
--
-- autocast follows the device the model runs on: float16 on GPUs, bfloat16 on CPUs.
package.path = (debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or ".") .. "/?.lua;" .. package.path
local common = require "cifar_common"
local nn = torch.nn
local dist = torch.distributed

local args = common.parse_args({ ... }, { ddp = true })

local function train()
  local cuda = common.use_cuda(args)
  dist.init_process_group(cuda and "nccl" or "gloo", { init_method = string.format("tcp://%s:%s", args.master_addr,
    args.master_port), rank = args.rank, world_size = args.world_size })
  if cuda then torch.cuda.set_device(dist.get_node_local_rank(args.rank) % torch.cuda.device_count()) end
  local run = common.setup(args, true) -- 1-4: SummaryWriter (rank 0), dataset, DistributedSampler, DataLoader
  local device_type = run.cuda and "cuda" or "cpu"
  local function autocast() return torch.autocast(device_type) end

  -- 5.Create model
  local model = common.autocast_alexnet(device_type)
  if run.cuda then
    model = model:cuda()
    model = nn.parallel.DistributedDataParallel(model):cuda()
  else
    model = nn.parallel.DistributedDataParallel(model)
  end

  -- 6.Create loss
  local cross_entropy_loss = nn.CrossEntropyLoss()

  -- 7.Optimizer
  local optim = torch.optim.AdamW(model:parameters(), { lr = args.lr })
  local scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optim, { patience = 3, verbose = true })

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

local local_size = torch.cuda.device_count()
print(string.format("local_size: ", local_size)) -- sic: the document's format string has no field for it
train()
