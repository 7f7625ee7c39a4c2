-- require "torchvision": datasets (MNIST, FashionMNIST, CIFAR10, CIFAR100 here; ImageFolder
-- and more from tv_image_datasets / tv_datasets where they exist), and the transforms, io, utils and
-- models modules (tv_transforms, tv_io, tv_utils, tv_models) where they exist.
--
-- Differences from torchvision, all in what a sample is: an image comes as a
-- uint8 tensor ([H, W] for MNIST and FashionMNIST, [3, 32, 32] for CIFAR10)
-- where torchvision gives a PIL image; `data` is the uint8 tensor of all images
-- ([N, 3, 32, 32] for CIFAR10, which torchvision keeps as an [N, 32, 32, 3]
-- numpy array) and `targets` an int64 tensor. Nothing is downloaded.
local torch = require "torch"
local data = torch.utils.data
local C = torch._data

local torchvision = {__version__ = "0.0+nnrepl"}
local datasets = {}
torchvision.datasets = datasets

-- A submodule that may not exist yet: absent -> nil; failing to load -> a table
-- that raises the load error when used.
local function optional(name)
  if not package.preload[name] then return nil end
  local ok, mod = pcall(require, name)
  if ok then return mod end
  return setmetatable({}, {__index = function(_, k)
    error(string.format("torchvision: module %s failed to load: %s", name, tostring(mod)), 2)
  end})
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local function is_plain(t) return type(t) == "table" and getmetatable(t) == nil end

-- Arguments as (root, opts) or (opts with root) or positional (root, train, transform, target_transform, download).
local function read_args(cls, names, root, ...)
  local o
  if is_plain(root) then o, root = root, root.root
  elseif is_plain((...)) and (...)[1] == nil then o = (...)
  else
    o = {}
    local args = table.pack(...)
    for k = 1, args.n do o[names[k]] = args[k] end
  end
  local allowed = {root = true}
  for _, n in ipairs(names) do allowed[n] = true end
  for k in pairs(o) do
    if not allowed[k] then error(string.format("%s: unknown keyword '%s'", cls, tostring(k)), 4) end
  end
  return root, o
end

-- The C transform chain of a transform object (ToTensor/Normalize markers, Compose's
-- transforms list), or nil when C cannot run it.
local function c_ops(t, out)
  out = out or {}
  if t == nil then return out end
  if torch.get_default_dtype() ~= torch.float32 then return nil end -- C's ToTensor makes float32
  if type(t) ~= "table" then return nil end
  local ok, m = pcall(function() return t.__c_transform end)
  if ok and type(m) == "table" then
    out[#out + 1] = m
    return out
  end
  -- Compose only: other transforms with a list (RandomApply, RandomChoice) are random
  local mt = getmetatable(t)
  local is_compose = type(mt) == "table" and rawget(mt, "__name") == "Compose"
  local ok2, list = pcall(function() return t.transforms end)
  if is_compose and ok2 and type(list) == "table" then
    for _, sub in ipairs(list) do
      if not c_ops(sub, out) then return nil end
    end
    return out
  end
  return nil
end
torchvision._c_ops = c_ops

local VisionDataset = data.Dataset:extend("VisionDataset")
datasets.VisionDataset = VisionDataset

function VisionDataset:__len() return self.data:size(0) end

function VisionDataset:__getitem(i)
  local n = self.data:size(0)
  if i < 0 then i = i + n end
  if i < 0 or i >= n then error(string.format("index %d is out of range for a dataset of size %d", i, n), 2) end
  local labels = rawget(self, "_labels")
  if not labels then
    labels = self.targets:tolist()
    rawset(self, "_labels", labels)
  end
  local img, target = self.data[i], labels[i + 1]
  if self.transform ~= nil then img = self.transform(img) end
  if self.target_transform ~= nil then target = self.target_transform(target) end
  return img, target
end

-- C runs this dataset when __getitem is ours, there is no target_transform and
-- the transform is ToTensor/Normalize (or none).
function VisionDataset:_c_source()
  if self.__getitem ~= VisionDataset.__getitem or self.target_transform ~= nil then return nil end
  local tf = self.transform
  local c = rawget(self, "_c_cache")
  if c and c.transform == tf and c.data == self.data and c.targets == self.targets then return c.source or nil end
  local source = false
  local ops = c_ops(tf)
  if ops then source = C.Source({{self.data, ops}, {self.targets}}) or false end
  rawset(self, "_c_cache", {transform = tf, data = self.data, targets = self.targets, source = source})
  return source or nil
end

function VisionDataset:__tostring()
  local lines = {"Dataset " .. getmetatable(self).__name, "    Number of datapoints: " .. #self,
    "    Root location: " .. tostring(self.root)}
  if self.train ~= nil then lines[#lines + 1] = "    Split: " .. (self.train and "Train" or "Test") end
  if self.transform ~= nil then
    local s = tostring(self.transform):gsub("\n", "\n    ")
    lines[#lines + 1] = "    StandardTransform\n    Transform: " .. s
  end
  if self.target_transform ~= nil then
    lines[#lines + 1] = "    Target transform: " .. tostring(self.target_transform):gsub("\n", "\n    ")
  end
  return table.concat(lines, "\n")
end

local function set_classes(self, classes)
  self.classes = classes
  self.class_to_idx = {}
  for k, name in ipairs(classes) do self.class_to_idx[name] = k - 1 end
end

-- Labels in [0, nclasses): otherwise an error naming the file and the record.
local function check_labels(cls, labels, nclasses, path)
  if labels:numel() == 0 then return end
  local lo, hi = labels:amin():item(), labels:amax():item()
  if lo >= 0 and hi < nclasses then return end
  local list = labels:tolist()
  for k, v in ipairs(list) do
    if v < 0 or v >= nclasses then
      error(string.format("%s: %s: label %d out of range [0, %d] at index %d", cls, path, v, nclasses - 1, k - 1), 4)
    end
  end
end

-- ---- MNIST and FashionMNIST ----

local MNIST = VisionDataset:extend("MNIST")
datasets.MNIST = MNIST
MNIST.classes = {"0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
  "8 - eight", "9 - nine"}
MNIST.default_root = nil

local mnist_names = {"train", "transform", "target_transform", "download"}

-- Find the IDX pair for a split: each base name, .gz or not, in root/<Class>/raw, root/<Class>, root.
-- want: other base names ({images, labels}, as EMNIST's and QMNIST's)
local function find_idx(cls, root, train, download, want)
  local prefix = train and "train" or "t10k"
  local custom = want ~= nil
  want = want or {prefix .. "-images-idx3-ubyte", prefix .. "-labels-idx1-ubyte"}
  local dirs = {root .. "/" .. cls .. "/raw", root .. "/" .. cls, root}
  for _, dir in ipairs(dirs) do
    local found = {}
    for k, base in ipairs(want) do
      for _, name in ipairs({base .. ".gz", base}) do
        if not found[k] and exists(dir .. "/" .. name) then found[k] = dir .. "/" .. name end
      end
    end
    if found[1] and found[2] then return found[1], found[2] end
    if found[1] or found[2] then
      local have, missing = found[1] or found[2], want[found[1] and 2 or 1]
      error(string.format("%s: %s has %s but no %s(.gz)", cls, dir, have:match("[^/]*$"), missing), 4)
    end
  end
  local all = "train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz"
  if custom then all, prefix = want[1] .. ".gz and " .. want[2] .. ".gz", want[1]:match("^(.-)%-images") or want[1] end
  if download then
    error(string.format("%s: download=true, but nnrepl downloads nothing: put %s (gzipped or not) into %s (or %s)%s", cls,
      all, dirs[1], root, cls == "FashionMNIST" and "; on Debian, apt install dataset-fashion-mnist puts them in " ..
      "/usr/share/datasets/fashion-mnist, the default root" or ""), 4)
  end
  error(string.format("%s: dataset not found: expected %s.gz and %s.gz (or without .gz) in %s, %s or %s " ..
    "(the %s split; nothing is downloaded)", cls, want[1], want[2], dirs[1], dirs[2], dirs[3], prefix), 4)
end

function MNIST:__init(root, ...)
  local cls = getmetatable(self).__name
  local o
  root, o = read_args(cls, mnist_names, root, ...)
  root = root or self.default_root
  if root == nil then error(cls .. ": root is required", 3) end
  root = tostring(root):gsub("/+$", "")
  if root == "" then root = "/" end
  local train = o.train
  if train == nil then train = true end
  self.root, self.train = root, train
  self.transform, self.target_transform = o.transform, o.target_transform
  local images_path, labels_path = find_idx(cls, root, train, o.download)
  local images, labels = C.load_idx(images_path), C.load_idx(labels_path)
  if images:dim() ~= 3 or images.dtype ~= torch.uint8 then
    error(string.format("%s: %s: expected uint8 images [N, H, W], got %s %s", cls, images_path,
      tostring(images.dtype), tostring(images.shape)), 3)
  end
  if labels:dim() ~= 1 then
    error(string.format("%s: %s: expected labels [N], got %s", cls, labels_path, tostring(labels.shape)), 3)
  end
  if images:size(0) ~= labels:size(0) then
    error(string.format("%s: %s has %d images but %s has %d labels", cls, images_path, images:size(0), labels_path,
      labels:size(0)), 3)
  end
  set_classes(self, self.classes)
  check_labels(cls, labels, #self.classes, labels_path)
  self.data = images
  self.targets = labels:to(torch.int64)
end

function MNIST:download()
  error(getmetatable(self).__name .. ": nnrepl downloads nothing; put the IDX files into " .. tostring(self.root), 2)
end

local FashionMNIST = MNIST:extend("FashionMNIST")
datasets.FashionMNIST = FashionMNIST
FashionMNIST.classes = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
  "Ankle boot"}
FashionMNIST.default_root = "/usr/share/datasets/fashion-mnist"

local KMNIST = MNIST:extend("KMNIST")
datasets.KMNIST = KMNIST
KMNIST.classes = {"o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"}

-- ---- CIFAR10 ----

local CIFAR10 = VisionDataset:extend("CIFAR10")
datasets.CIFAR10 = CIFAR10
CIFAR10.classes = {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}

-- the arguments CIFAR10 and CIFAR100 share: root (trailing slashes dropped), train, the transforms
local function cifar_args(self, cls, root, ...)
  local root_, o = read_args(cls, mnist_names, root, ...)
  root = root_
  if root == nil then error(cls .. ": root is required", 4) end
  root = tostring(root):gsub("/+$", "")
  if root == "" then root = "/" end
  local train = o.train
  if train == nil then train = true end
  self.root, self.train = root, train
  self.transform, self.target_transform = o.transform, o.target_transform
  return root, o, train
end

function CIFAR10:__init(...)
  local root, o, train = cifar_args(self, "CIFAR10", ...)
  local names = {}
  if train then for k = 1, 5 do names[k] = "data_batch_" .. k .. ".bin" end
  else names[1] = "test_batch.bin" end
  local dir
  for _, d in ipairs({root .. "/cifar-10-batches-bin", root}) do
    if exists(d .. "/" .. names[1]) then dir = d; break end
  end
  if not dir then
    error(string.format("CIFAR10: %s not found in %s/cifar-10-batches-bin or %s: %s the binary version " ..
      "(cifar-10-binary.tar.gz, extracted: cifar-10-batches-bin/data_batch_1.bin ... data_batch_5.bin, test_batch.bin)%s",
      names[1], root, root, o.download and "download=true, but nnrepl downloads nothing; put" or "put",
      o.download and "" or " (nothing is downloaded)"), 3)
  end
  local paths, missing = {}, {}
  for k, n in ipairs(names) do
    paths[k] = dir .. "/" .. n
    if not exists(paths[k]) then missing[#missing + 1] = n end
  end
  if #missing > 0 then
    error(string.format("CIFAR10: %s is missing %s (expected %s)", dir, table.concat(missing, ", "), table.concat(names, ", ")), 3)
  end
  set_classes(self, self.classes)
  self.data, self.targets = C.load_cifar(paths)
end

-- ---- CIFAR100 ----
-- The binary version (cifar-100-binary.tar.gz): train.bin / test.bin and the class names in
-- fine_label_names.txt (coarse_label_names.txt for the superclasses). targets are the fine
-- labels, as torchvision's; coarse_targets the superclasses.

local CIFAR100 = CIFAR10:extend("CIFAR100")
datasets.CIFAR100 = CIFAR100

local function read_names(path)
  local f = io.open(path, "r")
  if not f then return nil end
  local names = {}
  for line in f:lines() do
    line = line:gsub("%s+$", "")
    if line ~= "" then names[#names + 1] = line end
  end
  f:close()
  return names
end

function CIFAR100:__init(...)
  local root, o, train = cifar_args(self, "CIFAR100", ...)
  local name = train and "train.bin" or "test.bin"
  local dir
  for _, d in ipairs({root .. "/cifar-100-binary", root}) do
    if exists(d .. "/" .. name) then dir = d; break end
  end
  if not dir then
    error(string.format("CIFAR100: %s not found in %s/cifar-100-binary or %s: %s the binary version " ..
      "(cifar-100-binary.tar.gz, extracted: cifar-100-binary/train.bin, test.bin, fine_label_names.txt)%s",
      name, root, root, o.download and "download=true, but nnrepl downloads nothing; put" or "put",
      o.download and "" or " (nothing is downloaded)"), 3)
  end
  local fine = read_names(dir .. "/fine_label_names.txt")
  if not fine or #fine ~= 100 then
    error(string.format("CIFAR100: %s/fine_label_names.txt is missing or does not hold 100 names", dir), 3)
  end
  set_classes(self, fine)
  self.coarse_classes = read_names(dir .. "/coarse_label_names.txt")
  self.data, self.targets, self.coarse_targets = C.load_cifar({dir .. "/" .. name}, 100)
end

-- ---- the other modules ----

for _, name in ipairs({"tv_image_datasets", "tv_datasets", "tv_datasets_more", "tv_datasets_annot",
    "tv_datasets_batch2", "tv_datasets_voc", "tv_datasets_lfw", "tv_datasets_misc", "tv_datasets_batch3",
    "tv_datasets_scenes", "tv_datasets_v2_wrap"}) do -- ImageFolder, the CSV image dataset, ...
  local extra = optional(name)
  if type(extra) == "function" then -- adds its classes, built on this file's helpers
    extra(datasets, {read_args = read_args, find_idx = find_idx, set_classes = set_classes, check_labels = check_labels,
      exists = exists})
  elseif type(extra) == "table" and getmetatable(extra) == nil then
    for k, v in pairs(extra) do if datasets[k] == nil then datasets[k] = v end end
  elseif extra then
    datasets[name] = extra -- failed to load: using it raises the error
  end
end
torchvision.transforms = optional("tv_transforms")
torchvision.io = optional("tv_io")
torchvision.utils = optional("tv_utils")
torchvision.models = optional("tv_models")
torchvision.ops = optional("tv_ops")
torchvision.tv_tensors = optional("tv_tensors")
datasets.utils = optional("tv_datasets_utils")
require("tv_backends")(torchvision) -- get/set_image_backend, get/set_video_backend

return torchvision
