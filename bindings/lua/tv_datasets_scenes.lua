-- torchvision.datasets Cityscapes, INaturalist and SBDataset over their extracted files. Images
-- are PIL-like RGB, as torchvision's; label images open as tv_io's Image.open gives them.
-- Nothing is downloaded.
local torch = require "torch"
local U = require "nn_util"
local D = require "tv_dataset_util"
local Image = require("tv_io").Image

return function(datasets)
  local VisionDataset = datasets.VisionDataset

  -- ---- Cityscapes ----
  -- Cityscapes(root, {split="train", mode="fine", target_type="instance", transform,
  -- target_transform, transforms}): root/leftImg8bit/<split>/<city>/<name>_leftImg8bit.png and
  -- root/gtFine (gtCoarse)/<split>/<city>/<name>_gtFine_{instanceIds,labelIds,color}.png,
  -- _polygons.json. A list of target types gives a list of targets; polygon targets are the
  -- decoded JSON (arrays are lists).
  local Cityscapes = VisionDataset:extend("Cityscapes")
  datasets.Cityscapes = Cityscapes
  -- name, id, train_id, category, category_id, has_instances, ignore_in_eval, color
  local city_classes = {
    {"unlabeled", 0, 255, "void", 0, false, true, {0, 0, 0}},
    {"ego vehicle", 1, 255, "void", 0, false, true, {0, 0, 0}},
    {"rectification border", 2, 255, "void", 0, false, true, {0, 0, 0}},
    {"out of roi", 3, 255, "void", 0, false, true, {0, 0, 0}},
    {"static", 4, 255, "void", 0, false, true, {0, 0, 0}},
    {"dynamic", 5, 255, "void", 0, false, true, {111, 74, 0}},
    {"ground", 6, 255, "void", 0, false, true, {81, 0, 81}},
    {"road", 7, 0, "flat", 1, false, false, {128, 64, 128}},
    {"sidewalk", 8, 1, "flat", 1, false, false, {244, 35, 232}},
    {"parking", 9, 255, "flat", 1, false, true, {250, 170, 160}},
    {"rail track", 10, 255, "flat", 1, false, true, {230, 150, 140}},
    {"building", 11, 2, "construction", 2, false, false, {70, 70, 70}},
    {"wall", 12, 3, "construction", 2, false, false, {102, 102, 156}},
    {"fence", 13, 4, "construction", 2, false, false, {190, 153, 153}},
    {"guard rail", 14, 255, "construction", 2, false, true, {180, 165, 180}},
    {"bridge", 15, 255, "construction", 2, false, true, {150, 100, 100}},
    {"tunnel", 16, 255, "construction", 2, false, true, {150, 120, 90}},
    {"pole", 17, 5, "object", 3, false, false, {153, 153, 153}},
    {"polegroup", 18, 255, "object", 3, false, true, {153, 153, 153}},
    {"traffic light", 19, 6, "object", 3, false, false, {250, 170, 30}},
    {"traffic sign", 20, 7, "object", 3, false, false, {220, 220, 0}},
    {"vegetation", 21, 8, "nature", 4, false, false, {107, 142, 35}},
    {"terrain", 22, 9, "nature", 4, false, false, {152, 251, 152}},
    {"sky", 23, 10, "sky", 5, false, false, {70, 130, 180}},
    {"person", 24, 11, "human", 6, true, false, {220, 20, 60}},
    {"rider", 25, 12, "human", 6, true, false, {255, 0, 0}},
    {"car", 26, 13, "vehicle", 7, true, false, {0, 0, 142}},
    {"truck", 27, 14, "vehicle", 7, true, false, {0, 0, 70}},
    {"bus", 28, 15, "vehicle", 7, true, false, {0, 60, 100}},
    {"caravan", 29, 255, "vehicle", 7, true, true, {0, 0, 90}},
    {"trailer", 30, 255, "vehicle", 7, true, true, {0, 0, 110}},
    {"train", 31, 16, "vehicle", 7, true, false, {0, 80, 100}},
    {"motorcycle", 32, 17, "vehicle", 7, true, false, {0, 0, 230}},
    {"bicycle", 33, 18, "vehicle", 7, true, false, {119, 11, 32}},
    {"license plate", -1, -1, "vehicle", 7, false, true, {0, 0, 142}},
  }
  local fields = {"name", "id", "train_id", "category", "category_id", "has_instances", "ignore_in_eval", "color"}
  Cityscapes.classes = {}
  for k, c in ipairs(city_classes) do
    local t = {}
    for i, f in ipairs(fields) do t[f] = c[i] end
    Cityscapes.classes[k] = t
  end
  local city_suffix = {instance = "instanceIds.png", semantic = "labelIds.png", color = "color.png",
    polygon = "polygons.json"}

  function Cityscapes:__init(...)
    local o = U.parse("Cityscapes", {{"root", U.REQUIRED}, {"split", "train"}, {"mode", "fine"},
      {"target_type", "instance"}, {"transform"}, {"target_transform"}, {"transforms"}}, ...)
    self.root = D.root("Cityscapes", o.root)
    D.joint_transforms(self, o)
    self.mode = o.mode == "fine" and "gtFine" or "gtCoarse"
    self.split = o.split
    self.images_dir = self.root .. "/leftImg8bit/" .. tostring(o.split)
    self.targets_dir = self.root .. "/" .. self.mode .. "/" .. tostring(o.split)
    D.verify(o.mode, "mode", {"fine", "coarse"})
    local valid = o.mode == "fine" and {"train", "test", "val"} or {"train", "train_extra", "val"}
    local ok = false
    for _, v in ipairs(valid) do ok = ok or v == o.split end
    if not ok then
      U.errorf("Unknown value '%s' for argument split if mode is '%s'. Valid values are {'%s'}.", tostring(o.split), o.mode,
        table.concat(valid, "', '"))
    end
    self.target_type = type(o.target_type) == "table" and o.target_type or {o.target_type}
    for _, t in ipairs(self.target_type) do D.verify(t, "target_type", {"instance", "semantic", "polygon", "color"}) end
    if D.kind(self.images_dir) ~= "dir" or D.kind(self.targets_dir) ~= "dir" then
      U.errorf("Cityscapes: dataset not found or incomplete: %s and %s must be folders in %s (extract %s and %s there; " ..
        "nnrepl extracts and downloads nothing)", "leftImg8bit/" .. o.split, self.mode .. "/" .. o.split, self.root,
        o.split == "train_extra" and "leftImg8bit_trainextra.zip" or "leftImg8bit_trainvaltest.zip",
        self.mode == "gtFine" and "gtFine_trainvaltest.zip" or "gtCoarse.zip")
    end
    self.images, self.targets = {}, {}
    for _, city in ipairs(D.listdir("Cityscapes", self.images_dir, "dir")) do
      local img_dir, target_dir = self.images_dir .. "/" .. city, self.targets_dir .. "/" .. city
      for _, f in ipairs(D.listdir("Cityscapes", img_dir, "file")) do
        local stem = f:find("_leftImg8bit", 1, true) and f:sub(1, f:find("_leftImg8bit", 1, true) - 1) or f
        local paths = {}
        for i, t in ipairs(self.target_type) do
          paths[i] = target_dir .. "/" .. stem .. "_" .. self.mode .. "_" .. city_suffix[t]
        end
        self.images[#self.images + 1] = img_dir .. "/" .. f
        self.targets[#self.targets + 1] = paths
      end
    end
  end
  function Cityscapes:_load_json(path)
    return D.read_json("Cityscapes", path)
  end
  function Cityscapes:__len() return #self.images end
  function Cityscapes:__getitem(index)
    index = D.check_index(self, index, #self.images) + 1
    local image = D.rgb_loader(self.images[index])
    local targets = {}
    for i, t in ipairs(self.target_type) do
      local path = self.targets[index][i]
      if t == "polygon" then targets[i] = self:_load_json(path)
      else targets[i] = D.open(path) end
    end
    return D.apply_joint(self, image, #targets > 1 and targets or targets[1])
  end

  -- ---- INaturalist ----
  -- INaturalist(root, {version="2021_train", target_type="full", transform, target_transform,
  -- download, loader}): root/<version>/ holds one folder per category: 2021 versions
  -- "<00000>_<kingdom>_<phylum>_<class>_<order>_<family>_<genus>_<species>"; 2017-2019
  -- "<super category>/<category id>" (2017: names, numbered in sorted order). target_type full,
  -- kingdom ... genus (2021) or full, super (before); a list of them gives a list.
  local INaturalist = VisionDataset:extend("INaturalist")
  datasets.INaturalist = INaturalist
  local CATEGORIES_2021 = {"kingdom", "phylum", "class", "order", "family", "genus"}
  local inat_versions = {"2017", "2018", "2019", "2021_train", "2021_train_mini", "2021_valid"}
  function INaturalist:__init(...)
    local o = U.parse("INaturalist", {{"root", U.REQUIRED}, {"version", "2021_train"}, {"target_type", "full"},
      {"transform"}, {"target_transform"}, {"download", false}, {"loader", D.rgb_loader}}, ...)
    self.version = D.verify(o.version, "version", inat_versions)
    self.root = D.root("INaturalist", o.root) .. "/" .. self.version
    self.transform, self.target_transform, self.loader = o.transform, o.target_transform, o.loader
    if D.kind(self.root) ~= "dir" or #D.listdir("INaturalist", self.root) == 0 then
      D.missing("INaturalist", self.root, o.download, "the extracted " .. self.version ..
        " archive (one folder per category; https://github.com/visipedia/inat_comp)", self.root)
    end
    self.all_categories, self.categories_index, self.categories_map = {}, {}, {}
    local types = type(o.target_type) == "table" and o.target_type or {o.target_type}
    self.target_type = {}
    if self.version:sub(1, 4) == "2021" then
      for i, t in ipairs(types) do self.target_type[i] = D.verify(t, "target_type", {"full", table.unpack(CATEGORIES_2021)}) end
      self:_init_2021()
    else
      for i, t in ipairs(types) do self.target_type[i] = D.verify(t, "target_type", {"full", "super"}) end
      self:_init_pre2021()
    end
    self.index = {}
    for dir_index, dir_name in ipairs(self.all_categories) do
      for _, f in ipairs(D.listdir("INaturalist", self.root .. "/" .. dir_name)) do
        self.index[#self.index + 1] = {dir_index - 1, f}
      end
    end
  end
  function INaturalist:_init_2021()
    self.all_categories = D.listdir("INaturalist", self.root)
    for _, c in ipairs(CATEGORIES_2021) do self.categories_index[c] = {} end
    for k, dir_name in ipairs(self.all_categories) do
      local pieces = {}
      for p in (dir_name .. "_"):gmatch("(.-)_") do pieces[#pieces + 1] = p end
      if #pieces ~= 8 then U.errorf("Unexpected category name %s, wrong number of pieces", dir_name) end
      if pieces[1] ~= string.format("%05d", k - 1) then
        U.errorf("Unexpected category id %s, expecting %05d", pieces[1], k - 1)
      end
      local cat_map = {}
      for i, cat in ipairs(CATEGORIES_2021) do
        local index, name = self.categories_index[cat], pieces[i + 1]
        if index[name] == nil then
          local n = 0
          for _ in pairs(index) do n = n + 1 end
          index[name] = n
        end
        cat_map[cat] = index[name]
      end
      self.categories_map[k] = cat_map
    end
  end
  function INaturalist:_init_pre2021()
    self.categories_index = {super = {}}
    local next_id = 0
    for sindex, scat in ipairs(D.listdir("INaturalist", self.root)) do
      self.categories_index.super[scat] = sindex - 1
      for _, sub in ipairs(D.listdir("INaturalist", self.root .. "/" .. scat)) do
        local id
        if self.version == "2017" then id, next_id = next_id, next_id + 1
        else
          id = math.tointeger(tonumber(sub))
          if not id or not sub:match("^%s*[+-]?%d+%s*$") then U.errorf("Unexpected non-numeric dir name: %s", sub) end
        end
        if self.categories_map[id + 1] then U.errorf("Duplicate category %s", sub) end
        self.categories_map[id + 1] = {super = sindex - 1}
        self.all_categories[id + 1] = scat .. "/" .. sub
      end
    end
    local n = 0
    for k in pairs(self.categories_map) do n = math.max(n, k) end
    for k = 1, n do
      if not self.categories_map[k] then U.errorf("Missing category %d", k - 1) end
    end
  end
  function INaturalist:__len() return #self.index end
  function INaturalist:__getitem(index)
    local cat_id, fname = table.unpack(self.index[D.check_index(self, index, #self.index) + 1])
    local img = self.loader(self.root .. "/" .. self.all_categories[cat_id + 1] .. "/" .. fname)
    local target = {}
    for i, t in ipairs(self.target_type) do
      target[i] = t == "full" and cat_id or self.categories_map[cat_id + 1][t]
    end
    return D.finish(self, img, #target > 1 and target or target[1])
  end
  function INaturalist:category_name(category_type, category_id)
    if category_type == "full" then return self.all_categories[category_id + 1] end
    local index = self.categories_index[category_type]
    if not index then U.errorf("Invalid category type '%s'", tostring(category_type)) end
    for name, id in pairs(index) do if id == category_id then return name end end
    U.errorf("Invalid category id %s for %s", tostring(category_id), category_type)
  end

  -- ---- SBDataset ----
  -- SBDataset(root, {image_set="train", mode="boundaries", download, transforms}): root/{img/<id>.jpg,
  -- cls/<id>.mat, train.txt, val.txt, train_noval.txt} (benchmark_RELEASE/dataset). The target of mode
  -- "segmentation" is the GTcls.Segmentation label image (mode L); of mode "boundaries" the [20, H, W]
  -- stack of GTcls.Boundaries (a tensor where torchvision gives a NumPy array).
  local SBDataset = VisionDataset:extend("SBDataset")
  datasets.SBDataset = SBDataset
  function SBDataset:__init(...)
    local o = U.parse("SBDataset", {{"root", U.REQUIRED}, {"image_set", "train"}, {"mode", "boundaries"},
      {"download", false}, {"transforms"}}, ...)
    self.root = D.root("SBDataset", o.root)
    self.transforms = o.transforms
    self.image_set = D.verify(o.image_set, "image_set", {"train", "val", "train_noval"})
    self.mode = D.verify(o.mode, "mode", {"segmentation", "boundaries"})
    self.num_classes = 20
    local what = "benchmark.tgz extracted (benchmark_RELEASE/dataset/{img,cls,train.txt,val.txt}; " ..
      "https://www2.eecs.berkeley.edu/Research/Projects/CS/vision/grouping/semantic_contours/benchmark.tgz) and " ..
      "train_noval.txt"
    D.need("SBDataset", self.root, "dir", o.download, what, self.root)
    local split_f = D.need("SBDataset", self.root .. "/" .. self.image_set .. ".txt", "file", o.download, what, self.root)
    self.images, self.masks = {}, {}
    for _, line in ipairs(D.lines("SBDataset", split_f)) do
      local id = line:match("^%s*(.-)%s*$")
      self.images[#self.images + 1] = self.root .. "/img/" .. id .. ".jpg"
      self.masks[#self.masks + 1] = self.root .. "/cls/" .. id .. ".mat"
    end
  end
  local function gtcls(path)
    local g = D.loadmat("SBDataset", path).GTcls
    if type(g) ~= "table" then U.errorf("SBDataset: %s has no GTcls struct", path) end
    return g
  end
  function SBDataset:_get_segmentation_target(path)
    local seg = gtcls(path).Segmentation
    if not torch.is_tensor(seg) or seg:dim() ~= 2 then U.errorf("SBDataset: %s: GTcls.Segmentation is not a 2-d array", path) end
    return Image.fromarray(seg:to(torch.uint8):contiguous())
  end
  function SBDataset:_get_boundaries_target(path)
    local b = gtcls(path).Boundaries
    if type(b) ~= "table" or #b < self.num_classes then
      U.errorf("SBDataset: %s: GTcls.Boundaries is not a cell array of %d boundary maps", path, self.num_classes)
    end
    local maps = {}
    for i = 1, self.num_classes do maps[i] = b[i] end
    return torch.stack(maps, 0)
  end
  function SBDataset:__len() return #self.images end
  function SBDataset:__getitem(index)
    index = D.check_index(self, index, #self.images) + 1
    local img = D.rgb_loader(self.images[index])
    local target = self.mode == "segmentation" and self:_get_segmentation_target(self.masks[index])
      or self:_get_boundaries_target(self.masks[index])
    if self.transforms ~= nil then return self.transforms(img, target) end
    return img, target
  end
end
