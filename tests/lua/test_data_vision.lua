-- torchvision.datasets: MNIST / FashionMNIST / CIFAR10 from files written here and
-- from the installed Fashion-MNIST; the C path (workers) against the Lua path.
local T = ...
local data = torch.utils.data
local tv = require "torchvision"
local datasets = tv.datasets
local has_transforms, transforms = pcall(require, "tv_transforms")

local dir = io.popen("mktemp -d"):read("l")
local function write(path, bytes)
  local f = assert(io.open(dir .. "/" .. path, "wb"))
  f:write(bytes)
  f:close()
end
local function mkdir(path) assert(os.execute("mkdir -p '" .. dir .. "/" .. path .. "'")) end

local function same(a, b)
  return torch.is_tensor(a) and torch.is_tensor(b) and a.dtype == b.dtype
    and T.show(a.shape:totable()) == T.show(b.shape:totable()) and a:eq(b):all():item()
end

-- n images of h x w (pixel = (k * 31 + i) % 256) and labels k % 10
local function mnist_files(sub, prefix, n, h, w, opts)
  opts = opts or {}
  local img = {string.char(0, 0, 8, 3), string.pack(">I4>I4>I4", n, h, w)}
  for k = 0, n - 1 do
    local row = {}
    for i = 0, h * w - 1 do row[#row + 1] = string.char((k * 31 + i) % 256) end
    img[#img + 1] = table.concat(row)
  end
  local lab = {string.char(0, 0, 8, 1), string.pack(">I4", opts.nlabels or n)}
  for k = 0, (opts.nlabels or n) - 1 do lab[#lab + 1] = string.char(opts.bad_label == k and 10 or k % 10) end
  mkdir(sub)
  write(sub .. "/" .. prefix .. "-images-idx3-ubyte", table.concat(img))
  write(sub .. "/" .. prefix .. "-labels-idx1-ubyte", table.concat(lab))
  if opts.gzip then
    for _, kind in ipairs({"-images-idx3-ubyte", "-labels-idx1-ubyte"}) do
      local p = dir .. "/" .. sub .. "/" .. prefix .. kind
      assert(os.execute(string.format("gzip -f '%s'", p)))
    end
  end
end

T.test("MNIST from files", function()
  mnist_files("m1", "train", 12, 4, 5)
  mnist_files("m1", "t10k", 3, 4, 5)
  local ds = datasets.MNIST(dir .. "/m1", {train = true})
  T.eq(#ds, 12, "train len")
  local img, label = ds:get(3)
  T.eq(img.dtype, torch.uint8, "image uint8")
  T.eq(img.shape:totable(), {4, 5}, "image H x W")
  T.eq(img[0][1]:item(), (3 * 31 + 1) % 256, "pixel")
  T.eq(label, 3, "label is an integer")
  T.eq(math.type(label), "integer", "label type")
  T.eq(ds[11][2], 1, "ds[i] is {img, label}")
  T.eq(ds.targets.dtype, torch.int64, "targets int64")
  T.eq(ds.data.shape:totable(), {12, 4, 5}, "data")
  T.eq(ds.classes[1], "0 - zero", "classes")
  T.eq(ds.class_to_idx["3 - three"], 3, "class_to_idx")
  T.eq(#datasets.MNIST{root = dir .. "/m1", train = false}, 3, "test split, keyword form")
  T.eq(#datasets.MNIST(dir .. "/m1", false), 3, "positional train")
  T.check(tostring(ds):find("Dataset MNIST\n    Number of datapoints: 12\n    Root location: " .. dir .. "/m1\n    Split: Train", 1, true) ~= nil,
    "repr: " .. tostring(ds))
  -- torchvision's layout root/<Class>/raw, gzipped; download=true is fine when the files are there
  mnist_files("m2/FashionMNIST/raw", "train", 5, 28, 28, {gzip = true})
  local f = datasets.FashionMNIST{root = dir .. "/m2", download = true}
  T.eq(#f, 5, "root/FashionMNIST/raw, .gz")
  T.eq(f.classes[10], "Ankle boot", "fashion classes")
  -- target_transform and transform (Lua functions)
  local t = datasets.MNIST(dir .. "/m1", {transform = function(x) return x:sum() end, target_transform = function(y) return y * 10 end})
  local a, b = t:get(2)
  T.eq(b, 20, "target_transform")
  T.eq(a:item(), ds:get(2):sum():item(), "transform")
  T.raises(function() datasets.MNIST(dir .. "/m1", {trian = true}) end, "~MNIST: unknown keyword 'trian'", "unknown key")
  T.raises(function() return ds[12] end, "~index 12 is out of range for a dataset of size 12", "index range")
end)

T.test("MNIST bad input", function()
  local e = T.errmsg(function() datasets.MNIST(dir .. "/none") end)
  T.check(e and e:find("MNIST: dataset not found: expected train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz (or without .gz) in "
    .. dir .. "/none/MNIST/raw, " .. dir .. "/none/MNIST or " .. dir .. "/none", 1, true) ~= nil, "missing: " .. tostring(e))
  e = T.errmsg(function() datasets.FashionMNIST(dir .. "/none", {download = true}) end)
  T.check(e and e:find("download=true, but nnrepl downloads nothing: put train-images-idx3-ubyte.gz", 1, true) ~= nil
    and e:find(dir .. "/none/FashionMNIST/raw", 1, true) ~= nil, "download: " .. tostring(e))
  T.raises(function() datasets.MNIST() end, "~MNIST: root is required", "no root")
  mkdir("half")
  write("half/train-images-idx3-ubyte", "x")
  T.raises(function() datasets.MNIST(dir .. "/half") end, "~has train-images-idx3-ubyte but no train-labels-idx1-ubyte(.gz)", "half")
  write("half/train-labels-idx1-ubyte", "y")
  T.raises(function() datasets.MNIST(dir .. "/half") end, "~half/train-images-idx3-ubyte: not an IDX file", "corrupt images")
  mnist_files("count", "train", 4, 2, 2, {nlabels = 3})
  T.raises(function() datasets.MNIST(dir .. "/count") end, "~has 4 images but " .. dir .. "/count/train-labels-idx1-ubyte has 3 labels", "count")
  mnist_files("lab", "train", 4, 2, 2, {bad_label = 2})
  T.raises(function() datasets.MNIST(dir .. "/lab") end, "~lab/train-labels-idx1-ubyte: label 10 out of range [0, 9] at index 2", "label")
  -- truncated gzip
  mnist_files("cut", "train", 40, 8, 8, {gzip = true})
  local p = dir .. "/cut/train-images-idx3-ubyte.gz"
  local fh = assert(io.open(p, "rb")); local bytes = fh:read("a"); fh:close()
  fh = assert(io.open(p, "wb")); fh:write(bytes:sub(1, #bytes // 2)); fh:close()
  T.raises(function() datasets.MNIST(dir .. "/cut") end, "~cut/train-images-idx3-ubyte.gz: truncated gzip file", "truncated")
end)

local function cifar_files(sub, n_per_file, nfiles, test)
  mkdir(sub)
  local k = 0
  local names = {}
  if test then names = {"test_batch.bin"} else for i = 1, nfiles do names[i] = "data_batch_" .. i .. ".bin" end end
  for _, name in ipairs(names) do
    local parts = {}
    for _ = 1, n_per_file do
      local rec = {string.char(k % 10)}
      for i = 0, 3071 do rec[#rec + 1] = string.char((k * 7 + i * 3) % 256) end
      parts[#parts + 1] = table.concat(rec)
      k = k + 1
    end
    write(sub .. "/" .. name, table.concat(parts))
  end
end

T.test("CIFAR10", function()
  cifar_files("c/cifar-10-batches-bin", 4, 5)
  cifar_files("c/cifar-10-batches-bin", 6, 1, true)
  local ds = datasets.CIFAR10{root = dir .. "/c", train = true}
  T.eq(#ds, 20, "5 batches")
  local img, label = ds:get(13)
  T.eq(img.shape:totable(), {3, 32, 32}, "image")
  T.eq(img.dtype, torch.uint8, "uint8")
  T.eq(label, 3, "label")
  T.eq(img[1][2][3]:item(), (13 * 7 + (1024 + 2 * 32 + 3) * 3) % 256, "pixel")
  T.eq(#datasets.CIFAR10(dir .. "/c", {train = false}), 6, "test")
  T.eq(#datasets.CIFAR10(dir .. "/c/cifar-10-batches-bin", {train = false}), 6, "root = the batches folder")
  T.eq(ds.classes[1], "airplane", "classes")
  os.remove(dir .. "/c/cifar-10-batches-bin/data_batch_4.bin")
  T.raises(function() datasets.CIFAR10(dir .. "/c") end, "~cifar-10-batches-bin is missing data_batch_4.bin", "missing batch")
  T.raises(function() datasets.CIFAR10(dir .. "/nothing") end, "~CIFAR10: data_batch_1.bin not found in " .. dir .. "/nothing/cifar-10-batches-bin or", "missing")
  T.raises(function() datasets.CIFAR10(dir .. "/nothing", {download = true}) end, "~download=true, but nnrepl downloads nothing", "download")
end)

T.test("CIFAR100", function()
  mkdir("h/cifar-100-binary")
  local function records(n, first)
    local parts = {}
    for k = first, first + n - 1 do
      local rec = {string.char(k % 20), string.char((k * 3) % 100)}
      for i = 0, 3071 do rec[#rec + 1] = string.char((k * 5 + i) % 256) end
      parts[#parts + 1] = table.concat(rec)
    end
    return table.concat(parts)
  end
  local sub = "h/cifar-100-binary/"
  write(sub .. "train.bin", records(7, 0))
  write(sub .. "test.bin", records(3, 100))
  local fine, coarse = {}, {}
  for k = 1, 100 do fine[k] = "class" .. k end
  for k = 1, 20 do coarse[k] = "super" .. k end
  T.raises(function() datasets.CIFAR100(dir .. "/h") end, "~fine_label_names.txt is missing", "no class names")
  write(sub .. "fine_label_names.txt", table.concat(fine, "\n") .. "\n")
  write(sub .. "coarse_label_names.txt", table.concat(coarse, "\n") .. "\n")
  local ds = datasets.CIFAR100(dir .. "/h")
  T.eq(#ds, 7, "train records")
  local img, label = ds:get(5)
  T.eq(label, 15, "the fine label")
  T.eq(ds.coarse_targets[5]:item(), 5, "the coarse label")
  T.eq(img.shape:totable(), {3, 32, 32}, "image")
  T.eq(img[2][1][4]:item(), (5 * 5 + 2048 + 32 + 4) % 256, "pixel")
  T.eq(ds.classes[16], "class16", "classes from fine_label_names.txt")
  T.eq(ds.class_to_idx.class16, 15, "class_to_idx")
  T.eq(ds.coarse_classes[20], "super20", "coarse class names")
  local test = datasets.CIFAR100(dir .. "/h/cifar-100-binary", {train = false})
  T.eq(test.targets:tolist(), {0, 3, 6}, "test: fine labels of records 100..102")
  write(sub .. "test.bin", records(2, 0):sub(1, 2 * 3074 - 5))
  T.raises(function() datasets.CIFAR100(dir .. "/h", {train = false}) end,
    "~test.bin: truncated or corrupt CIFAR-100 file", "truncated")
  local bad = records(2, 0)
  bad = bad:sub(1, 3074) .. string.char(20) .. bad:sub(3076)
  write(sub .. "test.bin", bad)
  T.raises(function() datasets.CIFAR100(dir .. "/h", {train = false}) end,
    "~test.bin: corrupt CIFAR-100 file (coarse label 20 out of range [0, 19] in record 1)", "coarse label")
  bad = records(2, 0)
  bad = bad:sub(1, 3075) .. string.char(100) .. bad:sub(3077)
  write(sub .. "test.bin", bad)
  T.raises(function() datasets.CIFAR100(dir .. "/h", {train = false}) end,
    "~test.bin: corrupt CIFAR-100 file (fine label 100 out of range [0, 99] in record 1)", "fine label")
  T.raises(function() datasets.CIFAR100(dir .. "/none") end, "~CIFAR100: train.bin not found", "missing")
end)

T.test("C path: transforms and workers", function()
  mnist_files("w", "train", 300, 28, 28)
  local ds = datasets.MNIST(dir .. "/w")
  T.check(data._c_source(ds) ~= nil, "no transform: C source")
  local function epoch(d, opts)
    opts.batch_size, opts.shuffle, opts.generator = 32, true, torch.Generator():manual_seed(77)
    local out = {}
    for x, y in data.DataLoader(d, opts):iter() do out[#out + 1] = {x, y} end
    return out
  end
  local function agree(a, b)
    local ok = #a == #b
    for k = 1, #a do ok = ok and same(a[k][1], b[k][1]) and same(a[k][2], b[k][2]) end
    return ok
  end
  local lua = epoch(ds, {collate_fn = function(s) return data.default_collate(s) end})
  T.check(agree(epoch(ds, {num_workers = 2}), lua), "raw uint8: workers = Lua path")
  T.eq(lua[1][1].dtype, torch.uint8, "raw batch dtype")
  T.eq(lua[1][2].dtype, torch.int64, "label batch dtype")
  -- a transform C does not know: the Lua path, also with workers
  local marked = setmetatable({}, {__call = function(_, x) return x:to(torch.float32) end})
  ds.transform = marked
  T.check(data._c_source(ds) == nil, "unknown transform: no C source")
  T.eq(epoch(ds, {num_workers = 2})[1][1].dtype, torch.float32, "unknown transform runs in Lua")
  if not has_transforms then
    io.stderr:write("skip: tv_transforms is not there\n")
    return
  end
  T.eq(tv.transforms, transforms, "torchvision.transforms")
  for _, tf in ipairs({transforms.ToTensor(), transforms.Compose({transforms.ToTensor(), transforms.Normalize({0.1307}, {0.3081})}),
                       transforms.Compose({transforms.ToTensor(), transforms.Normalize(0.5, 0.25), transforms.Normalize({1}, {2})})}) do
    ds.transform = tf
    T.check(data._c_source(ds) ~= nil, "C source for " .. tostring(tf))
    local want = epoch(ds, {collate_fn = function(s) return data.default_collate(s) end})
    T.eq(want[1][1].shape:totable(), {32, 1, 28, 28}, "ToTensor batch shape")
    T.check(agree(epoch(ds, {num_workers = 2}), want), "workers = Lua transforms, bit for bit: " .. tostring(tf))
    T.check(agree(epoch(ds, {}), want), "C in the main thread = Lua transforms: " .. tostring(tf))
  end
  ds.transform = transforms.Compose({transforms.ToTensor(), transforms.RandomHorizontalFlip()})
  T.check(data._c_source(ds) == nil, "a random transform: no C source")
  ds.transform = transforms.RandomApply({transforms.ToTensor()})
  T.check(data._c_source(ds) == nil, "RandomApply is not a Compose")
  -- CIFAR-10 with the documents' Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
  cifar_files("c2", 50, 5)
  local c = datasets.CIFAR10(dir .. "/c2", {transform = transforms.Compose({transforms.ToTensor(),
    transforms.Normalize({0.5, 0.5, 0.5}, {0.5, 0.5, 0.5})})})
  local want = epoch(c, {collate_fn = function(s) return data.default_collate(s) end})
  T.eq(want[1][1].shape:totable(), {32, 3, 32, 32}, "CIFAR batch shape")
  T.check(agree(epoch(c, {num_workers = 2}), want), "CIFAR: workers = Lua transforms")
  local parts = data.random_split(c, {200, 50}, torch.Generator():manual_seed(1))
  T.check(agree(epoch(parts[2], {num_workers = 2}), epoch(parts[2], {collate_fn = function(s) return data.default_collate(s) end})),
    "CIFAR subset: workers = Lua")
end)

T.test("Fashion-MNIST", function()
  local f = io.open("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", "rb")
  if not f then io.stderr:write("skip: fashion-mnist not installed\n"); return end
  f:close()
  local ds = datasets.FashionMNIST{train = true}
  T.eq(#ds, 60000, "60000 train samples")
  local img, label = ds:get(0)
  T.eq(label, 9, "first label")
  T.eq(img:sum():item(), 76247, "first image's byte sum")
  T.eq(ds.targets:sum():item(), 270000, "label sum")
  T.eq(#datasets.FashionMNIST(nil, {train = false}), 10000, "test split, default root")
  local marker = setmetatable({__c_transform = {kind = "to_tensor"}}, {__call = function(_, x) return x:unsqueeze(0):float() / 255 end})
  ds.transform = has_transforms and transforms.ToTensor() or marker
  local loader = data.DataLoader(ds, {batch_size = 128, shuffle = true, num_workers = 2})
  T.eq(#loader, 469, "batches")
  local n, lsum, seen, dup = 0, 0, {}, false
  local first
  for x, y in loader:iter() do
    first = first or x
    n = n + x:size(0)
    lsum = lsum + y:sum():item()
  end
  T.eq(n, 60000, "one epoch with 2 workers")
  T.eq(lsum, 270000, "label sum through the loader")
  T.eq(first.dtype, torch.float32, "ToTensor batch dtype")
  T.eq(first.shape:totable(), {128, 1, 28, 28}, "ToTensor batch shape")
  T.check(first:amax():item() <= 1 and first:amin():item() >= 0, "in [0, 1]")
end)

os.execute("rm -rf '" .. dir .. "'")
