-- Document 000 (../shared/seeds/000_*.txt, "PyTorch运算加速"): a CNN on a CSV-described image
-- dataset, model and batches moved to the GPU, results taken back with .cpu(); it prints
-- the start time, a loss every 100 steps, "finish training", the end time and the time spent,
-- and saves the state_dict. Without a GPU it runs on the CPU (document 001's fallback).
--
--   build/nnrepl scripts/doc000_make_dataset.lua --out ../data      # once: the CSV files and images
--   build/nnrepl scripts/doc000_cnn.lua [--data-dir ../data] [--epochs 50] [--batch-size 32] [--lr 0.001]
--       [--save net_params.pkl] [--seed N]
--
-- The document's paths, batch size, learning rate and epochs are the defaults. --data-dir
-- holds desc_train.csv, desc_valid.csv and desc_test.csv (path,label rows after a header line).
-- torch.save writes a safetensors file whatever the name.
local transforms = require("torchvision").transforms
local Image = require("PIL").Image
local argparse = require "argparse"
local time = require "time"
local U = require "nn_util"
local Dataset, DataLoader = torch.utils.data.Dataset, torch.utils.data.DataLoader
local progress = torch.utils.progress

local parser = argparse.ArgumentParser({ prog = "doc000_cnn.lua", description = "Document 000's CNN" })
parser:add_argument("--data-dir", { default = "../data", help = "folder of desc_{train,valid,test}.csv (default %(default)s)" })
parser:add_argument("--epochs", { type = "int", default = 50, help = "epochs (default %(default)s)" })
parser:add_argument("--batch-size", { type = "int", default = 32, help = "batch size (default %(default)s)" })
parser:add_argument("--lr", { type = "float", default = 0.001, help = "SGD learning rate (default %(default)s)" })
parser:add_argument("--save", { default = "net_params.pkl", help = "where the state_dict goes (default %(default)s)" })
parser:add_argument("--seed", { type = "int", help = "random seed (default: none)" })
local args = parser:parse_args({ ... })
if args.seed then torch.manual_seed(args.seed) end

-- print as Python's print does: spaces between, floats and booleans as Python writes them
local function pyprint(...)
  local parts = {}
  for i = 1, select("#", ...) do parts[i] = U.pystr((select(i, ...))) end
  print(table.concat(parts, " "))
end

-- whether PyTorch can use the GPU, and how many
pyprint(torch.__version__)
pyprint("gpu can be used", torch.cuda.is_available())
pyprint("gpu device", torch.cuda.device_count())

-- !!! change here !!! the document calls .cuda(); this falls back to the CPU without a GPU
local device = torch.device(torch.cuda.is_available() and "cuda" or "cpu")

local start = time.time()
pyprint("start time", start)

-- pd.read_csv(desc_file).values: the rows after the header line, as {path, label}
local function read_csv(path)
  local f = assert(io.open(path, "r"))
  local rows = {}
  f:read("l") -- the header
  for line in f:lines() do
    local img, label = line:match("^(.*),%s*([-%d]+)%s*$")
    if img then rows[#rows + 1] = { img, math.tointeger(tonumber(label)) } end
  end
  f:close()
  return rows
end

local MyDataset = Dataset:extend("MyDataset")

function MyDataset:__init(desc_file, transform)
  self.all_data = read_csv(desc_file)
  self.transform = transform
end

function MyDataset:__getitem(index)
  local img, label = self.all_data[index + 1][1], self.all_data[index + 1][2]
  img = Image.open(img):convert("RGB")
  if self.transform ~= nil then
    img = self.transform(img)
  end
  return img, label
end

function MyDataset:__len()
  return #self.all_data
end

-- the document's Net (conv, pool, conv, pool, three Linear) and its init_weights
local Net = require "doc000_net"

local desc_train = args.data_dir .. "/desc_train.csv"
local desc_valid = args.data_dir .. "/desc_valid.csv"
local desc_test = args.data_dir .. "/desc_test.csv"
for _, path in ipairs({ desc_train, desc_valid, desc_test }) do
  local f = io.open(path, "r")
  if not f then
    io.stderr:write(string.format("doc000_cnn.lua: %s not found (write the dataset with " ..
      "scripts/doc000_make_dataset.lua --out %s, or give --data-dir)\n", path, args.data_dir))
    os.exit(1)
  end
  f:close()
end
local batch_size = args.batch_size
local lr = args.lr
local epochs = args.epochs
local norm_mean = { 0.4948052, 0.48568845, 0.44682974 }
local norm_std = { 0.24580306, 0.24236229, 0.2603115 }

local train_transform = transforms.Compose({
  transforms.Resize({ 32, 32 }),
  transforms.RandomHorizontalFlip(),
  transforms.ToTensor(),
  transforms.Normalize(norm_mean, norm_std), -- ImageNet's statistics, as the document says
})

local valid_transform = transforms.Compose({
  transforms.Resize({ 32, 32 }),
  transforms.ToTensor(),
  transforms.Normalize(norm_mean, norm_std),
})

local test_transform = transforms.Compose({
  transforms.Resize({ 32, 32 }),
  transforms.ToTensor(),
  transforms.Normalize(norm_mean, norm_std),
})

local train_data = MyDataset(desc_train, train_transform)
local valid_data = MyDataset(desc_valid, valid_transform)
local test_data = MyDataset(desc_test, test_transform)

-- the DataLoaders
local train_loader = DataLoader({ dataset = train_data, batch_size = batch_size, shuffle = true })
local valid_loader = DataLoader({ dataset = valid_data, batch_size = batch_size })
local test_loader = DataLoader({ dataset = test_data, batch_size = batch_size }) -- unused, as in the document

local model = Net()
model:init_weights()
-- !!! change here !!!
model:to(device)
local criterion = nn.CrossEntropyLoss()
local optimizer = optim.SGD(model:parameters(), { lr = lr, momentum = 0.9, dampening = 0.1 })
local scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, { verbose = true })

for epoch = 0, epochs - 1 do
  -- training
  local train_loss = 0.0
  local correct = 0.0
  local total = 0.0
  local bar = progress(train_loader, { desc = string.format("epoch %d train", epoch), leave = false })
  local step = -1
  for x, y in bar do
    step = step + 1
    -- !!! change here !!!
    x = x:to(device)
    y = y:to(device)
    local out = model(x)
    local loss = criterion(out, y)
    optimizer:zero_grad()
    loss:backward()
    optimizer:step()
    local _, pred = torch.max(out.data, 1)
    total = total + y:size(0)
    -- !!! change here !!!
    correct = correct + pred:eq(y):squeeze():sum():cpu():item()
    train_loss = train_loss + loss:item()
    if step % 100 == 0 then
      bar:write(string.format("epoch %d step %d loss %s", epoch, step, U.pyfloat(loss:item())))
    end
  end
  local train_acc = correct / total -- computed, not printed, as in the document

  -- validation
  local valid_loss = 0.0
  correct = 0.0
  total = 0.0
  for x, y in progress(valid_loader, { desc = string.format("epoch %d valid", epoch), leave = false }) do
    model:eval() -- the document never sets train() again; this Net has no dropout or batch norm
    -- !!! change here !!!
    x = x:to(device)
    y = y:to(device)
    local out = model(x)
    out:detach_()
    local loss = criterion(out, y)
    local _, pred = torch.max(out.data, 1)
    valid_loss = valid_loss + loss:item()
    total = total + y:size(0)
    -- !!! change here !!!
    correct = correct + pred:eq(y):squeeze():sum():cpu():item()
  end
  local valid_acc = correct / total
  scheduler:step(valid_loss)
end

print("finish training")
local net_save_path = args.save
torch.save(model:state_dict(), net_save_path)
local end_ = time.time()
pyprint("end time", end_)
pyprint("spend time", end_ - start)
