-- torchvision.datasets VOCSegmentation and VOCDetection over an extracted PASCAL VOC devkit:
-- root/VOCdevkit/VOC<year>/{JPEGImages, ImageSets/{Segmentation,Main}/<image_set>.txt,
-- SegmentationClass/*.png, Annotations/*.xml} (VOC2011: root/TrainVal/VOCdevkit/VOC2011).
-- Images are PIL-like RGB; a segmentation mask opens as tv_io's Image.open gives it (a palette
-- PNG as RGB, where Pillow keeps mode "P"); a detection target is parse_voc_xml's nested table.
-- Nothing is downloaded.
local U = require "nn_util"
local D = require "tv_dataset_util"
local xml = require "tv_xml"

return function(datasets)
  local VisionDataset = datasets.VisionDataset

  local voc_dirs = {["2012"] = "VOCdevkit/VOC2012", ["2011"] = "TrainVal/VOCdevkit/VOC2011",
    ["2010"] = "VOCdevkit/VOC2010", ["2009"] = "VOCdevkit/VOC2009", ["2008"] = "VOCdevkit/VOC2008",
    ["2007"] = "VOCdevkit/VOC2007"}
  local voc_tars = {["2012"] = "VOCtrainval_11-May-2012.tar", ["2011"] = "VOCtrainval_25-May-2011.tar",
    ["2010"] = "VOCtrainval_03-May-2010.tar", ["2009"] = "VOCtrainval_11-May-2009.tar",
    ["2008"] = "VOCtrainval_14-Jul-2008.tar", ["2007"] = "VOCtrainval_06-Nov-2007.tar"}

  local function voc_init(self, cls, splits_dir, target_dir, ext, ...)
    local o = U.parse(cls, {{"root", U.REQUIRED}, {"year", "2012"}, {"image_set", "train"}, {"download", false},
      {"transform"}, {"target_transform"}, {"transforms"}}, ...)
    self.root = D.root(cls, o.root)
    if o.transforms ~= nil and (o.transform ~= nil or o.target_transform ~= nil) then
      U.errorf("Only transforms or transform/target_transform can be passed as argument")
    end
    self.transform, self.target_transform, self.transforms = o.transform, o.target_transform, o.transforms
    self.year = D.verify(o.year, "year", {"2007", "2008", "2009", "2010", "2011", "2012"})
    local valid = {"train", "trainval", "val"}
    if self.year == "2007" then valid[4] = "test" end
    self.image_set = D.verify(o.image_set, "image_set", valid)
    local voc_root = self.root .. "/" .. voc_dirs[self.year]
    local tar = (self.year == "2007" and self.image_set == "test") and "VOCtest_06-Nov-2007.tar" or voc_tars[self.year]
    local where = "http://host.robots.ox.ac.uk/pascal/VOC/voc" .. self.year .. "/"
    D.need(cls, voc_root, "dir", o.download, tar .. " extracted (" .. voc_dirs[self.year] .. "/; " .. where .. ")", self.root)
    local split_f = voc_root .. "/ImageSets/" .. splits_dir .. "/" .. self.image_set .. ".txt"
    if D.kind(split_f) ~= "file" then
      U.errorf("%s: %s not found: the extracted %s lacks it (Dataset not found or corrupted)", cls, split_f, tar)
    end
    self.images, self.targets = {}, {}
    for _, line in ipairs(D.lines(cls, split_f)) do
      local id = line:match("^%s*(.-)%s*$")
      self.images[#self.images + 1] = voc_root .. "/JPEGImages/" .. id .. ".jpg"
      self.targets[#self.targets + 1] = voc_root .. "/" .. target_dir .. "/" .. id .. ext
    end
  end

  local function voc_len(self) return #self.images end
  local function voc_item(self, index, load_target)
    index = D.check_index(self, index, #self.images) + 1
    local img, target = D.rgb_loader(self.images[index]), load_target(self, self.targets[index])
    if self.transforms ~= nil then return self.transforms(img, target) end
    return D.finish(self, img, target)
  end

  -- VOCSegmentation(root, {year="2012", image_set="train", download, transform, target_transform, transforms})
  local VOCSegmentation = VisionDataset:extend("VOCSegmentation")
  datasets.VOCSegmentation = VOCSegmentation
  function VOCSegmentation:__init(...)
    voc_init(self, "VOCSegmentation", "Segmentation", "SegmentationClass", ".png", ...)
    self.masks = self.targets
  end
  VOCSegmentation.__len = voc_len
  function VOCSegmentation:__getitem(index)
    return voc_item(self, index, function(_, path) return D.open(path) end)
  end

  -- VOCDetection(root, {year="2012", image_set="train", download, transform, target_transform, transforms})
  local VOCDetection = VisionDataset:extend("VOCDetection")
  datasets.VOCDetection = VOCDetection
  function VOCDetection:__init(...)
    voc_init(self, "VOCDetection", "Main", "Annotations", ".xml", ...)
    self.annotations = self.targets
  end
  VOCDetection.__len = voc_len

  -- torchvision's parse_voc_xml: {tag = text} for a leaf with text (stripped), {tag = {child
  -- tag = value or list of values}} for an element with children, {} for an empty leaf; the
  -- "object" entry of <annotation> is always a list.
  function VOCDetection.parse_voc_xml(self_or_node, node)
    node = node or self_or_node
    local out = {}
    if #node.children > 0 then
      local grouped, order = {}, {}
      for _, child in ipairs(node.children) do
        for k, v in pairs(VOCDetection.parse_voc_xml(child)) do
          if not grouped[k] then grouped[k] = {}; order[#order + 1] = k end
          table.insert(grouped[k], v)
        end
      end
      if node.tag == "annotation" then
        if not grouped.object then order[#order + 1] = "object" end
        grouped.object = {grouped.object or {}}
      end
      local d = {}
      for _, k in ipairs(order) do d[k] = #grouped[k] == 1 and grouped[k][1] or grouped[k] end
      out[node.tag] = d
    elseif node.text ~= nil and node.text ~= "" then
      out[node.tag] = node.text:match("^%s*(.-)%s*$")
    end
    return out
  end

  function VOCDetection:__getitem(index)
    return voc_item(self, index, function(s, path)
      local ok, root = pcall(xml.parse, D.read_text("VOCDetection", path), path)
      if not ok then U.errorf("VOCDetection: %s", tostring(root)) end
      return s:parse_voc_xml(root)
    end)
  end
end
