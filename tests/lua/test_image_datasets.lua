-- ImageFolder, CsvImageDataset and document 000's flow: PNG and JPEG files and a
-- CSV written here, a Lua MyDataset with Image.open(path):convert("RGB") and the
-- document's transforms, batches from DataLoader, one SGD step of its Net.
local T = ...
local tvio = require "tv_io"
local tv = require "tv_transforms"
local D = require "tv_image_datasets"
local Image = require("PIL").Image
local data = torch.utils.data

local FX = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "fixture_dir.lua")("image_ds")
local dir, mkdir, write = FX.dir, FX.mkdir, FX.write
local function u8(shape) return torch.randint(0, 256, shape, {dtype = torch.uint8}) end

torch.manual_seed(5)

T.test("ImageFolder", function()
  local root = dir .. "/folder"
  for _, c in ipairs({"dog", "cat", "bird"}) do mkdir(root .. "/" .. c) end
  mkdir(root .. "/cat/sub")
  tvio.write_png(u8({3, 5, 6}), root .. "/cat/b.png")
  tvio.write_jpeg(u8({3, 7, 4}), root .. "/cat/A.JPG")
  tvio.write_png(u8({1, 4, 4}), root .. "/cat/sub/c.png")
  tvio.write_png(u8({4, 3, 3}), root .. "/dog/x.png")
  tvio.write_png(u8({3, 2, 2}), root .. "/bird/z.png")
  write(root .. "/cat/notes.txt", "not an image")
  local ds = D.ImageFolder(root)
  T.eq(ds.classes, {"bird", "cat", "dog"}, "classes sorted")
  T.eq(ds.class_to_idx.cat, 1, "class_to_idx")
  T.eq(#ds, 5, "length (the .txt file is skipped)")
  local paths = {}
  for i, s in ipairs(ds.samples) do paths[i] = s[1]:sub(#root + 2) .. ":" .. s[2] end
  T.eq(paths, {"bird/z.png:0", "cat/A.JPG:1", "cat/b.png:1", "cat/sub/c.png:1", "dog/x.png:2"}, "samples in os.walk order")
  T.eq(ds.targets, {0, 1, 1, 1, 2}, "targets")
  local s = ds[3]
  T.eq(s[2], 1, "label")
  T.eq(s[1].mode, "RGB", "loaded as RGB")
  T.eq(s[1].size, {4, 4}, "size of the grey image")
  local img, label = ds:get(4)
  T.eq({img.size, label}, {{3, 3}, 2}, "get gives the values")
  local tds = D.ImageFolder(root, {transform = tv.Compose({tv.Resize({8, 8}), tv.ToTensor()}), target_transform = function(t) return t * 10 end})
  local x, y = tds:get(1)
  T.eq(x.shape:totable(), {3, 8, 8}, "transform")
  T.eq(y, 10, "target_transform")
  T.eq(#D.ImageFolder{root = root, extensions = {".png"}}, 4, "extensions")
  T.eq(#D.ImageFolder(root, {is_valid_file = function(p) return p:find("/cat/", 1, true) ~= nil and p:match("%.png$") ~= nil end, allow_empty = true}), 2, "is_valid_file")
  T.raises(function() return ds[5] end, "~index 5 is out of range for 5 samples")
  mkdir(root .. "/empty")
  T.raises(function() D.ImageFolder(root) end, "~Found no valid file for the classes empty")
  T.eq(#D.ImageFolder(root, {allow_empty = true}), 5, "allow_empty")
  T.raises(function() D.ImageFolder(dir .. "/missing") end, "~cannot list '" .. dir .. "/missing'")
  mkdir(dir .. "/flat")
  T.raises(function() D.ImageFolder(dir .. "/flat") end, "~Couldn't find any class folder")
  T.raises(function() D.ImageFolder(root, {transfrom = 1}) end, "~unknown keyword 'transfrom'")
end)

T.test("CsvImageDataset", function()
  local root = dir .. "/csv"
  mkdir(root .. "/img")
  tvio.write_png(u8({3, 4, 5}), root .. "/img/a.png")
  tvio.write_jpeg(u8({3, 6, 6}), root .. "/img/b.jpg")
  write(root .. "/desc.csv", "path,label\r\nimg/a.png,3\r\n\"img/b.jpg\",0\r\n\r\n")
  local ds = D.CsvImageDataset(root .. "/desc.csv")
  T.eq(#ds, 2, "header skipped, blank line skipped")
  T.eq(ds.targets, {3, 0}, "labels")
  local img, label = ds:get(1)
  T.eq({img.mode, img.size, label}, {"RGB", {6, 6}, 0}, "sample")
  write(root .. "/nohead.csv", "img/a.png,1\n" .. root .. "/img/b.jpg,2\n")
  T.eq(D.CsvImageDataset(root .. "/nohead.csv").targets, {1, 2}, "no header, an absolute path")
  write(root .. "/missing.csv", "path,label\nimg/a.png,1\nimg/none.png,2\n")
  T.raises(function() D.CsvImageDataset(root .. "/missing.csv") end,
    "~CsvImageDataset: '" .. root .. "/missing.csv' line 3: image '" .. root .. "/img/none.png' does not exist")
  local lazy = D.CsvImageDataset(root .. "/missing.csv", {check_files = false})
  T.raises(function() return lazy[1] end, "~'" .. root .. "/missing.csv' line 3: Image.open: cannot open '" .. root .. "/img/none.png'")
  write(root .. "/badlabel.csv", "path,label\nimg/a.png,cat\n")
  T.raises(function() D.CsvImageDataset(root .. "/badlabel.csv") end, "~line 2: label 'cat' is not an integer")
  write(root .. "/range.csv", "img/a.png,1\nimg/a.png,10\n")
  T.raises(function() D.CsvImageDataset(root .. "/range.csv", {num_classes = 10}) end, "~line 2: label 10 is out of range [0, 10)")
  write(root .. "/neg.csv", "img/a.png,-1\n")
  T.raises(function() D.CsvImageDataset(root .. "/neg.csv") end, "~line 1: label -1 is out of range")
  write(root .. "/short.csv", "path,label\nimg/a.png\n")
  T.raises(function() D.CsvImageDataset(root .. "/short.csv") end, "~line 2: expected 'path,label'")
  write(root .. "/corrupt.png", "\137PNG\r\n\26\nnot really")
  write(root .. "/corrupt.csv", "corrupt.png,1\n")
  T.raises(function() return D.CsvImageDataset(root .. "/corrupt.csv")[0] end, "~line 1: Image.open: cannot decode PNG file '" .. root .. "/corrupt.png'")
  T.raises(function() D.CsvImageDataset(root .. "/nothere.csv") end, "~cannot open '" .. root .. "/nothere.csv'")
end)

T.test("document 000: MyDataset, transforms, DataLoader, one step", function()
  local root = dir .. "/doc"
  mkdir(root .. "/data")
  local lines = {"path,label"}
  local kinds = {{3, "png"}, {3, "jpg"}, {4, "png"}, {1, "png"}, {1, "jpg"}}
  for k = 1, 10 do
    local c, ext = kinds[(k - 1) % #kinds + 1][1], kinds[(k - 1) % #kinds + 1][2]
    local img = u8({c, 30 + k, 40 - k})
    local name = string.format("data/img%02d.%s", k, ext)
    if ext == "png" then tvio.write_png(img, root .. "/" .. name) else tvio.write_jpeg(img, root .. "/" .. name) end
    lines[#lines + 1] = name .. "," .. ((k * 7) % 101)
  end
  write(root .. "/desc_train.csv", table.concat(lines, "\n") .. "\n")

  -- the document's MyDataset, line by line: rows of the CSV, Image.open(img):convert('RGB')
  local MyDataset = data.Dataset:extend("MyDataset")
  function MyDataset:__init(desc_file, transform)
    self.all_data = {}
    local base = desc_file:match("^(.*)/") or "."
    local first = true
    for line in io.lines(desc_file) do
      if not first then
        local path, label = line:match("^([^,]+),(%d+)$")
        self.all_data[#self.all_data + 1] = {base .. "/" .. path, math.tointeger(tonumber(label))}
      end
      first = false
    end
    self.transform = transform
  end
  function MyDataset:__getitem(index)
    local img, label = self.all_data[index + 1][1], self.all_data[index + 1][2]
    img = Image.open(img):convert("RGB")
    if self.transform ~= nil then img = self.transform(img) end
    return img, label
  end
  function MyDataset:__len() return #self.all_data end

  local norm_mean = {0.4948052, 0.48568845, 0.44682974}
  local norm_std = {0.24580306, 0.24236229, 0.2603115}
  local train_transform = tv.Compose({
    tv.Resize({32, 32}),
    tv.RandomHorizontalFlip(),
    tv.ToTensor(),
    tv.Normalize(norm_mean, norm_std),
  })
  local train_data = MyDataset(root .. "/desc_train.csv", train_transform)
  T.eq(#train_data, 10, "dataset length")
  local csv_data = D.CsvImageDataset(root .. "/desc_train.csv", {transform = train_transform})
  T.eq(csv_data.targets, (function() local r = {} for k = 1, 10 do r[k] = train_data.all_data[k][2] end return r end)(), "built-in CSV dataset agrees")

  local loader = data.DataLoader(train_data, {batch_size = 4, shuffle = true})
  T.eq(#loader, 3, "number of batches")
  local sizes, labels = {}, {}
  local model, criterion, optimizer, before
  local nn, F, optim = torch.nn, torch.nn.functional, torch.optim
  local can_train = nn and nn.Conv2d and nn.MaxPool2d and nn.Linear and nn.CrossEntropyLoss and optim and optim.SGD and F and F.relu
  if can_train then
    local Net = nn.Module:extend("Net")
    function Net:__init()
      self.conv1 = nn.Conv2d{in_channels = 3, out_channels = 32, kernel_size = {3, 3}}
      self.pool1 = nn.MaxPool2d{kernel_size = 2, stride = 2}
      self.conv2 = nn.Conv2d{in_channels = 32, out_channels = 64, kernel_size = 3}
      self.pool2 = nn.MaxPool2d(2, 2)
      self.fc1 = nn.Linear(64 * 6 * 6, 256)
      self.fc2 = nn.Linear(256, 128)
      self.fc3 = nn.Linear(128, 101)
    end
    function Net:forward(x)
      x = self.pool1(F.relu(self.conv1(x)))
      x = self.pool2(F.relu(self.conv2(x)))
      x = x:view(-1, 64 * 6 * 6)
      x = F.relu(self.fc1(x))
      x = F.relu(self.fc2(x))
      return self.fc3(x)
    end
    model = Net()
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model:parameters(), {lr = 0.001, momentum = 0.9, dampening = 0.1})
    before = model.fc3.weight:clone()
  end
  local steps = 0
  for step, x, y in loader:enumerate() do
    sizes[#sizes + 1] = x.shape:totable()
    T.eq(x.dtype, torch.float32, "batch dtype")
    for _, v in ipairs(y:tolist()) do labels[#labels + 1] = v end
    if can_train and step == 0 then
      local out = model(x)
      T.eq(out.shape:totable(), {4, 101}, "logits shape")
      local loss = criterion(out, y)
      optimizer:zero_grad()
      loss:backward()
      optimizer:step()
      local l = loss:item()
      T.check(l == l and l > 0 and l < 10, "a finite loss: " .. tostring(l))
      T.check((model.fc3.weight - before):abs():max():item() > 0, "SGD changed the weights")
    end
    steps = steps + 1
  end
  T.eq(sizes, {{4, 3, 32, 32}, {4, 3, 32, 32}, {2, 3, 32, 32}}, "batch shapes")
  table.sort(labels)
  local want = {}
  for k = 1, 10 do want[k] = (k * 7) % 101 end
  table.sort(want)
  T.eq(labels, want, "each sample once per epoch")
  if not can_train then io.stderr:write("note: nn modules missing, the training step was skipped\n") end
  -- the built-in dataset in the same loader
  local n = 0
  for x, y in data.DataLoader(csv_data, {batch_size = 5}):iter() do
    T.eq(x.shape:totable(), {5, 3, 32, 32}, "CsvImageDataset batch")
    T.eq(y.dtype, torch.int64, "labels collate to int64")
    n = n + 1
  end
  T.eq(n, 2, "CsvImageDataset batches")
end)

os.execute("rm -rf '" .. dir .. "'")
