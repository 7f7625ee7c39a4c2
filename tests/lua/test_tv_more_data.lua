-- torchvision.datasets FakeData, DatasetFolder, EMNIST, QMNIST, STL10 (over files written here);
-- torchvision.utils draw_bounding_boxes, draw_segmentation_masks, draw_keypoints, flow_to_image
-- against pixel values worked out by hand; io's unsupported decoders.
local T = ...
local tv = require "torchvision"
local D, U = tv.datasets, tv.utils
local Image = require("tv_io").Image

local FX = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "fixture_dir.lua")("tv_more")
local dir, mkdir, write = FX.dir, FX.mkdir, FX.write

T.test("FakeData", function()
  local ds = D.FakeData({size = 4, image_size = {3, 5, 7}, num_classes = 3, random_offset = 10})
  T.eq(#ds, 4, "len")
  torch.manual_seed(99)
  local before = torch.rand(3):tolist()
  torch.manual_seed(99)
  local img, target = ds:get(2)
  T.eq(torch.rand(3):tolist(), before, "the global generator is left as it was")
  T.check(Image.isImageType(img) and img.mode == "RGB" and img.width == 7 and img.height == 5, "a PIL-like 7x5 RGB image")
  local img2, target2 = ds:get(2)
  T.check(torch.equal(img._data, img2._data) and target == target2, "the same index gives the same sample")
  local other = ds:get(3)
  T.check(not torch.equal(img._data, other._data), "another index another image")
  -- sample i: torch.manual_seed(i + random_offset); randn(image_size); randint(0, num_classes)
  torch.manual_seed(12)
  local x = torch.randn(3, 5, 7)
  local t = torch.randint(0, 3, {1}):item()
  T.check(torch.equal(img._data, tv.transforms.functional.to_pil_image(x)._data) and target == t,
    "seeded with index + random_offset")
  T.check(math.type(target) == "integer" and target >= 0 and target < 3, "integer target in [0, num_classes)")
  local g = D.FakeData({size = 2, image_size = {1, 4, 4}, transform = tv.transforms.ToTensor(),
    target_transform = function(y) return y + 100 end})
  local gi, gt = g:get(0)
  T.eq(gi.shape:totable(), {1, 4, 4}, "one channel, transform")
  T.check(gt >= 100, "target_transform")
  T.raises(function() ds:get(4) end, "FakeData index out of range")
  T.raises(function() D.FakeData({sise = 3}) end, "~unknown keyword 'sise'")
  T.eq(#D.FakeData(), 1000, "default size")
end)

T.test("DatasetFolder and ImageFolder", function()
  local root = dir .. "/folder"
  for _, p in ipairs({"b/sub", "a", "c"}) do mkdir(root .. "/" .. p) end
  write(root .. "/a/2.txt", "a2")
  write(root .. "/a/1.txt", "a1")
  write(root .. "/a/skip.dat", "no")
  write(root .. "/b/x.TXT", "bx")
  write(root .. "/b/sub/y.txt", "by")
  local function loader(p)
    local f = assert(io.open(p, "rb"))
    local s = f:read("a")
    f:close()
    return s
  end
  local ds = D.DatasetFolder(root, loader, {".txt"}, {allow_empty = true})
  T.eq(ds.classes, {"a", "b", "c"}, "classes sorted")
  T.eq(ds.class_to_idx, {a = 0, b = 1, c = 2}, "class_to_idx")
  local got = {}
  for i = 0, #ds - 1 do
    local s, y = ds:get(i)
    got[#got + 1] = s .. ":" .. y
  end
  T.eq(got, {"a1:0", "a2:0", "bx:1", "by:1"}, "samples: sorted, nested folders walked, extension case-insensitive")
  T.eq(ds.targets, {0, 0, 1, 1}, "targets")
  T.eq(ds.samples[1], {root .. "/a/1.txt", 0}, "samples hold (path, class)")
  T.raises(function() D.DatasetFolder(root, loader, {".txt"}) end,
    "~Found no valid file for the classes c. Supported extensions are: .txt")
  local v = D.DatasetFolder{root = root, loader = loader, is_valid_file = function(p) return p:match("2%.txt$") ~= nil end,
    allow_empty = true, transform = function(s) return s:upper() end, target_transform = function(y) return y * 10 end}
  T.eq({v:get(0)}, {"A2", 0}, "is_valid_file, transform, target_transform")
  T.eq(#v, 1, "one valid file")
  T.raises(function() D.DatasetFolder(root, loader) end,
    "~Both extensions and is_valid_file cannot be None or not None at the same time")
  T.raises(function() D.DatasetFolder(root, loader, ".txt", {is_valid_file = function() return true end}) end,
    "~Both extensions and is_valid_file cannot be None or not None at the same time")
  T.raises(function() D.DatasetFolder(root, nil, ".txt") end, "~loader is required")
  T.raises(function() D.DatasetFolder(root .. "/a", loader, ".txt") end, "~Couldn't find any class folder in " .. root .. "/a.")
  local classes, idx = D.DatasetFolder.find_classes(root)
  T.eq({classes, idx}, {{"a", "b", "c"}, {a = 0, b = 1, c = 2}}, "find_classes")
  T.eq(#D.DatasetFolder.make_dataset(root, {a = 0}, {".txt"}), 2, "make_dataset over one class")
  -- ImageFolder is a DatasetFolder with the image loader
  local img_root = dir .. "/images"
  mkdir(img_root .. "/cat")
  require("tv_io").write_png(torch.full({3, 2, 2}, 7, {dtype = torch.uint8}), img_root .. "/cat/0.png")
  write(img_root .. "/cat/notes.txt", "x")
  local f = D.ImageFolder(img_root)
  T.check(f.find_classes == D.DatasetFolder.find_classes and f.make_dataset == D.DatasetFolder.make_dataset,
    "ImageFolder inherits DatasetFolder")
  T.eq(#f, 1, "ImageFolder keeps the image files only")
  T.eq(f:get(0):getpixel({0, 0}), {7, 7, 7}, "ImageFolder loads RGB images")
  T.check(f.imgs == f.samples, "imgs")
end)

-- IDX files: big-endian header, then the bytes
local function idx(path, code, dims, values, width)
  local parts = {string.pack(">I1I1I1I1", 0, 0, code, #dims)}
  for _, d in ipairs(dims) do parts[#parts + 1] = string.pack(">I4", d) end
  for _, v in ipairs(values) do parts[#parts + 1] = width == 4 and string.pack(">i4", v) or string.char(v) end
  write(path, table.concat(parts))
end

T.test("EMNIST, QMNIST", function()
  local root = dir .. "/idx"
  mkdir(root .. "/EMNIST/raw")
  mkdir(root .. "/QMNIST/raw")
  local px = {}
  for i = 1, 3 * 2 * 2 do px[i] = i * 10 end
  idx(root .. "/EMNIST/raw/emnist-letters-train-images-idx3-ubyte", 8, {3, 2, 2}, px)
  idx(root .. "/EMNIST/raw/emnist-letters-train-labels-idx1-ubyte", 8, {3}, {1, 26, 5})
  local e = D.EMNIST(root, "letters")
  T.eq(#e, 3, "EMNIST length")
  T.eq(#e.classes, 27, "letters: N/A and a-z")
  T.eq({e.classes[1], e.classes[2], e.classes[27]}, {"N/A", "a", "z"}, "letters classes")
  local img, y = e:get(1)
  T.eq({img:tolist(), y}, {{{50, 60}, {70, 80}}, 26}, "EMNIST sample")
  T.eq(#D.EMNIST.splits, 6, "six splits")
  T.raises(function() D.EMNIST(root, "letters", {train = false}) end, "~emnist-letters-test-images-idx3-ubyte")
  T.raises(function() D.EMNIST(root, "bogus") end,
    "Unknown value 'bogus' for argument split. Valid values are {'byclass', 'bymerge', 'balanced', 'letters', 'digits', 'mnist'}.")
  T.raises(function() D.EMNIST(root, "letters", {download = true, train = false}) end, "~downloads nothing")
  idx(root .. "/EMNIST/raw/emnist-digits-train-images-idx3-ubyte", 8, {1, 2, 2}, {1, 2, 3, 4})
  idx(root .. "/EMNIST/raw/emnist-digits-train-labels-idx1-ubyte", 8, {1}, {12})
  T.raises(function() D.EMNIST(root, "digits") end, "~label 12 out of range [0, 9]")
  T.eq(#D.EMNIST{root = root, split = "letters"}, 3, "keyword form")

  -- QMNIST: labels idx2 int32 [N, 8]; test10k / test50k split the test file at 10000
  local lab = {}
  for i = 0, 2 do for c = 0, 7 do lab[#lab + 1] = c == 0 and (i + 4) or (i * 100 + c) end end
  idx(root .. "/QMNIST/raw/qmnist-train-images-idx3-ubyte", 8, {3, 2, 2}, px)
  idx(root .. "/QMNIST/raw/qmnist-train-labels-idx2-int", 0x0C, {3, 8}, lab, 4)
  local q = D.QMNIST(root)
  T.eq(q.targets.shape:totable(), {3, 8}, "QMNIST targets hold the 8 columns")
  local qi, qy = q:get(2)
  T.eq({qi:tolist(), qy}, {{{90, 100}, {110, 120}}, 6}, "compat: the class")
  local full = D.QMNIST(root, {compat = false})
  T.eq(select(2, full:get(1)):tolist(), {5, 101, 102, 103, 104, 105, 106, 107}, "compat=false: the whole row")
  T.eq(q.what, "train", "what from train")
  T.raises(function() D.QMNIST(root, {what = "test10k"}) end, "~qmnist-test-images-idx3-ubyte")
  T.raises(function() D.QMNIST(root, {what = "valid"}) end,
    "Unknown value 'valid' for argument what. Valid values are {'train', 'test', 'test10k', 'test50k', 'nist'}.")
end)

T.test("STL10", function()
  local root = dir .. "/stl"
  mkdir(root .. "/stl10_binary")
  -- file order: image, channel, column x, row y
  local function image_bytes(n)
    local rows = {}
    for c = 0, 2 do
      for x = 0, 95 do
        local col = {}
        for y = 0, 95 do col[y + 1] = string.char((n * 50 + c * 7 + x * 3 + y) % 256) end
        rows[#rows + 1] = table.concat(col)
      end
    end
    return table.concat(rows)
  end
  write(root .. "/stl10_binary/train_X.bin", image_bytes(0) .. image_bytes(1))
  write(root .. "/stl10_binary/train_y.bin", string.char(3, 10))
  write(root .. "/stl10_binary/unlabeled_X.bin", image_bytes(2))
  write(root .. "/stl10_binary/fold_indices.txt", "1\n0 1\n")
  write(root .. "/stl10_binary/class_names.txt", "airplane\nbird\ncar\ncat\ndeer\ndog\nhorse\nmonkey\nship\ntruck\n")
  local ds = D.STL10(root)
  T.eq(#ds, 2, "train split")
  local img, y = ds:get(1)
  T.eq(img.shape:totable(), {3, 96, 96}, "uint8 [3, 96, 96]")
  T.eq({img[2][5][3]:item(), img[0][0][1]:item(), y}, {(50 + 14 + 9 + 5) % 256, 53, 9}, "pixel (c, y, x) and label 10 -> 9")
  T.eq(ds.classes[10], "truck", "class names")
  T.eq(select(2, D.STL10(root, {folds = 0}):get(0)), 9, "fold 0 holds image 1")
  T.eq(#D.STL10(root, {split = "train+unlabeled"}), 3, "train+unlabeled")
  local u = D.STL10(root, "unlabeled")
  T.eq({select(2, u:get(0)), u:get(0)[0][0][0]:item()}, {-1, 100}, "unlabeled: label -1")
  T.raises(function() D.STL10(root, {split = "test"}) end, "~test_X.bin not found")
  T.raises(function() D.STL10(root, {folds = 10}) end, "Value for argument folds should be in the range [0, 10), but got 10.")
  T.raises(function() D.STL10(root, {split = "val"}) end,
    "Unknown value 'val' for argument split. Valid values are {'train', 'train+unlabeled', 'unlabeled', 'test'}.")
end)

local function rgb(t, y, x) return {t[0][y][x]:item(), t[1][y][x]:item(), t[2][y][x]:item()} end

local function check_draw(device)
  -- a red filled box over grey 50: border red; inside DIV255(50 * 155 + 255 * 100) = 130 and
  -- DIV255(50 * 155) = 30; outside untouched
  local img = torch.full({3, 6, 8}, 50, {dtype = torch.uint8, device = device})
  local out = U.draw_bounding_boxes(img, torch.tensor({{1, 1, 5, 4}}, {device = device}), {colors = "red", fill = true})
  T.eq({rgb(out, 1, 1), rgb(out, 4, 5), rgb(out, 2, 3), rgb(out, 0, 0), rgb(out, 5, 6)},
    {{255, 0, 0}, {255, 0, 0}, {130, 30, 30}, {50, 50, 50}, {50, 50, 50}}, "filled box")
  -- width 2 on (0, 0, 5, 5): the ring x or y in {0, 1, 4, 5}; (2..3, 2..3) left as it is
  local w2 = U.draw_bounding_boxes(torch.zeros(3, 8, 8, {dtype = torch.uint8, device = device}),
    torch.tensor({{0.0, 0.0, 5.9, 5.0}}, {device = device}), {colors = {0, 255, 0}, width = 2})
  local ring = w2[1]:cpu():narrow(0, 0, 7):narrow(1, 0, 7):tolist()
  T.eq(ring, {{255, 255, 255, 255, 255, 255, 0}, {255, 255, 255, 255, 255, 255, 0}, {255, 255, 0, 0, 255, 255, 0},
    {255, 255, 0, 0, 255, 255, 0}, {255, 255, 255, 255, 255, 255, 0}, {255, 255, 255, 255, 255, 255, 0},
    {0, 0, 0, 0, 0, 0, 0}}, "width 2 outline (5.9 truncates to 5)")
  -- default palette: box i gets (i * (2^25 - 1), i * (2^15 - 1), i * (2^21 - 1)) mod 255
  local pal = U.draw_bounding_boxes(torch.zeros(1, 4, 4, {dtype = torch.uint8, device = device}),
    torch.tensor({{0, 0, 3, 3}, {1, 1, 2, 2}}, {device = device}))
  T.eq(pal:size(0), 3, "grey input gives RGB output")
  T.eq({rgb(pal, 1, 1), rgb(pal, 0, 0)}, {{1, 127, 31}, {0, 0, 0}}, "palette colours")
  local f = U.draw_bounding_boxes(torch.full({3, 3, 3}, 0.5, {device = device}), torch.tensor({{0, 0, 0, 0}}, {device = device}),
    {colors = "#0000ff"})
  T.eq(f.dtype, torch.float32, "float image stays float")
  T.near({f[2][0][0]:item(), f[0][1][1]:item()}, {1.0, 127 / 255}, 1e-6, "float: via uint8 (0.5 -> 127)")

  -- masks at alpha 0.5 over 100: one mask red (177, 50, 50), the overlap black (50)
  local base = torch.full({3, 2, 2}, 100, {dtype = torch.uint8, device = device})
  local masks = torch.tensor({{{true, true}, {false, false}}, {{false, true}, {false, true}}}, {device = device})
  local m = U.draw_segmentation_masks(base, masks, {alpha = 0.5, colors = {"red", {0, 0, 255}}})
  T.eq({rgb(m, 0, 0), rgb(m, 0, 1), rgb(m, 1, 1), rgb(m, 1, 0)},
    {{177, 50, 50}, {50, 50, 50}, {50, 50, 177}, {100, 100, 100}}, "segmentation masks")
  local mf = U.draw_segmentation_masks(torch.full({3, 1, 1}, 0.2, {device = device}), torch.tensor({{true}}, {device = device}),
    {alpha = 0.25, colors = "white"})
  T.near(mf:reshape(-1):tolist(), {0.4, 0.4, 0.4}, 1e-6, "float image: colour / 255, 0.2 * 0.75 + 1 * 0.25")

  -- keypoints: radius 2 disk = pixels within 2.5 of the point; a width 3 line = pixels within 1.5 of the segment
  local k = U.draw_keypoints(torch.zeros(3, 7, 9, {dtype = torch.uint8, device = device}),
    torch.tensor({{{2.0, 3.0}, {7.0, 3.0}}}, {device = device}), {colors = "blue", connectivity = {{0, 1}}})
  local want = {}
  for y = 0, 6 do
    want[y + 1] = {}
    for x = 0, 8 do
      local disk = (x - 2) ^ 2 + (y - 3) ^ 2 <= 6.25 or (x - 7) ^ 2 + (y - 3) ^ 2 <= 6.25
      local line = x >= 2 and x <= 7 and math.abs(y - 3) <= 1.5
      want[y + 1][x + 1] = (disk or line) and 255 or 0
    end
  end
  T.eq(k[2]:cpu():tolist(), want, "keypoint disks and line")
  T.eq(k[2][1]:cpu():tolist(), {0, 255, 255, 255, 0, 0, 255, 255, 255}, "disk rows by hand: 3 wide at dy = 2")
  local hidden = U.draw_keypoints(torch.zeros(3, 7, 9, {dtype = torch.uint8, device = device}),
    torch.tensor({{{2.0, 3.0}, {7.0, 3.0}}}, {device = device}),
    {colors = "blue", connectivity = {{0, 1}}, visibility = {{true, false}}})
  T.eq({hidden[2][3][2]:item(), hidden[2][3][7]:item(), hidden[2][3][5]:item()}, {255, 0, 0}, "visibility hides point and line")
  local white = U.draw_keypoints(torch.zeros(3, 7, 9, {dtype = torch.uint8, device = device}),
    torch.tensor({{{2.0, 3.0}, {7.0, 3.0}}}, {device = device}), {connectivity = {{0, 1}}})
  T.eq({rgb(white, 3, 4), rgb(white, 3, 0)}, {{255, 255, 255}, {0, 0, 0}}, "colors=nil: white lines, no disks")

  -- flow: (1, 0) -> wheel[0] = red; (-1, 0) -> wheel[27] = (0, 255 - floor(255 * 2 / 11), 255);
  -- (0, 0.5): half way between wheel[13] and [14] (G 221, 238), desaturated by norm 0.5
  local flow = torch.tensor({{{1.0, -1.0, 0.0}}, {{0.0, 0.0, 0.5}}}, {device = device})
  local fi = U.flow_to_image(flow)
  T.eq(fi.dtype, torch.uint8, "uint8")
  T.eq({rgb(fi, 0, 0), rgb(fi, 0, 1), rgb(fi, 0, 2)}, {{255, 0, 0}, {0, 209, 255}, {255, 242, 127}}, "flow colours")
  -- (1, -0): -v = +0, atan2(+0, -1) = +pi: the wheel's other end, wheel[54] = (255, 0, 255 - floor(255 * 5 / 6))
  local neg = U.flow_to_image(torch.tensor({{{1.0}}, {{-0.0}}}, {device = device}))
  T.eq(rgb(neg, 0, 0), {255, 0, 43}, "the sign of a zero vertical flow")
  local batch = U.flow_to_image(flow:unsqueeze(0))
  T.eq(batch.shape:totable(), {1, 3, 1, 3}, "batched flow")
end

T.test("draw_* and flow_to_image", function()
  check_draw()
  local img = torch.zeros(3, 4, 4, {dtype = torch.uint8})
  T.raises(function() U.draw_bounding_boxes(img, torch.tensor({{2, 0, 1, 1}})) end,
    "Boxes need to be in (xmin, ymin, xmax, ymax) format. Use torchvision.ops.box_convert to convert them")
  T.raises(function() U.draw_bounding_boxes(img, torch.tensor({{0, 0, 1, 1}}), {labels = {"cat"}}) end,
    "~labels= needs a font")
  T.raises(function() U.draw_bounding_boxes(img, torch.tensor({{0, 0, 1, 1}}), {labels = {"a", "b"}}) end,
    "Number of boxes (1) and labels (2) mismatch. Please specify labels for each box.")
  T.raises(function() U.draw_bounding_boxes(img, torch.tensor({{0, 0, 1, 1}, {0, 0, 1, 1}}), {colors = {"red"}}) end,
    "Number of colors must be equal or larger than the number of objects, but got 1 < 2.")
  T.raises(function() U.draw_bounding_boxes(torch.zeros(1, 3, 4, 4, {dtype = torch.uint8}), torch.zeros(0, 4)) end,
    "Pass individual images, not batches")
  T.raises(function() U.draw_bounding_boxes(torch.zeros(3, 4, 4, {dtype = torch.int32}), torch.zeros(0, 4)) end,
    "The image dtype must be uint8 or float, got torch.int32")
  T.raises(function() U.draw_bounding_boxes(img, torch.tensor({{0, 0, 1, 1}}), {colors = "nocolor"}) end,
    "unknown color specifier: 'nocolor'")
  T.raises(function() U.draw_segmentation_masks(img, torch.zeros(4, 4)) end, "The masks must be of dtype bool. Got torch.float32")
  T.raises(function() U.draw_segmentation_masks(img, torch.zeros(4, 5, {dtype = torch.bool})) end,
    "The image and the masks must have the same height and width")
  T.raises(function() U.draw_segmentation_masks(torch.zeros(1, 4, 4, {dtype = torch.uint8}), torch.zeros(4, 4, {dtype = torch.bool})) end,
    "Pass an RGB image. Other Image formats are not supported")
  T.raises(function() U.draw_keypoints(img, torch.zeros(2, 2)) end, "keypoints must be of shape (num_instances, K, 2)")
  T.raises(function() U.flow_to_image(torch.zeros(2, 3, 3, {dtype = torch.float64})) end,
    "Flow should be of dtype torch.float, got torch.float64.")
  T.raises(function() U.flow_to_image(torch.zeros(3, 1, 1)) end,
    "Input flow should have shape (2, H, W) or (N, 2, H, W), got torch.Size([3, 1, 1]).")
end)

T.test("io: unsupported formats", function()
  local io_ = tv.io
  for _, p in ipairs({{"decode_gif", "GIF"}, {"decode_webp", "WebP"}, {"decode_avif", "AVIF"}, {"decode_heic", "HEIC"}}) do
    T.raises(function() io_[p[1]](torch.zeros(4, {dtype = torch.uint8})) end,
      "~" .. p[1] .. ": " .. p[2] .. " images are not supported (nnrepl decodes PNG and JPEG only)")
  end
end)

if torch.cuda.is_available() then
  T.test("CUDA", function() check_draw("cuda") end)
else
  T.skip("no CUDA device", 1)
end

os.execute("rm -rf '" .. dir .. "'")
