-- torchvision.datasets MovingMNIST (a .npy file through npy.lua), WIDERFace, Kitti, SBU, Flickr8k
-- (its HTML annotation table), CLEVRClassification and PCAM over their extracted files. Images
-- are PIL-like, as torchvision's. Nothing is downloaded: download=true with the files absent, or
-- the files absent, raises an error saying what to put where.
local torch = require "torch"
local U = require "nn_util"
local D = require "tv_dataset_util"

return function(datasets)
  local VisionDataset = datasets.VisionDataset

  -- ---- MovingMNIST ----
  -- MovingMNIST(root, {split=nil|"train"|"test", split_ratio=10, download=false, transform}):
  -- root/MovingMNIST/mnist_test_seq.npy ([20, N, 64, 64] uint8); data is [N, T', 1, 64, 64] with
  -- the first split_ratio frames ("train") or the rest ("test"); an item is one [T', 1, 64, 64] video.
  local MovingMNIST = VisionDataset:extend("MovingMNIST")
  datasets.MovingMNIST = MovingMNIST
  function MovingMNIST:__init(...)
    local o = U.parse("MovingMNIST", {{"root", U.REQUIRED}, {"split"}, {"split_ratio", 10}, {"download", false},
      {"transform"}}, ...)
    self.root = D.root("MovingMNIST", o.root)
    self._base_folder = self.root .. "/MovingMNIST"
    self._filename = "mnist_test_seq.npy"
    if o.split ~= nil then D.verify(o.split, "split", {"train", "test"}) end
    self.split = o.split
    if math.type(o.split_ratio) ~= "integer" then
      U.errorf("`split_ratio` should be an integer, but got %s", U.typename(o.split_ratio))
    elseif o.split_ratio < 1 or o.split_ratio > 19 then
      U.errorf("`split_ratio` should be `1 <= split_ratio <= 19`, but got %d instead.", o.split_ratio)
    end
    self.split_ratio = o.split_ratio
    self.transform = o.transform
    local path = D.need("MovingMNIST", self._base_folder .. "/" .. self._filename, "file", o.download,
      "mnist_test_seq.npy (http://www.cs.toronto.edu/~nitish/unsupervised_video/mnist_test_seq.npy)", self._base_folder)
    local ok, data = pcall(require("npy").load, path)
    if not ok then U.errorf("MovingMNIST: %s", tostring(data)) end
    if data:dim() ~= 4 then U.errorf("MovingMNIST: %s holds a %d-d array; expected [T, N, 64, 64]", path, data:dim()) end
    local T = data:size(0)
    if self.split == "train" then data = data:narrow(0, 0, math.min(self.split_ratio, T))
    elseif self.split == "test" then data = data:narrow(0, math.min(self.split_ratio, T), T - math.min(self.split_ratio, T)) end
    self.data = data:transpose(0, 1):unsqueeze(2):contiguous()
  end
  function MovingMNIST:__len() return self.data:size(0) end
  function MovingMNIST:__getitem(idx)
    idx = D.check_index(self, idx, self.data:size(0))
    local video = self.data[idx]
    if self.transform ~= nil then video = self.transform(video) end
    return video
  end

  -- ---- WIDERFace ----
  -- WIDERFace(root, {split="train", transform, target_transform, download}): root/widerface/
  -- {WIDER_train,WIDER_val,WIDER_test}/images/..., wider_face_split/wider_face_{train,val}_bbx_gt.txt
  -- and wider_face_test_filelist.txt. A target is {bbox = [n, 4] (x, y, w, h), blur, expression,
  -- illumination, occlusion, pose, invalid = [n]} int64 tensors; the test split's is nil.
  local WIDERFace = VisionDataset:extend("WIDERFace")
  datasets.WIDERFace = WIDERFace
  local wider_fields = {"blur", "expression", "illumination", "occlusion", "pose", "invalid"}
  function WIDERFace:__init(...)
    local o = U.parse("WIDERFace", {{"root", U.REQUIRED}, {"split", "train"}, {"transform"}, {"target_transform"},
      {"download", false}}, ...)
    self.root = D.root("WIDERFace", o.root) .. "/widerface"
    self.split = D.verify(o.split, "split", {"train", "val", "test"})
    self.transform, self.target_transform = o.transform, o.target_transform
    for _, d in ipairs({"WIDER_train", "WIDER_val", "WIDER_test", "wider_face_split"}) do
      D.need("WIDERFace", self.root .. "/" .. d, "dir", o.download, "WIDER_train.zip, WIDER_val.zip, WIDER_test.zip and " ..
        "wider_face_split.zip extracted (http://shuoyang1213.me/WIDERFACE/)", self.root)
    end
    self.img_info = {}
    local split_dir = self.root .. "/wider_face_split"
    if self.split == "test" then
      for _, line in ipairs(D.lines("WIDERFace", split_dir .. "/wider_face_test_filelist.txt")) do
        self.img_info[#self.img_info + 1] = {img_path = self.root .. "/WIDER_test/images/" .. line:gsub("%s+$", "")}
      end
    else
      self:_parse_boxes(split_dir .. "/wider_face_" .. self.split .. "_bbx_gt.txt")
    end
  end
  -- blocks of: image path, box count n, max(n, 1) lines of 10 integers (a count of 0 has one line of zeros)
  function WIDERFace:_parse_boxes(path)
    local lines, k = D.lines("WIDERFace", path), 1
    while k <= #lines do
      local img = lines[k]:gsub("%s+$", "")
      local n = math.tointeger(tonumber(lines[k + 1] or ""))
      if not n or n < 0 then U.errorf("WIDERFace: error parsing annotation file %s (line %d: expected a box count)", path, k + 1) end
      local rows = {}
      for j = 1, math.max(n, 1) do
        local line, row = lines[k + 1 + j], {}
        if not line then U.errorf("WIDERFace: error parsing annotation file %s (%s: %d boxes expected)", path, img, n) end
        for v in line:gmatch("%S+") do row[#row + 1] = D.int("WIDERFace", v, path .. " line " .. (k + 1 + j)) end
        if #row ~= 10 then U.errorf("WIDERFace: %s line %d: expected 10 integers, got %d", path, k + 1 + j, #row) end
        rows[j] = row
      end
      local t = torch.tensor(rows, {dtype = torch.int64})
      local ann = {bbox = t:narrow(1, 0, 4):clone()}
      for c, name in ipairs(wider_fields) do ann[name] = t:select(1, c + 3):clone() end
      self.img_info[#self.img_info + 1] = {img_path = self.root .. "/WIDER_" .. self.split .. "/images/" .. img,
        annotations = ann}
      k = k + 2 + math.max(n, 1)
    end
  end
  function WIDERFace:__len() return #self.img_info end
  function WIDERFace:__getitem(index)
    local info = self.img_info[D.check_index(self, index, #self.img_info) + 1]
    return D.finish(self, D.rgb_loader(info.img_path), info.annotations)
  end

  -- ---- Kitti ----
  -- Kitti(root, {train=true, transform, target_transform, transforms, download}):
  -- root/Kitti/raw/{training,testing}/image_2/*.png and training/label_2/<id>.txt; a target is a
  -- list of {type, truncated, occluded, alpha, bbox, dimensions, location, rotation_y}; nil for test.
  local Kitti = VisionDataset:extend("Kitti")
  datasets.Kitti = Kitti
  function Kitti:__init(...)
    local o = U.parse("Kitti", {{"root", U.REQUIRED}, {"train", true}, {"transform"}, {"target_transform"},
      {"transforms"}, {"download", false}}, ...)
    self.root = D.root("Kitti", o.root)
    D.joint_transforms(self, o)
    self.train = o.train and true or false
    self._location = self.train and "training" or "testing"
    self._raw_folder = self.root .. "/Kitti/raw"
    local base = self._raw_folder .. "/" .. self._location
    local what = "data_object_image_2.zip and data_object_label_2.zip extracted ({training,testing}/image_2, " ..
      "training/label_2; https://s3.eu-central-1.amazonaws.com/avg-kitti/)"
    local image_dir = D.need("Kitti", base .. "/image_2", "dir", o.download, what, self._raw_folder)
    if self.train then D.need("Kitti", base .. "/label_2", "dir", o.download, what, self._raw_folder) end
    self.images, self.targets = {}, {}
    for _, f in ipairs(D.listdir("Kitti", image_dir, "file")) do
      self.images[#self.images + 1] = image_dir .. "/" .. f
      if self.train then self.targets[#self.targets + 1] = base .. "/label_2/" .. f:match("^[^.]*") .. ".txt" end
    end
  end
  function Kitti:_parse_target(index)
    local path, target = self.targets[index], {}
    for k, line in ipairs(D.lines("Kitti", path)) do
      local f = D.csv_fields(line, " ")
      if #f < 15 then U.errorf("Kitti: %s line %d: expected 15 fields, got %d", path, k, #f) end
      local function num(i)
        local v = tonumber(f[i])
        if not v then U.errorf("Kitti: %s line %d: field %d '%s' is not a number", path, k, i, f[i]) end
        return v + 0.0
      end
      local function nums(a, b) local t = {} for i = a, b do t[#t + 1] = num(i) end return t end
      target[k] = {type = f[1], truncated = num(2), occluded = D.int("Kitti", f[3], path .. " line " .. k), alpha = num(4),
        bbox = nums(5, 8), dimensions = nums(9, 11), location = nums(12, 14), rotation_y = num(15)}
    end
    return target
  end
  function Kitti:__len() return #self.images end
  function Kitti:__getitem(index)
    index = D.check_index(self, index, #self.images) + 1
    local target = nil
    if self.train then target = self:_parse_target(index) end
    return D.apply_joint(self, D.open(self.images[index]), target)
  end

  -- ---- SBU ----
  -- SBU(root, {transform, target_transform, download=true}): root/dataset/{SBU_captioned_photo_dataset_urls.txt,
  -- SBU_captioned_photo_dataset_captions.txt} and the photos downloaded into root/dataset, named as
  -- the last part of their URL; photos absent are left out. (torchvision also checks the MD5 of
  -- root/SBUCaptionedPhotoDataset.tar.gz; nnrepl only needs the extracted files.)
  local SBU = VisionDataset:extend("SBU")
  datasets.SBU = SBU
  function SBU:__init(...)
    local o = U.parse("SBU", {{"root", U.REQUIRED}, {"transform"}, {"target_transform"}, {"download", true}}, ...)
    self.root = D.root("SBU", o.root)
    self.transform, self.target_transform = o.transform, o.target_transform
    local dir = self.root .. "/dataset"
    local what = "SBUCaptionedPhotoDataset.tar.gz extracted (dataset/SBU_captioned_photo_dataset_{urls,captions}.txt; " ..
      "https://www.cs.rice.edu/~vo9/sbucaptions/) and the photos of its URLs"
    local urls = D.lines("SBU", D.need("SBU", dir .. "/SBU_captioned_photo_dataset_urls.txt", "file", o.download, what, self.root))
    local caps = D.lines("SBU", D.need("SBU", dir .. "/SBU_captioned_photo_dataset_captions.txt", "file", o.download, what,
      self.root))
    self.photos, self.captions = {}, {}
    for k = 1, math.min(#urls, #caps) do
      local photo = urls[k]:gsub("%s+$", ""):match("[^/]*$")
      if photo ~= "" and D.kind(dir .. "/" .. photo) == "file" then
        self.photos[#self.photos + 1] = photo
        self.captions[#self.captions + 1] = (caps[k]:gsub("%s+$", ""))
      end
    end
  end
  function SBU:__len() return #self.photos end
  function SBU:__getitem(index)
    index = D.check_index(self, index, #self.photos) + 1
    return D.finish(self, D.rgb_loader(self.root .. "/dataset/" .. self.photos[index]), self.captions[index])
  end

  -- ---- Flickr8k ----
  -- Flickr8k(root, ann_file, {transform, target_transform, loader}): ann_file is the captions HTML
  -- page (8k-pictures.html) whose table rows hold a link to the photo's
  -- Flickr page (ending in /<id>/) and a list of its captions; the image is the first of
  -- root/<id>_*.jpg. A row whose text reads "Image Not Found" is skipped.
  local Flickr8k = VisionDataset:extend("Flickr8k")
  datasets.Flickr8k = Flickr8k
  local html_entities = {amp = "&", lt = "<", gt = ">", quot = '"', apos = "'", nbsp = "\194\160"}
  local function html_text(s)
    return (s:gsub("&(#?%w+);", function(e)
      if e:sub(1, 1) == "#" then
        local c = e:sub(2, 2):lower() == "x" and tonumber(e:sub(3), 16) or tonumber(e:sub(2))
        return c and utf8.char(c) or nil
      end
      return html_entities[e:lower()]
    end))
  end
  -- the annotations of the page: {image path -> captions}, as torchvision's Flickr8kParser walks
  -- it (the text after a start tag belongs to that tag, the text after an end tag to none)
  function Flickr8k._parse(root, text, ann_file)
    local annotations = {}
    local in_table, tag, current = false, nil, nil
    local pos = 1
    local function data(s)
      if not in_table or s == "" then return end
      s = html_text(s)
      if s == "Image Not Found" then current = nil
      elseif tag == "a" then
        local parts = {}
        for p in (s .. "/"):gmatch("([^/]*)/") do parts[#parts + 1] = p end
        local id = parts[#parts - 1]
        if not id then U.errorf("Flickr8k: %s: a link text '%s' has no image id", ann_file, s) end
        local match
        for _, f in ipairs(D.listdir("Flickr8k", root, "file")) do
          if f:sub(1, #id + 1) == id .. "_" and f:sub(-4) == ".jpg" then match = root .. "/" .. f; break end
        end
        if not match then U.errorf("Flickr8k: no image %s/%s_*.jpg for the link %s in %s", root, id, s, ann_file) end
        current = match
        annotations[match] = {}
      elseif tag == "li" and current then
        local t = annotations[current]
        t[#t + 1] = s:match("^%s*(.-)%s*$")
      end
    end
    while true do
      local lt = text:find("<", pos, true)
      data(text:sub(pos, (lt or #text + 1) - 1))
      if not lt then break end
      if text:sub(lt, lt + 3) == "<!--" then
        pos = (select(2, text:find("-->", lt + 4, true)) or #text) + 1
      else
        local gt = text:find(">", lt, true) or #text
        local tagtext = text:sub(lt + 1, gt - 1)
        local close, name = tagtext:match("^(/?)%s*([%w:-]+)")
        if name then
          name = name:lower()
          if close == "/" or tagtext:sub(-1) == "/" then -- an end tag, or a self-closing one
            tag = nil
            if name == "table" and close == "/" then in_table = false end
          else
            tag = name
            if name == "table" then in_table = true end
          end
        end
        pos = gt + 1
      end
    end
    return annotations
  end
  function Flickr8k:__init(...)
    local o = U.parse("Flickr8k", {{"root", U.REQUIRED}, {"ann_file", U.REQUIRED}, {"transform"}, {"target_transform"},
      {"loader", D.rgb_loader}}, ...)
    self.root = D.root("Flickr8k", o.root)
    self.ann_file = o.ann_file
    self.transform, self.target_transform, self.loader = o.transform, o.target_transform, o.loader
    if type(o.ann_file) ~= "string" or D.kind(o.ann_file) ~= "file" then
      U.errorf("Flickr8k: annotation file %s not found: put the Flickr8k captions HTML page there (nothing is downloaded)",
        tostring(o.ann_file))
    end
    D.need("Flickr8k", self.root, "dir", false, "the Flickr8k images (<id>_<secret>.jpg)", self.root)
    self.annotations = Flickr8k._parse(self.root, D.read_text("Flickr8k", o.ann_file), o.ann_file)
    self.ids = {}
    for k in pairs(self.annotations) do self.ids[#self.ids + 1] = k end
    table.sort(self.ids)
  end
  function Flickr8k:__len() return #self.ids end
  function Flickr8k:__getitem(index)
    local id = self.ids[D.check_index(self, index, #self.ids) + 1]
    return D.finish(self, self.loader(id), self.annotations[id])
  end

  -- ---- CLEVRClassification ----
  -- CLEVRClassification(root, {split="train", transform, target_transform, download, loader}):
  -- root/clevr/CLEVR_v1.0/{images/<split>/*.png, scenes/CLEVR_<split>_scenes.json}; the target is
  -- the number of objects in the scene (nil for the test split).
  local CLEVR = VisionDataset:extend("CLEVRClassification")
  datasets.CLEVRClassification = CLEVR
  function CLEVR:__init(...)
    local o = U.parse("CLEVRClassification", {{"root", U.REQUIRED}, {"split", "train"}, {"transform"},
      {"target_transform"}, {"download", false}, {"loader", D.rgb_loader}}, ...)
    self._split = D.verify(o.split, "split", {"train", "val", "test"})
    self.root = D.root("CLEVRClassification", o.root)
    self.transform, self.target_transform, self.loader = o.transform, o.target_transform, o.loader
    self._base_folder = self.root .. "/clevr"
    self._data_folder = self._base_folder .. "/CLEVR_v1.0"
    D.need("CLEVRClassification", self._data_folder, "dir", o.download, "CLEVR_v1.0.zip extracted (CLEVR_v1.0/{images," ..
      "scenes}/; https://dl.fbaipublicfiles.com/clevr/CLEVR_v1.0.zip)", self._base_folder)
    local images = self._data_folder .. "/images/" .. self._split
    self._image_files = {}
    if D.kind(images) == "dir" then
      for _, f in ipairs(D.listdir("CLEVRClassification", images)) do self._image_files[#self._image_files + 1] = images .. "/" .. f end
    end
    self._labels = {}
    if self._split ~= "test" then
      local path = self._data_folder .. "/scenes/CLEVR_" .. self._split .. "_scenes.json"
      local content = D.read_json("CLEVRClassification", path)
      if type(content) ~= "table" or type(content.scenes) ~= "table" then U.errorf("CLEVRClassification: %s has no scenes", path) end
      local count = {}
      for _, s in ipairs(content.scenes) do
        if type(s.image_filename) ~= "string" or type(s.objects) ~= "table" then
          U.errorf("CLEVRClassification: %s: a scene lacks image_filename or objects", path)
        end
        count[s.image_filename] = s.objects.n or #s.objects
      end
      for k, f in ipairs(self._image_files) do
        local name = f:match("[^/]*$")
        self._labels[k] = count[name]
        if not self._labels[k] then U.errorf("CLEVRClassification: %s has no scene for %s", path, name) end
      end
    end
  end
  function CLEVR:__len() return #self._image_files end
  function CLEVR:__getitem(idx)
    idx = D.check_index(self, idx, #self._image_files) + 1
    return D.finish(self, self.loader(self._image_files[idx]), self._labels[idx])
  end

  -- ---- PCAM ----
  -- PCAM(root, {split="train", transform, target_transform, download}): torchvision reads
  -- root/pcam/camelyonpatch_level_2_split_<split>_{x,y}.h5 through h5py; nnrepl has no HDF5
  -- reader, so it reads the same arrays saved as .npy next to them (x: [N, 96, 96, 3] uint8,
  -- y: [N, 1, 1, 1]); the image is an RGB image, the target the integer label.
  local PCAM = VisionDataset:extend("PCAM")
  datasets.PCAM = PCAM
  function PCAM:__init(...)
    local o = U.parse("PCAM", {{"root", U.REQUIRED}, {"split", "train"}, {"transform"}, {"target_transform"},
      {"download", false}}, ...)
    self._split = D.verify(o.split, "split", {"train", "test", "val"})
    self.root = D.root("PCAM", o.root)
    self.transform, self.target_transform = o.transform, o.target_transform
    self._base_folder = self.root .. "/pcam"
    local npy = require "npy"
    local arrays = {}
    for _, xy in ipairs({"x", "y"}) do
      local stem = self._base_folder .. "/camelyonpatch_level_2_split_" .. self._split .. "_" .. xy
      if D.kind(stem .. ".npy") ~= "file" then
        local h5 = D.kind(stem .. ".h5") == "file"
        U.errorf("PCAM: %s.npy not found%s: nnrepl cannot read HDF5 (.h5) files (no HDF5 reader); save each array as .npy " ..
          "next to it, e.g. in Python: np.save('%s.npy', h5py.File('%s.h5')['%s'][:])%s", stem,
          h5 and " (the .h5 file is there)" or "", stem, stem, xy,
          o.download and "; download=true does nothing here (nnrepl downloads nothing)" or "")
      end
      local ok, a = pcall(npy.load, stem .. ".npy")
      if not ok then U.errorf("PCAM: %s", tostring(a)) end
      arrays[xy] = a
    end
    local x, y = arrays.x, arrays.y
    if x:dim() ~= 4 or x:size(3) ~= 3 or x.dtype ~= torch.uint8 then
      U.errorf("PCAM: the images array is %s %s; expected [N, 96, 96, 3] uint8", tostring(x.shape), tostring(x.dtype))
    end
    if y:size(0) ~= x:size(0) then U.errorf("PCAM: %d images but %d labels", x:size(0), y:size(0)) end
    self._images, self._targets = x, y:reshape(y:size(0), -1):select(1, 0):to(torch.int64):tolist()
  end
  function PCAM:__len() return self._images:size(0) end
  function PCAM:__getitem(idx)
    idx = D.check_index(self, idx, self._images:size(0))
    local image = require("tv_io").Image.fromarray(self._images[idx]:contiguous(), "RGB")
    return D.finish(self, image, self._targets[idx + 1])
  end
end
