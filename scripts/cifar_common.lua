-- What document 004's (../shared/seeds/004_*.txt) training and evaluation programs share:
-- their argparse flags, CIFAR-10 resized to --img_size (or --fake-data), the SummaryWriter,
-- moving the model to the GPU and into its wrapper, AdamW and ReduceLROnPlateau, the DDP
-- programs' process group and __main__ block, the epoch loop with its prints, timing,
-- TensorBoard scalars and a checkpoint per epoch, the evaluation loop, and the document's
-- alexnet.py (AlexNet with autocast on forward). The scripts (train_*.lua, eval_*.lua) keep
-- what differs: the model and its wrapper (DataParallel, DistributedDataParallel) and the
-- training step with its autocast and GradScaler. They load this file with
-- `local common = require "cifar_common"` (nnrepl puts a script's folder first on package.path).
--
-- Flags beyond the document's: --fake-data (random CIFAR-shaped images and labels instead
-- of the CIFAR-10 binary files), --fake-size and --print-every (the document prints every
-- 100 iterations). --tensorboard and --cuda are strings as in the document; "False",
-- "false", "0" and "no" turn them off (in Python any non-empty string counts as true).
local torchvision = require "torchvision"
local argparse = require "argparse"
local time = require "time"
local U = require "nn_util"
local DataLoader = torch.utils.data.DataLoader
local transforms = torchvision.transforms

local M = {}

local function truthy(s) return s ~= nil and s ~= "" and s ~= "False" and s ~= "false" and s ~= "0" and s ~= "no" end
function M.pybool(b) return b and "True" or "False" end

-- parse_args(argv, {eval = bool, ddp = bool}): the document's parser for its train (CV Train)
-- or eval (CV Evaluation) programs; ddp adds --rank, --world_size, --master_addr and
-- --master_port, whose defaults come from RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT when
-- a launcher (nnrepl --nproc-per-node, torchrun) set them, else are the document's.
function M.parse_args(argv, kind)
  kind = kind or {}
  local parser = argparse.ArgumentParser({ description = kind.eval and "CV Evaluation" or "CV Train" })
  local function add(name, opts) parser:add_argument(name, opts) end
  if kind.ddp then
    add("--rank", { type = "int", default = math.tointeger(tonumber(os.getenv("RANK") or "")) or 0 })
    add("--world_size", { type = "int", default = math.tointeger(tonumber(os.getenv("WORLD_SIZE") or "")) or 1 })
    add("--master_addr", { type = "str", default = os.getenv("MASTER_ADDR") or "127.0.0.1" })
    add("--master_port", { type = "str", default = os.getenv("MASTER_PORT") or "12355" })
  end
  add("--dataset", { type = "str", default = "CIFAR10", help = "CIFAR10" })
  add("--dataset_root", { type = "str", default = "../data", help = "Dataset root directory path" })
  add("--img_size", { type = "int", default = 227, help = "image size" })
  if not kind.eval then
    add("--tensorboard", { type = "str", default = "True", help = "Use tensorboard for loss visualization" })
    add("--tensorboard_log", { type = "str", default = "../tensorboard", help = "tensorboard folder" })
    add("--cuda", { type = "str", default = "True", help = "if is cuda available" })
  end
  add("--batch_size", { type = "int", default = 64, help = "batch size" })
  if not kind.eval then
    add("--lr", { type = "float", default = 1e-4, help = "learning rate" })
    add("--epochs", { type = "int", default = 20, help = "Number of epochs to train." })
  end
  add("--checkpoint", { type = "str", default = "../checkpoint", help = "Save .pth fold" })
  add("--fake-data", { action = "store_true", help = "random CIFAR-shaped data instead of CIFAR-10" })
  add("--fake-size", { type = "int", default = 256, help = "images in the fake dataset" })
  if not kind.eval then
    add("--print-every", { type = "int", default = 100, help = "iterations between progress lines" })
  end
  local args = parser:parse_args(argv)
  if not kind.eval then args.tensorboard, args.cuda = truthy(args.tensorboard), truthy(args.cuda) end
  return args
end

-- the document's `args.cuda == cuda`: run on the GPU when asked and one is there
function M.use_cuda(args) return args.cuda and torch.cuda.is_available() end

-- CIFAR-10's train or test set resized to args.img_size; with --fake-data, args.fake_size
-- random images in [0, 1) and labels 0..9 (seed 0 for train, 1 for test).
function M.dataset(args, train)
  if args.fake_data then
    torch.manual_seed(train and 0 or 1)
    return torch.utils.data.TensorDataset(torch.rand(args.fake_size, 3, args.img_size, args.img_size),
      torch.randint(0, 10, { args.fake_size }))
  elseif args.dataset == "CIFAR10" then
    return torchvision.datasets.CIFAR10({ root = args.dataset_root, train = train, transform = transforms.Compose({
      transforms.Resize(args.img_size), transforms.ToTensor() }), download = true })
  end
  error("Dataset is not CIFAR10")
end

-- The document's alexnet.py: torchvision's AlexNet with @autocast() on forward, so the
-- policy holds inside the module and in DataParallel's replicas, which run forward on
-- their own. device_type "cuda" or "cpu" (the document's torch.cuda.amp.autocast does
-- nothing on a CPU; here autocast follows the device the model runs on).
local autocast_classes = {}
function M.autocast_alexnet(device_type, ...)
  local cls = autocast_classes[device_type]
  if not cls then
    local base = torchvision.models.AlexNet
    cls = base:extend("AlexNet")
    cls.forward = torch.autocast.wrap(base.forward, device_type)
    autocast_classes[device_type] = cls
  end
  return cls(...)
end

-- Steps 1 to 4 of a training program: SummaryWriter, dataset, its size, DataLoader. With
-- distributed (after init_process_group), a DistributedSampler splits the set over the
-- ranks and only rank 0 writes TensorBoard logs and checkpoints (the document has every
-- rank write them, to the same files). Returns the run's state for M.train.
function M.setup(args, distributed)
  local run = { cuda = M.use_cuda(args), distributed = distributed, rank = 0, world_size = 1 }
  run.device_type = run.cuda and "cuda" or "cpu" -- where autocast and the GradScaler act
  if distributed then
    run.rank, run.world_size = torch.distributed.get_rank(), torch.distributed.get_world_size()
  end
  run.is_main = run.rank == 0

  -- 1.Create SummaryWriter
  if args.tensorboard and run.is_main then run.writer = torch.utils.tensorboard.SummaryWriter(args.tensorboard_log) end

  -- 2.Ready dataset
  local train_dataset = M.dataset(args, true)
  print(string.format("CUDA available: %s", M.pybool(torch.cuda.is_available())))

  -- 3.Length
  print(string.format("the train dataset size is %d", #train_dataset))

  -- 4.DataLoader
  if distributed then
    run.sampler = torch.utils.data.distributed.DistributedSampler(train_dataset)
    run.dataloader = DataLoader(train_dataset, { batch_size = args.batch_size, sampler = run.sampler, num_workers = 2,
      pin_memory = true })
  else
    run.dataloader = DataLoader(train_dataset, { batch_size = args.batch_size })
  end
  return run
end

-- Step 5's moves, the document's
--   if args.cuda == cuda: model = model.cuda(); model = Wrapper(model).cuda()
--   else: model = Wrapper(model)
-- with wrapper nn.DataParallel or nn.parallel.DistributedDataParallel (none: the bare model).
function M.place(run, model, wrapper)
  if run.cuda then model = model:cuda() end
  if wrapper then
    model = wrapper(model)
    if run.cuda then model = model:cuda() end
  end
  return model
end

-- Step 7's optimizer and scheduler, the document's AdamW(lr) and ReduceLROnPlateau(patience=3).
function M.optimizer(args, model)
  local optim = torch.optim.AdamW(model:parameters(), { lr = args.lr })
  return optim, torch.optim.lr_scheduler.ReduceLROnPlateau(optim, { patience = 3, verbose = true })
end

-- The DDP programs' dist.init_process_group: the ranks meet at tcp://--master_addr:--master_port.
-- NCCL when the run is on GPUs (each rank on its node's GPU local_rank % count), else Gloo
-- (the evaluation programs, which have no --cuda, always).
function M.init_process_group(args)
  local dist, cuda = torch.distributed, M.use_cuda(args)
  dist.init_process_group(cuda and "nccl" or "gloo", { init_method = string.format("tcp://%s:%s", args.master_addr,
    args.master_port), rank = args.rank, world_size = args.world_size })
  if cuda then torch.cuda.set_device(dist.get_node_local_rank(args.rank) % torch.cuda.device_count()) end
end

-- The DDP programs' `if __name__ == "__main__":` block: print local_size, then run main.
function M.main(main)
  local local_size = torch.cuda.device_count()
  print(string.format("local_size: ", local_size)) -- sic: the document's format string has no field for it
  main()
end

-- hours, minutes, seconds of a duration, as the document's h, m, s
local function hms(dt) return math.floor(dt // 3600), math.floor(dt % 3600 // 60), math.floor(dt % 3600 % 60) end

local function checkpoint(args, model, name)
  torch.save(model:state_dict(), string.format("%s/%s.pth", args.checkpoint, name))
end

-- Step 8, the loop: args.epochs epochs over run.dataloader; step(imgs, targets) does one
-- training step and returns the loss tensor. Prints the document's lines, logs train_loss
-- per iteration and lr per epoch, steps the scheduler on the epoch's last loss (averaged
-- over the ranks when distributed, so every rank's learning rate stays the same), saves
-- AlexNet_<epoch>.pth each epoch and AlexNet.pth at the end.
function M.train(args, run, model, optim, scheduler, step)
  local writer = run.writer
  if run.is_main then os.execute("mkdir -p '" .. args.checkpoint:gsub("'", "'\\''") .. "'") end
  local iter = 0
  local t0 = time.time()
  for epoch = 0, args.epochs - 1 do
    local t1 = time.time()
    print(string.format(" -----------------the %d number of training epoch --------------", epoch))
    if run.sampler then run.sampler:set_epoch(epoch) end
    model:train()
    local loss = 0 -- the document resets it per batch: the scheduler sees the epoch's last loss
    for imgs, targets in run.dataloader:iter() do
      loss = 0
      if run.cuda then imgs, targets = imgs:cuda(), targets:cuda() end
      local loss_train = step(imgs, targets)
      loss = loss_train:item() + loss
      if writer then writer:add_scalar("train_loss", loss_train:item(), iter) end
      iter = iter + 1
      if iter % args.print_every == 0 then
        print(string.format("Epoch: %d | Iteration: %d | lr: %s | loss: %s | np.mean(loss): %s ", epoch, iter,
          U.pyfloat(optim.param_groups[1].lr), U.pyfloat(loss_train:item()), U.pyfloat(loss)))
      end
    end
    if writer then writer:add_scalar("lr", optim.param_groups[1].lr, epoch) end
    if run.world_size > 1 then
      local mean = torch.tensor({ loss / run.world_size }, { dtype = torch.float64 })
      if run.cuda then mean = mean:cuda() end
      torch.distributed.all_reduce(mean)
      loss = mean:item()
    end
    scheduler:step(loss)
    local h, m, s = hms(time.time() - t1)
    print(string.format("epoch %d is finished, and time is %dh%dm%ds", epoch, h, m, s))

    if epoch % 1 == 0 and run.is_main then
      print(string.format("Save state, iter: %d ", epoch))
      checkpoint(args, model, "AlexNet_" .. epoch)
    end
  end

  if run.is_main then checkpoint(args, model, "AlexNet") end
  -- the document computes the seconds here as ((t3 - t0) % 3600) // 60, minutes again
  local h_t, m_t, s_t = hms(time.time() - t0)
  print(string.format("The finished time is %dh%dm%ds", h_t, m_t, s_t))
  if writer then writer:close() end
end

-- A checkpoint's state_dict with the "module." prefix that DataParallel and
-- DistributedDataParallel add taken off, so a bare model loads it; others as they are.
function M.strip_module(state_dict)
  for k in pairs(state_dict) do
    if not k:find("^module%.") then return state_dict end
  end
  local out = {}
  for k, v in pairs(state_dict) do out[k:sub(#"module." + 1)] = v end
  return out
end

-- The evaluation programs' steps 2 to 5 and the test loop: the test set, its size, the
-- DataLoader (a DistributedSampler's share when distributed), args.checkpoint/AlexNet.pth
-- loaded into model (through load(state_dict) when given), and the accuracy printed as
-- the document prints it, a tensor. The document loads the checkpoint again for every
-- batch; here once, before the loop. When distributed, the correct counts are summed over
-- the ranks, so each rank reports the accuracy over the whole test set.
function M.evaluate(args, model, distributed, load)
  -- 2.Ready Dataset
  local test_dataset = M.dataset(args, false)

  -- 3.Length
  local test_dataset_size = #test_dataset
  print(string.format("the test dataset size is %d", test_dataset_size))

  -- 4.DataLoader
  local test_dataloader
  if distributed then
    local test_sampler = torch.utils.data.distributed.DistributedSampler(test_dataset)
    test_dataloader = DataLoader(test_dataset, { sampler = test_sampler, batch_size = args.batch_size, num_workers = 2,
      pin_memory = true })
  else
    test_dataloader = DataLoader(test_dataset, { batch_size = args.batch_size })
  end

  -- 5. Set some parameters for testing the network
  local total_accuracy = torch.tensor(0)

  -- test
  model:eval()
  local device = torch.device("cpu")
  local model_load = torch.load(string.format("%s/AlexNet.pth", args.checkpoint), device)
  model:load_state_dict(load and load(model_load) or model_load)
  do
    local _ <close> = torch.no_grad()
    for imgs, targets in test_dataloader:iter() do
      imgs, targets = imgs:to(device), targets:to(device)
      local outputs = model(imgs)
      outputs = outputs:to(device)
      local accuracy = outputs:argmax(1):eq(targets):sum()
      total_accuracy = total_accuracy + accuracy
    end
  end
  if distributed and torch.distributed.get_world_size() > 1 then torch.distributed.all_reduce(total_accuracy) end
  local accuracy = total_accuracy / test_dataset_size
  print(string.format("the total accuracy is %s", tostring(accuracy)))
  return accuracy
end

return M
