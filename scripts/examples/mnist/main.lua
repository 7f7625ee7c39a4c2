-- pytorch/examples mnist/main.py in Lua: the classic MNIST CNN (model.lua), trained with
-- Adadelta and a StepLR decay per epoch, tested after each epoch.
--
--   nnrepl scripts/examples/mnist/main.lua [--batch-size 64] [--test-batch-size 1000]
--       [--epochs 14] [--lr 1.0] [--gamma 0.7] [--no-accel] [--dry-run] [--seed 1]
--       [--log-interval 10] [--save-model] [--data-root ../data]
--
-- Differences from the original: nothing is downloaded. MNIST's four IDX files
-- (train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-...) must be in
-- DATA_ROOT/MNIST/raw, DATA_ROOT/MNIST or DATA_ROOT; --data-root (new; default ../data, the
-- original's folder) says where. When they are missing, torchvision.datasets.MNIST stops with
-- an error that names the files and the folder. Debian's Fashion-MNIST (package
-- dataset-fashion-mnist) has the same format: --data-root /usr/share/datasets/fashion-mnist
-- trains on it. --save-model writes mnist_cnn.pt (torch.save of the state_dict) in the
-- current folder.
local torchvision = require "torchvision"
local argparse = require "argparse"
local datasets, transforms = torchvision.datasets, torchvision.transforms
local StepLR = optim.lr_scheduler.StepLR
local Net = require "model"

local function train(args, model, device, train_loader, optimizer, epoch)
  model:train()
  for batch_idx, data, target in train_loader:enumerate() do
    data, target = data:to(device), target:to(device)
    optimizer:zero_grad()
    local output = model(data)
    local loss = F.nll_loss(output, target)
    loss:backward()
    optimizer:step()
    if batch_idx % args.log_interval == 0 then
      print(string.format("Train Epoch: %d [%d/%d (%.0f%%)]\tLoss: %.6f",
        epoch, batch_idx * #data, #train_loader.dataset,
        100 * batch_idx / #train_loader, loss:item()))
      if args.dry_run then
        break
      end
    end
  end
end

local function test(model, device, test_loader)
  model:eval()
  local test_loss = 0
  local correct = 0
  do
    local _ <close> = torch.no_grad()
    for data, target in test_loader:iter() do
      data, target = data:to(device), target:to(device)
      local output = model(data)
      test_loss = test_loss + F.nll_loss(output, target, { reduction = "sum" }):item() -- sum up batch loss
      local pred = output:argmax({ dim = 1, keepdim = true }) -- the class of the highest log-probability
      correct = correct + pred:eq(target:view_as(pred)):sum():item()
    end
  end

  test_loss = test_loss / #test_loader.dataset

  print(string.format("\nTest set: Average loss: %.4f, Accuracy: %d/%d (%.0f%%)\n",
    test_loss, correct, #test_loader.dataset,
    100 * correct / #test_loader.dataset))
end

local function main(...)
  -- Training settings
  local parser = argparse.ArgumentParser({ description = "PyTorch MNIST Example" })
  parser:add_argument("--batch-size", { type = "int", default = 64, metavar = "N",
    help = "input batch size for training (default: 64)" })
  parser:add_argument("--test-batch-size", { type = "int", default = 1000, metavar = "N",
    help = "input batch size for testing (default: 1000)" })
  parser:add_argument("--epochs", { type = "int", default = 14, metavar = "N",
    help = "number of epochs to train (default: 14)" })
  parser:add_argument("--lr", { type = "float", default = 1.0, metavar = "LR",
    help = "learning rate (default: 1.0)" })
  parser:add_argument("--gamma", { type = "float", default = 0.7, metavar = "M",
    help = "Learning rate step gamma (default: 0.7)" })
  parser:add_argument("--no-accel", { action = "store_true",
    help = "disables accelerator" })
  parser:add_argument("--dry-run", { action = "store_true",
    help = "quickly check a single pass" })
  parser:add_argument("--seed", { type = "int", default = 1, metavar = "S",
    help = "random seed (default: 1)" })
  parser:add_argument("--log-interval", { type = "int", default = 10, metavar = "N",
    help = "how many batches to wait before logging training status" })
  parser:add_argument("--save-model", { action = "store_true",
    help = "For Saving the current Model" })
  parser:add_argument("--data-root", { default = "../data", metavar = "DIR",
    help = "folder with MNIST's IDX files, in DIR/MNIST/raw or DIR (default: ../data; nothing is downloaded)" })
  local args = parser:parse_args({ ... })

  local use_accel = not args.no_accel and torch.accelerator.is_available()

  torch.manual_seed(args.seed)

  local device
  if use_accel then
    device = torch.accelerator.current_accelerator()
  else
    device = torch.device("cpu")
  end

  local train_kwargs = { batch_size = args.batch_size }
  local test_kwargs = { batch_size = args.test_batch_size }
  if use_accel then
    local accel_kwargs = { num_workers = 1, persistent_workers = true, pin_memory = true, shuffle = true }
    for k, v in pairs(accel_kwargs) do
      train_kwargs[k] = v
      test_kwargs[k] = v
    end
  end

  local transform = transforms.Compose({
    transforms.ToTensor(),
    transforms.Normalize({ 0.1307 }, { 0.3081 }),
  })
  local dataset1 = datasets.MNIST(args.data_root, { train = true, download = true, transform = transform })
  local dataset2 = datasets.MNIST(args.data_root, { train = false, transform = transform })
  local train_loader = torch.utils.data.DataLoader(dataset1, train_kwargs)
  local test_loader = torch.utils.data.DataLoader(dataset2, test_kwargs)

  local model = Net():to(device)
  local optimizer = optim.Adadelta(model:parameters(), { lr = args.lr })

  local scheduler = StepLR(optimizer, { step_size = 1, gamma = args.gamma })
  for epoch = 1, args.epochs do
    train(args, model, device, train_loader, optimizer, epoch)
    test(model, device, test_loader)
    scheduler:step()
  end

  if args.save_model then
    torch.save(model:state_dict(), "mnist_cnn.pt")
  end
end

main(...)
