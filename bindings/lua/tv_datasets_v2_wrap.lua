-- torchvision.datasets.wrap_dataset_for_transforms_v2(dataset, {target_keys=}): a dataset whose
-- samples carry tv_tensors, so transforms.v2 transforms boxes and masks with the image.
-- Wrapped: CocoDetection (targets become {image_id, boxes = BoundingBoxes XYXY, labels}, plus
-- masks = Mask from the polygons / RLEs and the annotation fields on request), VOCDetection
-- ({boxes, labels} with VOC's 20 classes numbered from 1; "annotation" keeps the parsed XML),
-- VOCSegmentation (the mask as a Mask) and the classification datasets (unchanged). The
-- dataset's transform / target_transform / transforms move to the wrapper and run after it.
-- Polygons are filled by the pixel-centre rule (a pixel belongs to a polygon when its centre
-- is inside it): pycocotools' rasteriser can differ from it by a pixel along edges.
local torch = require "torch"
local U = require "nn_util"
local tv_tensors = require "tv_tensors"
local core = require "tv_v2_core"
local box_convert = require("tv_ops_boxes").box_convert
local data = torch.utils.data

return function(datasets)
  -- ---- target_keys ----
  local function key_set(list)
    local s = {}
    for _, k in ipairs(list) do s[k] = true end
    return s
  end

  local function parse_target_keys(target_keys, available, default)
    if target_keys == nil then return key_set(default) end
    if target_keys == "all" then return key_set(available) end
    local avail, keys, extra = key_set(available), {}, {}
    for _, k in ipairs(target_keys) do
      keys[k] = true
      if not avail[k] then extra[#extra + 1] = string.format("'%s'", tostring(k)) end
    end
    if #extra > 0 then
      table.sort(extra)
      U.errorf("Target keys [%s] are not available. The available keys are [%s].", table.concat(extra, ", "),
        "'" .. table.concat((function() local a = {table.unpack(available)}; table.sort(a); return a end)(), "', '") .. "'")
    end
    return keys
  end

  -- ---- COCO segmentations -> masks ----
  -- a polygon {x1, y1, x2, y2, ...} filled on an h x w canvas (uint8), even-odd rule at pixel centres
  local function polygon_mask(poly, h, w)
    local py = torch.arange(h, {dtype = torch.float64}):add_(0.5):view(h, 1)
    local px = torch.arange(w, {dtype = torch.float64}):add_(0.5):view(1, w)
    local inside = torch.zeros({h, w}, {dtype = torch.bool})
    local n = #poly // 2
    for i = 1, n do
      local j = i % n + 1
      local x1, y1, x2, y2 = poly[2 * i - 1], poly[2 * i], poly[2 * j - 1], poly[2 * j]
      if y1 ~= y2 then
        local spans = py:gt(y1):logical_xor(py:gt(y2)) -- h x 1: the edge crosses this row
        local xcross = (py - y1):mul((x2 - x1) / (y2 - y1)):add_(x1) -- h x 1
        inside = inside:logical_xor(spans:logical_and(px:lt(xcross)))
      end
    end
    return inside
  end

  -- uncompressed RLE: counts of alternating 0s and 1s, column by column
  local function rle_mask(rle)
    local h, w = rle.size[1], rle.size[2]
    local flat = torch.zeros(h * w, {dtype = torch.uint8})
    local pos, value = 0, 0
    for _, c in ipairs(rle.counts) do
      if value == 1 and c > 0 then flat:narrow(0, pos, c):fill_(1) end
      pos, value = pos + c, 1 - value
    end
    if pos ~= h * w then U.errorf("wrap_dataset_for_transforms_v2: RLE counts sum to %d, not %d x %d", pos, h, w) end
    return flat:view(w, h):t():contiguous()
  end

  local function segmentation_to_mask(seg, h, w)
    if type(seg) ~= "table" then
      U.errorf("COCO segmentation expected to be a dict or a list, got %s", U.typename(seg))
    end
    if seg.counts ~= nil then
      if type(seg.counts) == "string" then
        U.error("wrap_dataset_for_transforms_v2: compressed RLE segmentations (counts as a string) are not " ..
          "supported; store them as polygons or uncompressed RLE (counts as a list of integers)")
      end
      return rle_mask(seg)
    end
    local m = torch.zeros({h, w}, {dtype = torch.bool})
    for _, poly in ipairs(seg) do m = m:logical_or(polygon_mask(poly, h, w)) end
    return m:to(torch.uint8)
  end

  -- list of annotation tables -> {key = list of values}
  local function batched(anns, key)
    local out = {}
    for i, a in ipairs(anns) do out[i] = a[key] end
    return out
  end

  -- ---- the wrappers: factory(dataset, target_keys) -> function(idx, img, target) ----
  local function identity_factory() return function(_, img, target) return img, target end end

  local function coco_factory(dataset, target_keys)
    local keys = parse_target_keys(target_keys,
      {"segmentation", "area", "iscrowd", "image_id", "bbox", "category_id", "boxes", "masks", "labels"},
      {"image_id", "boxes", "labels"})
    return function(idx, img, anns)
      local image_id = dataset.ids[idx + 1]
      if anns == nil or #anns == 0 then return img, {image_id = image_id} end
      local hw = core.get_size(img)
      local target = {}
      if keys.image_id then target.image_id = image_id end
      if keys.boxes then
        local xywh = torch.tensor(batched(anns, "bbox")):view(-1, 4)
        target.boxes = tv_tensors.BoundingBoxes(box_convert(xywh, "xywh", "xyxy"), {format = "XYXY", canvas_size = hw})
      end
      if keys.masks then
        local ms = {}
        for i, seg in ipairs(batched(anns, "segmentation")) do ms[i] = segmentation_to_mask(seg, hw[1], hw[2]) end
        target.masks = tv_tensors.Mask(torch.stack(ms))
      end
      if keys.labels then target.labels = torch.tensor(batched(anns, "category_id"), {dtype = torch.int64}) end
      for k in pairs(keys) do
        if not ({image_id = 1, boxes = 1, masks = 1, labels = 1})[k] then target[k] = batched(anns, k) end
      end
      return img, target
    end
  end

  local VOC_CATEGORIES = {"__background__", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat",
    "chair", "cow", "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train",
    "tvmonitor"}
  local VOC_INDEX = {}
  for i, name in ipairs(VOC_CATEGORIES) do VOC_INDEX[name] = i - 1 end

  local function voc_int(s)
    local v = math.tointeger(tonumber(s))
    if v == nil then U.errorf("VOCDetection: bounding box coordinate %s is not an integer", tostring(s)) end
    return v
  end

  local function voc_detection_factory(_, target_keys)
    local keys = parse_target_keys(target_keys, {"annotation", "boxes", "labels"}, {"boxes", "labels"})
    return function(_, img, target)
      local objects = target.annotation.object
      local out = keys.annotation and target or {}
      if keys.boxes then
        local rows = {}
        for i, o in ipairs(objects) do
          local b = o.bndbox
          rows[i] = {voc_int(b.xmin), voc_int(b.ymin), voc_int(b.xmax), voc_int(b.ymax)}
        end
        out.boxes = tv_tensors.BoundingBoxes(torch.tensor(rows, {dtype = torch.int64}):view(-1, 4),
          {format = "XYXY", canvas_size = core.get_size(img)})
      end
      if keys.labels then
        local labels = {}
        for i, o in ipairs(objects) do
          labels[i] = VOC_INDEX[o.name] or U.errorf("VOCDetection: unknown class name '%s'", tostring(o.name))
        end
        out.labels = torch.tensor(labels, {dtype = torch.int64})
      end
      return img, out
    end
  end

  local function segmentation_factory()
    local F = require("tv_transforms").functional
    return function(_, img, mask) return img, tv_tensors.Mask(F.pil_to_tensor(mask):squeeze(0)) end
  end

  local factories = {} -- class -> factory
  local function add(name, f) if datasets[name] then factories[datasets[name]] = f end end
  add("CocoDetection", coco_factory)
  add("VOCDetection", voc_detection_factory)
  add("VOCSegmentation", segmentation_factory)
  for _, name in ipairs({"DatasetFolder", "ImageFolder", "MNIST", "FashionMNIST", "KMNIST", "EMNIST", "QMNIST",
      "CIFAR10", "CIFAR100", "SVHN", "STL10", "GTSRB", "Food101", "FakeData"}) do
    add(name, identity_factory)
  end
  local with_target_keys = {}
  for _, name in ipairs({"CocoDetection", "VOCDetection"}) do
    if datasets[name] then with_target_keys[datasets[name]] = true end
  end

  -- ---- the wrapped dataset ----
  local Wrapper = data.Dataset:extend("VisionDatasetTVTensorWrapper")
  datasets.VisionDatasetTVTensorWrapper = Wrapper

  function Wrapper:__init(dataset, target_keys)
    local name = type(dataset) == "table" and getmetatable(dataset) and getmetatable(dataset).__name or U.typename(dataset)
    if not data.isinstance(dataset, datasets.VisionDataset) then
      U.errorf("This wrapper is meant for subclasses of `torchvision.datasets.VisionDataset`, but got a '%s' " ..
        "instead: wrap the samples of a custom dataset yourself (tv_tensors.Image, BoundingBoxes, Mask)", name)
    end
    if target_keys ~= nil and target_keys ~= "all" and type(target_keys) ~= "table" then
      U.errorf("`target_keys` can be None, 'all', or a collection of strings denoting the keys to be returned, but got %s",
        tostring(target_keys))
    end
    local cls, factory = getmetatable(dataset).__class, nil
    while cls and cls ~= datasets.VisionDataset do
      factory = factories[cls]
      if factory then break end
      cls = getmetatable(cls).__index
    end
    if not factory then
      U.errorf("No wrapper exists for dataset class %s. Please wrap the output yourself.", name)
    end
    if target_keys ~= nil and not with_target_keys[cls] then
      U.errorf("`target_keys` is currently only supported for `CocoDetection` and `VOCDetection`, but got %s.",
        cls.__name)
    end
    self._dataset, self._target_keys = dataset, target_keys
    self._wrapper = factory(dataset, target_keys)
    self.transform, dataset.transform = dataset.transform, nil
    self.target_transform, dataset.target_transform = dataset.target_transform, nil
    self.transforms, dataset.transforms = dataset.transforms, nil
  end

  function Wrapper:__len() return #self._dataset end

  function Wrapper:__getitem(idx)
    local img, target = self._wrapper(idx, self._dataset:__getitem(idx))
    if self.transforms ~= nil then return self.transforms(img, target) end
    if self.transform ~= nil then img = self.transform(img) end
    if self.target_transform ~= nil then target = self.target_transform(target) end
    return img, target
  end

  function Wrapper:__tostring() return tostring(self._dataset) end

  -- wrap_dataset_for_transforms_v2(dataset, target_keys=None)
  function datasets.wrap_dataset_for_transforms_v2(...)
    local o = U.parse("wrap_dataset_for_transforms_v2", {{"dataset", U.REQUIRED}, {"target_keys", nil}}, ...)
    return Wrapper(o.dataset, o.target_keys)
  end
end
