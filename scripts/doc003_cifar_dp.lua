-- Document 003 (../shared/seeds/003_*.txt), its closing example: a CIFAR-10 CNN (conv 3->6 5x5,
-- pool, conv 6->16 5x5, fc 400->120->84->10) trained with SGD and momentum under nn.DataParallel
-- when there is more than one GPU; after each epoch it prints
-- "Test set: Average loss: 0.0180, Accuracy: 1234/10000 (12%)".
--
--   build/nnrepl scripts/doc003_cifar_dp.lua [--data-root ./data] [--epochs 10] [--batch-size 128]
--       [--lr 0.01] [--momentum 0.9] [--num-workers 4] [--fake-data [--fake-size 512]] [--limit N] [--seed N]
--
-- The document's settings are the defaults. CIFAR-10 comes from its binary files
-- (cifar-10-batches-bin under --data-root; nothing is downloaded); --fake-data draws random
-- images and labels of CIFAR-10's shape instead (--fake-size training images, a quarter as
-- many test images), through the same transforms. --limit N keeps the first N images of
-- each split. Without a GPU it runs on the CPU; with one GPU, without DataParallel.
local torchvision = require "torchvision"
local argparse = require "argparse"
local DataLoader, Subset = torch.utils.data.DataLoader, torch.utils.data.Subset
local transforms = torchvision.transforms
local CIFAR10 = torchvision.datasets.CIFAR10

local parser = argparse.ArgumentParser({ prog = "doc003_cifar_dp.lua",
  description = "Document 003's CIFAR-10 CNN under nn.DataParallel" })
parser:add_argument("--data-root", { default = "./data", help = "folder holding cifar-10-batches-bin (default %(default)s)" })
parser:add_argument("--epochs", { type = "int", default = 10, help = "epochs (default %(default)s)" })
parser:add_argument("--batch-size", { type = "int", default = 128, help = "batch size (default %(default)s)" })
parser:add_argument("--lr", { type = "float", default = 0.01, help = "SGD learning rate (default %(default)s)" })
parser:add_argument("--momentum", { type = "float", default = 0.9, help = "SGD momentum (default %(default)s)" })
parser:add_argument("--num-workers", { type = "int", default = 4, help = "DataLoader worker threads (default %(default)s)" })
parser:add_argument("--fake-data", { action = "store_true", help = "random CIFAR-shaped data instead of CIFAR-10" })
parser:add_argument("--fake-size", { type = "int", default = 512, help = "training images of --fake-data (default %(default)s)" })
parser:add_argument("--limit", { type = "int", help = "use only the first N images of each split" })
parser:add_argument("--seed", { type = "int", help = "random seed (default: none)" })
local cli = parser:parse_args({ ... })
if cli.seed then torch.manual_seed(cli.seed) end

-- print a line without breaking the progress bar on a terminal
local bar
local function say(line)
  if bar then bar:write(line) else print(line) end
end

-- the model (scripts/doc003_net.lua)
local Net = require "doc003_net"

-- training
local function train(model, device, train_loader, optimizer, criterion, epoch)
  model:train()
  bar = torch.utils.progress(train_loader, { desc = string.format("epoch %d train", epoch), leave = false })
  for data, target in bar do
    data, target = data:to(device), target:to(device)
    optimizer:zero_grad()
    local output = model(data)
    local loss = criterion(output, target)
    loss:backward()
    optimizer:step()
  end
  bar = nil
end

-- testing
local function test(model, device, test_loader, criterion, epoch)
  model:eval()
  local test_loss = 0
  local correct = 0
  do
    local _ <close> = torch.no_grad()
    bar = torch.utils.progress(test_loader, { desc = string.format("epoch %d test", epoch), leave = false })
    for data, target in bar do
      data, target = data:to(device), target:to(device)
      local output = model(data)
      test_loss = test_loss + criterion(output, target):item()
      local pred = output:argmax({ dim = 1, keepdim = true })
      correct = correct + pred:eq(target:view_as(pred)):sum():item()
    end
    bar = nil
  end

  test_loss = test_loss / #test_loader.dataset
  local accuracy = 100. * correct / #test_loader.dataset
  say(string.format("Test set: Average loss: %.4f, Accuracy: %d/%d (%.0f%%)",
    test_loss, correct, #test_loader.dataset, accuracy))
end

-- CIFAR-shaped random images and labels: uint8 images go through the same transforms
local FakeCIFAR10 = torchvision.datasets.VisionDataset:extend("FakeCIFAR10")

function FakeCIFAR10:__init(size, transform)
  self.data = torch.randint(0, 256, { size, 3, 32, 32 }, { dtype = torch.uint8 })
  self.targets = torch.randint(0, 10, { size })
  self.transform = transform
end

local function first(dataset, n)
  if n == nil or n >= #dataset then return dataset end
  local indices = {}
  for i = 1, n do indices[i] = i - 1 end
  return Subset(dataset, indices)
end

local function main()
  -- the settings
  local batch_size = cli.batch_size
  local epochs = cli.epochs
  local lr = cli.lr
  local momentum = cli.momentum
  local num_workers = cli.num_workers
  local num_gpus = torch.cuda.device_count()

  -- the datasets
  local transform = transforms.Compose({
    transforms.ToTensor(),
    transforms.Normalize({ 0.5, 0.5, 0.5 }, { 0.5, 0.5, 0.5 }),
  })
  local train_dataset, test_dataset
  if cli.fake_data then
    train_dataset = FakeCIFAR10(cli.fake_size, transform)
    test_dataset = FakeCIFAR10(math.max(1, cli.fake_size // 4), transform)
  else
    local ok, err = pcall(function()
      train_dataset = CIFAR10({ root = cli.data_root, train = true, download = true, transform = transform })
      test_dataset = CIFAR10({ root = cli.data_root, train = false, download = true, transform = transform })
    end)
    if not ok then
      io.stderr:write((tostring(err):gsub("^[^:]*:%d+: ", "")), "\n(give --data-root, or --fake-data to train on random CIFAR-shaped data)\n")
      os.exit(1)
    end
  end
  train_dataset, test_dataset = first(train_dataset, cli.limit), first(test_dataset, cli.limit)
  local train_loader = DataLoader(train_dataset, { batch_size = batch_size, shuffle = true, num_workers = num_workers })
  local test_loader = DataLoader(test_dataset, { batch_size = batch_size, shuffle = false, num_workers = num_workers })

  -- the model and the optimizer
  local model = Net()
  if num_gpus > 1 then
    model = nn.DataParallel(model)
  end
  local device = torch.device(torch.cuda.is_available() and "cuda" or "cpu")
  model:to(device)
  local optimizer = optim.SGD(model:parameters(), { lr = lr, momentum = momentum })
  local criterion = nn.CrossEntropyLoss()

  -- train and test
  for epoch = 1, epochs do
    train(model, device, train_loader, optimizer, criterion, epoch)
    test(model, device, test_loader, criterion, epoch)
  end
end

main()
