-- pytorch/examples mnist_forward_forward/main.py in Lua: Hinton's forward-forward algorithm
-- (model.lua) on one full batch of MNIST: two layers of 500 trained one after the other, then
-- the training and test errors printed.
--
--   nnrepl scripts/examples/mnist_forward_forward/main.lua [--epochs 1000] [--lr 0.03]
--       [--no_accel] [--seed 1] [--save_model | --save-model] [--train_size 50000]
--       [--threshold 2] [--test_size 10000] [--log-interval 10] [--data-root ./data/]
--
-- Differences from the original: nothing is downloaded. MNIST's four IDX files
-- (train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-...) must be in
-- DATA_ROOT/MNIST/raw, DATA_ROOT/MNIST or DATA_ROOT; --data-root (new; default ./data/, the
-- original's folder) says where; without them torchvision.datasets.MNIST stops with an error
-- naming the files and the folder. Python's print puts a space between its values, so the
-- "Loss:  x" and "training layer:  i" lines have two spaces, as the original's. --seed is
-- parsed but, as in the original, never used. --save_model writes mnist_ff.pt, Net's
-- state_dict(): empty, as the original's (its layers are a plain list).
local torchvision = require "torchvision"
local argparse = require "argparse"
local model = require "model"
local MNIST, transforms = torchvision.datasets.MNIST, torchvision.transforms
local DataLoader = torch.utils.data.DataLoader
local Net, overlay_y_on_x = model.Net, model.overlay_y_on_x
local repr = argparse.float_repr -- Python's print of a float

local device

-- for each label a random other label
local function get_y_neg(y)
  local y_neg = y:clone()
  for idx, y_samp in pairs(y) do
    local allowed_indices = {}
    for k = 0, 9 do
      if k ~= y_samp:item() then allowed_indices[#allowed_indices + 1] = k end
    end
    y_neg[idx] = torch.tensor(allowed_indices)[
      torch.randint(#allowed_indices, { 1 })
    ]:item()
  end
  return y_neg:to(device)
end

local parser = argparse.ArgumentParser()
parser:add_argument("--epochs", { type = "int", default = 1000, metavar = "N",
  help = "number of epochs to train (default: 1000)" })
parser:add_argument("--lr", { type = "float", default = 0.03, metavar = "LR",
  help = "learning rate (default: 0.03)" })
parser:add_argument("--no_accel", { action = "store_true", help = "disables accelerator" })
parser:add_argument("--seed", { type = "int", default = 1, metavar = "S", help = "random seed (default: 1)" })
parser:add_argument("--save_model", { action = "store_true", help = "For saving the current Model" })
parser:add_argument("--train_size", { type = "int", default = 50000, help = "size of training set" })
parser:add_argument("--threshold", { type = "float", default = 2, help = "threshold for training" })
parser:add_argument("--test_size", { type = "int", default = 10000, help = "size of test set" })
parser:add_argument("--save-model", { action = "store_true", help = "For Saving the current Model" })
parser:add_argument("--log-interval", { type = "int", default = 10, metavar = "N",
  help = "how many batches to wait before logging training status" })
parser:add_argument("--data-root", { default = "./data/", metavar = "DIR",
  help = "folder with MNIST's IDX files, in DIR/MNIST/raw or DIR (default: ./data/; nothing is downloaded)" })
local args = parser:parse_args({ ... })
local use_accel = not args.no_accel and torch.accelerator.is_available()
if use_accel then
  device = torch.accelerator.current_accelerator()
else
  device = torch.device("cpu")
end
model.args, model.device = args, device

local train_kwargs = { batch_size = args.train_size }
local test_kwargs = { batch_size = args.test_size }

if use_accel then
  local accel_kwargs = { num_workers = 1, pin_memory = true, shuffle = true }
  for k, v in pairs(accel_kwargs) do
    train_kwargs[k] = v
    test_kwargs[k] = v
  end
end

local transform = transforms.Compose({
  transforms.ToTensor(),
  transforms.Normalize({ 0.1307 }, { 0.3081 }),
  transforms.Lambda(function(x) return torch.flatten(x) end),
})
local train_loader = DataLoader(
  MNIST(args.data_root, { train = true, download = true, transform = transform }), train_kwargs
)
local test_loader = DataLoader(
  MNIST(args.data_root, { train = false, download = true, transform = transform }), test_kwargs
)
local net = Net({ 784, 500, 500 })
local x, y = train_loader:iter()()
x, y = x:to(device), y:to(device)
local x_pos = overlay_y_on_x(x, y)
local y_neg = get_y_neg(y)
local x_neg = overlay_y_on_x(x, y_neg)
net:train(x_pos, x_neg)
print("train error: " .. repr(1.0 - net:predict(x):eq(y):float():mean():item()))
local x_te, y_te = test_loader:iter()()
x_te, y_te = x_te:to(device), y_te:to(device)
if args.save_model then
  torch.save(net:state_dict(), "mnist_ff.pt")
end
print("test error: " .. repr(1.0 - net:predict(x_te):eq(y_te):float():mean():item()))
