-- The data of document 000 (../shared/seeds/000_*.txt): its MyDataset reads CSV files of
-- `path,label` rows (a header line first, as pandas.read_csv takes it) naming image files.
-- This writes such a dataset as PNG files plus desc_train.csv, desc_valid.csv and
-- desc_test.csv, so scripts/doc000_cnn.lua runs anywhere:
--
--   build/nnrepl scripts/doc000_make_dataset.lua [--out ../data] [--train 1000] [--valid 200] [--test 200]
--       [--root /usr/share/datasets/fashion-mnist] [--synthetic] [--seed 0]
--
-- Images come from Fashion-MNIST (28x28 grey, labels 0..9; the training split gives the
-- train and valid images, the test split the test images), read from --root (Debian's
-- dataset-fashion-mnist puts the files in /usr/share/datasets/fashion-mnist). With
-- --synthetic, or to say what to do when the files are absent, it draws RGB images of
-- 40x30 pixels instead: class k is a noisy picture with a bright band at rows 3k..3k+2,
-- so a model can learn it. The CSV rows hold absolute paths (MyDataset opens them as given).
local torchvision = require "torchvision"
local argparse = require "argparse"
local Image = require("PIL").Image

local parser = argparse.ArgumentParser({ prog = "doc000_make_dataset.lua",
  description = "Write document 000's CSV + PNG image dataset" })
parser:add_argument("--out", { default = "../data", help = "output folder (default %(default)s, as the document's ../data)" })
parser:add_argument("--train", { type = "int", default = 1000, help = "training images (default %(default)s)" })
parser:add_argument("--valid", { type = "int", default = 200, help = "validation images (default %(default)s)" })
parser:add_argument("--test", { type = "int", default = 200, help = "test images (default %(default)s)" })
parser:add_argument("--root", { default = torchvision.datasets.FashionMNIST.default_root,
  help = "folder with Fashion-MNIST's IDX files (default %(default)s)" })
parser:add_argument("--synthetic", { action = "store_true", help = "draw images instead of reading Fashion-MNIST" })
parser:add_argument("--seed", { type = "int", default = 0, help = "random seed (default %(default)s)" })
local args = parser:parse_args({ ... })
for _, name in ipairs({ "train", "valid", "test" }) do
  if args[name] < 1 then parser:error("--" .. name .. " must be at least 1") end
end
torch.manual_seed(args.seed)

local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- mkdir -p, then the folder's absolute path
local function make_dir(path)
  if not os.execute("mkdir -p " .. shell_quote(path)) then error("cannot create the folder " .. path, 0) end
  local p = io.popen("cd " .. shell_quote(path) .. " && pwd")
  local abs = p:read("l")
  p:close()
  return abs
end

-- Fashion-MNIST's two splits, each read once
local fashion_sets = {}
local function fashion_set(train)
  fashion_sets[train] = fashion_sets[train] or torchvision.datasets.FashionMNIST({ root = args.root, train = train })
  return fashion_sets[train]
end

-- The images of one split as uint8 tensors (H x W grey or H x W x 3) and their labels.
local function fashion_split(train, first, count)
  local ds = fashion_set(train)
  if first + count > #ds then
    error(string.format("Fashion-MNIST's %s split has %d images; %d asked for", train and "training" or "test", #ds,
      first + count), 0)
  end
  return function(i) return ds.data[first + i], ds.targets[first + i]:item() end
end

local function synthetic_split(count)
  local labels = torch.randint(0, 10, { count }):tolist()
  return function(i)
    local k = labels[i + 1]
    local img = torch.rand(30, 40, 3):mul(96)
    img:narrow(0, 3 * k, 3):add_(128) -- a row band: RandomHorizontalFlip keeps it
    img:select(2, k % 3):add_(24) -- a tint per class as well
    return img:clamp_(0, 255):to(torch.uint8), k
  end
end

local fashion = not args.synthetic
if fashion then
  local ok, err = pcall(fashion_set, true)
  if not ok then
    io.stderr:write(tostring(err), "\n", "(or pass --synthetic to draw the images instead)\n")
    os.exit(1)
  end
end

local splits = {
  { name = "train", count = args.train, image = fashion and fashion_split(true, 0, args.train) or nil },
  { name = "valid", count = args.valid, image = fashion and fashion_split(true, args.train, args.valid) or nil },
  { name = "test", count = args.test, image = fashion and fashion_split(false, 0, args.test) or nil },
}

local out = make_dir(args.out)
for _, split in ipairs(splits) do
  local image = split.image or synthetic_split(split.count)
  local dir = make_dir(out .. "/" .. split.name)
  local csv_path = out .. "/desc_" .. split.name .. ".csv"
  local csv = assert(io.open(csv_path, "w"))
  csv:write("path,label\n")
  for i in torch.utils.progress(split.count, { desc = split.name }) do
    local pixels, label = image(i)
    local path = string.format("%s/%05d.png", dir, i)
    Image.fromarray(pixels):save(path)
    csv:write(path, ",", label, "\n")
  end
  csv:close()
  print(string.format("%s: %d images, %s", split.name, split.count, csv_path))
end
