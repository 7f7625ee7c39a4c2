-- pytorch/examples imagenet/main.py ported to nnrepl: trains a torchvision classifier (-a ARCH,
-- resnet18 by default) on ImageNet laid out as DIR/train/<class>/*.jpg and DIR/val/<class>/*.jpg,
-- line by line as the original (AverageMeter, ProgressMeter, accuracy and Summary are in
-- meters.lua beside this file).
--
--   nnrepl scripts/examples/imagenet/main.lua -a resnet18 --dummy --epochs 1 -b 32
--   nnrepl scripts/examples/imagenet/main.lua -a resnet50 --lr 0.1 /data/imagenet
--   nnrepl scripts/examples/imagenet/main.lua --resume checkpoint.pth.tar -e /data/imagenet
--   nnrepl --nproc-per-node 4 scripts/examples/imagenet/main.lua --dist-url tcp://127.0.0.1:29500 \
--       --dist-backend nccl --multiprocessing-distributed --world-size 1 --rank 0 /data/imagenet
--
-- Same flags, prints ("Epoch: [e][ i/n]\tTime ...", "Test: [ i/n]\t...", " *   Acc@1 x Acc@5 y")
-- and files (checkpoint.pth.tar each epoch, copied to model_best.pth.tar when Acc@1 is the best
-- yet, with epoch, arch, state_dict, best_acc1, optimizer and scheduler) as the original.
-- Differences from the original:
-- * --multiprocessing-distributed: nnrepl has no torch.multiprocessing.spawn. Start the script
--   with nnrepl's launcher instead, `nnrepl --nproc-per-node N main.lua --multiprocessing-distributed
--   ...` with the original's other flags: each launched process is what mp.spawn would have
--   started, its LOCAL_RANK the `gpu` index and N the processes per node (`ngpus_per_node`).
--   Without the launcher the flag is an error saying so. With --dist-url env:// the launcher's
--   node count and node rank stand for --world-size and --rank when those are not given.
-- * --pretrained: nothing is downloaded; torchvision's builder raises an error saying how to
--   load local weights (model:load_state_dict(torch.load(path))).
-- * -a/--arch chooses among torchvision's classification model builders (Python's list also
--   holds torchvision's lowercase helper functions, get_model and the like).
-- * warnings go to standard error as "UserWarning: ..." lines.
-- As in the original, on the CPU the model is not wrapped (no DistributedDataParallel): with
-- several ranks on the CPU each trains its own model on its share of the data, and validation's
-- Acc@1 / Acc@5 are summed over the ranks.
local argparse = require "argparse"
local time = require "time"
local torchvision = require "torchvision"
local random = require "random"
local datasets = torchvision.datasets
local models = torchvision.models
local transforms = torchvision.transforms
local dist = torch.distributed
local StepLR = optim.lr_scheduler.StepLR
local Subset = torch.utils.data.Subset
local meters = require "meters"
local Summary, AverageMeter, ProgressMeter, accuracy = meters.Summary, meters.AverageMeter, meters.ProgressMeter,
  meters.accuracy

local model_names = {}
do
  local builders = {}
  for _, name in ipairs(models.list_models()) do builders[name] = true end
  for name, fn in pairs(models) do
    if builders[name] and name == name:lower() and type(fn) == "function" then model_names[#model_names + 1] = name end
  end
  table.sort(model_names)
end

local parser = argparse.ArgumentParser({ description = "PyTorch ImageNet Training" })
parser:add_argument("data", { metavar = "DIR", nargs = "?", default = "imagenet",
  help = "path to dataset (default: imagenet)" })
parser:add_argument("-a", "--arch", { metavar = "ARCH", default = "resnet18", choices = model_names,
  help = "model architecture: " .. table.concat(model_names, " | ") .. " (default: resnet18)" })
parser:add_argument("-j", "--workers", { default = 4, type = "int", metavar = "N",
  help = "number of data loading workers (default: 4)" })
parser:add_argument("--epochs", { default = 90, type = "int", metavar = "N", help = "number of total epochs to run" })
parser:add_argument("--start-epoch", { default = 0, type = "int", metavar = "N",
  help = "manual epoch number (useful on restarts)" })
parser:add_argument("-b", "--batch-size", { default = 256, type = "int", metavar = "N",
  help = "mini-batch size (default: 256), this is the total batch size of all GPUs on the current node "
    .. "when using Data Parallel or Distributed Data Parallel" })
parser:add_argument("--lr", "--learning-rate", { default = 0.1, type = "float", metavar = "LR",
  help = "initial learning rate", dest = "lr" })
parser:add_argument("--momentum", { default = 0.9, type = "float", metavar = "M", help = "momentum" })
parser:add_argument("--wd", "--weight-decay", { default = 1e-4, type = "float", metavar = "W",
  help = "weight decay (default: 1e-4)", dest = "weight_decay" })
parser:add_argument("-p", "--print-freq", { default = 10, type = "int", metavar = "N",
  help = "print frequency (default: 10)" })
parser:add_argument("--resume", { default = "", type = "str", metavar = "PATH",
  help = "path to latest checkpoint (default: none)" })
parser:add_argument("-e", "--evaluate", { dest = "evaluate", action = "store_true",
  help = "evaluate model on validation set" })
parser:add_argument("--pretrained", { dest = "pretrained", action = "store_true", help = "use pre-trained model" })
parser:add_argument("--world-size", { default = -1, type = "int", help = "number of nodes for distributed training" })
parser:add_argument("--rank", { default = -1, type = "int", help = "node rank for distributed training" })
parser:add_argument("--dist-url", { default = "tcp://224.66.41.62:23456", type = "str",
  help = "url used to set up distributed training" })
parser:add_argument("--dist-backend", { default = "nccl", type = "str", help = "distributed backend" })
parser:add_argument("--seed", { default = nil, type = "int", help = "seed for initializing training. " })
parser:add_argument("--gpu", { default = nil, type = "int", help = "GPU id to use." })
parser:add_argument("--no-accel", { action = "store_true", help = "disables accelerator" })
parser:add_argument("--multiprocessing-distributed", { action = "store_true",
  help = "Use multi-processing distributed training to launch N processes per node, which has N GPUs. "
    .. "This is the fastest way to use PyTorch for either single node or multi node data parallel training" })
parser:add_argument("--dummy", { action = "store_true", help = "use fake data to benchmark" })

local best_acc1 = 0

local function warn(msg) io.stderr:write("UserWarning: ", msg, "\n") end

-- an integer from the environment (Python's int(os.environ[name]))
local function env_int(name)
  local v = os.getenv(name)
  return math.tointeger(tonumber(v)) or error(string.format("environment variable %s is %s, not an integer", name,
    v and string.format("%q", v) or "not set"), 0)
end

-- under nnrepl's launcher with --multiprocessing-distributed, each process is one mp.spawn would start
local function launched_worker(args)
  return args.multiprocessing_distributed and os.getenv("LOCAL_RANK") ~= nil
end

local train, validate, save_checkpoint

local function main_worker(gpu, ngpus_per_node, args)
  args.gpu = gpu

  local use_accel = not args.no_accel and torch.accelerator.is_available()

  local device
  if use_accel then
    if args.gpu ~= nil then
      torch.accelerator.set_device_index(args.gpu)
    end
    device = torch.accelerator.current_accelerator()
  else
    device = torch.device("cpu")
  end

  if args.distributed then
    if args.dist_url == "env://" and args.rank == -1 then
      args.rank = launched_worker(args) and env_int("GROUP_RANK") or env_int("RANK")
    end
    if args.multiprocessing_distributed then
      -- the rank among all processes: the node's rank times its processes, plus this one's index
      args.rank = args.rank * ngpus_per_node + gpu
    end
    dist.init_process_group({ backend = args.dist_backend, init_method = args.dist_url,
      world_size = args.world_size, rank = args.rank })
  end
  -- create model
  local model
  if args.pretrained then
    print(string.format("=> using pre-trained model '%s'", args.arch))
    model = models[args.arch]({ pretrained = true })
  else
    print(string.format("=> creating model '%s'", args.arch))
    model = models[args.arch]()
  end

  if not use_accel then
    print("using CPU, this will be slow")
  elseif args.distributed then
    -- one device per process when --gpu (or the launcher) names it, else DDP spreads over all
    if device.type == "cuda" then
      if args.gpu ~= nil then
        torch.cuda.set_device(args.gpu)
        model:cuda(device)
        -- -b is the node's batch: each of its processes takes its share
        args.batch_size = math.floor(args.batch_size / ngpus_per_node)
        args.workers = math.floor((args.workers + ngpus_per_node - 1) / ngpus_per_node)
        model = nn.parallel.DistributedDataParallel(model, { device_ids = { args.gpu } })
      else
        model:cuda()
        model = nn.parallel.DistributedDataParallel(model)
      end
    end
  elseif device.type == "cuda" then
    -- DataParallel splits each batch over the visible GPUs
    if args.arch:find("^alexnet") or args.arch:find("^vgg") then
      model.features = nn.DataParallel(model.features)
      model:cuda()
    else
      model = nn.DataParallel(model):cuda()
    end
  else
    model:to(device)
  end

  -- define loss function (criterion), optimizer, and learning rate scheduler
  local criterion = nn.CrossEntropyLoss():to(device)

  local optimizer = optim.SGD(model:parameters(), args.lr, { momentum = args.momentum,
    weight_decay = args.weight_decay })

  -- the learning rate divided by 10 every 30 epochs
  local scheduler = StepLR(optimizer, { step_size = 30, gamma = 0.1 })

  -- optionally resume from a checkpoint
  if args.resume ~= "" then
    local f = io.open(args.resume, "rb")
    if f then
      f:close()
      print(string.format("=> loading checkpoint '%s'", args.resume))
      local checkpoint
      if args.gpu == nil then
        checkpoint = torch.load(args.resume)
      else
        -- Map model to be loaded to specified single gpu.
        local loc = string.format("%s:%d", device.type, args.gpu)
        checkpoint = torch.load(args.resume, { map_location = loc })
      end
      args.start_epoch = checkpoint.epoch
      best_acc1 = checkpoint.best_acc1
      if args.gpu ~= nil and torch.is_tensor(best_acc1) then
        -- best_acc1 may be from a checkpoint from a different GPU
        best_acc1 = best_acc1:to(args.gpu)
      end
      model:load_state_dict(checkpoint.state_dict)
      optimizer:load_state_dict(checkpoint.optimizer)
      scheduler:load_state_dict(checkpoint.scheduler)
      print(string.format("=> loaded checkpoint '%s' (epoch %d)", args.resume, checkpoint.epoch))
    else
      print(string.format("=> no checkpoint found at '%s'", args.resume))
    end
  end

  -- Data loading code
  local train_dataset, val_dataset
  if args.dummy then
    print("=> Dummy data is used!")
    train_dataset = datasets.FakeData(1281167, { 3, 224, 224 }, 1000, transforms.ToTensor())
    val_dataset = datasets.FakeData(50000, { 3, 224, 224 }, 1000, transforms.ToTensor())
  else
    local traindir = args.data .. "/train"
    local valdir = args.data .. "/val"
    local normalize = transforms.Normalize({ mean = { 0.485, 0.456, 0.406 }, std = { 0.229, 0.224, 0.225 } })

    train_dataset = datasets.ImageFolder(traindir, transforms.Compose({
      transforms.RandomResizedCrop(224),
      transforms.RandomHorizontalFlip(),
      transforms.ToTensor(),
      normalize,
    }))

    val_dataset = datasets.ImageFolder(valdir, transforms.Compose({
      transforms.Resize(256),
      transforms.CenterCrop(224),
      transforms.ToTensor(),
      normalize,
    }))
  end

  local train_sampler, val_sampler
  if args.distributed then
    train_sampler = torch.utils.data.distributed.DistributedSampler(train_dataset)
    val_sampler = torch.utils.data.distributed.DistributedSampler(val_dataset, { shuffle = false, drop_last = true })
  end

  local train_loader = torch.utils.data.DataLoader(train_dataset, { batch_size = args.batch_size,
    shuffle = train_sampler == nil, num_workers = args.workers, pin_memory = true, sampler = train_sampler })

  local val_loader = torch.utils.data.DataLoader(val_dataset, { batch_size = args.batch_size, shuffle = false,
    num_workers = args.workers, pin_memory = true, sampler = val_sampler })

  if args.evaluate then
    validate(val_loader, model, criterion, args)
    return
  end

  for epoch = args.start_epoch, args.epochs - 1 do
    if args.distributed then
      train_sampler:set_epoch(epoch)
    end

    -- train for one epoch
    train(train_loader, model, criterion, optimizer, epoch, device, args)

    -- evaluate on validation set
    local acc1 = validate(val_loader, model, criterion, args)

    scheduler:step()

    -- remember best acc@1 and save checkpoint (max keeps the first of equals, as Python's)
    local is_best = acc1 > best_acc1
    best_acc1 = (best_acc1 > acc1) and best_acc1 or acc1

    if not args.multiprocessing_distributed or (args.multiprocessing_distributed
          and args.rank % ngpus_per_node == 0) then
      save_checkpoint({
        epoch = epoch + 1,
        arch = args.arch,
        state_dict = model:state_dict(),
        best_acc1 = best_acc1,
        optimizer = optimizer:state_dict(),
        scheduler = scheduler:state_dict(),
      }, is_best)
    end
  end
end

local function main()
  local args = parser:parse_args()

  if args.seed ~= nil then
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = true
    torch.backends.cudnn.benchmark = false
    warn("You have chosen to seed training. This will turn on the CUDNN deterministic setting, which can slow "
      .. "down your training considerably! You may see unexpected behavior when restarting from checkpoints.")
  end

  if args.gpu ~= nil then
    warn("You have chosen a specific GPU. This will completely disable data parallelism.")
  end

  if args.dist_url == "env://" and args.world_size == -1 then
    if launched_worker(args) then -- the launcher's WORLD_SIZE counts processes; --world-size counts nodes
      args.world_size = env_int("WORLD_SIZE") // env_int("LOCAL_WORLD_SIZE")
    else
      args.world_size = env_int("WORLD_SIZE")
    end
  end

  args.distributed = args.world_size > 1 or args.multiprocessing_distributed

  local use_accel = not args.no_accel and torch.accelerator.is_available()

  local device
  if use_accel then
    device = torch.accelerator.current_accelerator()
  else
    device = torch.device("cpu")
  end

  print(string.format("Using device: %s", device))

  local ngpus_per_node
  if device.type == "cuda" then
    ngpus_per_node = torch.accelerator.device_count()
    if ngpus_per_node == 1 and args.dist_backend == "nccl" then
      warn("nccl backend >=2.5 requires GPU count>1, see https://github.com/NVIDIA/nccl/issues/103 perhaps use 'gloo'")
    end
  else
    ngpus_per_node = 1
  end

  if args.multiprocessing_distributed then
    -- mp.spawn's part is the launcher's: this process is worker LOCAL_RANK of LOCAL_WORLD_SIZE
    if not launched_worker(args) then
      error("--multiprocessing-distributed: nnrepl has no torch.multiprocessing.spawn; start one process per GPU "
        .. "with the launcher instead: nnrepl --nproc-per-node N " .. (arg and arg[0] or "main.lua")
        .. " --multiprocessing-distributed ...", 0)
    end
    ngpus_per_node = env_int("LOCAL_WORLD_SIZE")
    -- Since we have ngpus_per_node processes per node, the total world_size
    -- needs to be adjusted accordingly
    args.world_size = ngpus_per_node * args.world_size
    main_worker(env_int("LOCAL_RANK"), ngpus_per_node, args)
  else
    -- Simply call main_worker function
    main_worker(args.gpu, ngpus_per_node, args)
  end
end

function train(train_loader, model, criterion, optimizer, epoch, device, args)
  local use_accel = not args.no_accel and torch.accelerator.is_available()

  local batch_time = AverageMeter("Time", use_accel, ":6.3f", Summary.NONE)
  local data_time = AverageMeter("Data", use_accel, ":6.3f", Summary.NONE)
  local losses = AverageMeter("Loss", use_accel, ":.4e", Summary.NONE)
  local top1 = AverageMeter("Acc@1", use_accel, ":6.2f", Summary.NONE)
  local top5 = AverageMeter("Acc@5", use_accel, ":6.2f", Summary.NONE)
  local progress = ProgressMeter(#train_loader, { batch_time, data_time, losses, top1, top5 },
    string.format("Epoch: [%d]", epoch))

  -- switch to train mode
  model:train()

  local end_ = time.time()
  for i, images, target in train_loader:enumerate() do
    -- measure data loading time
    data_time:update(time.time() - end_)

    -- move data to the same device as model
    images = images:to(device, { non_blocking = true })
    target = target:to(device, { non_blocking = true })

    -- compute output
    local output = model(images)
    local loss = criterion(output, target)

    -- measure accuracy and record loss
    local acc1, acc5 = accuracy(output, target, { 1, 5 })
    losses:update(loss:item(), images:size(0))
    top1:update(acc1[0], images:size(0))
    top5:update(acc5[0], images:size(0))

    -- compute gradient and do SGD step
    optimizer:zero_grad()
    loss:backward()
    optimizer:step()

    -- measure elapsed time
    batch_time:update(time.time() - end_)
    end_ = time.time()

    if i % args.print_freq == 0 then
      progress:display(i + 1)
    end
  end
end

function validate(val_loader, model, criterion, args)
  local use_accel = not args.no_accel and torch.accelerator.is_available()
  local batch_time, losses, top1, top5, progress

  local function run_validate(loader, base_progress)
    base_progress = base_progress or 0

    local device
    if use_accel then
      device = torch.accelerator.current_accelerator()
    else
      device = torch.device("cpu")
    end

    local _ <close> = torch.no_grad()
    local end_ = time.time()
    for i, images, target in loader:enumerate() do
      i = base_progress + i
      if use_accel then
        if args.gpu ~= nil and device.type == "cuda" then
          torch.accelerator.set_device_index(args.gpu)
          images = images:cuda(args.gpu, { non_blocking = true })
          target = target:cuda(args.gpu, { non_blocking = true })
        else
          images = images:to(device)
          target = target:to(device)
        end
      end

      -- compute output
      local output = model(images)
      local loss = criterion(output, target)

      -- measure accuracy and record loss
      local acc1, acc5 = accuracy(output, target, { 1, 5 })
      losses:update(loss:item(), images:size(0))
      top1:update(acc1[0], images:size(0))
      top5:update(acc5[0], images:size(0))

      -- measure elapsed time
      batch_time:update(time.time() - end_)
      end_ = time.time()

      if i % args.print_freq == 0 then
        progress:display(i + 1)
      end
    end
  end

  batch_time = AverageMeter("Time", use_accel, ":6.3f", Summary.NONE)
  losses = AverageMeter("Loss", use_accel, ":.4e", Summary.NONE)
  top1 = AverageMeter("Acc@1", use_accel, ":6.2f", Summary.AVERAGE)
  top5 = AverageMeter("Acc@5", use_accel, ":6.2f", Summary.AVERAGE)
  -- the samples the ranks' equal shares leave over are validated afterwards, one more batch line
  local leftover = args.distributed and (#val_loader.sampler * args.world_size < #val_loader.dataset)
  progress = ProgressMeter(#val_loader + (leftover and 1 or 0), { batch_time, losses, top1, top5 }, "Test: ")

  -- switch to evaluate mode
  model:eval()

  run_validate(val_loader)
  if args.distributed then
    top1:all_reduce()
    top5:all_reduce()
  end

  if leftover then
    local aux_val_dataset = Subset(val_loader.dataset,
      torch.arange(#val_loader.sampler * args.world_size, #val_loader.dataset))
    local aux_val_loader = torch.utils.data.DataLoader(aux_val_dataset, { batch_size = args.batch_size,
      shuffle = false, num_workers = args.workers, pin_memory = true })
    run_validate(aux_val_loader, #val_loader)
  end

  progress:display_summary()

  return top1.avg
end

local function copyfile(src, dst)
  local fin = assert(io.open(src, "rb"))
  local data = fin:read("a")
  fin:close()
  local fout = assert(io.open(dst, "wb"))
  fout:write(data)
  fout:close()
end

function save_checkpoint(state, is_best, filename)
  filename = filename or "checkpoint.pth.tar"
  torch.save(state, filename)
  if is_best then
    copyfile(filename, "model_best.pth.tar")
  end
end

main()
