-- pytorch/examples mnist_rnn/main.py in Lua: an LSTM classifier over MNIST's image rows
-- (model.lua), trained with Adadelta and a StepLR decay per epoch, tested after each epoch.
--
--   nnrepl scripts/examples/mnist_rnn/main.lua [--epochs 14] [--batch-size 64] [--lr 0.1]
--       [--gamma 0.7] [--accel] [--dry-run] [--seed 1] [--log-interval 10] [--save-model]
--       [--data-root ../data]
--
-- Differences from the original: nothing is downloaded. MNIST's four IDX files
-- (train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-...) must be in
-- DATA_ROOT/MNIST/raw or DATA_ROOT itself; --data-root (new; default ../data, the original's
-- folder) says where. When they are missing, torchvision.datasets.MNIST stops with an error
-- that names the files and the folder. Debian's Fashion-MNIST (package dataset-fashion-mnist)
-- has the same format: --data-root /usr/share/datasets/fashion-mnist trains on it.
-- --save-model writes mnist_rnn.pt (torch.save of the state_dict) in the current folder.
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
        epoch, batch_idx * data:size(0), #train_loader.dataset,
        100 * batch_idx / #train_loader, loss:item()))
      if args.dry_run then
        break
      end
    end
  end
end

local function test(args, model, device, test_loader)
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
      if args.dry_run then
        break
      end
    end
  end

  test_loss = test_loss / #test_loader.dataset

  print(string.format("\nTest set: Average loss: %.4f, Accuracy: %d/%d (%.0f%%)\n",
    test_loss, correct, #test_loader.dataset,
    100 * correct / #test_loader.dataset))
end

local function main(...)
  -- Training settings
  local parser = argparse.ArgumentParser({ description = "PyTorch MNIST Example using RNN" })
  parser:add_argument("--batch-size", { type = "int", default = 64, metavar = "N",
    help = "input batch size for training (default: 64)" })
  parser:add_argument("--test-batch-size", { type = "int", default = 1000, metavar = "N",
    help = "input batch size for testing (default: 1000)" })
  parser:add_argument("--epochs", { type = "int", default = 14, metavar = "N",
    help = "number of epochs to train (default: 14)" })
  parser:add_argument("--lr", { type = "float", default = 0.1, metavar = "LR",
    help = "learning rate (default: 0.1)" })
  parser:add_argument("--gamma", { type = "float", default = 0.7, metavar = "M",
    help = "learning rate step gamma (default: 0.7)" })
  parser:add_argument("--accel", { action = "store_true",
    help = "enables accelerator" })
  parser:add_argument("--dry-run", { action = "store_true",
    help = "quickly check a single pass" })
  parser:add_argument("--seed", { type = "int", default = 1, metavar = "S",
    help = "random seed (default: 1)" })
  parser:add_argument("--log-interval", { type = "int", default = 10, metavar = "N",
    help = "how many batches to wait before logging training status" })
  parser:add_argument("--save-model", { action = "store_true",
    help = "for Saving the current Model" })
  parser:add_argument("--data-root", { default = "../data", metavar = "DIR",
    help = "folder with MNIST's IDX files, in DIR/MNIST/raw or DIR (default: ../data; nothing is downloaded)" })
  local args = parser:parse_args({ ... })

  local device
  if args.accel then
    device = torch.accelerator.current_accelerator()
  else
    device = torch.device("cpu")
  end

  torch.manual_seed(args.seed)

  local kwargs = args.accel and { num_workers = 1, pin_memory = true } or {}
  local function loader_options(batch_size)
    local o = { batch_size = batch_size, shuffle = true }
    for k, v in pairs(kwargs) do o[k] = v end
    return o
  end
  local normalize = transforms.Compose({
    transforms.ToTensor(),
    transforms.Normalize({ 0.1307 }, { 0.3081 }),
  })
  local train_loader = torch.utils.data.DataLoader(
    datasets.MNIST(args.data_root, { train = true, download = true, transform = normalize }),
    loader_options(args.batch_size))
  local test_loader = torch.utils.data.DataLoader(
    datasets.MNIST(args.data_root, { train = false, transform = normalize }),
    loader_options(args.test_batch_size))

  local model = Net():to(device)
  local optimizer = optim.Adadelta(model:parameters(), { lr = args.lr })

  local scheduler = StepLR(optimizer, { step_size = 1, gamma = args.gamma })
  for epoch = 1, args.epochs do
    train(args, model, device, train_loader, optimizer, epoch)
    test(args, model, device, test_loader)
    scheduler:step()
  end

  if args.save_model then
    torch.save(model:state_dict(), "mnist_rnn.pt")
  end
end

main(...)
