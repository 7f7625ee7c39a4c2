-- Document 004 (../shared/seeds/004_*.txt), train_without.py: AlexNet on CIFAR-10 resized
-- to --img_size, AdamW (lr 1e-4), ReduceLROnPlateau(patience=3), TensorBoard logs and a
-- checkpoint per epoch; the float32 baseline of train_autocast.lua and train_GradScaler.lua.
--
--   build/nnrepl scripts/train_without.lua [--dataset_root ../data] [--img_size 227] [--batch_size 64]
--       [--lr 1e-4] [--epochs 20] [--tensorboard True] [--tensorboard_log ../tensorboard]
--       [--cuda True] [--checkpoint ../checkpoint] [--fake-data [--fake-size 256]] [--print-every 100]
--
-- The document's flags, plus --fake-data (random CIFAR-shaped images and labels instead of
-- the CIFAR-10 binary files), --fake-size and --print-every (the document prints every 100
-- iterations). As in the document, --tensorboard and --cuda are strings; here "False",
-- "false", "0" and "no" turn them off (in Python any non-empty string counts as true).
-- Without a GPU it runs on the CPU. Checkpoints are safetensors files with PyTorch's keys.
local torchvision = require "torchvision"
local argparse = require "argparse"
local time = require "time"
local U = require "nn_util"
local nn, DataLoader = torch.nn, torch.utils.data.DataLoader
local transforms = torchvision.transforms
local alexnet = torchvision.models.alexnet

local function parse_args(argv)
  local parser = argparse.ArgumentParser({ description = "CV Train" })
  parser:add_argument("--dataset", { type = "str", default = "CIFAR10", help = "CIFAR10" })
  parser:add_argument("--dataset_root", { type = "str", default = "../data", help = "Dataset root directory path" })
  parser:add_argument("--img_size", { type = "int", default = 227, help = "image size" })
  parser:add_argument("--tensorboard", { type = "str", default = "True", help = "Use tensorboard for loss visualization" })
  parser:add_argument("--tensorboard_log", { type = "str", default = "../tensorboard", help = "tensorboard folder" })
  parser:add_argument("--cuda", { type = "str", default = "True", help = "if is cuda available" })
  parser:add_argument("--batch_size", { type = "int", default = 64, help = "batch size" })
  parser:add_argument("--lr", { type = "float", default = 1e-4, help = "learning rate" })
  parser:add_argument("--epochs", { type = "int", default = 20, help = "Number of epochs to train." })
  parser:add_argument("--checkpoint", { type = "str", default = "../checkpoint", help = "Save .pth fold" })
  parser:add_argument("--fake-data", { action = "store_true", help = "random CIFAR-shaped data instead of CIFAR-10" })
  parser:add_argument("--fake-size", { type = "int", default = 256, help = "images in the fake dataset" })
  parser:add_argument("--print-every", { type = "int", default = 100, help = "iterations between progress lines" })
  return parser:parse_args(argv)
end

local function truthy(s) return s ~= nil and s ~= "" and s ~= "False" and s ~= "false" and s ~= "0" and s ~= "no" end
local function pybool(b) return b and "True" or "False" end

local args = parse_args({ ... })
args.tensorboard, args.cuda = truthy(args.tensorboard), truthy(args.cuda)

-- 1.Create SummaryWriter
local writer
if args.tensorboard then writer = torch.utils.tensorboard.SummaryWriter(args.tensorboard_log) end

-- 2.Ready dataset
local train_dataset
if args.fake_data then
  torch.manual_seed(0)
  train_dataset = torch.utils.data.TensorDataset(torch.rand(args.fake_size, 3, args.img_size, args.img_size),
    torch.randint(0, 10, { args.fake_size }))
elseif args.dataset == "CIFAR10" then
  train_dataset = torchvision.datasets.CIFAR10({ root = args.dataset_root, train = true, transform = transforms.Compose({
    transforms.Resize(args.img_size), transforms.ToTensor() }), download = true })
else
  error("Dataset is not CIFAR10")
end
local cuda = torch.cuda.is_available()
print(string.format("CUDA available: %s", pybool(cuda)))

-- 3.Length
local train_dataset_size = #train_dataset
print(string.format("the train dataset size is %d", train_dataset_size))

-- 4.DataLoader
local train_dataloader = DataLoader(train_dataset, { batch_size = args.batch_size })

-- 5.Create model
local model = alexnet()
local use_cuda = args.cuda and cuda -- the document's `args.cuda == cuda`
if use_cuda then model = model:cuda() end

-- 6.Create loss
local cross_entropy_loss = nn.CrossEntropyLoss()

-- 7.Optimizer
local optim = torch.optim.AdamW(model:parameters(), { lr = args.lr })
local scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optim, { patience = 3, verbose = true })
os.execute("mkdir -p '" .. args.checkpoint:gsub("'", "'\\''") .. "'")
-- 8. Set some parameters to control loop
-- epoch
local iter = 0
local t0 = time.time()
for epoch = 0, args.epochs - 1 do
  local t1 = time.time()
  print(string.format(" -----------------the %d number of training epoch --------------", epoch))
  model:train()
  local loss
  for imgs, targets in train_dataloader:iter() do
    loss = 0
    if use_cuda then
      cross_entropy_loss = cross_entropy_loss:cuda()
      imgs, targets = imgs:cuda(), targets:cuda()
    end
    local outputs = model(imgs)
    local loss_train = cross_entropy_loss(outputs, targets)
    loss = loss_train:item() + loss
    if args.tensorboard then writer:add_scalar("train_loss", loss_train:item(), iter) end

    optim:zero_grad()
    loss_train:backward()
    optim:step()
    iter = iter + 1
    if iter % args.print_every == 0 then
      print(string.format("Epoch: %d | Iteration: %d | lr: %s | loss: %s | np.mean(loss): %s ", epoch, iter,
        U.pyfloat(optim.param_groups[1].lr), U.pyfloat(loss_train:item()), U.pyfloat(loss)))
    end
  end
  if args.tensorboard then writer:add_scalar("lr", optim.param_groups[1].lr, epoch) end
  scheduler:step(loss)
  local t2 = time.time()
  local h = (t2 - t1) // 3600
  local m = ((t2 - t1) % 3600) // 60
  local s = ((t2 - t1) % 3600) % 60
  print(string.format("epoch %d is finished, and time is %dh%dm%ds", epoch, math.floor(h), math.floor(m), math.floor(s)))

  if epoch % 1 == 0 then
    print(string.format("Save state, iter: %d ", epoch))
    torch.save(model:state_dict(), string.format("%s/AlexNet_%d.pth", args.checkpoint, epoch))
  end
end

torch.save(model:state_dict(), string.format("%s/AlexNet.pth", args.checkpoint))
local t3 = time.time()
local h_t = (t3 - t0) // 3600
local m_t = ((t3 - t0) % 3600) // 60
local s_t = ((t3 - t0) % 3600) // 60 -- sic: the document divides the seconds by 60 too
print(string.format("The finished time is %dh%dm%ds", math.floor(h_t), math.floor(m_t), math.floor(s_t)))
if args.tensorboard then writer:close() end
