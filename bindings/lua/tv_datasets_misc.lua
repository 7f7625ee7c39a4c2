-- torchvision.datasets RenderedSST2, Omniglot, Places365, Flickr30k, SEMEION and USPS over their
-- extracted files. Images are PIL-like, as torchvision's. Nothing is downloaded.
local torch = require "torch"
local U = require "nn_util"
local D = require "tv_dataset_util"
local Image = require("tv_io").Image

return function(datasets)
  local VisionDataset, DatasetFolder = datasets.VisionDataset, datasets.DatasetFolder

  -- ---- RenderedSST2 ----
  -- RenderedSST2(root, {split="train", transform, target_transform, download, loader}):
  -- root/rendered-sst2/{train,valid,test}/{negative,positive}/*.png
  local RenderedSST2 = VisionDataset:extend("RenderedSST2")
  datasets.RenderedSST2 = RenderedSST2
  function RenderedSST2:__init(...)
    local o = U.parse("RenderedSST2", {{"root", U.REQUIRED}, {"split", "train"}, {"transform"}, {"target_transform"},
      {"download", false}, {"loader", D.rgb_loader}}, ...)
    self.root = D.root("RenderedSST2", o.root)
    self._split = D.verify(o.split, "split", {"train", "val", "test"})
    self._split_to_folder = {train = "train", val = "valid", test = "test"}
    self.transform, self.target_transform, self.loader = o.transform, o.target_transform, o.loader
    self._base_folder = self.root .. "/rendered-sst2"
    self.classes = {"negative", "positive"}
    self.class_to_idx = {negative = 0, positive = 1}
    local folder = self._base_folder .. "/" .. self._split_to_folder[self._split]
    D.need("RenderedSST2", folder, "dir", o.download, "rendered-sst2.tgz extracted (rendered-sst2/{train,valid,test}/" ..
      "{negative,positive}/; https://openaipublic.azureedge.net/clip/data/rendered-sst2.tgz)", self.root)
    local _, class_to_idx = DatasetFolder.find_classes(folder)
    self._samples = DatasetFolder.make_dataset(folder, class_to_idx, {".png"})
  end
  RenderedSST2.__len, RenderedSST2.__getitem = D.samples_len, D.samples_item

  -- ---- Omniglot ----
  -- Omniglot(root, {background=true, transform, target_transform, download, loader}):
  -- root/omniglot-py/images_background (or images_evaluation)/<alphabet>/<character>/*.png; the
  -- target is the character's index over all alphabets; images are mode L.
  local Omniglot = VisionDataset:extend("Omniglot")
  datasets.Omniglot = Omniglot
  function Omniglot:__init(...)
    local o = U.parse("Omniglot", {{"root", U.REQUIRED}, {"background", true}, {"transform"}, {"target_transform"},
      {"download", false}, {"loader"}}, ...)
    self.root = D.root("Omniglot", o.root) .. "/omniglot-py"
    self.background = o.background
    self.transform, self.target_transform, self.loader = o.transform, o.target_transform, o.loader
    local name = self.background and "images_background" or "images_evaluation"
    self.target_folder = self.root .. "/" .. name
    D.need("Omniglot", self.target_folder, "dir", o.download, name .. ".zip extracted (" .. name .. "/<alphabet>/<character>/; " ..
      "https://raw.githubusercontent.com/brendenlake/omniglot/master/python/" .. name .. ".zip)", self.root)
    self._alphabets = D.listdir("Omniglot", self.target_folder, "dir")
    self._characters, self._flat_character_images = {}, {}
    for _, a in ipairs(self._alphabets) do
      for _, c in ipairs(D.listdir("Omniglot", self.target_folder .. "/" .. a, "dir")) do
        self._characters[#self._characters + 1] = a .. "/" .. c
      end
    end
    for idx, ch in ipairs(self._characters) do
      for _, f in ipairs(D.listdir("Omniglot", self.target_folder .. "/" .. ch, "file")) do
        if f:sub(-4) == ".png" then self._flat_character_images[#self._flat_character_images + 1] = {f, idx - 1} end
      end
    end
  end
  function Omniglot:__len() return #self._flat_character_images end
  function Omniglot:__getitem(index)
    index = D.check_index(self, index, #self._flat_character_images)
    local name, idx = table.unpack(self._flat_character_images[index + 1])
    local path = self.target_folder .. "/" .. self._characters[idx + 1] .. "/" .. name
    local image = self.loader and self.loader(path) or D.open(path):convert("L")
    return D.finish(self, image, idx)
  end

  -- ---- Places365 ----
  -- Places365(root, {split="train-standard", small=false, download, transform, target_transform, loader}):
  -- root/{categories_places365.txt, places365_train_standard.txt (..._challenge, places365_val.txt,
  -- places365_test.txt), data_large_standard/ (data_256_..., val_large/, val_256/, test_large/, ...)}.
  -- A file-list line without a class index (the test list) gives the target nil.
  local Places365 = VisionDataset:extend("Places365")
  datasets.Places365 = Places365
  local places_lists = {["train-standard"] = "places365_train_standard.txt", ["train-challenge"] =
    "places365_train_challenge.txt", val = "places365_val.txt", test = "places365_test.txt"}
  local function places_file(root, name, download)
    local path = root .. "/" .. name
    if D.kind(path) ~= "file" then
      U.errorf("Places365: the file %s does not exist%s: put it (from filelist_places365-standard.tar or " ..
        "-challenge.tar, http://data.csail.mit.edu/places/places365/) in %s", path,
        download and " and download=true cannot fetch it (nnrepl downloads nothing)" or "", root)
    end
    return path
  end
  function Places365:__init(...)
    local o = U.parse("Places365", {{"root", U.REQUIRED}, {"split", "train-standard"}, {"small", false},
      {"download", false}, {"transform"}, {"target_transform"}, {"loader", D.rgb_loader}}, ...)
    self.root = D.root("Places365", o.root)
    self.split = D.verify(o.split, "split", {"train-standard", "train-challenge", "val", "test"})
    self.small, self.loader = o.small, o.loader
    self.transform, self.target_transform = o.transform, o.target_transform
    self.variant = self.split:find("challenge") and "challenge" or "standard"
    local size = self.small and "256" or "large"
    self.images_dir = self.root .. "/" .. (self.split:sub(1, 5) == "train" and ("data_" .. size .. "_" .. self.variant)
      or (self.split .. "_" .. size))
    local cats = places_file(self.root, "categories_places365.txt", o.download)
    self.class_to_idx, self.classes = {}, {}
    for k, line in ipairs(D.lines("Places365", cats)) do
      local c, i = line:match("^%s*(%S+)%s+(%S+)%s*$")
      if not c then U.errorf("Places365: %s line %d: expected '<category> <index>'", cats, k) end
      self.class_to_idx[c] = D.int("Places365", i, cats .. " line " .. k)
      self.classes[#self.classes + 1] = c
    end
    table.sort(self.classes)
    local list = places_file(self.root, places_lists[self.split], o.download)
    self.imgs, self.targets = {}, {}
    for k, line in ipairs(D.lines("Places365", list)) do
      local img, i = line:match("^%s*(%S+)%s*(%S*)%s*$")
      if not img then U.errorf("Places365: %s line %d is empty", list, k) end
      local target = i ~= "" and D.int("Places365", i, list .. " line " .. k) or nil
      self.imgs[k] = {self.images_dir .. "/" .. img:gsub("^/+", ""), target}
      self.targets[k] = target
    end
    self._samples = self.imgs
    if D.kind(self.images_dir) ~= "dir" then
      D.missing("Places365", self.images_dir, o.download, "the extracted image archive (" ..
        self.images_dir:match("[^/]+$") .. "/; http://data.csail.mit.edu/places/places365/)", self.root)
    end
  end
  Places365.__len, Places365.__getitem = D.samples_len, D.samples_item

  -- ---- Flickr30k ----
  -- Flickr30k(root, ann_file, {transform, target_transform, loader}): ann_file lines
  -- "<image>#<n>\t<caption>"; samples the sorted image names, the target their captions.
  local Flickr30k = VisionDataset:extend("Flickr30k")
  datasets.Flickr30k = Flickr30k
  function Flickr30k:__init(...)
    local o = U.parse("Flickr30k", {{"root", U.REQUIRED}, {"ann_file", U.REQUIRED}, {"transform"}, {"target_transform"},
      {"loader", D.rgb_loader}}, ...)
    self.root = D.root("Flickr30k", o.root)
    self.ann_file = o.ann_file
    self.transform, self.target_transform, self.loader = o.transform, o.target_transform, o.loader
    if D.kind(o.ann_file) ~= "file" then
      U.errorf("Flickr30k: annotation file %s not found: put results_20130124.token (from flickr30k.tar.gz) there " ..
        "(nothing is downloaded)", tostring(o.ann_file))
    end
    self.annotations, self.ids = {}, {}
    for k, line in ipairs(D.lines("Flickr30k", o.ann_file)) do
      local img, cap = line:match("^([^\t]*)#%d+\t(.*)$")
      if not img then U.errorf("Flickr30k: %s line %d: expected '<image>#<n>\\t<caption>'", o.ann_file, k) end
      if not self.annotations[img] then self.annotations[img] = {}; self.ids[#self.ids + 1] = img end
      table.insert(self.annotations[img], cap)
    end
    table.sort(self.ids)
  end
  function Flickr30k:__len() return #self.ids end
  function Flickr30k:__getitem(index)
    index = D.check_index(self, index, #self.ids)
    local id = self.ids[index + 1]
    local captions = {table.unpack(self.annotations[id])}
    return D.finish(self, self.loader(self.root .. "/" .. id), captions)
  end

  -- ---- SEMEION ----
  -- SEMEION(root, {transform, target_transform, download=true}): root/semeion.data, lines of 256
  -- pixel values (0/1) and a one-hot label of 10; data uint8 [N, 16, 16] (x 255), labels int64.
  local SEMEION = VisionDataset:extend("SEMEION")
  datasets.SEMEION = SEMEION
  function SEMEION:__init(...)
    local o = U.parse("SEMEION", {{"root", U.REQUIRED}, {"transform"}, {"target_transform"}, {"download", true}}, ...)
    self.root = D.root("SEMEION", o.root)
    self.transform, self.target_transform = o.transform, o.target_transform
    self.filename = "semeion.data"
    local path = D.need("SEMEION", self.root .. "/semeion.data", "file", false,
      "semeion.data (http://archive.ics.uci.edu/ml/machine-learning-databases/semeion/semeion.data)", self.root)
    local pixels, labels = {}, {}
    for k, line in ipairs(D.lines("SEMEION", path)) do
      local v = {}
      for x in line:gmatch("%S+") do
        v[#v + 1] = tonumber(x) or U.errorf("SEMEION: %s line %d: '%s' is not a number", path, k, x)
      end
      if #v > 0 then
        if #v ~= 266 then U.errorf("SEMEION: %s line %d: %d values, expected 266 (256 pixels, 10 labels)", path, k, #v) end
        for i = 1, 256 do pixels[#pixels + 1] = math.floor(v[i] * 255) % 256 end
        local label
        for i = 257, 266 do if v[i] ~= 0 and not label then label = i - 257 end end
        if not label then U.errorf("SEMEION: %s line %d: no label is set", path, k) end
        labels[#labels + 1] = label
      end
    end
    self.data = torch.tensor(pixels, {dtype = torch.uint8}):reshape(-1, 16, 16)
    self.labels = torch.tensor(labels, {dtype = torch.int64})
  end
  function SEMEION:__len() return self.data:size(0) end
  function SEMEION:__getitem(index)
    index = D.check_index(self, index, self.data:size(0))
    return D.finish(self, Image.fromarray(self.data[index], "L"), self.labels[index]:item())
  end
  SEMEION._c_source = function() return nil end

  -- ---- USPS ----
  -- USPS(root, {train=true, transform, target_transform, download}): torchvision reads
  -- root/usps.bz2 (usps.t.bz2 for test), libsvm lines "<label> 1:<v> ... 256:<v>" with v in [-1, 1].
  -- nnrepl has no bzip2 decoder: it reads the decompressed root/usps (usps.t) that `bunzip2 -k`
  -- leaves. data uint8 [N, 16, 16] ((v + 1) / 2 * 255 in float32, truncated), targets label - 1.
  local USPS = VisionDataset:extend("USPS")
  datasets.USPS = USPS
  function USPS:__init(...)
    local o = U.parse("USPS", {{"root", U.REQUIRED}, {"train", true}, {"transform"}, {"target_transform"},
      {"download", false}}, ...)
    self.root = D.root("USPS", o.root)
    self.train = o.train
    self.transform, self.target_transform = o.transform, o.target_transform
    local name = self.train and "usps" or "usps.t"
    local path = self.root .. "/" .. name
    if D.kind(path) ~= "file" then
      local bz = D.kind(path .. ".bz2") == "file"
      U.errorf("USPS: %s not found%s: nnrepl cannot read bzip2, so put the decompressed file there (`bunzip2 -k %s.bz2`; " ..
        "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multiclass/%s.bz2)%s", path,
        bz and " (only " .. name .. ".bz2 is there)" or "", path, name, o.download and "; nothing is downloaded" or "")
    end
    local values, targets = {}, {}
    for k, line in ipairs(D.lines("USPS", path)) do
      local f = {}
      for x in line:gmatch("%S+") do f[#f + 1] = x end
      if #f > 0 then
        if #f ~= 257 then U.errorf("USPS: %s line %d: %d pixels, expected 256", path, k, #f - 1) end
        targets[#targets + 1] = D.int("USPS", f[1], path .. " line " .. k) - 1
        for i = 2, 257 do
          values[#values + 1] = tonumber(f[i]:match("[^:]*$")) or U.errorf("USPS: %s line %d: bad value '%s'", path, k, f[i])
        end
      end
    end
    local v = torch.tensor(values, {dtype = torch.float32})
    self.data = ((v + 1) / 2 * 255):to(torch.uint8):reshape(-1, 16, 16)
    self.targets = targets
  end
  function USPS:__len() return self.data:size(0) end
  function USPS:__getitem(index)
    index = D.check_index(self, index, self.data:size(0))
    return D.finish(self, Image.fromarray(self.data[index], "L"), self.targets[index + 1])
  end
  USPS._c_source = function() return nil end
end
