-- torchvision.datasets whose labels come from annotation files: CelebA (txt tables),
-- CocoDetection and CocoCaptions (COCO's annotation JSON), FER2013 (csv of pixels). Images are
-- PIL-like, as torchvision's. Nothing is downloaded.
local torch = require "torch"
local U = require "nn_util"
local D = require "tv_dataset_util"
local json = require "json"
local Image = require("tv_io").Image

return function(datasets)
  local VisionDataset = datasets.VisionDataset

  -- ---- CelebA ----
  -- CelebA(root, {split="train", target_type="attr", transform, target_transform, download}):
  -- root/celeba/{img_align_celeba/, list_eval_partition.txt, identity_CelebA.txt, list_attr_celeba.txt,
  -- list_bbox_celeba.txt, list_landmarks_align_celeba.txt}. attr (0/1), bbox, landmarks are int64
  -- tensors [N, k], identity [N, 1]; a list of target types gives a list of targets, an empty
  -- one nil.
  local CelebA = VisionDataset:extend("CelebA")
  datasets.CelebA = CelebA
  CelebA.base_folder = "celeba"
  local celeba_files = {"list_eval_partition.txt", "identity_CelebA.txt", "list_attr_celeba.txt", "list_bbox_celeba.txt",
    "list_landmarks_align_celeba.txt"}
  local celeba_splits = {train = 0, valid = 1, test = 2}

  -- a space-separated table: the header (the fields of line header + 1, or {}), the first
  -- column of each later line, and the other columns as an int64 tensor
  local function celeba_table(path, header)
    local lines = D.lines("CelebA", path)
    local head, first = {}, 1
    if header then head, first = D.csv_fields(lines[header + 1] or "", " ", true), header + 2 end
    local index, rows = {}, {}
    for k = first, #lines do
      local f = D.csv_fields(lines[k], " ", true)
      if f[#f] == "" then f[#f] = nil end
      index[#index + 1] = f[1]
      local row = {}
      for j = 2, #f do row[j - 1] = D.int("CelebA", f[j], path .. " line " .. k) end
      rows[#rows + 1] = row
    end
    local width = rows[1] and #rows[1] or 0
    for k, r in ipairs(rows) do
      if #r ~= width then U.errorf("CelebA: %s: row %d has %d values, the first %d", path, k, #r, width) end
    end
    return head, index, #rows > 0 and torch.tensor(rows, {dtype = torch.int64}) or torch.zeros(0, width, {dtype = torch.int64})
  end

  function CelebA:__init(...)
    local o = U.parse("CelebA", {{"root", U.REQUIRED}, {"split", "train"}, {"target_type", "attr"}, {"transform"},
      {"target_transform"}, {"download", false}}, ...)
    self.root = D.root("CelebA", o.root)
    self.split = o.split
    self.target_type = type(o.target_type) == "string" and {o.target_type} or o.target_type
    self.transform, self.target_transform = o.transform, o.target_transform
    if #self.target_type == 0 and self.target_transform ~= nil then
      error("target_transform is specified but target_type is empty", 2)
    end
    local split = D.verify(type(o.split) == "string" and o.split:lower() or o.split, "split", {"train", "valid", "test", "all"})
    local base = self.root .. "/" .. CelebA.base_folder
    local what = "img_align_celeba.zip extracted (img_align_celeba/) and " .. table.concat(celeba_files, ", ") ..
      " (https://mmlab.ie.cuhk.edu.hk/projects/CelebA.html)"
    for _, f in ipairs(celeba_files) do D.need("CelebA", base .. "/" .. f, "file", o.download, what, base) end
    D.need("CelebA", base .. "/img_align_celeba", "dir", o.download, what, base)
    local _, names, parts = celeba_table(base .. "/list_eval_partition.txt")
    local _, _, identity = celeba_table(base .. "/identity_CelebA.txt")
    local _, _, bbox = celeba_table(base .. "/list_bbox_celeba.txt", 1)
    local _, _, landmarks = celeba_table(base .. "/list_landmarks_align_celeba.txt", 1)
    local attr_names, _, attr = celeba_table(base .. "/list_attr_celeba.txt", 1)
    for _, t in ipairs({identity, bbox, landmarks, attr}) do
      if t:size(0) ~= #names then
        U.errorf("CelebA: %s lists %d images but another annotation file %d", base, #names, t:size(0))
      end
    end
    if celeba_splits[split] == nil then
      self.filename = names
    else
      local keep = parts:select(1, 0):eq(celeba_splits[split]):nonzero():reshape(-1)
      self.filename = {}
      for k, i in ipairs(keep:tolist()) do self.filename[k] = names[i + 1] end
      identity, bbox, landmarks, attr = identity:index_select(0, keep), bbox:index_select(0, keep),
        landmarks:index_select(0, keep), attr:index_select(0, keep)
    end
    self.identity, self.bbox, self.landmarks_align = identity, bbox, landmarks
    self.attr = torch.floor_divide(attr + 1, 2) -- {-1, 1} -> {0, 1}
    self.attr_names = attr_names
  end
  function CelebA:__len() return self.attr:size(0) end
  function CelebA:__getitem(index)
    index = D.check_index(self, index, self.attr:size(0))
    local img = D.open(self.root .. "/" .. CelebA.base_folder .. "/img_align_celeba/" .. self.filename[index + 1])
    local target = {}
    for _, t in ipairs(self.target_type) do
      if t == "attr" then target[#target + 1] = self.attr[index]
      elseif t == "identity" then target[#target + 1] = self.identity[index][0]
      elseif t == "bbox" then target[#target + 1] = self.bbox[index]
      elseif t == "landmarks" then target[#target + 1] = self.landmarks_align[index]
      else U.errorf('Target type "%s" is not recognized.', tostring(t)) end
    end
    if self.transform ~= nil then img = self.transform(img) end
    if #target == 0 then return img, nil end
    if #target == 1 then target = target[1] end
    if self.target_transform ~= nil then target = self.target_transform(target) end
    return img, target
  end

  -- ---- CocoDetection, CocoCaptions ----
  -- CocoDetection(root, annFile, {transform, target_transform, transforms}): the images
  -- root/<file_name> of annFile's "images"; a sample's target is the list of its annotations
  -- (tables as in the JSON), in the file's order. coco holds dataset (the JSON), imgs, anns,
  -- cats (by id) and imgToAnns; ids the sorted image ids.
  local CocoDetection = VisionDataset:extend("CocoDetection")
  datasets.CocoDetection = CocoDetection
  function CocoDetection:__init(...)
    local cls = getmetatable(self).__name
    local o = U.parse(cls, {{"root", U.REQUIRED}, {"annFile", U.REQUIRED}, {"transform"}, {"target_transform"},
      {"transforms"}}, ...)
    self.root = D.root(cls, o.root)
    if o.transforms ~= nil and (o.transform ~= nil or o.target_transform ~= nil) then
      U.errorf("Only transforms or transform/target_transform can be passed as argument")
    end
    self.transform, self.target_transform, self.transforms = o.transform, o.target_transform, o.transforms
    if D.kind(o.annFile) ~= "file" then
      U.errorf("%s: annotation file %s not found: put COCO's annotations (e.g. annotations/instances_val2017.json " ..
        "from annotations_trainval2017.zip, https://cocodataset.org) there (nothing is downloaded)", cls, tostring(o.annFile))
    end
    local text = D.read_text(cls, o.annFile)
    local data = json.decode(text, function(msg, pos) U.errorf("%s: %s: bad JSON (%s at byte %d)", cls, o.annFile, msg, pos) end)
    if type(data) ~= "table" then U.errorf("%s: %s does not hold a JSON object", cls, o.annFile) end
    local coco = {dataset = data, imgs = {}, anns = {}, cats = {}, imgToAnns = {}}
    for _, img in ipairs(data.images or {}) do coco.imgs[img.id] = img end
    for _, c in ipairs(data.categories or {}) do coco.cats[c.id] = c end
    for _, a in ipairs(data.annotations or {}) do
      coco.anns[a.id] = a
      local l = coco.imgToAnns[a.image_id] or {}
      l[#l + 1] = a
      coco.imgToAnns[a.image_id] = l
    end
    self.coco = coco
    self.ids = {}
    for id in pairs(coco.imgs) do self.ids[#self.ids + 1] = id end
    table.sort(self.ids)
  end
  function CocoDetection:_load_image(id)
    return D.rgb_loader(self.root .. "/" .. self.coco.imgs[id].file_name)
  end
  function CocoDetection:_load_target(id)
    local out = {}
    for k, a in ipairs(self.coco.imgToAnns[id] or {}) do out[k] = a end
    return out
  end
  function CocoDetection:__len() return #self.ids end
  function CocoDetection:__getitem(index)
    if math.type(index) ~= "integer" then
      U.errorf("Index must be of type integer, got %s instead.", U.typename(index))
    end
    index = D.check_index(self, index, #self.ids)
    local id = self.ids[index + 1]
    local image, target = self:_load_image(id), self:_load_target(id)
    if self.transforms ~= nil then return self.transforms(image, target) end
    return D.finish(self, image, target)
  end

  -- CocoCaptions: the same, with the list of the image's caption strings as its target
  local CocoCaptions = CocoDetection:extend("CocoCaptions")
  datasets.CocoCaptions = CocoCaptions
  function CocoCaptions:_load_target(id)
    local out = {}
    for k, a in ipairs(CocoDetection._load_target(self, id)) do out[k] = a.caption end
    return out
  end

  -- ---- FER2013 ----
  -- FER2013(root, {split="train", transform, target_transform}): root/fer2013/train.csv
  -- (emotion,pixels) or test.csv (pixels; target nil); or, when present, fer2013.csv or
  -- icml_face_data.csv with a Usage column (train: Training; test: PublicTest and PrivateTest).
  -- Images are 48 x 48 mode-L PIL-like images.
  local FER2013 = VisionDataset:extend("FER2013")
  datasets.FER2013 = FER2013
  function FER2013:__init(...)
    local o = U.parse("FER2013", {{"root", U.REQUIRED}, {"split", "train"}, {"transform"}, {"target_transform"}}, ...)
    self._split = D.verify(o.split, "split", {"train", "test"})
    self.root = D.root("FER2013", o.root)
    self.transform, self.target_transform = o.transform, o.target_transform
    local base = self.root .. "/fer2013"
    local fer = D.kind(base .. "/fer2013.csv") == "file"
    local icml = not fer and D.kind(base .. "/icml_face_data.csv") == "file"
    local name = fer and "fer2013.csv" or icml and "icml_face_data.csv" or (self._split .. ".csv")
    local path = base .. "/" .. name
    if D.kind(path) ~= "file" then
      U.errorf("FER2013: %s not found in %s: put it there (from https://www.kaggle.com/c/challenges-in-representation-" ..
        "learning-facial-expression-recognition-challenge; nothing is downloaded)", name, base)
    end
    local pixels_key, usage_key = icml and " pixels" or "pixels", icml and " Usage" or "Usage"
    local valid = self._split == "train" and {Training = true} or {PublicTest = true, PrivateTest = true}
    local rows = D.csv_dicts("FER2013", path, ",")
    self._samples = {}
    for k, row in ipairs(rows) do
      if not (fer or icml) or valid[row[usage_key]] then
        local px = {}
        for v in (row[pixels_key] or ""):gmatch("%S+") do px[#px + 1] = D.int("FER2013", v, path .. " row " .. k) end
        if #px ~= 48 * 48 then U.errorf("FER2013: %s row %d: %d pixels, expected 2304 (48 x 48)", path, k, #px) end
        local label
        if fer or icml or self._split == "train" then label = D.int("FER2013", row.emotion, path .. " row " .. k) end
        self._samples[#self._samples + 1] = {torch.tensor(px, {dtype = torch.uint8}):reshape(48, 48), label}
      end
    end
  end
  function FER2013:__len() return #self._samples end
  function FER2013:__getitem(index)
    index = D.check_index(self, index, #self._samples)
    local s = self._samples[index + 1]
    local img, target = Image.fromarray(s[1]), s[2]
    if self.transform ~= nil then img = self.transform(img) end
    if self.target_transform ~= nil then target = self.target_transform(target) end
    return img, target
  end
end
