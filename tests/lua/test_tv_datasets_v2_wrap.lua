-- torchvision.datasets.wrap_dataset_for_transforms_v2 on a tiny COCO dataset and a tiny VOC
-- devkit written here: boxes XYXY as BoundingBoxes, polygon / RLE masks, labels, target_keys,
-- the dataset's transforms run after the wrapping, errors.
local T = ...
local torch = require "torch"
local nn = torch.nn
local tv = require "torchvision"
local tvt, v2 = tv.tv_tensors, tv.transforms.v2

local tmp = os.tmpname()
os.remove(tmp)
os.execute("mkdir -p " .. tmp .. "/coco " .. tmp .. "/VOCdevkit/VOC2012/JPEGImages " ..
  tmp .. "/VOCdevkit/VOC2012/Annotations " .. tmp .. "/VOCdevkit/VOC2012/ImageSets/Main")
local function write(path, text) local f = assert(io.open(path, "w")); f:write(text); f:close() end

-- two 8 (H) x 10 (W) images, the second without annotations
tv.io.write_png(torch.zeros(3, 8, 10, {dtype = torch.uint8}), tmp .. "/coco/a.png")
tv.io.write_png(torch.full({3, 8, 10}, 200, {dtype = torch.uint8}), tmp .. "/coco/b.png")
-- annotation 1: a rectangle polygon x 1..5, y 2..6 (4 x 4 pixels), its box in XYWH;
-- 2: a right triangle (0,0) (4,0) (0,4) plus a separate 1 x 1 square at (8,7), one mask;
-- 3: uncompressed RLE, column-major: 9 zeros then 3 ones (column 1, rows 1..3), the rest zero
write(tmp .. "/coco/ann.json", [=[{
  "images": [{"id": 7, "file_name": "a.png", "height": 8, "width": 10},
             {"id": 9, "file_name": "b.png", "height": 8, "width": 10}],
  "categories": [{"id": 1, "name": "thing"}, {"id": 3, "name": "other"}],
  "annotations": [
    {"id": 1, "image_id": 7, "category_id": 3, "bbox": [1, 2, 4, 4], "area": 16, "iscrowd": 0,
     "segmentation": [[1, 2, 5, 2, 5, 6, 1, 6]]},
    {"id": 2, "image_id": 7, "category_id": 1, "bbox": [0, 0, 9, 8], "area": 11, "iscrowd": 0,
     "segmentation": [[0, 0, 4, 0, 0, 4], [8, 7, 9, 7, 9, 8, 8, 8]]},
    {"id": 3, "image_id": 7, "category_id": 1, "bbox": [1, 1, 1, 3], "area": 3, "iscrowd": 1,
     "segmentation": {"size": [8, 10], "counts": [9, 3, 68]}}]}]=])

T.test("CocoDetection: default keys image_id, boxes XYXY, labels", function()
  local ds = tv.datasets.wrap_dataset_for_transforms_v2(tv.datasets.CocoDetection(tmp .. "/coco", tmp .. "/coco/ann.json"))
  T.eq(#ds, 2)
  local img, target = ds:get(0)
  T.eq(img.size, {10, 8}, "the image stays PIL-like")
  T.eq(target.image_id, 7)
  T.check(tvt.isinstance(target.boxes, tvt.BoundingBoxes))
  T.eq(target.boxes.format, "XYXY")
  T.eq(target.boxes.canvas_size, {8, 10})
  T.eq(target.boxes:tolist(), {{1, 2, 5, 6}, {0, 0, 9, 8}, {1, 1, 2, 4}})
  T.eq(target.boxes.dtype, torch.int64, "integer JSON boxes stay integers, as torch.tensor infers")
  T.eq(target.labels:tolist(), {3, 1, 1})
  T.eq(target.labels.dtype, torch.int64)
  T.eq(target.masks, nil)
  T.eq(target.area, nil)
  local _, t2 = ds:get(1)
  T.eq(t2, {image_id = 9}, "no annotation: only the image id")
end)

T.test("CocoDetection: masks from polygons and RLE, target_keys", function()
  local ds = tv.datasets.wrap_dataset_for_transforms_v2(tv.datasets.CocoDetection(tmp .. "/coco", tmp .. "/coco/ann.json"),
    {target_keys = {"masks", "area", "iscrowd"}})
  local _, target = ds:get(0)
  T.eq(target.boxes, nil)
  T.eq(target.area, {16, 11, 3})
  T.eq(target.iscrowd, {0, 0, 1})
  local m = target.masks
  T.check(tvt.isinstance(m, tvt.Mask))
  T.eq(m.shape, torch.Size({3, 8, 10}))
  T.eq(m.dtype, torch.uint8)
  -- by hand: pixel (y, x) is set when its centre (x + .5, y + .5) is inside
  local want = {torch.zeros(8, 10), torch.zeros(8, 10), torch.zeros(8, 10)}
  for y = 0, 7 do
    for x = 0, 9 do
      if x >= 1 and x <= 4 and y >= 2 and y <= 5 then want[1][y][x] = 1 end
      if (x + 0.5) + (y + 0.5) < 4 or (x == 8 and y == 7) then want[2][y][x] = 1 end
      if x == 1 and y >= 1 and y <= 3 then want[3][y][x] = 1 end
    end
  end
  for i = 1, 3 do T.eq(m[i - 1]:float():tolist(), want[i]:tolist(), "mask " .. i) end
  T.eq(m[1]:sum():item(), 7, "triangle: 1 + 2 + 3 pixels of centres below x + y = 4, plus the square")
  local all = tv.datasets.wrap_dataset_for_transforms_v2(tv.datasets.CocoDetection(tmp .. "/coco", tmp .. "/coco/ann.json"),
    "all")
  local _, ta = all:get(0)
  local keys = {}
  for k in pairs(ta) do keys[#keys + 1] = k end
  table.sort(keys)
  T.eq(keys, {"area", "bbox", "boxes", "category_id", "image_id", "iscrowd", "labels", "masks", "segmentation"})
  T.eq({table.unpack(ta.bbox[1])}, {1, 2, 4, 4}, "the raw fields as lists")
end)

T.test("the dataset's transforms run after the wrapping, on the tv_tensors", function()
  local tf = v2.Compose({v2.ToImage(), v2.ToDtype(torch.float32, {scale = true})})
  local base = tv.datasets.CocoDetection(tmp .. "/coco", tmp .. "/coco/ann.json", {transforms = tf})
  local ds = tv.datasets.wrap_dataset_for_transforms_v2(base, {target_keys = {"boxes", "masks", "labels"}})
  T.eq(base.transforms, nil, "moved to the wrapper")
  local img, target = ds:get(0)
  T.check(tvt.isinstance(img, tvt.Image))
  T.eq(img.dtype, torch.float32)
  T.eq(img.shape, torch.Size({3, 8, 10}))
  T.check(tvt.isinstance(target.boxes, tvt.BoundingBoxes) and tvt.isinstance(target.masks, tvt.Mask))
  T.eq(target.masks.dtype, torch.uint8, "ToDtype with one dtype leaves masks alone")
  -- a DataLoader over it with a list collate
  local dl = torch.utils.data.DataLoader(ds, {batch_size = 2, collate_fn = function(batch) return batch end})
  local batch
  for s1, s2 in dl do batch = {s1, s2}; break end -- the loader hands out a list batch's items
  T.eq(#batch[2], 2)
  T.eq(batch[1][2].labels:tolist(), {3, 1, 1})
  T.eq(batch[2][2], {image_id = 9})
  -- a plain transform / target_transform pair
  local ds2 = tv.datasets.wrap_dataset_for_transforms_v2(tv.datasets.CocoDetection(tmp .. "/coco", tmp .. "/coco/ann.json",
    {transform = v2.PILToTensor(), target_transform = function(t) return t.labels:sum():item() end}))
  local i2, t2 = ds2:get(0)
  T.eq(i2.dtype, torch.uint8)
  T.eq(t2, 5)
end)

T.test("VOCDetection: boxes and labels; annotation kept on request", function()
  local root = tmp .. "/VOCdevkit/VOC2012"
  tv.io.write_jpeg(torch.zeros(3, 20, 30, {dtype = torch.uint8}), root .. "/JPEGImages/x1.jpg")
  write(root .. "/ImageSets/Main/train.txt", "x1\n")
  write(root .. "/Annotations/x1.xml", [[<annotation><filename>x1.jpg</filename>
    <object><name>dog</name><bndbox><xmin>2</xmin><ymin>3</ymin><xmax>12</xmax><ymax>15</ymax></bndbox></object>
    <object><name>person</name><bndbox><xmin>20</xmin><ymin>1</ymin><xmax>29</xmax><ymax>19</ymax></bndbox></object>
    </annotation>]])
  local ds = tv.datasets.wrap_dataset_for_transforms_v2(tv.datasets.VOCDetection(tmp))
  local _, target = ds:get(0)
  T.eq(target.boxes:tolist(), {{2, 3, 12, 15}, {20, 1, 29, 19}})
  T.eq(target.boxes.canvas_size, {20, 30})
  T.eq(target.labels:tolist(), {12, 15}, "dog and person, counting __background__ as 0")
  T.eq(target.annotation, nil)
  local dsa = tv.datasets.wrap_dataset_for_transforms_v2(tv.datasets.VOCDetection(tmp), {target_keys = {"annotation", "labels"}})
  local _, ta = dsa:get(0)
  T.eq(ta.annotation.filename, "x1.jpg")
  T.eq(ta.boxes, nil)
  T.eq(ta.labels:tolist(), {12, 15})
end)

T.test("errors", function()
  local coco = tv.datasets.CocoDetection(tmp .. "/coco", tmp .. "/coco/ann.json")
  T.raises(function() tv.datasets.wrap_dataset_for_transforms_v2(coco, {target_keys = {"boxes", "zzz", "aaa"}}) end,
    "~Target keys ['aaa', 'zzz'] are not available")
  T.raises(function() tv.datasets.wrap_dataset_for_transforms_v2(coco, {target_keys = 3}) end,
    "~`target_keys` can be None, 'all', or a collection of strings")
  T.raises(function() tv.datasets.wrap_dataset_for_transforms_v2(coco, {bad = 1}) end, "~unknown keyword 'bad'")
  T.raises(function() tv.datasets.wrap_dataset_for_transforms_v2(torch.utils.data.TensorDataset(torch.zeros(2))) end,
    "~meant for subclasses of `torchvision.datasets.VisionDataset`, but got a 'TensorDataset'")
  local fake = tv.datasets.FakeData({size = 2})
  T.raises(function() tv.datasets.wrap_dataset_for_transforms_v2(fake, {target_keys = {"a"}}) end,
    "~`target_keys` is currently only supported for `CocoDetection` and `VOCDetection`, but got FakeData")
  local Mine = tv.datasets.VisionDataset:extend("Mine")
  function Mine:__init() end
  T.raises(function() tv.datasets.wrap_dataset_for_transforms_v2(Mine()) end,
    "~No wrapper exists for dataset class Mine. Please wrap the output yourself.")
  local Sub = tv.datasets.CocoDetection:extend("MyCoco")
  local sub = tv.datasets.wrap_dataset_for_transforms_v2(Sub(tmp .. "/coco", tmp .. "/coco/ann.json"))
  T.eq(select(2, sub:get(0)).labels:tolist(), {3, 1, 1}, "a subclass uses its parent's wrapper")
end)

T.test("classification datasets pass through", function()
  local ds = tv.datasets.wrap_dataset_for_transforms_v2(tv.datasets.FakeData({size = 3, image_size = {3, 4, 5},
    transform = v2.PILToTensor()}))
  local img, label = ds:get(1)
  T.eq(img.shape, torch.Size({3, 4, 5}))
  T.eq(math.type(label), "integer")
end)

if torch.cuda.is_available() then
  T.test("cuda: the wrapped targets move and transform on the GPU", function()
    local ds = tv.datasets.wrap_dataset_for_transforms_v2(tv.datasets.CocoDetection(tmp .. "/coco", tmp .. "/coco/ann.json",
      {transforms = v2.Compose({v2.ToImage(), v2.ToDtype(torch.float32, {scale = true})})}), "all")
    local img, target = ds:get(0)
    local b = target.boxes:to("cuda")
    T.check(tvt.isinstance(b, tvt.BoundingBoxes) and b.is_cuda)
    T.eq(b:cpu():tolist(), {{1, 2, 5, 6}, {0, 0, 9, 8}, {1, 1, 2, 4}})
    local m = target.masks:to("cuda")
    T.eq(m:sum():item(), 16 + 7 + 3)
    T.eq(img:to("cuda").shape, torch.Size({3, 8, 10}))
  end)
else
  T.skip("no CUDA device", 1)
end
os.execute("rm -rf " .. tmp)
