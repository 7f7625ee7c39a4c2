-- torchvision.datasets SVHN, Flowers102, Caltech101, Caltech256, Food101, EuroSAT, GTSRB, CelebA,
-- CocoDetection, CocoCaptions, FER2013 and the MATLAB reader (tv_matfile) over fixture files
-- written here byte by byte: MAT files (plain, miCOMPRESSED, big-endian), txt / csv / json
-- annotations, PPM files, and small images saved with nnrepl's writers.
local T = ...
local tv = require "torchvision"
local D = tv.datasets
local Image = require("tv_io").Image
local mat = require "tv_matfile"

local FX = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "fixture_dir.lua")("tv_datasets_more")
local dir, mkdir, write = FX.dir, FX.mkdir, FX.write

local writer = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "mat_writer.lua")
local LE, BE = writer("<"), writer(">")

local function save_image(path, color, w, h)
  Image.new("RGB", {w or 4, h or 3}, color):save(path)
end

T.test("tv_matfile", function()
  for _, W in ipairs({LE, BE}) do
    local e = W == LE and "little-endian" or "big-endian"
    local path = dir .. "/m_" .. (W == LE and "le" or "be") .. ".mat"
    write(path, W.file({
      W.double("a", {2, 3}, {1, 2, 3, 4, 5, 6}),
      W.compressed(W.array("img", 9, {2, 2, 2}, 2, "B", {1, 2, 3, 4, 5, 6, 7, 8}), 7),
      W.array("u16", 11, {1, 2}, 4, "I2", {65535, 7}),
      W.array("small", 6, {1, 1}, 2, "B", {200}), -- a double stored as uint8, as MATLAB saves small integers
      W.array("flag", 9, {1, 3}, 2, "B", {1, 0, 2}, 0x200),
      W.array("i32", 12, {1, 2}, 5, "i4", {-5, 123456}),
      W.char("label", "hello"),
      W.struct("s", {1, 1}, {"x", "name"}, {W.double("", {1, 2}, {1.5, -2}), W.char("", "ok")}),
      W.cell("c", {1, 2}, {W.double("", {1, 1}, {9}), W.char("", "z")}),
    }))
    local m = mat.loadmat(path)
    T.eq(m.a.shape:totable(), {2, 3}, e .. ": MATLAB's sizes")
    T.eq(m.a:tolist(), {{1.0, 3.0, 5.0}, {2.0, 4.0, 6.0}}, e .. ": column-major elements")
    T.check(m.a.dtype == torch.float64 and m.img.dtype == torch.uint8, e .. ": dtypes from the class")
    -- img(i, j, k) = element i + 2j + 4k (0-based) of the column-major data
    T.eq({m.img[1][0][1]:item(), m.img[0][1][0]:item(), m.img[1][1][1]:item()}, {6, 3, 8}, e .. ": compressed 3-d array")
    T.eq({m.u16.dtype == torch.int32, m.u16:tolist()}, {true, {{65535, 7}}}, e .. ": uint16 -> int32")
    T.eq({m.small.dtype == torch.float64, m.small:item()}, {true, 200.0}, e .. ": storage type converted to the class")
    T.eq({m.flag.dtype == torch.bool, m.flag:tolist()}, {true, {{true, false, true}}}, e .. ": logical")
    T.eq(m.i32:tolist(), {{-5, 123456}}, e .. ": int32")
    T.eq(m.label, "hello", e .. ": char array")
    T.eq({m.s.x:tolist(), m.s.name}, {{{1.5, -2.0}}, "ok"}, e .. ": struct fields")
    T.eq({#m.c, m.c[1]:item(), m.c[2]}, {2, 9.0, "z"}, e .. ": cell")
  end
  -- a real deflate stream (zlib level 9) of double zz = reshape(1:40, 4, 10)
  local hex = "78da2dcacd0a82601085e16364580b71d1c2458b888888102dfbb13fbfd48b12575d7297d0c4f70e1c9e39ccc492fa409a9891bcff09e9" ..
    "63cbcc622f1a5986c1dfa71617f0ac6fcde23c112638c71417b8c415ae71835bdce11e33ccb1c0031eb1c4139ef18257acf086777ce0135f58a3f3" ..
    "7e506f3aaaa1a35a3aaa733fcdb61647"
  local z = hex:gsub("..", function(h) return string.char(tonumber(h, 16)) end)
  write(dir .. "/deflate.mat", LE.file({string.pack("<I4I4", 15, #z) .. z}))
  local zz = mat.loadmat(dir .. "/deflate.mat").zz
  T.eq({zz.shape:totable(), zz[3][9]:item(), zz[1][0]:item()}, {{4, 10}, 40.0, 2.0}, "a deflated element (Huffman-coded)")
  write(dir .. "/bad.mat", "MATLAB 7.3 MAT-file" .. string.rep(" ", 200))
  T.raises(function() mat.loadmat(dir .. "/bad.mat") end, "~a MAT v7.3 file (HDF5), which is not supported")
  write(dir .. "/short.mat", LE.file({LE.double("a", {2, 3}, {1, 2, 3, 4, 5, 6})}):sub(1, 180))
  T.raises(function() mat.loadmat(dir .. "/short.mat") end, "~truncated MAT file")
  local bad_z = LE.compressed(LE.double("a", {1, 1}, {1}))
  bad_z = bad_z:sub(1, -2) .. string.char((bad_z:byte(-1) + 1) % 256) -- a wrong checksum
  write(dir .. "/badz.mat", LE.file({bad_z}))
  T.raises(function() mat.loadmat(dir .. "/badz.mat") end, "~corrupt compressed element")
  T.raises(function() mat.loadmat(dir .. "/none.mat") end, "~cannot open")
end)

T.test("SVHN", function()
  local root = dir .. "/svhn"
  mkdir(root)
  -- X(h, w, c, n) = (h + 2w + 5c + 7n) % 256, written column-major; y = 10, 3, 10
  local function X(n)
    local v = {}
    for k = 0, n - 1 do for c = 0, 2 do for w = 0, 31 do for h = 0, 31 do
      v[#v + 1] = (h + 2 * w + 5 * c + 7 * k) % 256
    end end end end
    return v
  end
  write(root .. "/train_32x32.mat", LE.file({LE.compressed(LE.array("X", 9, {32, 32, 3, 3}, 2, "B", X(3))),
    LE.compressed(LE.double("y", {3, 1}, {10, 3, 10}))}))
  write(root .. "/test_32x32.mat", LE.file({LE.array("X", 9, {32, 32, 3, 1}, 2, "B", X(1)), LE.double("y", {1, 1}, {4})}))
  local ds = D.SVHN(root)
  T.eq(#ds, 3, "train length")
  T.eq(ds.data.shape:totable(), {3, 3, 32, 32}, "data [N, 3, 32, 32]")
  T.eq(ds.labels:tolist(), {0, 3, 0}, "labels, 10 -> 0")
  local img, y = ds:get(1)
  local h = torch.arange(32):reshape(1, 32, 1)
  local w = torch.arange(32):reshape(1, 1, 32)
  local c = torch.arange(3):reshape(3, 1, 1)
  local want = ((h + w * 2 + c * 5 + 7) % 256):to(torch.uint8)
  T.check(img.dtype == torch.uint8 and torch.equal(img, want), "image [3, 32, 32]: pixel (c, h, w) as stored")
  T.eq(y, 3, "label")
  local t = D.SVHN(root, "test", {transform = function(x) return x:sum():item() end, target_transform = function(v) return v * 2 end})
  T.eq({#t, select(2, t:get(0))}, {1, 8}, "test split, target_transform")
  T.eq(t:get(-1), want:to(torch.int64):sum():item() - 7 * 3 * 32 * 32, "transform, negative index")
  T.raises(function() ds:get(3) end, "SVHN index out of range")
  T.raises(function() D.SVHN(root, "extra") end, "~extra_32x32.mat not found: put extra_32x32.mat")
  T.raises(function() D.SVHN(root, "extra", {download = true}) end,
    "~SVHN: download=true, but nnrepl downloads nothing: put extra_32x32.mat")
  T.raises(function() D.SVHN(root, "valid") end, "Unknown value 'valid' for argument split. Valid values are {'train', 'test', 'extra'}.")
  T.raises(function() D.SVHN(root, {splt = "test"}) end, "~unknown keyword 'splt'")
end)

T.test("Flowers102", function()
  local base = dir .. "/fl/flowers-102"
  mkdir(base .. "/jpg")
  for i, col in ipairs({{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 255}}) do
    save_image(string.format("%s/jpg/image_%05d.jpg", base, i), col, 5, 4)
  end
  write(base .. "/setid.mat", LE.file({LE.compressed(LE.double("trnid", {1, 2}, {3, 1})),
    LE.double("valid", {1, 1}, {2}), LE.array("tstid", 6, {1, 1}, 2, "B", {4})}))
  write(base .. "/imagelabels.mat", LE.file({LE.compressed(LE.array("labels", 6, {1, 4}, 2, "B", {5, 1, 102, 7}))}))
  local ds = D.Flowers102(dir .. "/fl")
  T.eq(#ds, 2, "train length")
  T.eq(ds._labels, {101, 4}, "labels - 1, in setid's order")
  local img, y = ds:get(0)
  T.check(Image.isImageType(img) and img.mode == "RGB" and img.width == 5 and img.height == 4, "PIL-like RGB image")
  T.check(math.abs(img:getpixel({2, 2})[3] - 255) <= 3 and img:getpixel({2, 2})[1] <= 3, "image_00003.jpg is blue")
  T.eq(y, 101, "label")
  T.eq({select(2, D.Flowers102(dir .. "/fl", "val"):get(0)), select(2, D.Flowers102(dir .. "/fl", {split = "test"}):get(0))},
    {0, 6}, "val and test splits")
  local l = D.Flowers102(dir .. "/fl", {loader = function(p) return p:match("[^/]+$") end, target_transform = function(v) return -v end})
  T.eq({l:get(1)}, {"image_00001.jpg", -4}, "loader, target_transform")
  T.raises(function() D.Flowers102(dir .. "/nofl") end, "~flowers-102/jpg not found: put 102flowers.tgz extracted")
  T.raises(function() D.Flowers102(dir .. "/nofl", {download = true}) end, "~download=true, but nnrepl downloads nothing")
  T.raises(function() D.Flowers102(dir .. "/fl", "training") end, "~Unknown value 'training' for argument split")
end)

T.test("Caltech101 and Caltech256", function()
  local root = dir .. "/cal/caltech101"
  for _, c in ipairs({"BACKGROUND_Google", "Faces", "ant"}) do mkdir(root .. "/101_ObjectCategories/" .. c) end
  save_image(root .. "/101_ObjectCategories/BACKGROUND_Google/image_0001.jpg", {0, 0, 0})
  save_image(root .. "/101_ObjectCategories/Faces/image_0001.jpg", {255, 0, 0})
  save_image(root .. "/101_ObjectCategories/Faces/image_0002.jpg", {0, 255, 0}, 6, 2)
  save_image(root .. "/101_ObjectCategories/ant/image_0001.jpg", {0, 0, 255})
  mkdir(root .. "/Annotations/Faces_2")
  write(root .. "/Annotations/Faces_2/annotation_0002.mat", LE.file({LE.compressed(LE.array("box_coord", 11, {1, 4}, 4,
    "I2", {1, 2, 3, 4})), LE.compressed(LE.double("obj_contour", {2, 3}, {1, 2, 3, 4, 5, 6}))}))
  local ds = D.Caltech101(dir .. "/cal")
  T.eq({#ds, ds.categories, ds.annotation_categories}, {3, {"Faces", "ant"}, {"Faces_2", "ant"}},
    "BACKGROUND_Google left out; annotation folder names")
  T.eq({ds.y, ds.index}, {{0, 0, 1}, {1, 2, 1}}, "y and index")
  local img, y = ds:get(1)
  T.eq({img.width, img.height, y}, {6, 2, 0}, "image_0002 of Faces")
  local a = D.Caltech101(dir .. "/cal", {"category", "annotation"})
  local _, t = a:get(1)
  T.eq({t[1], t[2]:tolist()}, {0, {{1.0, 3.0, 5.0}, {2.0, 4.0, 6.0}}}, "category and obj_contour [2, K]")
  T.eq(select(2, D.Caltech101(dir .. "/cal", "annotation"):get(1)).shape:totable(), {2, 3}, "annotation alone")
  T.raises(function() a:get(0) end, "~annotation_0001.mat")
  T.raises(function() D.Caltech101(dir .. "/cal", "segmentation") end,
    "Unknown value 'segmentation' for argument target_type. Valid values are {'category', 'annotation'}.")
  T.raises(function() D.Caltech101(dir .. "/nocal", {download = true}) end,
    "~Caltech101: download=true, but nnrepl downloads nothing: put 101_ObjectCategories.tar.gz")

  local r256 = dir .. "/cal/caltech256/256_ObjectCategories"
  mkdir(r256 .. "/001.ak47")
  mkdir(r256 .. "/002.bat")
  save_image(r256 .. "/001.ak47/001_0001.jpg", {10, 10, 10})
  save_image(r256 .. "/001.ak47/001_0002.jpg", {20, 20, 20}, 7, 7)
  write(r256 .. "/001.ak47/notes.txt", "not an image")
  save_image(r256 .. "/002.bat/002_0001.jpg", {30, 30, 30}, 2, 9)
  local c = D.Caltech256(dir .. "/cal", {target_transform = function(v) return v + 100 end})
  T.eq({#c, c.categories}, {3, {"001.ak47", "002.bat"}}, "only .jpg files count")
  local i2, y2 = c:get(2)
  T.eq({i2.width, i2.height, y2}, {2, 9, 101}, "002_0001.jpg, target_transform")
  T.eq(c:get(1).width, 7, "001_0002.jpg")
  T.raises(function() D.Caltech256(dir .. "/nocal") end, "~256_ObjectCategories not found")
end)

T.test("Food101", function()
  local base = dir .. "/food/food-101"
  mkdir(base .. "/meta")
  mkdir(base .. "/images/pizza")
  mkdir(base .. "/images/apple_pie")
  save_image(base .. "/images/pizza/1.jpg", {200, 0, 0}, 3, 3)
  save_image(base .. "/images/pizza/2.jpg", {200, 0, 0}, 4, 3)
  save_image(base .. "/images/apple_pie/9.jpg", {0, 200, 0}, 5, 3)
  write(base .. "/meta/train.json", '{"pizza": ["pizza/1", "pizza/2"], "apple_pie": ["apple_pie/9"]}')
  write(base .. "/meta/test.json", '{"apple_pie": [], "pizza": ["pizza/2"]}')
  local ds = D.Food101(dir .. "/food")
  T.eq({ds.classes, ds.class_to_idx}, {{"apple_pie", "pizza"}, {apple_pie = 0, pizza = 1}}, "classes sorted")
  T.eq(ds._labels, {1, 1, 0}, "samples in the JSON file's order")
  local img, y = ds:get(2)
  T.eq({img.width, img.mode, y}, {5, "RGB", 0}, "apple_pie/9.jpg")
  local t = D.Food101(dir .. "/food", "test")
  T.eq({#t, t:get(0).width}, {1, 4}, "test split")
  T.raises(function() D.Food101(dir .. "/nofood", {download = true}) end,
    "~Food101: download=true, but nnrepl downloads nothing: put food-101.tar.gz extracted")
  T.raises(function() D.Food101(dir .. "/food", "val") end, "~Unknown value 'val' for argument split")
end)

T.test("EuroSAT", function()
  local root = dir .. "/euro"
  mkdir(root .. "/eurosat/2750/Forest")
  mkdir(root .. "/eurosat/2750/AnnualCrop")
  save_image(root .. "/eurosat/2750/Forest/Forest_1.jpg", {0, 90, 0}, 8, 8)
  save_image(root .. "/eurosat/2750/AnnualCrop/AnnualCrop_1.jpg", {90, 90, 0}, 8, 8)
  save_image(root .. "/eurosat/2750/AnnualCrop/AnnualCrop_2.jpg", {90, 90, 0}, 8, 8)
  local ds = D.EuroSAT(root, {transform = tv.transforms.ToTensor()})
  T.eq({#ds, ds.classes, ds.targets}, {3, {"AnnualCrop", "Forest"}, {0, 0, 1}}, "an ImageFolder of 2750")
  local x, y = ds:get(2)
  T.eq({x.shape:totable(), y}, {{3, 8, 8}, 1}, "transform, label")
  T.eq(ds.root, root, "root as given")
  T.raises(function() D.EuroSAT(dir .. "/noeuro") end, "~eurosat/2750 not found: put EuroSAT.zip extracted")
end)

T.test("GTSRB and PPM images", function()
  local base = dir .. "/gt/gtsrb"
  mkdir(base .. "/GTSRB/Training/00000")
  mkdir(base .. "/GTSRB/Training/00002")
  mkdir(base .. "/GTSRB/Final_Test/Images")
  -- P6 2x2, with a comment in the header
  local p6 = "P6\n# made by hand\n2 2\n255\n" .. string.char(255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30)
  write(base .. "/GTSRB/Training/00000/00000_00000.ppm", p6)
  write(base .. "/GTSRB/Training/00000/GT-00000.csv", "Filename;ClassId\n")
  write(base .. "/GTSRB/Training/00002/00000_00000.ppm", "P5 3 1 255\n" .. string.char(0, 128, 255))
  write(base .. "/GTSRB/Final_Test/Images/00000.ppm", "P3\n1 1\n15\n15 0 5\n")
  write(base .. "/GTSRB/Final_Test/Images/00001.ppm", "P6 1 1 65535\n" .. string.char(255, 255, 0, 0, 128, 0))
  write(base .. "/GT-final_test.csv", "Filename;Width;Height;ClassId\n00000.ppm; 1;1;7\n00001.ppm;1;1;41\n")
  local ds = D.GTSRB(dir .. "/gt")
  T.eq(#ds, 2, "train: the .ppm files of the class folders")
  local img, y = ds:get(0)
  T.eq({img.mode, img.width, img.height, y}, {"RGB", 2, 2, 0}, "P6 image, class 00000")
  T.eq({img:getpixel({1, 0}), img:getpixel({1, 1})}, {{0, 255, 0}, {10, 20, 30}}, "P6 pixels (x, y)")
  local g, y2 = ds:get(1)
  T.eq({g.mode, g:getpixel({1, 0}), y2}, {"RGB", {128, 128, 128}, 1}, "P5 converted to RGB; class folder 00002 is index 1")
  T.eq(Image.open(base .. "/GTSRB/Training/00002/00000_00000.ppm").mode, "L", "Image.open of a P5 file: mode L")
  local t = D.GTSRB(dir .. "/gt", "test")
  local a, ya = t:get(0)
  T.eq({a:getpixel({0, 0}), ya}, {{255, 0, 85}, 7}, "P3 with maxval 15 scaled; ClassId from the csv")
  local b, yb = t:get(1)
  T.eq({b:getpixel({0, 0}), yb}, {{255, 0, 128}, 41}, "16-bit P6 scaled to 8 bits (32768 -> 128)")
  write(dir .. "/trunc.ppm", "P6 4 4 255\n" .. string.rep("\0", 10))
  T.raises(function() Image.open(dir .. "/trunc.ppm") end, "~truncated P6 file")
  T.raises(function() D.GTSRB(dir .. "/nogt", {split = "test", download = true}) end,
    "~GTSRB: download=true, but nnrepl downloads nothing: put GTSRB_Final_Test_Images.zip extracted")
  T.raises(function() D.GTSRB(dir .. "/gt", "val") end, "Unknown value 'val' for argument split. Valid values are {'train', 'test'}.")
end)

T.test("CelebA", function()
  local root = dir .. "/cel"
  local base = root .. "/celeba"
  mkdir(base .. "/img_align_celeba")
  for i = 1, 3 do save_image(string.format("%s/img_align_celeba/%06d.jpg", base, i), {i * 50, 0, 0}, 4 + i, 3) end
  write(base .. "/list_eval_partition.txt", "000001.jpg 0\n000002.jpg 2\n000003.jpg 0\n")
  write(base .. "/identity_CelebA.txt", "000001.jpg 10\n000002.jpg 20\n000003.jpg 10\n")
  write(base .. "/list_attr_celeba.txt", "3\nSmiling Young\n000001.jpg  1 -1\n000002.jpg -1 -1\n000003.jpg -1  1\n")
  write(base .. "/list_bbox_celeba.txt", "3\nimage_id x_1 y_1 width height\n000001.jpg 1 2 3 4\n" ..
    "000002.jpg 5 6 7 8\n000003.jpg 9 10 11 12\n")
  write(base .. "/list_landmarks_align_celeba.txt", "3\nlefteye_x lefteye_y\n000001.jpg 69  109\n000002.jpg 70 110\n" ..
    "000003.jpg 71   111\n")
  local ds = D.CelebA(root)
  T.eq({#ds, ds.filename, ds.attr_names}, {2, {"000001.jpg", "000003.jpg"}, {"Smiling", "Young"}}, "train split")
  local img, attr = ds:get(1)
  T.eq({img.width, attr:tolist(), attr.dtype == torch.int64}, {7, {0, 1}, true}, "image 000003; attr {-1, 1} -> {0, 1}")
  T.eq(ds.bbox:tolist(), {{1, 2, 3, 4}, {9, 10, 11, 12}}, "bbox rows of the split")
  local all = D.CelebA(root, {split = "all", target_type = {"identity", "bbox", "landmarks"}})
  local _, t = all:get(1)
  T.eq({#all, t[1]:item(), t[2]:tolist(), t[3]:tolist()}, {3, 20, {5, 6, 7, 8}, {70, 110}}, "split all, list of targets")
  local te = D.CelebA(root, "TEST", "identity")
  T.eq({#te, select(2, te:get(0)):item()}, {1, 20}, "test split (case-insensitive)")
  T.eq(#D.CelebA(root, "valid"), 0, "an empty split")
  local none = D.CelebA(root, {target_type = {}})
  T.eq(select("#", none:get(0)) == 2 and select(2, none:get(0)) == nil, true, "no target type: nil target")
  T.raises(function() D.CelebA(root, {target_type = {}, target_transform = function(v) return v end}) end,
    "target_transform is specified but target_type is empty")
  T.raises(function() D.CelebA(root, {target_type = "colour"}):get(0) end, 'Target type "colour" is not recognized.')
  T.raises(function() D.CelebA(root, "val") end,
    "Unknown value 'val' for argument split. Valid values are {'train', 'valid', 'test', 'all'}.")
  T.raises(function() D.CelebA(dir .. "/nocel", {download = true}) end,
    "~CelebA: download=true, but nnrepl downloads nothing: put img_align_celeba.zip extracted")
  os.remove(base .. "/identity_CelebA.txt")
  T.raises(function() D.CelebA(root) end, "~identity_CelebA.txt not found")
end)

T.test("CocoDetection and CocoCaptions", function()
  local root = dir .. "/coco"
  mkdir(root .. "/val")
  save_image(root .. "/val/a.png", {1, 2, 3}, 3, 2)
  save_image(root .. "/val/b.png", {4, 5, 6}, 2, 5)
  write(root .. "/ann.json", [[{"images": [{"id": 5, "file_name": "val/b.png"}, {"id": 2, "file_name": "val/a.png"},
    {"id": 9, "file_name": "val/a.png"}],
    "annotations": [{"id": 1, "image_id": 5, "bbox": [1.5, 2, 3, 4], "category_id": 3, "caption": "a cat"},
      {"id": 2, "image_id": 2, "bbox": [0, 0, 1, 1], "category_id": 1, "caption": "a dog"},
      {"id": 3, "image_id": 5, "bbox": [0, 1, 1, 1], "category_id": 1, "caption": "the cat"}],
    "categories": [{"id": 1, "name": "dog"}, {"id": 3, "name": "cat"}]}]])
  local ds = D.CocoDetection(root, root .. "/ann.json")
  T.eq({#ds, ds.ids}, {3, {2, 5, 9}}, "sorted image ids")
  local img, target = ds:get(1)
  T.eq({img.width, img.height, img.mode}, {2, 5, "RGB"}, "image of id 5")
  T.eq({#target, target[1].id, target[2].id, target[1].bbox[1], target[1].category_id}, {2, 1, 3, 1.5, 3},
    "its annotations in the file's order")
  T.eq(#select(2, ds:get(2)), 0, "an image without annotations")
  T.eq(ds.coco.cats[3].name, "cat", "coco.cats")
  local caps = D.CocoCaptions{root = root, annFile = root .. "/ann.json", transform = function(im) return im.width end}
  T.eq({caps:get(1)}, {2, {"a cat", "the cat"}}, "captions, transform")
  local joint = D.CocoDetection(root, root .. "/ann.json", {transforms = function(im, t) return im.height, #t end})
  T.eq({joint:get(0)}, {2, 1}, "transforms takes both")
  T.raises(function() ds:get(1.5) end, "Index must be of type integer, got float instead.")
  T.raises(function() D.CocoDetection(root, root .. "/ann.json", {transforms = print, transform = print}) end,
    "Only transforms or transform/target_transform can be passed as argument")
  T.raises(function() D.CocoDetection(root, root .. "/none.json") end, "~annotation file " .. root .. "/none.json not found")
  write(root .. "/bad.json", "{\"images\": [}")
  T.raises(function() D.CocoCaptions(root, root .. "/bad.json") end, "~bad JSON")
  T.raises(function() D.CocoDetection(root, root .. "/ann.json", {download = true}) end, "~unknown keyword 'download'")
end)

T.test("FER2013", function()
  local root = dir .. "/fer"
  mkdir(root .. "/fer2013")
  local function pixels(k)
    local v = {}
    for i = 0, 48 * 48 - 1 do v[#v + 1] = tostring((i + k) % 256) end
    return table.concat(v, " ")
  end
  write(root .. "/fer2013/train.csv", "emotion,pixels\n3,\"" .. pixels(0) .. "\"\n6," .. pixels(1) .. "\n")
  write(root .. "/fer2013/test.csv", "pixels\n" .. pixels(7) .. "\n")
  local ds = D.FER2013(root)
  T.eq(#ds, 2, "train rows")
  local img, y = ds:get(1)
  T.eq({Image.isImageType(img), img.mode, img.width, img.height, y}, {true, "L", 48, 48, 6}, "48 x 48 L image, emotion")
  T.eq({img:getpixel({0, 0}), img:getpixel({5, 1})}, {1, (48 + 5 + 1) % 256}, "pixels row by row")
  local t = D.FER2013(root, "test", {transform = tv.transforms.PILToTensor()})
  local x, yt = t:get(0)
  T.eq({x.shape:totable(), x[0][0][0]:item(), yt}, {{1, 48, 48}, 7, nil}, "test: no label")
  -- fer2013.csv, when present, wins and its Usage column picks the split
  local r2 = dir .. "/fer2"
  mkdir(r2 .. "/fer2013")
  write(r2 .. "/fer2013/fer2013.csv", "emotion,pixels,Usage\n1," .. pixels(0) .. ",Training\n2," .. pixels(0) ..
    ",PublicTest\n4," .. pixels(0) .. ",PrivateTest\n")
  T.eq({#D.FER2013(r2), select(2, D.FER2013(r2, "test"):get(1))}, {1, 4}, "fer2013.csv: Usage")
  write(root .. "/fer2013/test.csv", "pixels\n1 2 3\n")
  T.raises(function() D.FER2013(root, "test") end, "~test.csv row 1: 3 pixels, expected 2304")
  T.raises(function() D.FER2013(dir .. "/nofer") end, "~FER2013: train.csv not found in " .. dir .. "/nofer/fer2013")
  T.raises(function() D.FER2013(root, {download = true}) end, "~unknown keyword 'download'")
  T.raises(function() D.FER2013(root, "val") end, "Unknown value 'val' for argument split. Valid values are {'train', 'test'}.")
end)

if torch.cuda.is_available() then
  T.test("CUDA: samples moved to the GPU", function()
    local ds = D.FER2013(dir .. "/fer", {transform = function(im) return tv.transforms.functional.pil_to_tensor(im):to("cuda") end})
    local x = ds:get(0)
    T.eq({x.device.type, x:sum():item()}, {"cuda", tv.transforms.functional.pil_to_tensor((D.FER2013(dir .. "/fer"):get(0))):sum():item()},
      "a transform to cuda")
  end)
else
  T.skip("no CUDA device", 1)
end

os.execute("rm -rf '" .. dir .. "'")
