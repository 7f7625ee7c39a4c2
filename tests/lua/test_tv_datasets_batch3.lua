-- npy.lua (NumPy .npy reader) and torchvision.datasets MovingMNIST, WIDERFace, Kitti, SBU, Flickr8k,
-- CLEVRClassification, PCAM, Cityscapes, INaturalist and SBDataset over fixture folders in each
-- dataset's extracted layout. Images are told apart by their sizes (the fixtures save them with
-- distinct widths and heights).
local T = ...
local torch = require "torch"
local tv = require "torchvision"
local D = tv.datasets
local Image = require("tv_io").Image
local npy = require "npy"

local here = debug.getinfo(1, "S").source:match("^@(.*/)")
local FX = dofile(here .. "fixture_dir.lua")("tv_datasets_batch3")
local dir, mkdir, write = FX.dir, FX.mkdir, FX.write
local W = dofile(here .. "mat_writer.lua")("<")

local function save_image(path, w, h, color) Image.new("RGB", {w, h}, color or {200, 30, 30}):save(path) end
local function size(img) return {img.width, img.height} end

-- a .npy file: header dict for descr / shape / fortran order, padded as NumPy pads it, then data
local function npy_bytes(descr, shape, data, fortran, version)
  version = version or 1
  local dims = {}
  for i, d in ipairs(shape) do dims[i] = tostring(d) end
  local sh = "(" .. table.concat(dims, ", ") .. (#shape == 1 and ",)" or ")")
  local h = string.format("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr, fortran and "True" or "False", sh)
  local pre = version == 1 and 10 or 12
  h = h .. string.rep(" ", (-(pre + #h + 1)) % 64) .. "\n"
  local len = version == 1 and string.pack("<I2", #h) or string.pack("<I4", #h)
  return "\147NUMPY" .. string.char(version, 0) .. len .. h .. data
end
local function pack_all(fmt, values)
  local out = {}
  for i, v in ipairs(values) do out[i] = string.pack(fmt, v) end
  return table.concat(out)
end

T.test("npy reader: dtypes, byte orders, versions, fortran order", function()
  local cases = {
    {"|u1", "B", {0, 7, 255}, torch.uint8}, {"|i1", "b", {-128, 5, 127}, torch.int8},
    {"<i2", "<i2", {-300, 2, 32767}, torch.int16}, {">i2", ">i2", {-300, 2, 32767}, torch.int16},
    {"<u2", "<I2", {65535, 1, 40000}, torch.int32}, {">u2", ">I2", {65535, 1, 40000}, torch.int32},
    {"<i4", "<i4", {-70000, 0, 2147483647}, torch.int32}, {">i4", ">i4", {-70000, 0, 2147483647}, torch.int32},
    {"<i8", "<i8", {-(1 << 40), 3, 1 << 62}, torch.int64}, {">i8", ">i8", {-(1 << 40), 3, 1 << 62}, torch.int64},
    {"<f4", "<f", {1.5, -2.25, 1e10}, torch.float32}, {">f4", ">f", {1.5, -2.25, 1e10}, torch.float32},
    {"<f8", "<d", {0.1, -1e300, 3.0}, torch.float64}, {">f8", ">d", {0.1, -1e300, 3.0}, torch.float64},
    {"|b1", "B", {1, 0, 1}, torch.bool},
  }
  for _, c in ipairs(cases) do
    local t = npy.load_bytes(npy_bytes(c[1], {3}, pack_all(c[2], c[3])))
    T.eq(t.dtype, c[4], c[1] .. " dtype")
    local want = c[3]
    if c[4] == torch.bool then want = {true, false, true} end
    T.eq(t:tolist(), want, c[1] .. " values")
  end
  -- float16: 1.0 = 0x3C00, -2.0 = 0xC000, 0.5 = 0x3800
  T.eq(npy.load_bytes(npy_bytes("<f2", {3}, pack_all("<I2", {0x3C00, 0xC000, 0x3800}))):tolist(), {1.0, -2.0, 0.5}, "<f2")
  T.eq(npy.load_bytes(npy_bytes(">f2", {3}, pack_all(">I2", {0x3C00, 0xC000, 0x3800}))):tolist(), {1.0, -2.0, 0.5}, ">f2")
  -- shapes: C order, 0-d, empty; format versions 2.0 and 3.0
  local vals = {1, 2, 3, 4, 5, 6}
  local c = npy.load_bytes(npy_bytes("<i4", {2, 3}, pack_all("<i4", vals)))
  T.eq({c.shape, c:tolist()}, {torch.Size({2, 3}), {{1, 2, 3}, {4, 5, 6}}}, "C order [2, 3]")
  for v = 2, 3 do
    T.eq(npy.load_bytes(npy_bytes("<i4", {3, 2}, pack_all("<i4", vals), false, v)):tolist(), {{1, 2}, {3, 4}, {5, 6}},
      "version " .. v .. ".0")
  end
  -- fortran order: the data are column-major, so element [i][j] is data[j * rows + i]
  local f = npy.load_bytes(npy_bytes("<i4", {2, 3}, pack_all("<i4", vals), true))
  T.eq({f.shape, f:tolist()}, {torch.Size({2, 3}), {{1, 3, 5}, {2, 4, 6}}}, "fortran_order [2, 3]")
  local f3 = npy.load_bytes(npy_bytes("|u1", {2, 2, 2}, pack_all("B", {0, 1, 2, 3, 4, 5, 6, 7}), true))
  T.eq(f3[1][0][1]:item(), 1 + 0 * 2 + 1 * 4, "fortran [1, 0, 1] = 1*1 + 0*2 + 1*4")
  local s = npy.load_bytes(npy_bytes("<f8", {}, pack_all("<d", {2.5})))
  T.eq({s:dim(), s:item()}, {0, 2.5}, "0-d array")
  T.eq(npy.load_bytes(npy_bytes("<f4", {0, 4}, "")).shape, torch.Size({0, 4}), "empty array")
  -- errors
  T.raises(function() npy.load_bytes("PK\3\4 not numpy", "a.npy") end, "a.npy: not a .npy file (bad magic string)")
  T.raises(function() npy.load_bytes(npy_bytes("<i4", {4}, pack_all("<i4", {1, 2, 3})), "b.npy") end,
    "b.npy: truncated .npy file (12 data bytes for 4 elements of 4 bytes)")
  T.raises(function() npy.load_bytes(npy_bytes("<c16", {1}, string.rep("\0", 16)), "c.npy") end,
    "c.npy: unsupported dtype '<c16' (supported: u1 i1 i2 i4 i8 u2 f2 f4 f8 b1)")
  T.raises(function() npy.load_bytes(npy_bytes("|O", {1}, "\0"), "d.npy") end, "~unsupported dtype '|O'")
  T.raises(function() npy.load_bytes(npy_bytes("<i4", {1}, "\0\0\0\0"):sub(1, 20), "e.npy") end,
    "~e.npy: truncated .npy file (header of")
  local bad = npy_bytes("<i4", {1}, "\0\0\0\0")
  T.raises(function() npy.load_bytes(bad:sub(1, 6) .. "\4\0" .. bad:sub(9), "f.npy") end,
    "f.npy: unsupported .npy format version 4.0 (1.0, 2.0 and 3.0 are read)")
  T.raises(function() npy.load(dir .. "/nope.npy") end, "~npy: cannot open " .. dir .. "/nope.npy")
end)

T.test("MovingMNIST", function()
  local root = dir .. "/mm"
  mkdir(root .. "/MovingMNIST")
  -- [T=20, N=3, 64, 64]: frame t of video n filled with 10 * n + t
  local parts = {}
  for t = 0, 19 do for n = 0, 2 do parts[#parts + 1] = string.rep(string.char(10 * n + t), 64 * 64) end end
  write(root .. "/MovingMNIST/mnist_test_seq.npy", npy_bytes("|u1", {20, 3, 64, 64}, table.concat(parts)))
  local ds = D.MovingMNIST(root)
  T.eq({#ds, ds.data.shape, ds.split, ds.split_ratio}, {3, torch.Size({3, 20, 1, 64, 64}), nil, 10}, "all frames")
  local v = ds:get(2)
  T.eq({v.shape, v.dtype, v[5][0][7][9]:item(), v[19][0][63][0]:item()},
    {torch.Size({20, 1, 64, 64}), torch.uint8, 25, 39}, "video 2: frame t is 20 + t")
  local tr = D.MovingMNIST(root, {split = "train", split_ratio = 4})
  T.eq({tr:get(1).shape, tr:get(1)[3][0][0][0]:item()}, {torch.Size({4, 1, 64, 64}), 13}, "train: the first 4 frames")
  local te = D.MovingMNIST(root, "test", 4, false, function(x) return x:float():mean():item() end)
  T.eq({#te, te:get(0)}, {3, (4 + 19) / 2}, "test: frames 4..19, through the transform")
  T.eq(te:get(-1), 20 + (4 + 19) / 2, "negative index")
  T.raises(function() te:get(3) end, "~index out of range")
  T.raises(function() D.MovingMNIST(root, {split = "val"}) end, "Unknown value 'val' for argument split. Valid values are {'train', 'test'}.")
  T.raises(function() D.MovingMNIST(root, {split_ratio = 20}) end, "`split_ratio` should be `1 <= split_ratio <= 19`, but got 20 instead.")
  T.raises(function() D.MovingMNIST(root, {split_ratio = 2.5}) end, "~`split_ratio` should be an integer")
  T.raises(function() D.MovingMNIST(dir .. "/none") end, "~mnist_test_seq.npy not found")
  T.raises(function() D.MovingMNIST(dir .. "/none", {download = true}) end, "~download=true, but nnrepl downloads nothing")
  write(root .. "/MovingMNIST/mnist_test_seq.npy", npy_bytes("|u1", {20, 3, 64, 64}, "short"))
  T.raises(function() D.MovingMNIST(root) end, "~MovingMNIST: " .. root .. "/MovingMNIST/mnist_test_seq.npy: truncated .npy file")
end)

T.test("WIDERFace", function()
  local root = dir .. "/wf"
  local base = root .. "/widerface"
  for _, d in ipairs({"WIDER_train/images/0--Parade", "WIDER_val/images/1--Handshaking", "WIDER_test/images/2--Demo",
      "wider_face_split"}) do mkdir(base .. "/" .. d) end
  save_image(base .. "/WIDER_train/images/0--Parade/a.jpg", 5, 4)
  save_image(base .. "/WIDER_train/images/0--Parade/b.jpg", 6, 4)
  save_image(base .. "/WIDER_val/images/1--Handshaking/c.jpg", 7, 4)
  save_image(base .. "/WIDER_test/images/2--Demo/d.jpg", 8, 4)
  write(base .. "/wider_face_split/wider_face_train_bbx_gt.txt",
    "0--Parade/a.jpg\n2\n449 330 122 149 0 0 0 0 0 0 \n361 98 263 339 2 1 1 2 3 1 \n0--Parade/b.jpg\n0\n0 0 0 0 0 0 0 0 0 0 \n")
  write(base .. "/wider_face_split/wider_face_val_bbx_gt.txt", "1--Handshaking/c.jpg\n1\n1 2 3 4 1 0 1 0 1 0\n")
  write(base .. "/wider_face_split/wider_face_test_filelist.txt", "2--Demo/d.jpg\n")
  local ds = D.WIDERFace(root)
  T.eq({#ds, ds.root, ds.split}, {2, base, "train"}, "train")
  local img, t = ds:get(0)
  T.eq(size(img), {5, 4}, "image a")
  T.eq(t.bbox:tolist(), {{449, 330, 122, 149}, {361, 98, 263, 339}}, "bbox")
  T.eq({t.bbox.dtype, t.blur:tolist(), t.expression:tolist(), t.illumination:tolist(), t.occlusion:tolist(),
    t.pose:tolist(), t.invalid:tolist()}, {torch.int64, {0, 2}, {0, 1}, {0, 1}, {0, 2}, {0, 3}, {0, 1}}, "attributes")
  local _, t2 = ds:get(1)
  T.eq({t2.bbox:tolist(), t2.invalid:tolist()}, {{{0, 0, 0, 0}}, {0}}, "no faces: one row of zeros, as torchvision keeps")
  local v = D.WIDERFace(root, "val", size, function(a) return a.bbox:sum():item() end)
  T.eq({#v, v:get(0)}, {1, {7, 4}, 10}, "val with transforms")
  local te = D.WIDERFace(root, {split = "test"})
  local ti, tt = te:get(0)
  T.eq({#te, size(ti), tt}, {1, {8, 4}, nil}, "test: no target")
  write(base .. "/wider_face_split/wider_face_val_bbx_gt.txt", "1--Handshaking/c.jpg\n2\n1 2 3 4 1 0 1 0 1 0\n")
  T.raises(function() D.WIDERFace(root, "val") end, "~error parsing annotation file")
  write(base .. "/wider_face_split/wider_face_val_bbx_gt.txt", "1--Handshaking/c.jpg\n1\n1 2 3 4 1 0 1 0 1\n")
  T.raises(function() D.WIDERFace(root, "val") end, "~line 3: expected 10 integers, got 9")
  T.raises(function() D.WIDERFace(root, "all") end, "Unknown value 'all' for argument split. Valid values are {'train', 'val', 'test'}.")
  os.execute("rm -r '" .. base .. "/WIDER_test'")
  T.raises(function() D.WIDERFace(root) end, "~WIDER_test not found")
  T.raises(function() D.WIDERFace(root, {download = true}) end, "~download=true, but nnrepl downloads nothing")
end)

T.test("Kitti", function()
  local root = dir .. "/kitti"
  local raw = root .. "/Kitti/raw"
  mkdir(raw .. "/training/image_2")
  mkdir(raw .. "/training/label_2")
  mkdir(raw .. "/testing/image_2")
  save_image(raw .. "/training/image_2/000001.png", 4, 3)
  save_image(raw .. "/training/image_2/000000.png", 3, 3)
  save_image(raw .. "/testing/image_2/000000.png", 9, 3)
  write(raw .. "/training/label_2/000000.txt", "Pedestrian 0.00 0 -0.20 712.40 143.00 810.73 307.92 1.89 0.48 1.20 1.84 1.47 8.41 0.01\n")
  write(raw .. "/training/label_2/000001.txt",
    "Car 0.50 2 1.5 1 2 3 4 1.5 1.6 3.9 -1 2 30 -1.57\nDontCare -1 -1 -10 5 6 7 8 -1 -1 -1 -1000 -1000 -1000 -10\n")
  local ds = D.Kitti(root)
  T.eq({#ds, ds.train, ds.images[1]:match("[^/]*$")}, {2, true, "000000.png"}, "train, sorted")
  local img, t = ds:get(0)
  T.eq(size(img), {3, 3}, "image")
  T.eq(t, {{type = "Pedestrian", truncated = 0.0, occluded = 0, alpha = -0.2, bbox = {712.4, 143.0, 810.73, 307.92},
    dimensions = {1.89, 0.48, 1.2}, location = {1.84, 1.47, 8.41}, rotation_y = 0.01}}, "one object")
  local _, t1 = ds:get(1)
  T.eq({#t1, t1[1].type, t1[1].occluded, t1[2].type, t1[2].location, math.type(t1[1].truncated)},
    {2, "Car", 2, "DontCare", {-1000.0, -1000.0, -1000.0}, "float"}, "two objects")
  local te = D.Kitti(root, {train = false, transforms = function(i, y) return size(i), y == nil end})
  T.eq({#te, te:get(0)}, {1, {9, 3}, true}, "test: target nil, transforms")
  local ts = D.Kitti(root, {transform = size, target_transform = function(y) return #y end})
  T.eq({ts:get(1)}, {{4, 3}, 2}, "transform and target_transform")
  T.raises(function() D.Kitti(root, {transform = size, transforms = size}) end,
    "Only transforms or transform/target_transform can be passed as argument")
  write(raw .. "/training/label_2/000001.txt", "Car 0.5 x 1 2 3\n")
  T.raises(function() ds:get(1) end, "~000001.txt line 1: expected 15 fields, got 6")
  os.execute("rm -r '" .. raw .. "/training/label_2'")
  T.raises(function() D.Kitti(root) end, "~label_2 not found")
  T.raises(function() D.Kitti(dir .. "/none", {download = true}) end, "~download=true, but nnrepl downloads nothing")
end)

T.test("SBU", function()
  local root = dir .. "/sbu"
  mkdir(root .. "/dataset")
  write(root .. "/dataset/SBU_captioned_photo_dataset_urls.txt",
    "http://static.flickr.com/1/a_1.jpg\nhttp://static.flickr.com/2/gone.jpg\nhttp://static.flickr.com/3/c_3.jpg\n")
  write(root .. "/dataset/SBU_captioned_photo_dataset_captions.txt", "a man on a boat \nmissing photo\nsunset at sea\n")
  save_image(root .. "/dataset/a_1.jpg", 4, 2)
  save_image(root .. "/dataset/c_3.jpg", 5, 2)
  local ds = D.SBU(root)
  T.eq({#ds, ds.photos, ds.captions}, {2, {"a_1.jpg", "c_3.jpg"}, {"a man on a boat", "sunset at sea"}}, "photos present")
  local img, cap = ds:get(1)
  T.eq({size(img), img.mode, cap}, {{5, 2}, "RGB", "sunset at sea"}, "sample")
  local t = D.SBU(root, size, string.upper, false)
  T.eq({t:get(0)}, {{4, 2}, "A MAN ON A BOAT"}, "transforms, positional")
  T.raises(function() D.SBU(dir .. "/none") end, "~download=true, but nnrepl downloads nothing")
  T.raises(function() D.SBU(dir .. "/none", {download = false}) end, "~SBU_captioned_photo_dataset_urls.txt not found")
end)

T.test("Flickr8k", function()
  local root = dir .. "/f8k"
  mkdir(root)
  save_image(root .. "/1000268201_693b08cb0e.jpg", 4, 3)
  save_image(root .. "/1001773457_577c3a7d70.jpg", 5, 3)
  save_image(root .. "/99_x.jpg", 6, 3)
  local html = [[<html><head><title>Flickr 8k</title></head><body><p>intro text</p>
<table>
<tr><td><a href="http://www.flickr.com/photos/u/1001773457/">http://www.flickr.com/photos/u/1001773457/</a></td>
<td><ul>
<li>A black dog and a spotted dog are fighting</li>
<li>Two dogs &amp; a ball .</li><br/>
</ul></td></tr>
<tr><td>Image Not Found</td><td><ul><li>lost caption</li></ul></td></tr>
<tr><td><a href="http://www.flickr.com/photos/v/1000268201/">http://www.flickr.com/photos/v/1000268201/</a></td>
<td><ul><li> A child in a pink dress </li></ul></td></tr>
</table><ul><li>outside the table</li></ul></body></html>]]
  write(root .. "/captions.html", html)
  local ds = D.Flickr8k(root, root .. "/captions.html")
  T.eq({#ds, ds.ids}, {2, {root .. "/1000268201_693b08cb0e.jpg", root .. "/1001773457_577c3a7d70.jpg"}}, "ids sorted")
  local img, caps = ds:get(1)
  T.eq({size(img), caps}, {{5, 3}, {"A black dog and a spotted dog are fighting", "Two dogs & a ball ."}}, "captions")
  T.eq(select(2, ds:get(0)), {"A child in a pink dress"}, "stripped caption")
  local t = D.Flickr8k(root, root .. "/captions.html", {transform = size, target_transform = function(c) return #c end})
  T.eq({t:get(1)}, {{5, 3}, 2}, "transforms")
  write(root .. "/bad.html", '<table><tr><td><a href="x">http://www.flickr.com/photos/u/42/</a></td></tr></table>')
  T.raises(function() D.Flickr8k(root, root .. "/bad.html") end, "~no image " .. root .. "/42_*.jpg")
  T.raises(function() D.Flickr8k(root, root .. "/none.html") end, "~annotation file " .. root .. "/none.html not found")
end)

T.test("CLEVRClassification", function()
  local root = dir .. "/clevr"
  local data = root .. "/clevr/CLEVR_v1.0"
  mkdir(data .. "/images/train")
  mkdir(data .. "/images/test")
  mkdir(data .. "/scenes")
  save_image(data .. "/images/train/CLEVR_train_000001.png", 4, 2)
  save_image(data .. "/images/train/CLEVR_train_000000.png", 3, 2)
  save_image(data .. "/images/test/CLEVR_test_000000.png", 7, 2)
  write(data .. "/scenes/CLEVR_train_scenes.json", [[{"info": {}, "scenes": [
    {"image_filename": "CLEVR_train_000000.png", "objects": [{"shape": "cube"}, {"shape": "sphere"}, {"shape": "cube"}]},
    {"image_filename": "CLEVR_train_000001.png", "objects": []}]}]])
  local ds = D.CLEVRClassification(root)
  T.eq({#ds, ds._labels}, {2, {3, 0}}, "labels: object counts")
  local im0, y0 = ds:get(0)
  T.eq({size(im0), im0.mode, y0}, {{3, 2}, "RGB", 3}, "sample")
  T.eq(size((ds:get(1))), {4, 2}, "sorted files")
  local te = D.CLEVRClassification(root, "test", size)
  T.eq({#te, te:get(0)}, {1, {7, 2}, nil}, "test: no label")
  write(data .. "/scenes/CLEVR_train_scenes.json", [[{"scenes": [{"image_filename": "CLEVR_train_000000.png", "objects": []}]}]])
  T.raises(function() D.CLEVRClassification(root) end, "~has no scene for CLEVR_train_000001.png")
  write(data .. "/scenes/CLEVR_train_scenes.json", [[{"scenes": [}]])
  T.raises(function() D.CLEVRClassification(root) end, "~bad JSON")
  T.raises(function() D.CLEVRClassification(root, "dev") end, "Unknown value 'dev' for argument split. Valid values are {'train', 'val', 'test'}.")
  T.raises(function() D.CLEVRClassification(dir .. "/none", {download = true}) end, "~download=true, but nnrepl downloads nothing")
end)

T.test("PCAM", function()
  local root = dir .. "/pcam"
  mkdir(root .. "/pcam")
  local stem = root .. "/pcam/camelyonpatch_level_2_split_val_"
  write(stem .. "x.h5", "HDF")
  T.raises(function() D.PCAM(root, "val") end, "~x.npy not found (the .h5 file is there): nnrepl cannot read HDF5")
  T.raises(function() D.PCAM(root, {split = "train", download = true}) end, "~nnrepl downloads nothing")
  -- 2 patches of 2 x 3 pixels (real ones are 96 x 96): pixel (r, c) of patch n = (n, r, c)
  local px = {}
  for n = 0, 1 do for r = 0, 1 do for c = 0, 2 do px[#px + 1] = string.char(n, r, c) end end end
  write(stem .. "x.npy", npy_bytes("|u1", {2, 2, 3, 3}, table.concat(px)))
  write(stem .. "y.npy", npy_bytes("|u1", {2, 1, 1, 1}, "\1\0"))
  local ds = D.PCAM(root, "val")
  T.eq(#ds, 2, "len")
  local img, y = ds:get(1)
  T.eq({size(img), img.mode, y, img:getpixel({2, 1})}, {{3, 2}, "RGB", 0, {1, 1, 2}}, "patch 1")
  T.eq(select(2, ds:get(0)), 1, "label 1")
  T.raises(function() D.PCAM(root, "dev") end, "Unknown value 'dev' for argument split. Valid values are {'train', 'test', 'val'}.")
end)

T.test("Cityscapes", function()
  local root = dir .. "/city"
  for _, d in ipairs({"leftImg8bit/train/aachen", "leftImg8bit/train/bremen", "gtFine/train/aachen", "gtFine/train/bremen",
      "leftImg8bit/val/x", "gtCoarse/val/x"}) do mkdir(root .. "/" .. d) end
  save_image(root .. "/leftImg8bit/train/aachen/aachen_000001_000019_leftImg8bit.png", 4, 2)
  save_image(root .. "/leftImg8bit/train/bremen/bremen_000000_000019_leftImg8bit.png", 5, 2)
  save_image(root .. "/leftImg8bit/val/x/x_0_0_leftImg8bit.png", 6, 2)
  for _, p in ipairs({"aachen/aachen_000001_000019", "bremen/bremen_000000_000019"}) do
    local w = p:find("aachen") and 4 or 5
    save_image(root .. "/gtFine/train/" .. p .. "_gtFine_instanceIds.png", w, 7)
    save_image(root .. "/gtFine/train/" .. p .. "_gtFine_labelIds.png", w, 8)
    save_image(root .. "/gtFine/train/" .. p .. "_gtFine_color.png", w, 9)
    write(root .. "/gtFine/train/" .. p .. "_gtFine_polygons.json",
      '{"imgHeight": 2, "imgWidth": ' .. w .. ', "objects": [{"label": "road", "polygon": [[0, 1], [2, 3]]}]}')
  end
  save_image(root .. "/gtCoarse/val/x/x_0_0_gtCoarse_labelIds.png", 6, 8)
  local ds = D.Cityscapes(root)
  T.eq({#ds, ds.mode, ds.target_type, ds.split}, {2, "gtFine", {"instance"}, "train"}, "defaults")
  T.eq(ds.targets[2], {root .. "/gtFine/train/bremen/bremen_000000_000019_gtFine_instanceIds.png"}, "target path")
  local img, t = ds:get(0)
  T.eq({size(img), img.mode, size(t)}, {{4, 2}, "RGB", {4, 7}}, "instance target")
  local m = D.Cityscapes(root, {target_type = {"semantic", "polygon", "color"}})
  local _, ts = m:get(1)
  T.eq({#ts, size(ts[1]), ts[2].imgWidth, ts[2].objects[1].label, ts[2].objects[1].polygon[2][2], size(ts[3])},
    {3, {5, 8}, 5, "road", 3, {5, 9}}, "a list of target types")
  local c = D.Cityscapes(root, {split = "val", mode = "coarse", target_type = "semantic",
    transforms = function(i, y) return size(i), size(y) end})
  T.eq({#c, c:get(0)}, {1, {6, 2}, {6, 8}}, "coarse, transforms")
  T.eq({#D.Cityscapes.classes, D.Cityscapes.classes[8].name, D.Cityscapes.classes[8].train_id,
    D.Cityscapes.classes[27].color, D.Cityscapes.classes[35].id}, {35, "road", 0, {0, 0, 142}, -1}, "classes")
  T.raises(function() D.Cityscapes(root, {split = "train_extra"}) end,
    "Unknown value 'train_extra' for argument split if mode is 'fine'. Valid values are {'train', 'test', 'val'}.")
  T.raises(function() D.Cityscapes(root, {mode = "rough"}) end,
    "Unknown value 'rough' for argument mode. Valid values are {'fine', 'coarse'}.")
  T.raises(function() D.Cityscapes(root, {target_type = {"semantic", "depth"}}) end, "~Unknown value 'depth' for argument target_type")
  T.raises(function() D.Cityscapes(root, {split = "test"}) end, "~dataset not found or incomplete")
  T.raises(function() D.Cityscapes(root, {download = true}) end, "~unknown keyword 'download'")
  write(root .. "/gtFine/train/bremen/bremen_000000_000019_gtFine_polygons.json", "{oops")
  T.raises(function() D.Cityscapes(root, {target_type = "polygon"}):get(1) end, "~bad JSON")
end)

T.test("INaturalist", function()
  local root = dir .. "/inat"
  local v = root .. "/2021_valid"
  local cats = {"00000_Animalia_Chordata_Aves_Passeriformes_Corvidae_Corvus_corax",
    "00001_Animalia_Chordata_Aves_Passeriformes_Paridae_Parus_major",
    "00002_Plantae_Tracheophyta_Magnoliopsida_Rosales_Rosaceae_Rosa_canina"}
  for k, c in ipairs(cats) do
    mkdir(v .. "/" .. c)
    save_image(v .. "/" .. c .. "/img" .. k .. ".jpg", k + 1, 2)
  end
  save_image(v .. "/" .. cats[2] .. "/img9.jpg", 9, 2)
  local ds = D.INaturalist(root, "2021_valid")
  T.eq({#ds, ds.root, ds.index}, {4, v, {{0, "img1.jpg"}, {1, "img2.jpg"}, {1, "img9.jpg"}, {2, "img3.jpg"}}}, "index")
  local im3, y3 = ds:get(3)
  T.eq({size(im3), im3.mode, y3}, {{4, 2}, "RGB", 2}, "full target")
  local m = D.INaturalist(root, "2021_valid", {"kingdom", "family", "full"}, size)
  T.eq({m:get(2)}, {{9, 2}, {0, 1, 1}}, "a list of target types")
  T.eq({m:get(3)}, {{4, 2}, {1, 2, 2}}, "Plantae: kingdom 1, family 2")
  T.eq({ds.categories_map[3], ds.categories_index.order}, {{kingdom = 1, phylum = 1, class = 1, order = 1, family = 2,
    genus = 2}, {Passeriformes = 0, Rosales = 1}}, "categories")
  T.eq({ds:category_name("full", 1), ds:category_name("genus", 2), ds:category_name("kingdom", 0)},
    {cats[2], "Rosa", "Animalia"}, "category_name")
  T.raises(function() ds:category_name("super", 0) end, "Invalid category type 'super'")
  T.raises(function() ds:category_name("genus", 7) end, "Invalid category id 7 for genus")
  T.raises(function() D.INaturalist(root, "2021_valid", "super") end, "~Unknown value 'super' for argument target_type")
  -- 2018: <super>/<id>
  local p = root .. "/2018"
  mkdir(p .. "/Plantae/1")
  mkdir(p .. "/Aves/0")
  mkdir(p .. "/Aves/2")
  save_image(p .. "/Plantae/1/a.jpg", 3, 3)
  save_image(p .. "/Aves/2/b.jpg", 4, 3)
  save_image(p .. "/Aves/0/c.jpg", 5, 3)
  local o = D.INaturalist(root, {version = "2018", target_type = {"full", "super"}, transform = size})
  T.eq({o.all_categories, o.categories_index.super}, {{"Aves/0", "Plantae/1", "Aves/2"}, {Aves = 0, Plantae = 1}}, "2018")
  T.eq({o:get(1)}, {{3, 3}, {1, 1}}, "2018 sample")
  mkdir(p .. "/Aves/5")
  T.raises(function() D.INaturalist(root, "2018") end, "Missing category 3")
  mkdir(root .. "/2021_train/00001_a_b_c_d_e_f_g")
  T.raises(function() D.INaturalist(root) end, "Unexpected category id 00001, expecting 00000")
  T.raises(function() D.INaturalist(root, "2020") end, "~Unknown value '2020' for argument version")
  T.raises(function() D.INaturalist(root, "2019", {download = true}) end, "~download=true, but nnrepl downloads nothing")
end)

-- a MAT sparse array: row indices ir, column starts jc, values pr (uint8 when logical, else double)
local function sparse(name, dims, ir, jc, pr, logical)
  local function ints(v) local o = {} for i, x in ipairs(v) do o[i] = string.pack("<i4", x) end return table.concat(o) end
  local vals = {}
  for i, x in ipairs(pr) do vals[i] = string.pack(logical and "B" or "<d", x) end
  return W.el(14, W.el(6, string.pack("<I4I4", 5 | (logical and 0x200 or 0), math.max(#ir, 1))) ..
    W.el(5, ints(dims)) .. W.name(name) .. W.el(5, ints(ir)) .. W.el(5, ints(jc)) .. W.el(logical and 2 or 9, table.concat(vals)))
end

T.test("tv_matfile: sparse arrays read dense", function()
  local mat = require "tv_matfile"
  -- [[0, 2.5, 0], [7, 0, -1]] (column-major: col 0 has row 1, col 1 row 0, col 2 row 1)
  local m = mat.loadmat_bytes(W.file({sparse("s", {2, 3}, {1, 0, 1}, {0, 1, 2, 3}, {7, 2.5, -1}),
    W.compressed(sparse("e", {3, 2}, {}, {0, 0, 0}, {})), sparse("b", {1, 2}, {0}, {0, 0, 1}, {1}, true)}))
  T.eq({m.s.dtype, m.s:tolist()}, {torch.float64, {{0.0, 2.5, 0.0}, {7.0, 0.0, -1.0}}}, "double sparse")
  T.eq(m.e:tolist(), {{0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}}, "all-zero sparse")
  T.eq({m.b.dtype, m.b:tolist()}, {torch.bool, {{false, true}}}, "logical sparse")
end)

T.test("SBDataset", function()
  local root = dir .. "/sbd"
  mkdir(root .. "/img")
  mkdir(root .. "/cls")
  save_image(root .. "/img/2008_000002.jpg", 3, 2)
  save_image(root .. "/img/2008_000003.jpg", 4, 2)
  write(root .. "/train.txt", "2008_000002\n2008_000003\n")
  write(root .. "/val.txt", "2008_000003\n")
  -- GTcls: Segmentation a 2 x 3 uint8 array (column-major values), Boundaries a 20 x 1 cell of 2 x 3 logical arrays
  local function gt(id)
    local seg = W.array("", 9, {2, 3}, 2, "B", {id, 1, 2, 3, 4, 5})
    local cells = {} -- map k: (0, 0) set when k is odd, (1, 2) when k is 20
    for k = 1, 20 do
      local ir, jc, pr = {}, {0, 0, 0, 0}, {}
      if k % 2 == 1 then ir[#ir + 1], pr[#pr + 1] = 0, 1; jc = {0, 1, 1, 1} end
      if k == 20 then ir[#ir + 1], pr[#pr + 1] = 1, 1; jc = {0, 0, 0, 1} end
      cells[k] = sparse("", {2, 3}, ir, jc, pr, true)
    end
    return W.file({W.compressed(W.struct("GTcls", {1, 1}, {"Segmentation", "Boundaries"},
      {seg, W.cell("", {20, 1}, cells)}))})
  end
  write(root .. "/cls/2008_000002.mat", gt(7))
  write(root .. "/cls/2008_000003.mat", gt(9))
  local ds = D.SBDataset(root, {mode = "segmentation"})
  T.eq({#ds, ds.num_classes, ds.image_set}, {2, 20, "train"}, "train")
  local img, seg = ds:get(1)
  T.eq({size(img), seg.mode, size(seg)}, {{4, 2}, "L", {3, 2}}, "segmentation image")
  T.eq({seg:getpixel({0, 0}), seg:getpixel({0, 1}), seg:getpixel({2, 1})}, {9, 1, 5}, "column-major labels")
  local b = D.SBDataset(root, "val")
  local _, bt = b:get(0)
  T.eq({#b, bt.shape, bt.dtype, bt[0]:tolist(), bt[19]:tolist()},
    {1, torch.Size({20, 2, 3}), torch.bool, {{true, false, false}, {false, false, false}},
      {{false, false, false}, {false, false, true}}}, "boundaries")
  local tr = D.SBDataset(root, {mode = "segmentation", transforms = function(i, s) return size(i), size(s) end})
  T.eq({tr:get(0)}, {{3, 2}, {3, 2}}, "transforms")
  T.raises(function() D.SBDataset(root, "train_noval") end, "~train_noval.txt not found")
  T.raises(function() D.SBDataset(root, "test") end,
    "Unknown value 'test' for argument image_set. Valid values are {'train', 'val', 'train_noval'}.")
  T.raises(function() D.SBDataset(dir .. "/none", {download = true}) end, "~download=true, but nnrepl downloads nothing")
  write(root .. "/cls/2008_000003.mat", "not a mat file")
  T.raises(function() ds:get(1) end, "~SBDataset: " .. root .. "/cls/2008_000003.mat: not a MAT file")
end)

if torch.cuda.is_available() then
  T.test("CUDA: MovingMNIST videos and npy arrays moved to the GPU", function()
    mkdir(dir .. "/mmc/MovingMNIST")
    write(dir .. "/mmc/MovingMNIST/mnist_test_seq.npy", npy_bytes("|u1", {2, 1, 64, 64}, string.rep("\3", 4096) ..
      string.rep("\5", 4096)))
    local ds = D.MovingMNIST(dir .. "/mmc", {transform = function(v) return v:to("cuda"):float() end})
    local v = ds:get(0)
    T.eq({v.device.type, v.shape, v:sum():item()}, {"cuda", torch.Size({2, 1, 64, 64}), 8.0 * 4096}, "video on cuda")
    local a = npy.load_bytes(npy_bytes(">f8", {2}, pack_all(">d", {1.5, -2}))):to("cuda")
    T.eq({a.device.type, a:cpu():tolist()}, {"cuda", {1.5, -2.0}}, "array on cuda")
  end)
else
  T.skip("no CUDA device", 1)
end

os.execute("rm -rf '" .. dir .. "'")
