-- torchvision.datasets LFWPeople and LFWPairs over root/lfw-py/: the extracted image folder
-- (lfw/, lfw_funneled/ or lfw-deepfunneled/, one folder per person of <name>_<0001>.jpg) and the
-- view files (people.txt, peopleDevTrain.txt, peopleDevTest.txt, pairs*.txt, lfw-names.txt).
-- torchvision checks the .tgz archives' md5 sums too; here the extracted files are enough.
-- Nothing is downloaded.
local U = require "nn_util"
local D = require "tv_dataset_util"

return function(datasets)
  local VisionDataset = datasets.VisionDataset

  local image_dirs = {original = {"lfw", "lfw.tgz"}, funneled = {"lfw_funneled", "lfw-funneled.tgz"},
    deepfunneled = {"lfw-deepfunneled", "lfw-deepfunneled.tgz"}}
  local annot = {["10fold"] = "", train = "DevTrain", test = "DevTest"}

  local function lower(v) return type(v) == "string" and v:lower() or v end

  local function lfw_init(self, cls, view, ...)
    local o = U.parse(cls, {{"root", U.REQUIRED}, {"split", "10fold"}, {"image_set", "funneled"}, {"transform"},
      {"target_transform"}, {"download", false}, {"loader", D.rgb_loader}}, ...)
    self.root = D.root(cls, o.root) .. "/lfw-py"
    self.transform, self.target_transform, self.loader = o.transform, o.target_transform, o.loader
    self.image_set = D.verify(lower(o.image_set), "image_set", {"original", "funneled", "deepfunneled"})
    self.view = view
    self.split = D.verify(lower(o.split), "split", {"10fold", "train", "test"})
    self.labels_file = view .. annot[self.split] .. ".txt"
    local dir, tgz = image_dirs[self.image_set][1], image_dirs[self.image_set][2]
    self.filename = tgz
    self.images_dir = self.root .. "/" .. dir
    local what = tgz .. " extracted (" .. dir .. "/) and " .. self.labels_file ..
      (view == "people" and ", lfw-names.txt" or "") .. " (http://vis-www.cs.umass.edu/lfw/)"
    D.need(cls, self.images_dir, "dir", o.download, what, self.root)
    D.need(cls, self.root .. "/" .. self.labels_file, "file", o.download, what, self.root)
    if view == "people" then D.need(cls, self.root .. "/lfw-names.txt", "file", o.download, what, self.root) end
    return D.lines(cls, self.root .. "/" .. self.labels_file)
  end

  local function get_path(self, identity, no)
    return string.format("%s/%s/%s_%04d.jpg", self.images_dir, identity, identity, no)
  end

  local function fields(line) -- line.strip().split("\t")
    local out = {}
    for f in (line:match("^%s*(.-)%s*$") .. "\t"):gmatch("(.-)\t") do out[#out + 1] = f end
    return out
  end

  -- LFWPeople(root, {split="10fold", image_set="funneled", transform, target_transform, download, loader}):
  -- target the person's index in lfw-names.txt
  local LFWPeople = VisionDataset:extend("LFWPeople")
  datasets.LFWPeople = LFWPeople
  function LFWPeople:__init(...)
    local lines = lfw_init(self, "LFWPeople", "people", ...)
    local file = self.root .. "/" .. self.labels_file
    self.class_to_idx = {}
    for k, line in ipairs(D.lines("LFWPeople", self.root .. "/lfw-names.txt")) do
      local name = line:match("%S+")
      if name then self.class_to_idx[name] = k - 1 end
    end
    self.data, self.targets = {}, {}
    local folds, s = 1, 1
    if self.split == "10fold" then folds, s = D.int("LFWPeople", lines[1], file .. " line 1"), 2 end
    for _ = 1, folds do
      local n = D.int("LFWPeople", lines[s], file .. " line " .. s)
      for k = s + 1, s + n do
        local f = fields(lines[k] or "")
        if #f ~= 2 then U.errorf("LFWPeople: %s line %d: expected '<name>\\t<number of images>'", file, k) end
        local idx = self.class_to_idx[f[1]]
        if idx == nil then U.errorf("LFWPeople: %s line %d: %s is not in lfw-names.txt", file, k, f[1]) end
        for no = 1, D.int("LFWPeople", f[2], file .. " line " .. k) do
          self.data[#self.data + 1] = get_path(self, f[1], no)
          self.targets[#self.targets + 1] = idx
        end
      end
      s = s + n + 1
    end
  end
  function LFWPeople:__len() return #self.data end
  function LFWPeople:__getitem(index)
    index = D.check_index(self, index, #self.data) + 1
    return D.finish(self, self.loader(self.data[index]), self.targets[index])
  end

  -- LFWPairs(same arguments): a sample is img1, img2, target (1 same person, 0 not)
  local LFWPairs = VisionDataset:extend("LFWPairs")
  datasets.LFWPairs = LFWPairs
  function LFWPairs:__init(...)
    local lines = lfw_init(self, "LFWPairs", "pairs", ...)
    local file = self.root .. "/" .. self.labels_file
    local head = fields(lines[1] or "")
    local folds, n
    if self.split == "10fold" then
      if #head ~= 2 then U.errorf("LFWPairs: %s line 1: expected '<folds>\\t<pairs>'", file) end
      folds, n = D.int("LFWPairs", head[1], file .. " line 1"), D.int("LFWPairs", head[2], file .. " line 1")
    else
      folds, n = 1, D.int("LFWPairs", head[1], file .. " line 1")
    end
    self.pair_names, self.data, self.targets = {}, {}, {}
    local s = 2
    for _ = 1, folds do
      for k = s, s + 2 * n - 1 do
        local p = fields(lines[k] or "")
        local same = k < s + n
        if #p ~= (same and 3 or 4) then
          U.errorf("LFWPairs: %s line %d: expected %d tab-separated fields", file, k, same and 3 or 4)
        end
        local a, b = p[1], same and p[1] or p[3]
        local na = D.int("LFWPairs", p[2], file .. " line " .. k)
        local nb = D.int("LFWPairs", same and p[3] or p[4], file .. " line " .. k)
        self.pair_names[#self.pair_names + 1] = {a, b}
        self.data[#self.data + 1] = {get_path(self, a, na), get_path(self, b, nb)}
        self.targets[#self.targets + 1] = same and 1 or 0
      end
      s = s + 2 * n
    end
  end
  LFWPairs.__len = LFWPeople.__len
  function LFWPairs:__getitem(index)
    index = D.check_index(self, index, #self.data) + 1
    local img1, img2 = self.loader(self.data[index][1]), self.loader(self.data[index][2])
    local target = self.targets[index]
    if self.transform ~= nil then img1, img2 = self.transform(img1), self.transform(img2) end
    if self.target_transform ~= nil then target = self.target_transform(target) end
    return img1, img2, target
  end
end
