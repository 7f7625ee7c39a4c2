-- pytorch/examples siamese_network/main.py in Lua: a Siamese network (model.lua: ResNet-18
-- features of two images, a small MLP and a sigmoid) learns whether two MNIST images show the
-- same digit, from pairs that APP_MATCHER draws at random (even index: same class, odd
-- index: different classes), with BCELoss, Adadelta and a StepLR decay per epoch.
--
--   nnrepl scripts/examples/siamese_network/main.lua [--epochs 14] [--batch-size 64]
--       [--test-batch-size 1000] [--lr 1.0] [--gamma 0.7] [--no-accel] [--dry-run] [--seed 1]
--       [--log-interval 10] [--save-model] [--data-root ../data]
--
-- Differences from the original: nothing is downloaded. MNIST's four IDX files
-- (train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-...) must be in
-- DATA_ROOT/MNIST/raw or DATA_ROOT itself; --data-root (new; default ../data, the original's
-- folder) says where. When they are missing, torchvision.datasets.MNIST stops with an error
-- that names the files and the folder. Debian's Fashion-MNIST (package dataset-fashion-mnist)
-- has the same format: --data-root /usr/share/datasets/fashion-mnist trains on it. The pairs
-- come from Lua's math.random, seeded with --seed (Python's random module is left unseeded
-- there, so its pairs differ from run to run). As in the original, the images are the raw
-- 0..255 values as floats. --save-model writes siamese_network.pt (torch.save of the
-- state_dict) in the current folder.
local torchvision = require "torchvision"
local argparse = require "argparse"
local datasets = torchvision.datasets
local Dataset = torch.utils.data.Dataset
local StepLR = optim.lr_scheduler.StepLR
local SiameseNetwork = require "model"

local random = { randint = function(a, b) return math.random(a, b) end } -- Python's random.randint(a, b)

-- Pairs of MNIST images with a target of 1 (same class) or 0 (different classes).
local APP_MATCHER = Dataset:extend("APP_MATCHER")

function APP_MATCHER:__init(root, train, download)
  -- the MNIST images and labels
  self.dataset = datasets.MNIST(root, { train = train, download = download or false })

  -- (N, 28, 28) uint8 -> (N, 1, 28, 28): the channel dimension the network expects
  self.data = self.dataset.data:unsqueeze(1):clone()

  self:group_examples()
end

-- grouped_examples[k]: the indices of the images of class k (an int64 tensor)
function APP_MATCHER:group_examples()
  local targets = self.dataset.targets:clone()

  self.grouped_examples = {}
  for i = 0, 9 do
    self.grouped_examples[i] = torch.where(targets:eq(i))[1]
  end
end

function APP_MATCHER:__len()
  return self.data.shape[0]
end

-- A random first image; for an even index a different image of its class (target 1), for an
-- odd one an image of another class (target 0).
function APP_MATCHER:__getitem(index)
  -- a random class, and a random image of it
  local selected_class = random.randint(0, 9)
  local random_index_1 = random.randint(0, self.grouped_examples[selected_class].shape[0] - 1)
  local index_1 = self.grouped_examples[selected_class][random_index_1]:item()
  local image_1 = self.data[index_1]:clone():float()

  local image_2, target
  if index % 2 == 0 then
    -- same class: another image of it (not the first one again)
    local random_index_2 = random.randint(0, self.grouped_examples[selected_class].shape[0] - 1)
    while random_index_2 == random_index_1 do
      random_index_2 = random.randint(0, self.grouped_examples[selected_class].shape[0] - 1)
    end
    local index_2 = self.grouped_examples[selected_class][random_index_2]:item()
    image_2 = self.data[index_2]:clone():float()
    target = torch.tensor(1, { dtype = torch.float })
  else
    -- different class: a random other class, and a random image of it
    local other_selected_class = random.randint(0, 9)
    while other_selected_class == selected_class do
      other_selected_class = random.randint(0, 9)
    end
    local random_index_2 = random.randint(0, self.grouped_examples[other_selected_class].shape[0] - 1)
    local index_2 = self.grouped_examples[other_selected_class][random_index_2]:item()
    image_2 = self.data[index_2]:clone():float()
    target = torch.tensor(0, { dtype = torch.float })
  end

  return image_1, image_2, target
end

local function train(args, model, device, train_loader, optimizer, epoch)
  model:train()

  local criterion = nn.BCELoss() -- a binary same/different target: BCELoss rather than a triplet loss

  for batch_idx, images_1, images_2, targets in train_loader:enumerate() do
    images_1, images_2, targets = images_1:to(device), images_2:to(device), targets:to(device)
    optimizer:zero_grad()
    local outputs = model(images_1, images_2):squeeze()
    local loss = criterion(outputs, targets)
    loss:backward()
    optimizer:step()
    if batch_idx % args.log_interval == 0 then
      print(string.format("Train Epoch: %d [%d/%d (%.0f%%)]\tLoss: %.6f",
        epoch, batch_idx * images_1:size(0), #train_loader.dataset,
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

  local criterion = nn.BCELoss()

  do
    local _ <close> = torch.no_grad()
    for images_1, images_2, targets in test_loader:iter() do
      images_1, images_2, targets = images_1:to(device), images_2:to(device), targets:to(device)
      local outputs = model(images_1, images_2):squeeze()
      test_loss = test_loss + criterion(outputs, targets):sum():item() -- the batch's mean loss, summed over batches
      local pred = torch.where(outputs:gt(0.5), 1, 0) -- 1: "same class"
      correct = correct + pred:eq(targets:view_as(pred)):sum():item()
    end
  end

  test_loss = test_loss / #test_loader.dataset

  -- (the batch means divided by the number of pairs make this a small number: 0.0001 after the
  -- first epoch with the default settings, as in the original)
  print(string.format("\nTest set: Average loss: %.4f, Accuracy: %d/%d (%.0f%%)\n",
    test_loss, correct, #test_loader.dataset,
    100 * correct / #test_loader.dataset))
end

local function main(...)
  -- Training settings
  local parser = argparse.ArgumentParser({ description = "PyTorch Siamese network Example" })
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
  parser:add_argument("--dry-run", { action = "store_true", default = false,
    help = "quickly check a single pass" })
  parser:add_argument("--seed", { type = "int", default = 1, metavar = "S",
    help = "random seed (default: 1)" })
  parser:add_argument("--log-interval", { type = "int", default = 10, metavar = "N",
    help = "how many batches to wait before logging training status" })
  parser:add_argument("--save-model", { action = "store_true", default = false,
    help = "For Saving the current Model" })
  parser:add_argument("--data-root", { default = "../data", metavar = "DIR",
    help = "folder with MNIST's IDX files, in DIR/MNIST/raw or DIR (default: ../data; nothing is downloaded)" })
  local args = parser:parse_args({ ... })

  local use_accel = not args.no_accel and torch.accelerator.is_available()

  torch.manual_seed(args.seed)
  math.randomseed(args.seed) -- the pairs (Python's random stays unseeded)

  local device
  if use_accel then
    device = torch.accelerator.current_accelerator()
  else
    device = torch.device("cpu")
  end

  print(string.format("Using device: %s", device))

  local train_kwargs = { batch_size = args.batch_size }
  local test_kwargs = { batch_size = args.test_batch_size }
  if use_accel then
    local accel_kwargs = { num_workers = 1, pin_memory = true, shuffle = true }
    for k, v in pairs(accel_kwargs) do
      train_kwargs[k] = v
      test_kwargs[k] = v
    end
  end

  local train_dataset = APP_MATCHER(args.data_root, true, true)
  local test_dataset = APP_MATCHER(args.data_root, false)
  local train_loader = torch.utils.data.DataLoader(train_dataset, train_kwargs)
  local test_loader = torch.utils.data.DataLoader(test_dataset, test_kwargs)

  local model = SiameseNetwork():to(device)
  local optimizer = optim.Adadelta(model:parameters(), { lr = args.lr })

  local scheduler = StepLR(optimizer, { step_size = 1, gamma = args.gamma })
  for epoch = 1, args.epochs do
    train(args, model, device, train_loader, optimizer, epoch)
    test(model, device, test_loader)
    scheduler:step()
  end

  if args.save_model then
    torch.save(model:state_dict(), "siamese_network.pt")
  end
end

main(...)
