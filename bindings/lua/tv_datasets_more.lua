-- torchvision.datasets over files already on disk: SVHN and Flowers102 (MATLAB files, through
-- tv_matfile), Caltech101, Caltech256, Food101, EuroSAT and GTSRB (image folders). Images are
-- PIL-like (Image.open) as torchvision's, except SVHN's: a uint8 [3, 32, 32] tensor, as for
-- MNIST, CIFAR10 and STL10 here. Nothing is downloaded: download=true with the files absent
-- raises an error saying where to put them.
local torch = require "torch"
local U = require "nn_util"
local D = require "tv_dataset_util"

return function(datasets)
  local VisionDataset = datasets.VisionDataset

  local list_len, list_item, loadmat = D.list_len, D.list_item, D.loadmat

  -- ---- SVHN ----
  -- SVHN(root, {split="train", transform, target_transform, download}): root/train_32x32.mat,
  -- test_32x32.mat or extra_32x32.mat; data uint8 [N, 3, 32, 32], labels int64 (10 -> 0).
  local SVHN = VisionDataset:extend("SVHN")
  datasets.SVHN = SVHN
  SVHN.split_list = {train = "train_32x32.mat", test = "test_32x32.mat", extra = "extra_32x32.mat"}
  function SVHN:__init(...)
    local o = U.parse("SVHN", {{"root", U.REQUIRED}, {"split", "train"}, {"transform"}, {"target_transform"},
      {"download", false}}, ...)
    self.root = D.root("SVHN", o.root)
    self.split = D.verify(o.split, "split", {"train", "test", "extra"})
    self.filename = SVHN.split_list[self.split]
    self.transform, self.target_transform = o.transform, o.target_transform
    local path = D.need("SVHN", self.root .. "/" .. self.filename, "file", o.download,
      self.filename .. " (http://ufldl.stanford.edu/housenumbers/" .. self.filename .. ")", self.root)
    local m = loadmat("SVHN", path)
    local X, y = m.X, m.y
    if not torch.is_tensor(X) or X:dim() ~= 4 or X:size(2) ~= 3 or not torch.is_tensor(y) or y:numel() ~= X:size(3) then
      U.errorf("SVHN: %s does not hold X [32, 32, 3, N] and y [N, 1]", path)
    end
    self.data = X:permute(3, 2, 0, 1):contiguous():to(torch.uint8)
    local labels = y:reshape(-1):to(torch.int64)
    self.labels = labels:masked_fill(labels:eq(10), 0)
  end
  function SVHN:__len() return self.data:size(0) end
  function SVHN:__getitem(index)
    index = D.check_index(self, index, self.data:size(0))
    return D.finish(self, self.data[index], self.labels[index]:item())
  end
  SVHN._c_source = function() return nil end

  -- ---- Flowers102 ----
  -- Flowers102(root, {split="train", transform, target_transform, download, loader}):
  -- root/flowers-102/{jpg/image_00001.jpg ..., imagelabels.mat, setid.mat}
  local Flowers102 = VisionDataset:extend("Flowers102")
  datasets.Flowers102 = Flowers102
  local flowers_sets = {train = "trnid", val = "valid", test = "tstid"}
  function Flowers102:__init(...)
    local o = U.parse("Flowers102", {{"root", U.REQUIRED}, {"split", "train"}, {"transform"}, {"target_transform"},
      {"download", false}, {"loader", D.rgb_loader}}, ...)
    self.root = D.root("Flowers102", o.root)
    self._split = D.verify(o.split, "split", {"train", "val", "test"})
    self.transform, self.target_transform, self.loader = o.transform, o.target_transform, o.loader
    local base = self.root .. "/flowers-102"
    self._base_folder, self._images_folder = base, base .. "/jpg"
    local what = "102flowers.tgz extracted (jpg/), imagelabels.mat and setid.mat " ..
      "(https://www.robots.ox.ac.uk/~vgg/data/flowers/102/)"
    D.need("Flowers102", self._images_folder, "dir", o.download, what, base)
    D.need("Flowers102", base .. "/setid.mat", "file", o.download, what, base)
    D.need("Flowers102", base .. "/imagelabels.mat", "file", o.download, what, base)
    local ids = loadmat("Flowers102", base .. "/setid.mat")[flowers_sets[self._split]]
    local labels = loadmat("Flowers102", base .. "/imagelabels.mat").labels
    if not torch.is_tensor(ids) or not torch.is_tensor(labels) then
      U.errorf("Flowers102: %s/setid.mat has no %s or imagelabels.mat no labels", base, flowers_sets[self._split])
    end
    labels = labels:reshape(-1):to(torch.int64):tolist()
    self._labels, self._image_files = {}, {}
    for _, id in ipairs(ids:reshape(-1):to(torch.int64):tolist()) do
      if labels[id] == nil then U.errorf("Flowers102: image id %d of setid.mat has no label in imagelabels.mat", id) end
      self._labels[#self._labels + 1] = labels[id] - 1
      self._image_files[#self._image_files + 1] = string.format("%s/image_%05d.jpg", self._images_folder, id)
    end
  end
  Flowers102.__len, Flowers102.__getitem = list_len, list_item

  -- ---- Food101 ----
  -- Food101(root, {split="train", transform, target_transform, download, loader}):
  -- root/food-101/meta/{train,test}.json ({class: ["class/123", ...]}), images/class/123.jpg
  local Food101 = VisionDataset:extend("Food101")
  datasets.Food101 = Food101
  function Food101:__init(...)
    local o = U.parse("Food101", {{"root", U.REQUIRED}, {"split", "train"}, {"transform"}, {"target_transform"},
      {"download", false}, {"loader", D.rgb_loader}}, ...)
    self.root = D.root("Food101", o.root)
    self._split = D.verify(o.split, "split", {"train", "test"})
    self.transform, self.target_transform, self.loader = o.transform, o.target_transform, o.loader
    local base = self.root .. "/food-101"
    self._base_folder, self._meta_folder, self._images_folder = base, base .. "/meta", base .. "/images"
    local what = "food-101.tar.gz extracted (meta/, images/; http://data.vision.ee.ethz.ch/cvl/food-101.tar.gz)"
    D.need("Food101", self._meta_folder, "dir", o.download, what, self.root)
    D.need("Food101", self._images_folder, "dir", o.download, what, self.root)
    local path = self._meta_folder .. "/" .. self._split .. ".json"
    local meta, keys = require("json").decode(D.read_text("Food101", path), function(msg, pos)
      U.errorf("Food101: %s: bad JSON (%s at byte %d)", path, msg, pos)
    end)
    if type(meta) ~= "table" or keys == nil then U.errorf("Food101: %s does not hold an object", path) end
    local classes = {table.unpack(keys)}
    table.sort(classes)
    self.classes, self.class_to_idx = classes, {}
    for i, c in ipairs(classes) do self.class_to_idx[c] = i - 1 end
    self._labels, self._image_files = {}, {}
    for _, c in ipairs(keys) do -- the file's order, as Python's dict
      for _, rel in ipairs(meta[c]) do
        self._labels[#self._labels + 1] = self.class_to_idx[c]
        self._image_files[#self._image_files + 1] = self._images_folder .. "/" .. rel .. ".jpg"
      end
    end
  end
  Food101.__len, Food101.__getitem = list_len, list_item

  -- ---- EuroSAT: an ImageFolder over root/eurosat/2750 ----
  local EuroSAT = datasets.ImageFolder:extend("EuroSAT")
  datasets.EuroSAT = EuroSAT
  function EuroSAT:__init(...)
    local o = U.parse("EuroSAT", {{"root", U.REQUIRED}, {"transform"}, {"target_transform"}, {"download", false}}, ...)
    local root = D.root("EuroSAT", o.root)
    local folder = root .. "/eurosat/2750"
    D.need("EuroSAT", folder, "dir", o.download, "EuroSAT.zip extracted (2750/<class>/*.jpg; " ..
      "https://huggingface.co/datasets/torchgeo/eurosat/resolve/c877bcd43f099cd0196738f714544e355477f3fd/EuroSAT.zip)",
      root .. "/eurosat")
    datasets.ImageFolder.__init(self, folder, {transform = o.transform, target_transform = o.target_transform})
    self.root, self._base_folder, self._data_folder = root, root .. "/eurosat", folder
  end

  -- ---- GTSRB ----
  -- GTSRB(root, {split="train", transform, target_transform, download}): train: the class folders
  -- root/gtsrb/GTSRB/Training/00000 ... of .ppm files; test: root/gtsrb/GTSRB/Final_Test/Images/*.ppm
  -- with the classes in root/gtsrb/GT-final_test.csv (Filename;...;ClassId).
  local GTSRB = VisionDataset:extend("GTSRB")
  datasets.GTSRB = GTSRB
  function GTSRB:__init(...)
    local o = U.parse("GTSRB", {{"root", U.REQUIRED}, {"split", "train"}, {"transform"}, {"target_transform"},
      {"download", false}}, ...)
    self.root = D.root("GTSRB", o.root)
    self._split = D.verify(o.split, "split", {"train", "test"})
    self.transform, self.target_transform = o.transform, o.target_transform
    local base = self.root .. "/gtsrb"
    self._base_folder = base
    self._target_folder = base .. "/GTSRB/" .. (self._split == "train" and "Training" or "Final_Test/Images")
    local what = self._split == "train" and "GTSRB-Training_fixed.zip extracted (GTSRB/Training/)"
      or "GTSRB_Final_Test_Images.zip extracted (GTSRB/Final_Test/Images/) and GT-final_test.csv"
    D.need("GTSRB", self._target_folder, "dir", o.download,
      what .. " (https://sid.erda.dk/public/archives/daaeac0d7ce1152aea9b61d9f1e19370/)", base)
    local samples = {}
    if self._split == "train" then
      local _, class_to_idx = datasets.DatasetFolder.find_classes(self._target_folder)
      samples = datasets.DatasetFolder.make_dataset(self._target_folder, class_to_idx, {".ppm"})
    else
      local csv = D.need("GTSRB", base .. "/GT-final_test.csv", "file", o.download, what, base)
      for k, row in ipairs(D.csv_dicts("GTSRB", csv, ";", true)) do
        if row.Filename == nil or row.ClassId == nil then U.errorf("GTSRB: %s: row %d has no Filename or ClassId", csv, k) end
        samples[#samples + 1] = {self._target_folder .. "/" .. row.Filename, D.int("GTSRB", row.ClassId, csv)}
      end
    end
    self._samples = samples
  end
  function GTSRB:__len() return #self._samples end
  function GTSRB:__getitem(index)
    index = D.check_index(self, index, #self._samples)
    local s = self._samples[index + 1]
    return D.finish(self, D.rgb_loader(s[1]), s[2])
  end

  -- ---- Caltech101, Caltech256 ----
  -- Caltech101(root, {target_type="category", transform, target_transform, download}):
  -- root/caltech101/101_ObjectCategories/<class>/image_0001.jpg ... and, for target_type
  -- "annotation", root/caltech101/Annotations/<class>/annotation_0001.mat (its obj_contour,
  -- a float64 [2, K] tensor). A list of target types gives a list of targets.
  local Caltech101 = VisionDataset:extend("Caltech101")
  datasets.Caltech101 = Caltech101
  local caltech_names = {Faces = "Faces_2", Faces_easy = "Faces_3", Motorbikes = "Motorbikes_16", airplanes = "Airplanes_Side_2"}
  function Caltech101:__init(...)
    local o = U.parse("Caltech101", {{"root", U.REQUIRED}, {"target_type", "category"}, {"transform"},
      {"target_transform"}, {"download", false}}, ...)
    self.root = D.root("Caltech101", o.root) .. "/caltech101"
    local types = type(o.target_type) == "string" and {o.target_type} or o.target_type
    self.target_type = {}
    for i, t in ipairs(types) do self.target_type[i] = D.verify(t, "target_type", {"category", "annotation"}) end
    self.transform, self.target_transform = o.transform, o.target_transform
    local cats = D.need("Caltech101", self.root .. "/101_ObjectCategories", "dir", o.download,
      "101_ObjectCategories.tar.gz and Annotations.tar extracted (https://data.caltech.edu/records/mzrjq-6wc02)", self.root)
    self.categories = {}
    for _, c in ipairs(D.listdir("Caltech101", cats)) do
      if c ~= "BACKGROUND_Google" then self.categories[#self.categories + 1] = c end
    end
    self.annotation_categories, self.index, self.y = {}, {}, {}
    for i, c in ipairs(self.categories) do
      self.annotation_categories[i] = caltech_names[c] or c
      for k = 1, #D.listdir("Caltech101", cats .. "/" .. c) do
        self.index[#self.index + 1] = k
        self.y[#self.y + 1] = i - 1
      end
    end
  end
  function Caltech101:__len() return #self.index end
  function Caltech101:__getitem(index)
    index = D.check_index(self, index, #self.index) + 1
    local y, k = self.y[index], self.index[index]
    local img = D.open(string.format("%s/101_ObjectCategories/%s/image_%04d.jpg", self.root, self.categories[y + 1], k))
    local target = {}
    for _, t in ipairs(self.target_type) do
      if t == "category" then target[#target + 1] = y
      else
        local path = string.format("%s/Annotations/%s/annotation_%04d.mat", self.root, self.annotation_categories[y + 1], k)
        local contour = loadmat("Caltech101", path).obj_contour
        if contour == nil then U.errorf("Caltech101: %s has no obj_contour", path) end
        target[#target + 1] = contour
      end
    end
    if #target == 1 then target = target[1] end
    return D.finish(self, img, target)
  end

  -- Caltech256(root, {transform, target_transform, download}):
  -- root/caltech256/256_ObjectCategories/001.ak47/001_0001.jpg ...; target the category index
  local Caltech256 = VisionDataset:extend("Caltech256")
  datasets.Caltech256 = Caltech256
  function Caltech256:__init(...)
    local o = U.parse("Caltech256", {{"root", U.REQUIRED}, {"transform"}, {"target_transform"}, {"download", false}}, ...)
    self.root = D.root("Caltech256", o.root) .. "/caltech256"
    self.transform, self.target_transform = o.transform, o.target_transform
    local cats = D.need("Caltech256", self.root .. "/256_ObjectCategories", "dir", o.download,
      "256_ObjectCategories.tar extracted (https://data.caltech.edu/records/nyy15-4j048)", self.root)
    self.categories = D.listdir("Caltech256", cats)
    self.index, self.y = {}, {}
    for i, c in ipairs(self.categories) do
      local n = 0
      for _, f in ipairs(D.listdir("Caltech256", cats .. "/" .. c)) do
        if f:sub(-4) == ".jpg" then n = n + 1 end
      end
      for k = 1, n do
        self.index[#self.index + 1] = k
        self.y[#self.y + 1] = i - 1
      end
    end
  end
  Caltech256.__len = Caltech101.__len
  function Caltech256:__getitem(index)
    index = D.check_index(self, index, #self.index) + 1
    local y, k = self.y[index], self.index[index]
    local img = D.open(string.format("%s/256_ObjectCategories/%s/%03d_%04d.jpg", self.root, self.categories[y + 1], y + 1, k))
    return D.finish(self, img, y)
  end
end
