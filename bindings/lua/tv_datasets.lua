-- torchvision.datasets: FakeData, EMNIST, QMNIST and STL10. torchvision.lua calls this file's
-- function with its datasets table and its IDX helpers. As for MNIST and CIFAR10 here, an image
-- comes as a uint8 tensor ([H, W] for EMNIST and QMNIST, [3, 96, 96] for STL10) where torchvision
-- gives a PIL image; FakeData gives PIL-like images, as torchvision's. Nothing is downloaded.
local torch = require "torch"
local U = require "nn_util"
local tvio = require "tv_io"
local C = torch._data

return function(datasets, H)
  local VisionDataset, MNIST = datasets.VisionDataset, datasets.MNIST

  local function check_index(self, i, n)
    if math.type(i) ~= "integer" then U.errorf("%s: index must be an integer, got %s", getmetatable(self).__name, tostring(i)) end
    if i < 0 then i = i + n end
    if i < 0 or i >= n then U.errorf("%s index out of range", getmetatable(self).__name) end
    return i
  end

  local function finish(self, img, target)
    if self.transform ~= nil then img = self.transform(img) end
    if self.target_transform ~= nil then target = self.target_transform(target) end
    return img, target
  end

  -- torchvision's verify_str_arg
  local function verify(value, arg, valid)
    for _, v in ipairs(valid) do if v == value then return value end end
    U.errorf("Unknown value '%s' for argument %s. Valid values are {'%s'}.", tostring(value), arg, table.concat(valid, "', '"))
  end

  -- ---- FakeData ----
  -- Image i is torch.randn(image_size) under torch.manual_seed(i + random_offset) (the global
  -- generator's state is restored afterwards), made a PIL-like image as ToPILImage makes it; its
  -- target the next torch.randint(0, num_classes) draw.

  local FakeData = VisionDataset:extend("FakeData")
  datasets.FakeData = FakeData
  local fake_keys = {{"size", 1000}, {"image_size", {3, 224, 224}}, {"num_classes", 10}, {"transform"},
    {"target_transform"}, {"random_offset", 0}}
  function FakeData:__init(...)
    local o = U.parse("FakeData", fake_keys, ...)
    U.check_int("FakeData", "size", o.size, 0)
    U.check_int("FakeData", "num_classes", o.num_classes, 1)
    self.size, self.num_classes, self.random_offset = o.size, o.num_classes, o.random_offset
    self.image_size = o.image_size
    self.transform, self.target_transform = o.transform, o.target_transform
  end
  function FakeData:__len() return self.size end
  function FakeData:__getitem(index)
    index = check_index(self, index, self.size)
    local state = torch.get_rng_state()
    torch.manual_seed(index + self.random_offset)
    local img = torch.randn(table.unpack(self.image_size))
    local target = torch.randint(0, self.num_classes, {1}, {dtype = torch.int64}):item()
    torch.set_rng_state(state)
    img = require("tv_transforms").functional.to_pil_image(img)
    return finish(self, img, target)
  end
  function FakeData:__tostring()
    return string.format("Dataset FakeData\n    Number of datapoints: %d", self.size)
  end

  -- ---- EMNIST, QMNIST: IDX files with other names ----

  local function idx_root(cls, root)
    if root == nil then U.errorf("%s: root is required", cls) end
    root = tostring(root):gsub("/+$", "")
    return root == "" and "/" or root
  end

  local function load_pair(cls, root, train, download, want)
    local ip, lp = H.find_idx(cls, root, train, download, want)
    return C.load_idx(ip), C.load_idx(lp), lp
  end

  local function chars(s)
    local out = {}
    for c in s:gmatch(".") do out[#out + 1] = c end
    return out
  end
  local digits, upper, lower = "0123456789", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"
  local emnist_classes = {
    byclass = chars(digits .. upper .. lower), bymerge = chars(digits .. upper .. "abdefghnqrt"),
    balanced = chars(digits .. upper .. "abdefghnqrt"), letters = {"N/A", table.unpack(chars(lower))},
    digits = chars(digits), mnist = chars(digits) }
  local emnist_splits = {"byclass", "bymerge", "balanced", "letters", "digits", "mnist"}

  -- EMNIST(root, split, {train, transform, target_transform, download}): the files
  -- emnist-<split>-<train|test>-{images-idx3,labels-idx1}-ubyte[.gz] in root/EMNIST/raw, root/EMNIST or root
  local EMNIST = MNIST:extend("EMNIST")
  datasets.EMNIST = EMNIST
  EMNIST.splits = emnist_splits
  function EMNIST:__init(...)
    local o = U.parse("EMNIST", {{"root", U.REQUIRED}, {"split", U.REQUIRED}, {"train", true}, {"transform"},
      {"target_transform"}, {"download", false}}, ...)
    self.split = verify(o.split, "split", emnist_splits)
    local r = idx_root("EMNIST", o.root)
    self.root, self.train, self.transform, self.target_transform = r, o.train, o.transform, o.target_transform
    local prefix = string.format("emnist-%s-%s", self.split, o.train and "train" or "test")
    local images, labels, lp = load_pair("EMNIST", r, o.train, o.download,
      {prefix .. "-images-idx3-ubyte", prefix .. "-labels-idx1-ubyte"})
    H.set_classes(self, emnist_classes[self.split])
    H.check_labels("EMNIST", labels, #self.classes, lp)
    self.data, self.targets = images, labels:to(torch.int64)
  end

  -- QMNIST(root, {what, compat=true, train=true, transform, target_transform, download}): what is
  -- train, test, test10k, test50k or nist; the files qmnist-<train|test>-images-idx3-ubyte and
  -- qmnist-<train|test>-labels-idx2-int (nist: xnist-...), .gz or not. targets holds the 8
  -- columns of QMNIST's labels (int64 [N, 8]); with compat a sample's target is the class (column 0).
  local QMNIST = MNIST:extend("QMNIST")
  datasets.QMNIST = QMNIST
  local qmnist_what = {"train", "test", "test10k", "test50k", "nist"}
  function QMNIST:__init(...)
    local o = U.parse("QMNIST", {{"root", U.REQUIRED}, {"what"}, {"compat", true}, {"train", true}, {"transform"},
      {"target_transform"}, {"download", false}}, ...)
    local what = o.what or (o.train and "train" or "test")
    self.what = verify(what, "what", qmnist_what)
    local r = idx_root("QMNIST", o.root)
    self.root, self.train, self.compat = r, o.train, o.compat
    self.transform, self.target_transform = o.transform, o.target_transform
    local file = what == "nist" and "xnist" or ("qmnist-" .. (what == "train" and "train" or "test"))
    local images, labels = load_pair("QMNIST", r, what == "train", o.download,
      {file .. "-images-idx3-ubyte", file .. "-labels-idx2-int"})
    if labels:dim() ~= 2 or labels:size(0) ~= images:size(0) then
      U.errorf("QMNIST: expected labels [%d, 8] in %s-labels-idx2-int, got %s", images:size(0), file, tostring(labels.shape))
    end
    if what == "test10k" then images, labels = images:narrow(0, 0, 10000), labels:narrow(0, 0, 10000)
    elseif what == "test50k" then
      images, labels = images:narrow(0, 10000, images:size(0) - 10000), labels:narrow(0, 10000, labels:size(0) - 10000)
    end
    H.set_classes(self, MNIST.classes)
    self.data, self.targets = images:contiguous(), labels:to(torch.int64):contiguous()
  end
  function QMNIST:__getitem(index)
    index = check_index(self, index, self.data:size(0))
    local target = self.targets[index]
    if self.compat then target = target[0]:item() end
    return finish(self, self.data[index], target)
  end
  QMNIST._c_source = function() return nil end

  -- ---- STL10 ----
  -- STL10(root, {split="train", folds, transform, target_transform, download}): the binary version
  -- (stl10_binary/train_X.bin, train_y.bin, test_X.bin, test_y.bin, unlabeled_X.bin,
  -- class_names.txt, fold_indices.txt); images uint8 [3, 96, 96], labels 0..9 (-1: unlabeled).

  local STL10 = VisionDataset:extend("STL10")
  datasets.STL10 = STL10
  STL10.splits = {"train", "train+unlabeled", "unlabeled", "test"}

  local function read_bin(cls, path)
    if not H.exists(path) then
      U.errorf("%s: %s not found: put the extracted stl10_binary.tar.gz there (nnrepl downloads nothing)", cls, path)
    end
    return tvio.read_file(path)
  end

  local function stl_images(path)
    -- each image is stored channel by channel, column-major: transpose H and W
    return read_bin("STL10", path):reshape(-1, 3, 96, 96):transpose(2, 3):contiguous()
  end

  function STL10:__init(...)
    local o = U.parse("STL10", {{"root", U.REQUIRED}, {"split", "train"}, {"folds"}, {"transform"},
      {"target_transform"}, {"download", false}}, ...)
    self.root = tostring(o.root):gsub("/+$", "")
    self.split = verify(o.split, "split", STL10.splits)
    local folds = o.folds
    if folds ~= nil then
      if math.type(folds) ~= "integer" then
        U.errorf("Expected type None or int for argument folds, but got type %s.", U.typename(folds))
      elseif folds < 0 or folds > 9 then
        U.errorf("Value for argument folds should be in the range [0, 10), but got %d.", folds)
      end
    end
    self.folds = folds
    self.transform, self.target_transform = o.transform, o.target_transform
    local dir = self.root .. "/stl10_binary"
    if o.download and not H.exists(dir .. "/train_X.bin") then
      U.errorf("STL10: download=true, but nnrepl downloads nothing: extract stl10_binary.tar.gz into %s", self.root)
    end
    local function labels(name) return read_bin("STL10", dir .. "/" .. name):to(torch.int64) - 1 end
    local data, lab
    if self.split == "train" or self.split == "train+unlabeled" then
      data, lab = stl_images(dir .. "/train_X.bin"), labels("train_y.bin")
      if folds ~= nil then
        local f = io.open(dir .. "/fold_indices.txt", "r")
        if not f then U.errorf("STL10: %s/fold_indices.txt not found", dir) end
        local line
        for _ = 0, folds do line = f:read("l") end
        f:close()
        local idx = {}
        for v in (line or ""):gmatch("%d+") do idx[#idx + 1] = tonumber(v) end
        local t = torch.tensor(idx, {dtype = torch.int64})
        data, lab = data:index_select(0, t), lab:index_select(0, t)
      end
      if self.split == "train+unlabeled" then
        local un = stl_images(dir .. "/unlabeled_X.bin")
        data = torch.cat({data, un}, 0)
        lab = torch.cat({lab, torch.full({un:size(0)}, -1, {dtype = torch.int64})}, 0)
      end
    elseif self.split == "unlabeled" then
      data = stl_images(dir .. "/unlabeled_X.bin")
      lab = torch.full({data:size(0)}, -1, {dtype = torch.int64})
    else
      data, lab = stl_images(dir .. "/test_X.bin"), labels("test_y.bin")
    end
    if lab:size(0) ~= data:size(0) then
      U.errorf("STL10: %d images but %d labels in %s", data:size(0), lab:size(0), dir)
    end
    self.data, self.labels = data, lab
    local names = {}
    local f = io.open(dir .. "/class_names.txt", "r")
    if f then
      for line in f:lines() do if line:match("%S") then names[#names + 1] = line:gsub("%s+$", "") end end
      f:close()
    end
    self.classes = names
  end
  function STL10:__len() return self.data:size(0) end
  function STL10:__getitem(index)
    index = check_index(self, index, self.data:size(0))
    return finish(self, self.data[index], self.labels[index]:item())
  end
  STL10._c_source = function() return nil end
end
