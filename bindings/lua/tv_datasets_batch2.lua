-- torchvision.datasets over extracted archives: ImageNet, Imagenette, Country211 (image
-- folders), OxfordIIITPet, DTD, FGVCAircraft, SUN397 (list files), StanfordCars (MATLAB devkit
-- files through tv_matfile). Images are PIL-like RGB (the loader's), as torchvision's. Nothing is
-- downloaded: download=true, or the files absent, raises an error saying what to put where.
local U = require "nn_util"
local D = require "tv_dataset_util"

return function(datasets)
  local VisionDataset, ImageFolder, DatasetFolder = datasets.VisionDataset, datasets.ImageFolder, datasets.DatasetFolder

  local list_len, list_item, index_of = D.list_len, D.list_item, D.index_of
  local function num(v) return type(v) == "number" and v or v:item() end

  -- ---- ImageNet ----
  -- ImageNet(root, {split="train", transform, target_transform, loader, is_valid_file, allow_empty}):
  -- an ImageFolder over root/train/<wnid>/*.JPEG or root/val/<wnid>/*.JPEG, with the class names
  -- from the extracted devkit, root/ILSVRC2012_devkit_t12/data/meta.mat (torchvision's meta.bin
  -- is a Python pickle, which nnrepl cannot read). A flat root/val of ILSVRC2012_val_*.JPEG files
  -- is labelled by the devkit's data/ILSVRC2012_validation_ground_truth.txt.
  local ImageNet = ImageFolder:extend("ImageNet")
  datasets.ImageNet = ImageNet
  local devkit = "ILSVRC2012_devkit_t12"
  local devkit_what = "ILSVRC2012_devkit_t12.tar.gz extracted (" .. devkit .. "/data/meta.mat; https://image-net.org" ..
    " -- torchvision's meta.bin is a Python pickle that nnrepl cannot read)"

  -- the leaf synsets of meta.mat: {wnid -> {names}} and {ILSVRC2012_ID -> wnid}
  local function imagenet_meta(root)
    local path = D.need("ImageNet", root .. "/" .. devkit .. "/data/meta.mat", "file", false, devkit_what, root)
    local synsets = D.loadmat("ImageNet", path).synsets
    if type(synsets) ~= "table" then U.errorf("ImageNet: %s has no synsets struct array", path) end
    if synsets.WNID then synsets = {synsets} end
    local wnid_to_classes, id_to_wnid = {}, {}
    for _, s in ipairs(synsets) do
      if type(s.WNID) ~= "string" or type(s.words) ~= "string" or s.num_children == nil or s.ILSVRC2012_ID == nil then
        U.errorf("ImageNet: %s: a synset lacks WNID, words, num_children or ILSVRC2012_ID", path)
      end
      if num(s.num_children) == 0 then
        local names = {}
        for w in (s.words .. ", "):gmatch("(.-), ") do names[#names + 1] = w end
        wnid_to_classes[s.WNID] = names
        id_to_wnid[math.tointeger(num(s.ILSVRC2012_ID))] = s.WNID
      end
    end
    return wnid_to_classes, id_to_wnid
  end

  function ImageNet:__init(...)
    local o = U.parse("ImageNet", {{"root", U.REQUIRED}, {"split", "train"}, {"transform"}, {"target_transform"},
      {"loader"}, {"is_valid_file"}, {"allow_empty"}}, ...)
    local root = D.root("ImageNet", o.root)
    local split = D.verify(o.split, "split", {"train", "val"})
    local wnid_to_classes, id_to_wnid = imagenet_meta(root)
    local folder = root .. "/" .. split
    D.need("ImageNet", folder, "dir", false, (split == "train" and "ILSVRC2012_img_train.tar extracted (train/<wnid>/*.JPEG)"
      or "ILSVRC2012_img_val.tar extracted (val/*.JPEG or val/<wnid>/*.JPEG)"), root)
    local opts = {transform = o.transform, target_transform = o.target_transform, loader = o.loader,
      is_valid_file = o.is_valid_file, allow_empty = o.allow_empty}
    if split == "val" and #D.listdir("ImageNet", folder, "dir") == 0 then
      self:_flat_val(root, folder, id_to_wnid, opts)
    else
      ImageFolder.__init(self, folder, opts)
    end
    self.root, self.split = root, split
    self.wnids, self.wnid_to_idx = self.classes, self.class_to_idx
    self.classes, self.class_to_idx = {}, {}
    for i, w in ipairs(self.wnids) do
      local names = wnid_to_classes[w]
      if not names then U.errorf("ImageNet: class folder %s is not a leaf synset of %s/data/meta.mat", w, devkit) end
      self.classes[i] = names
      for _, n in ipairs(names) do self.class_to_idx[n] = i - 1 end
    end
  end

  -- val as extracted from ILSVRC2012_img_val.tar: labels from the devkit's ground truth, one
  -- ILSVRC2012_ID per image in sorted file-name order
  function ImageNet:_flat_val(root, folder, id_to_wnid, opts)
    local gt = D.need("ImageNet", root .. "/" .. devkit .. "/data/ILSVRC2012_validation_ground_truth.txt", "file", false,
      devkit_what, root)
    local files = {}
    for _, f in ipairs(D.listdir("ImageNet", folder, "file")) do
      if f:lower():match("%.jpeg$") then files[#files + 1] = f end
    end
    local ids = D.lines("ImageNet", gt)
    if #ids ~= #files then
      U.errorf("ImageNet: %s holds %d images but %s lists %d labels", folder, #files, gt, #ids)
    end
    local wnids, seen = {}, {}
    for k, line in ipairs(ids) do
      local w = id_to_wnid[D.int("ImageNet", line:match("^%s*(.-)%s*$"), gt .. " line " .. k)]
      if not w then U.errorf("ImageNet: %s line %d: %s is not a leaf ILSVRC2012_ID", gt, k, line) end
      ids[k] = w
      if not seen[w] then seen[w] = true; wnids[#wnids + 1] = w end
    end
    table.sort(wnids)
    local wnid_to_idx = index_of(wnids)
    self.loader, self.transform, self.target_transform = opts.loader or D.rgb_loader, opts.transform, opts.target_transform
    self.classes, self.class_to_idx, self.samples, self.targets = wnids, wnid_to_idx, {}, {}
    for k, f in ipairs(files) do
      self.samples[k] = {folder .. "/" .. f, wnid_to_idx[ids[k]]}
      self.targets[k] = wnid_to_idx[ids[k]]
    end
    self.imgs = self.samples
  end

  -- ---- Imagenette ----
  -- Imagenette(root, {split="train", size="full", download, transform, target_transform, loader}):
  -- root/imagenette2[-320|-160]/{train,val}/<wnid>/*.JPEG
  local Imagenette = VisionDataset:extend("Imagenette")
  datasets.Imagenette = Imagenette
  local imagenette_names = {
    n01440764 = {"tench", "Tinca tinca"},
    n02102040 = {"English springer", "English springer spaniel"},
    n02979186 = {"cassette player"},
    n03000684 = {"chain saw", "chainsaw"},
    n03028079 = {"church", "church building"},
    n03394916 = {"French horn", "horn"},
    n03417042 = {"garbage truck", "dustcart"},
    n03425413 = {"gas pump", "gasoline pump", "petrol pump", "island dispenser"},
    n03445777 = {"golf ball"},
    n03888605 = {"parachute", "chute"},
  }
  local imagenette_dirs = {full = "imagenette2", ["320px"] = "imagenette2-320", ["160px"] = "imagenette2-160"}
  function Imagenette:__init(...)
    local o = U.parse("Imagenette", {{"root", U.REQUIRED}, {"split", "train"}, {"size", "full"}, {"download", false},
      {"transform"}, {"target_transform"}, {"loader", D.rgb_loader}}, ...)
    self.root = D.root("Imagenette", o.root)
    self._split = D.verify(o.split, "split", {"train", "val"})
    self._size = D.verify(o.size, "size", {"full", "320px", "160px"})
    self.transform, self.target_transform, self.loader = o.transform, o.target_transform, o.loader
    local name = imagenette_dirs[self._size]
    self._size_root = self.root .. "/" .. name
    self._image_root = self._size_root .. "/" .. self._split
    D.need("Imagenette", self._image_root, "dir", o.download, name .. ".tgz extracted (" .. name ..
      "/{train,val}/<wnid>/; https://s3.amazonaws.com/fast-ai-imageclas/" .. name .. ".tgz)", self.root)
    self.wnids, self.wnid_to_idx = DatasetFolder.find_classes(self._image_root)
    self.classes, self.class_to_idx = {}, {}
    for i, w in ipairs(self.wnids) do
      local names = imagenette_names[w]
      if not names then U.errorf("Imagenette: %s is not one of Imagenette's 10 wnids", w) end
      self.classes[i] = names
      for _, n in ipairs(names) do self.class_to_idx[n] = i - 1 end
    end
    self._samples = DatasetFolder.make_dataset(self._image_root, self.wnid_to_idx, {".jpeg"})
  end
  Imagenette.__len, Imagenette.__getitem = D.samples_len, D.samples_item

  -- ---- Country211: an ImageFolder over root/country211/{train,valid,test} ----
  local Country211 = ImageFolder:extend("Country211")
  datasets.Country211 = Country211
  function Country211:__init(...)
    local o = U.parse("Country211", {{"root", U.REQUIRED}, {"split", "train"}, {"transform"}, {"target_transform"},
      {"download", false}, {"loader"}}, ...)
    local root = D.root("Country211", o.root)
    local split = D.verify(o.split, "split", {"train", "valid", "test"})
    local base = root .. "/country211"
    D.need("Country211", base .. "/" .. split, "dir", o.download,
      "country211.tgz extracted (country211/{train,valid,test}/<country code>/*.jpg; " ..
      "https://openaipublic.azureedge.net/clip/data/country211.tgz)", root)
    ImageFolder.__init(self, base .. "/" .. split, {transform = o.transform, target_transform = o.target_transform,
      loader = o.loader})
    self.root, self._split, self._base_folder = root, split, base
  end

  -- ---- OxfordIIITPet ----
  -- OxfordIIITPet(root, {split="trainval", target_types="category", transforms, transform,
  -- target_transform, download}): root/oxford-iiit-pet/{images/<id>.jpg, annotations/{trainval,test}.txt,
  -- annotations/trimaps/<id>.png}. Targets: category (0..36), binary-category (0 cat, 1 dog), segmentation
  -- (the trimap image); a list of target types gives a list, an empty one nil.
  local OxfordIIITPet = VisionDataset:extend("OxfordIIITPet")
  datasets.OxfordIIITPet = OxfordIIITPet
  local function title(s) return (s:gsub("%a+", function(w) return w:sub(1, 1):upper() .. w:sub(2):lower() end)) end
  function OxfordIIITPet:__init(...)
    local o = U.parse("OxfordIIITPet", {{"root", U.REQUIRED}, {"split", "trainval"}, {"target_types", "category"},
      {"transforms"}, {"transform"}, {"target_transform"}, {"download", false}}, ...)
    self.root = D.root("OxfordIIITPet", o.root)
    self._split = D.verify(o.split, "split", {"trainval", "test"})
    local types = type(o.target_types) == "string" and {o.target_types} or o.target_types
    self._target_types = {}
    for i, t in ipairs(types) do
      self._target_types[i] = D.verify(t, "target_types", {"category", "binary-category", "segmentation"})
    end
    if o.transforms ~= nil and (o.transform ~= nil or o.target_transform ~= nil) then
      U.errorf("Only transforms or transform/target_transform can be passed as argument")
    end
    self.transforms, self.transform, self.target_transform = o.transforms, o.transform, o.target_transform
    local base = self.root .. "/oxford-iiit-pet"
    self._base_folder, self._images_folder = base, base .. "/images"
    self._anns_folder, self._segs_folder = base .. "/annotations", base .. "/annotations/trimaps"
    local what = "images.tar.gz and annotations.tar.gz extracted (images/, annotations/; " ..
      "https://www.robots.ox.ac.uk/~vgg/data/pets/)"
    D.need("OxfordIIITPet", self._images_folder, "dir", o.download, what, base)
    D.need("OxfordIIITPet", self._anns_folder, "dir", o.download, what, base)
    local list = self._anns_folder .. "/" .. self._split .. ".txt"
    local ids, breed_of = {}, {}
    self._labels, self._bin_labels = {}, {}
    for k, line in ipairs(D.lines("OxfordIIITPet", list)) do
      local id, label, bin = line:match("^%s*(%S+)%s+(%S+)%s+(%S+)%s+%S+%s*$")
      if not id then U.errorf("OxfordIIITPet: %s line %d: expected 4 fields (image, class id, species, breed id)", list, k) end
      ids[k] = id
      self._labels[k] = D.int("OxfordIIITPet", label, list .. " line " .. k) - 1
      self._bin_labels[k] = D.int("OxfordIIITPet", bin, list .. " line " .. k) - 1
      local breed = id:match("^(.*)_[^_]*$") or id
      breed_of[breed .. "\0" .. self._labels[k]] = {breed, self._labels[k]}
    end
    local pairs_ = {}
    for _, p in pairs(breed_of) do pairs_[#pairs_ + 1] = p end
    table.sort(pairs_, function(a, b) if a[2] ~= b[2] then return a[2] < b[2] end return a[1] < b[1] end)
    self.classes = {}
    for i, p in ipairs(pairs_) do
      local parts = {}
      for part in (p[1] .. "_"):gmatch("(.-)_") do parts[#parts + 1] = title(part) end
      self.classes[i] = table.concat(parts, " ")
    end
    self.class_to_idx = index_of(self.classes)
    self.bin_classes = {"Cat", "Dog"}
    self.bin_class_to_idx = {Cat = 0, Dog = 1}
    self._images, self._segs = {}, {}
    for k, id in ipairs(ids) do
      self._images[k] = self._images_folder .. "/" .. id .. ".jpg"
      self._segs[k] = self._segs_folder .. "/" .. id .. ".png"
    end
  end
  function OxfordIIITPet:__len() return #self._images end
  function OxfordIIITPet:__getitem(index)
    index = D.check_index(self, index, #self._images) + 1
    local image = D.rgb_loader(self._images[index])
    local target = {}
    for _, t in ipairs(self._target_types) do
      if t == "category" then target[#target + 1] = self._labels[index]
      elseif t == "binary-category" then target[#target + 1] = self._bin_labels[index]
      else target[#target + 1] = D.open(self._segs[index]) end
    end
    if #target == 0 then target = nil elseif #target == 1 then target = target[1] end
    if self.transforms ~= nil then return self.transforms(image, target) end
    return D.finish(self, image, target)
  end

  -- ---- DTD ----
  -- DTD(root, {split="train", partition=1, transform, target_transform, download, loader}):
  -- root/dtd/dtd/{images/<class>/<name>.jpg, labels/<split><partition>.txt of "class/name" lines}
  local DTD = VisionDataset:extend("DTD")
  datasets.DTD = DTD
  function DTD:__init(...)
    local o = U.parse("DTD", {{"root", U.REQUIRED}, {"split", "train"}, {"partition", 1}, {"transform"},
      {"target_transform"}, {"download", false}, {"loader", D.rgb_loader}}, ...)
    self.root = D.root("DTD", o.root)
    self._split = D.verify(o.split, "split", {"train", "val", "test"})
    if math.type(o.partition) ~= "integer" or o.partition < 1 or o.partition > 10 then
      U.errorf("Parameter 'partition' should be an integer with `1 <= partition <= 10`, but got %s instead",
        tostring(o.partition))
    end
    self._partition = o.partition
    self.transform, self.target_transform, self.loader = o.transform, o.target_transform, o.loader
    self._base_folder = self.root .. "/dtd"
    self._data_folder = self._base_folder .. "/dtd"
    self._meta_folder, self._images_folder = self._data_folder .. "/labels", self._data_folder .. "/images"
    D.need("DTD", self._data_folder, "dir", o.download, "dtd-r1.0.1.tar.gz extracted (dtd/{images,labels}/; " ..
      "https://www.robots.ox.ac.uk/~vgg/data/dtd/download/dtd-r1.0.1.tar.gz)", self._base_folder)
    local list = string.format("%s/%s%d.txt", self._meta_folder, self._split, self._partition)
    local names, seen = {}, {}
    self._image_files, self.classes = {}, {}
    for k, line in ipairs(D.lines("DTD", list)) do
      local cls, name = line:match("^%s*([^/]+)/([^/]-)%s*$")
      if not cls then U.errorf("DTD: %s line %d: expected class/name", list, k) end
      self._image_files[k] = self._images_folder .. "/" .. cls .. "/" .. name
      names[k] = cls
      if not seen[cls] then seen[cls] = true; self.classes[#self.classes + 1] = cls end
    end
    table.sort(self.classes)
    self.class_to_idx = index_of(self.classes)
    self._labels = {}
    for k, cls in ipairs(names) do self._labels[k] = self.class_to_idx[cls] end
  end
  DTD.__len, DTD.__getitem = list_len, list_item

  -- ---- FGVCAircraft ----
  -- FGVCAircraft(root, {split="trainval", annotation_level="variant", transform, target_transform,
  -- download, loader}): root/fgvc-aircraft-2013b/data/{images/<id>.jpg, variants.txt (families.txt,
  -- manufacturers.txt), images_<level>_<split>.txt of "<id> <class name>" lines}
  local FGVCAircraft = VisionDataset:extend("FGVCAircraft")
  datasets.FGVCAircraft = FGVCAircraft
  local aircraft_files = {variant = "variants.txt", family = "families.txt", manufacturer = "manufacturers.txt"}
  function FGVCAircraft:__init(...)
    local o = U.parse("FGVCAircraft", {{"root", U.REQUIRED}, {"split", "trainval"}, {"annotation_level", "variant"},
      {"transform"}, {"target_transform"}, {"download", false}, {"loader", D.rgb_loader}}, ...)
    self.root = D.root("FGVCAircraft", o.root)
    self._split = D.verify(o.split, "split", {"train", "val", "trainval", "test"})
    self._annotation_level = D.verify(o.annotation_level, "annotation_level", {"variant", "family", "manufacturer"})
    self.transform, self.target_transform, self.loader = o.transform, o.target_transform, o.loader
    self._data_path = self.root .. "/fgvc-aircraft-2013b"
    D.need("FGVCAircraft", self._data_path, "dir", o.download, "fgvc-aircraft-2013b.tar.gz extracted " ..
      "(fgvc-aircraft-2013b/data/; https://www.robots.ox.ac.uk/~vgg/data/fgvc-aircraft/)", self.root)
    local data = self._data_path .. "/data"
    self.classes = {}
    for k, line in ipairs(D.lines("FGVCAircraft", data .. "/" .. aircraft_files[self._annotation_level])) do
      self.classes[k] = line:match("^%s*(.-)%s*$")
    end
    self.class_to_idx = index_of(self.classes)
    local list = string.format("%s/images_%s_%s.txt", data, self._annotation_level, self._split)
    self._image_files, self._labels = {}, {}
    for k, line in ipairs(D.lines("FGVCAircraft", list)) do
      local id, name = line:match("^%s*(.-)%s*$"):match("^([^ ]*) (.*)$")
      if not id then U.errorf("FGVCAircraft: %s line %d: expected '<image id> <class name>'", list, k) end
      local label = self.class_to_idx[name]
      if not label then U.errorf("FGVCAircraft: %s line %d: class '%s' is not in %s", list, k, name,
        aircraft_files[self._annotation_level]) end
      self._image_files[k] = data .. "/images/" .. id .. ".jpg"
      self._labels[k] = label
    end
  end
  FGVCAircraft.__len, FGVCAircraft.__getitem = list_len, list_item

  -- ---- StanfordCars ----
  -- StanfordCars(root, {split="train", transform, target_transform, download, loader}):
  -- root/stanford_cars/{devkit/{cars_meta.mat, cars_train_annos.mat}, cars_train/, cars_test/,
  -- cars_test_annos_withlabels.mat}; the annotations struct array's fname and class (1-based).
  local StanfordCars = VisionDataset:extend("StanfordCars")
  datasets.StanfordCars = StanfordCars
  function StanfordCars:__init(...)
    local o = U.parse("StanfordCars", {{"root", U.REQUIRED}, {"split", "train"}, {"transform"}, {"target_transform"},
      {"download", false}, {"loader", D.rgb_loader}}, ...)
    self.root = D.root("StanfordCars", o.root)
    self._split = D.verify(o.split, "split", {"train", "test"})
    self.transform, self.target_transform, self.loader = o.transform, o.target_transform, o.loader
    local base = self.root .. "/stanford_cars"
    self._base_folder = base
    local kit = base .. "/devkit"
    if self._split == "train" then
      self._annotations_mat_path, self._images_base_path = kit .. "/cars_train_annos.mat", base .. "/cars_train"
    else
      self._annotations_mat_path, self._images_base_path = base .. "/cars_test_annos_withlabels.mat", base .. "/cars_test"
    end
    if o.download then
      U.errorf("StanfordCars: the original URL is broken, so the dataset cannot be downloaded (nnrepl downloads nothing " ..
        "anyway): put the devkit, cars_train, cars_test and cars_test_annos_withlabels.mat in %s", base)
    end
    local what = "the extracted car_devkit.tgz (devkit/), cars_train.tgz, cars_test.tgz and cars_test_annos_withlabels.mat"
    D.need("StanfordCars", kit, "dir", false, what, base)
    D.need("StanfordCars", self._annotations_mat_path, "file", false, what, base)
    D.need("StanfordCars", self._images_base_path, "dir", false, what, base)
    local annos = D.loadmat("StanfordCars", self._annotations_mat_path).annotations
    if type(annos) ~= "table" then U.errorf("StanfordCars: %s has no annotations struct array", self._annotations_mat_path) end
    if annos.fname then annos = {annos} end
    self._samples = {}
    for k, a in ipairs(annos) do
      if type(a.fname) ~= "string" or a.class == nil then
        U.errorf("StanfordCars: %s: annotation %d lacks fname or class", self._annotations_mat_path, k)
      end
      self._samples[k] = {self._images_base_path .. "/" .. a.fname, math.tointeger(num(a.class)) - 1}
    end
    local meta = D.need("StanfordCars", kit .. "/cars_meta.mat", "file", false, what, base)
    local names = D.loadmat("StanfordCars", meta).class_names
    if type(names) == "string" then names = {names} end
    if type(names) ~= "table" then U.errorf("StanfordCars: %s/cars_meta.mat has no class_names cell array", kit) end
    self.classes = names
    self.class_to_idx = index_of(names)
  end
  StanfordCars.__len, StanfordCars.__getitem = D.samples_len, D.samples_item

  -- ---- SUN397 ----
  -- SUN397(root, {transform, target_transform, download, loader}): root/SUN397/{ClassName.txt of
  -- "/a/abbey" lines, a/abbey/sun_*.jpg, ...}; files in sorted walk order (torchvision's rglob
  -- order is the file system's).
  local SUN397 = VisionDataset:extend("SUN397")
  datasets.SUN397 = SUN397
  function SUN397:__init(...)
    local o = U.parse("SUN397", {{"root", U.REQUIRED}, {"transform"}, {"target_transform"}, {"download", false},
      {"loader", D.rgb_loader}}, ...)
    self.root = D.root("SUN397", o.root)
    self.transform, self.target_transform, self.loader = o.transform, o.target_transform, o.loader
    self._data_dir = self.root .. "/SUN397"
    D.need("SUN397", self._data_dir, "dir", o.download, "SUN397.tar.gz extracted (SUN397/ClassName.txt, SUN397/a/abbey/...; " ..
      "http://vision.princeton.edu/projects/2010/SUN/SUN397.tar.gz)", self.root)
    self.classes = {}
    for k, line in ipairs(D.lines("SUN397", self._data_dir .. "/ClassName.txt")) do
      self.classes[k] = line:sub(4):match("^%s*(.-)%s*$")
    end
    self.class_to_idx = index_of(self.classes)
    local tops = {}
    for _, d in ipairs(D.listdir("SUN397", self._data_dir, "dir")) do tops[d] = 0 end
    local files = DatasetFolder.make_dataset(self._data_dir, tops, nil,
      function(p) return p:match("/sun_[^/]*%.jpg$") ~= nil end, true)
    self._image_files, self._labels = {}, {}
    local skip = #self._data_dir + 2
    for k, s in ipairs(files) do
      local cls = s[1]:sub(skip):match("^[^/]+/(.+)/[^/]+$")
      local label = cls and self.class_to_idx[cls]
      if not label then U.errorf("SUN397: %s is in no class of ClassName.txt", s[1]) end
      self._image_files[k], self._labels[k] = s[1], label
    end
  end
  SUN397.__len, SUN397.__getitem = list_len, list_item
end
