-- torchvision.datasets ImageNet, Imagenette, Country211, OxfordIIITPet, DTD, FGVCAircraft,
-- StanfordCars, SUN397, VOCSegmentation, VOCDetection (and the XML reader tv_xml), LFWPeople,
-- LFWPairs, RenderedSST2, Omniglot, Places365, Flickr30k, SEMEION and USPS over fixture folders in each
-- dataset's extracted layout. Images are told apart by their sizes (the fixtures save them with
-- distinct widths and heights).
local T = ...
local tv = require "torchvision"
local D = tv.datasets
local Image = require("tv_io").Image
local xml = require "tv_xml"

local here = debug.getinfo(1, "S").source:match("^@(.*/)")
local FX = dofile(here .. "fixture_dir.lua")("tv_datasets_batch2")
local dir, mkdir, write = FX.dir, FX.mkdir, FX.write
local W = dofile(here .. "mat_writer.lua")("<")

local function save_image(path, w, h, color)
  Image.new("RGB", {w, h}, color or {200, 30, 30}):save(path)
end
local function size(img) return {img.width, img.height} end

T.test("ImageNet", function()
  local root = dir .. "/inet"
  local kit = root .. "/ILSVRC2012_devkit_t12/data"
  mkdir(kit)
  -- synsets: ids 1, 2 leaves; 3 an inner node (num_children 2), as meta.mat lists them
  local function synset(id, wnid, words, children)
    return {W.double("", {1, 1}, {id}), W.char("", wnid), W.char("", words), W.double("", {1, 1}, {children})}
  end
  local s = {synset(1, "n02", "goldfish, Carassius auratus", 0), synset(2, "n01", "tench", 0),
    synset(3, "n09", "fish", 2)}
  local values = {}
  for k = 1, 3 do for f = 1, 4 do values[#values + 1] = s[k][f] end end -- a struct array: element by element
  write(kit .. "/meta.mat", W.file({W.compressed(W.struct("synsets", {3, 1}, {"ILSVRC2012_ID", "WNID", "words",
    "num_children"}, values))}))
  mkdir(root .. "/train/n01")
  mkdir(root .. "/train/n02")
  save_image(root .. "/train/n01/n01_1.JPEG", 3, 2)
  save_image(root .. "/train/n02/n02_1.JPEG", 4, 2)
  save_image(root .. "/train/n02/n02_2.JPEG", 5, 2)
  local ds = D.ImageNet(root)
  T.eq({#ds, ds.split, ds.root}, {3, "train", root}, "train folder")
  T.eq({ds.wnids, ds.classes}, {{"n01", "n02"}, {{"tench"}, {"goldfish", "Carassius auratus"}}}, "wnids and class name tuples")
  T.eq({ds.wnid_to_idx, ds.class_to_idx}, {{n01 = 0, n02 = 1}, {tench = 0, goldfish = 1, ["Carassius auratus"] = 1}},
    "wnid_to_idx; class_to_idx over every name")
  T.eq(ds.targets, {0, 1, 1}, "targets")
  local img, y = ds:get(2)
  T.eq({size(img), img.mode, y}, {{5, 2}, "RGB", 1}, "sample")
  -- val as the tar extracts it: flat files, labels from the ground truth (ILSVRC2012_IDs)
  mkdir(root .. "/val")
  save_image(root .. "/val/ILSVRC2012_val_00000002.JPEG", 7, 2)
  save_image(root .. "/val/ILSVRC2012_val_00000001.JPEG", 6, 2)
  write(kit .. "/ILSVRC2012_validation_ground_truth.txt", "1\n2\n")
  local v = D.ImageNet(root, "val", {transform = size, target_transform = function(t) return t * 10 end})
  T.eq({#v, v.wnids, v.classes[1]}, {2, {"n01", "n02"}, {"tench"}}, "flat val")
  T.eq({v:get(0)}, {{6, 2}, 10}, "val_00000001 has ID 1 = n02 -> index 1")
  T.eq({v:get(1)}, {{7, 2}, 0}, "val_00000002 has ID 2 = n01")
  write(kit .. "/ILSVRC2012_validation_ground_truth.txt", "1\n3\n")
  T.raises(function() D.ImageNet(root, "val") end, "~line 2: 3 is not a leaf ILSVRC2012_ID")
  write(kit .. "/ILSVRC2012_validation_ground_truth.txt", "1\n")
  T.raises(function() D.ImageNet(root, "val") end, "~holds 2 images but")
  mkdir(root .. "/train/n77")
  save_image(root .. "/train/n77/a.JPEG", 2, 2)
  T.raises(function() D.ImageNet(root) end, "~class folder n77 is not a leaf synset")
  T.raises(function() D.ImageNet(root, "test") end, "Unknown value 'test' for argument split. Valid values are {'train', 'val'}.")
  mkdir(dir .. "/inet2")
  write(dir .. "/inet2/meta.bin", "pickle")
  T.raises(function() D.ImageNet(dir .. "/inet2") end,
    "~meta.mat not found: put ILSVRC2012_devkit_t12.tar.gz extracted (ILSVRC2012_devkit_t12/data/meta.mat")
  T.raises(function() D.ImageNet(dir .. "/inet2") end, "~meta.bin is a Python pickle that nnrepl cannot read")
  T.raises(function() D.ImageNet(root, {download = true}) end, "~unknown keyword 'download'")
end)

T.test("Imagenette and Country211", function()
  local root = dir .. "/nette"
  mkdir(root .. "/imagenette2-160/val/n03394916")
  mkdir(root .. "/imagenette2-160/val/n01440764")
  save_image(root .. "/imagenette2-160/val/n03394916/a.JPEG", 4, 3)
  save_image(root .. "/imagenette2-160/val/n01440764/b.JPEG", 5, 3)
  save_image(root .. "/imagenette2-160/val/n01440764/c.png", 6, 3)
  local ds = D.Imagenette(root, {split = "val", size = "160px"})
  T.eq({#ds, ds.wnids, ds.classes}, {2, {"n01440764", "n03394916"}, {{"tench", "Tinca tinca"}, {"French horn", "horn"}}},
    "only .JPEG files; classes")
  T.eq({ds.class_to_idx.horn, ds.class_to_idx["Tinca tinca"], ds.wnid_to_idx.n03394916}, {1, 0, 1}, "class_to_idx")
  local img, y = ds:get(1)
  T.eq({size(img), y}, {{4, 3}, 1}, "sample")
  T.raises(function() D.Imagenette(root) end, "~imagenette2/train not found: put imagenette2.tgz extracted")
  T.raises(function() D.Imagenette(root, {size = "80px"}) end,
    "Unknown value '80px' for argument size. Valid values are {'full', '320px', '160px'}.")
  T.raises(function() D.Imagenette(root, {download = true}) end, "~download=true, but nnrepl downloads nothing")

  local croot = dir .. "/c211"
  mkdir(croot .. "/country211/valid/FR")
  mkdir(croot .. "/country211/valid/AD")
  save_image(croot .. "/country211/valid/FR/1.jpg", 3, 3)
  save_image(croot .. "/country211/valid/AD/1.jpg", 2, 3)
  local c = D.Country211(croot, "valid", {transform = size})
  T.eq({#c, c.classes, c.targets, c.root, c._split}, {2, {"AD", "FR"}, {0, 1}, croot, "valid"}, "an ImageFolder of valid")
  T.eq({c:get(1)}, {{3, 3}, 1}, "sample")
  T.raises(function() D.Country211(croot) end, "~country211/train not found: put country211.tgz extracted")
  T.raises(function() D.Country211(croot, "val") end, "~Unknown value 'val' for argument split")
end)

T.test("OxfordIIITPet", function()
  local root = dir .. "/pet"
  local base = root .. "/oxford-iiit-pet"
  mkdir(base .. "/images")
  mkdir(base .. "/annotations/trimaps")
  save_image(base .. "/images/Abyssinian_1.jpg", 3, 2)
  save_image(base .. "/images/american_bulldog_10.jpg", 4, 2)
  save_image(base .. "/images/american_bulldog_11.jpg", 5, 2)
  Image.fromarray(torch.tensor({{1, 2}, {3, 1}}, {dtype = torch.uint8})):save(base .. "/annotations/trimaps/Abyssinian_1.png")
  write(base .. "/annotations/trainval.txt", "Abyssinian_1 1 1 1\namerican_bulldog_10 2 2 1\n")
  write(base .. "/annotations/test.txt", "american_bulldog_11 2 2 1\n")
  local ds = D.OxfordIIITPet(root)
  T.eq({#ds, ds.classes, ds.class_to_idx}, {2, {"Abyssinian", "American Bulldog"}, {Abyssinian = 0, ["American Bulldog"] = 1}},
    "classes: breed names title-cased, by label")
  T.eq({ds.bin_classes, ds.bin_class_to_idx}, {{"Cat", "Dog"}, {Cat = 0, Dog = 1}}, "binary classes")
  local img, y = ds:get(1)
  T.eq({size(img), img.mode, y}, {{4, 2}, "RGB", 1}, "category target")
  local b = D.OxfordIIITPet(root, {target_types = {"binary-category", "segmentation", "category"}})
  local _, t = b:get(0)
  T.eq({#t, t[1], t[2].mode, t[2]:getpixel({1, 0}), t[2]:getpixel({0, 1}), t[3]}, {3, 0, "L", 2, 3, 0},
    "list of targets; the trimap as an L image")
  T.eq(select(2, D.OxfordIIITPet(root, "test", "binary-category"):get(0)), 1, "test split, binary-category")
  local none = D.OxfordIIITPet(root, {target_types = {}})
  T.eq(select("#", none:get(0)) == 2 and select(2, none:get(0)) == nil, true, "no target type: nil")
  local j = D.OxfordIIITPet(root, {transforms = function(im, tg) return im.width + tg, "joint" end})
  T.eq({j:get(1)}, {5, "joint"}, "transforms(image, target)")
  local tt = D.OxfordIIITPet(root, {transform = size, target_transform = function(v) return -v end})
  T.eq({tt:get(1)}, {{4, 2}, -1}, "transform, target_transform")
  T.raises(function() D.OxfordIIITPet(root, {transforms = size, transform = size}) end,
    "Only transforms or transform/target_transform can be passed as argument")
  T.raises(function() D.OxfordIIITPet(root, {target_types = "mask"}) end,
    "Unknown value 'mask' for argument target_types. Valid values are {'category', 'binary-category', 'segmentation'}.")
  T.raises(function() D.OxfordIIITPet(root, "train") end, "~Unknown value 'train' for argument split")
  T.raises(function() D.OxfordIIITPet(dir .. "/nopet", {download = true}) end,
    "~OxfordIIITPet: download=true, but nnrepl downloads nothing: put images.tar.gz and annotations.tar.gz extracted")
  write(base .. "/annotations/test.txt", "american_bulldog_11 2 2\n")
  T.raises(function() D.OxfordIIITPet(root, "test") end, "~test.txt line 1: expected 4 fields")
end)

T.test("DTD", function()
  local root = dir .. "/dtd_root"
  local data = root .. "/dtd/dtd"
  mkdir(data .. "/labels")
  mkdir(data .. "/images/banded")
  mkdir(data .. "/images/zigzagged")
  save_image(data .. "/images/banded/banded_0002.jpg", 3, 4)
  save_image(data .. "/images/zigzagged/zigzagged_0001.jpg", 5, 4)
  write(data .. "/labels/train1.txt", "zigzagged/zigzagged_0001.jpg\nbanded/banded_0002.jpg\n")
  write(data .. "/labels/test3.txt", "banded/banded_0002.jpg\n")
  local ds = D.DTD(root)
  T.eq({#ds, ds.classes, ds.class_to_idx, ds._labels}, {2, {"banded", "zigzagged"}, {banded = 0, zigzagged = 1}, {1, 0}},
    "train1: classes sorted, the list's order")
  local img, y = ds:get(0)
  T.eq({size(img), y}, {{5, 4}, 1}, "sample")
  local t = D.DTD(root, "test", 3, {loader = function(p) return p:match("[^/]+$") end})
  T.eq({#t, t:get(0)}, {1, "banded_0002.jpg", 0}, "test3, loader")
  T.raises(function() D.DTD(root, {partition = 11}) end,
    "Parameter 'partition' should be an integer with `1 <= partition <= 10`, but got 11 instead")
  T.raises(function() D.DTD(root, "val") end, "~cannot open " .. data .. "/labels/val1.txt")
  T.raises(function() D.DTD(root, "dev") end, "Unknown value 'dev' for argument split. Valid values are {'train', 'val', 'test'}.")
  T.raises(function() D.DTD(dir .. "/nodtd") end, "~dtd/dtd not found: put dtd-r1.0.1.tar.gz extracted")
end)

T.test("FGVCAircraft", function()
  local root = dir .. "/air"
  local data = root .. "/fgvc-aircraft-2013b/data"
  mkdir(data .. "/images")
  save_image(data .. "/images/0034309.jpg", 3, 5)
  save_image(data .. "/images/1514522.jpg", 4, 5)
  write(data .. "/variants.txt", "707-320\nA300B4\nF-16A/B\n")
  write(data .. "/families.txt", "Boeing 707\nA300\n")
  write(data .. "/manufacturers.txt", "Boeing\nAirbus\n")
  write(data .. "/images_variant_trainval.txt", "1514522 F-16A/B\n0034309 707-320\n")
  write(data .. "/images_family_test.txt", "0034309 Boeing 707\n")
  write(data .. "/images_manufacturer_train.txt", "0034309 Boeing\n1514522 Embraer\n")
  local ds = D.FGVCAircraft(root)
  T.eq({#ds, ds.classes, ds.class_to_idx["F-16A/B"], ds._labels}, {2, {"707-320", "A300B4", "F-16A/B"}, 2, {2, 0}}, "variant")
  local img, y = ds:get(0)
  T.eq({size(img), y}, {{4, 5}, 2}, "sample")
  local f = D.FGVCAircraft(root, "test", "family", {transform = size})
  T.eq({#f, f.classes, f:get(0)}, {1, {"Boeing 707", "A300"}, {3, 5}, 0}, "family level: names with spaces")
  T.raises(function() D.FGVCAircraft(root, "train", "manufacturer") end, "~line 2: class 'Embraer' is not in manufacturers.txt")
  T.raises(function() D.FGVCAircraft(root, {annotation_level = "model"}) end,
    "Unknown value 'model' for argument annotation_level. Valid values are {'variant', 'family', 'manufacturer'}.")
  T.raises(function() D.FGVCAircraft(dir .. "/noair", {download = true}) end,
    "~FGVCAircraft: download=true, but nnrepl downloads nothing: put fgvc-aircraft-2013b.tar.gz extracted")
end)

T.test("StanfordCars", function()
  local root = dir .. "/cars"
  local base = root .. "/stanford_cars"
  mkdir(base .. "/devkit")
  mkdir(base .. "/cars_train")
  mkdir(base .. "/cars_test")
  save_image(base .. "/cars_train/00001.jpg", 3, 6)
  save_image(base .. "/cars_train/00002.jpg", 4, 6)
  save_image(base .. "/cars_test/00001.jpg", 5, 6)
  local function annos(list) -- {fname, class}: a 1 x N struct array as the devkit's
    local v = {}
    for _, a in ipairs(list) do v[#v + 1] = W.double("", {1, 1}, {a[2]}); v[#v + 1] = W.char("", a[1]) end
    return W.file({W.compressed(W.struct("annotations", {1, #list}, {"class", "fname"}, v))})
  end
  write(base .. "/devkit/cars_train_annos.mat", annos({{"00001.jpg", 2}, {"00002.jpg", 1}}))
  write(base .. "/cars_test_annos_withlabels.mat", annos({{"00001.jpg", 3}}))
  write(base .. "/devkit/cars_meta.mat", W.file({W.cell("class_names", {1, 3},
    {W.char("", "AM General Hummer SUV 2000"), W.char("", "Acura RL Sedan 2012"), W.char("", "Audi R8 Coupe 2012")})}))
  local ds = D.StanfordCars(root)
  T.eq({#ds, ds.classes[2], ds.class_to_idx["Audi R8 Coupe 2012"]}, {2, "Acura RL Sedan 2012", 2}, "classes from cars_meta.mat")
  local img, y = ds:get(0)
  T.eq({size(img), y}, {{3, 6}, 1}, "class 2 -> label 1")
  local t = D.StanfordCars(root, "test", {transform = size, target_transform = function(v) return v + 100 end})
  T.eq({#t, t:get(0)}, {1, {5, 6}, 102}, "test split")
  T.raises(function() D.StanfordCars(root, {download = true}) end, "~the original URL is broken")
  os.remove(base .. "/cars_test_annos_withlabels.mat")
  T.raises(function() D.StanfordCars(root, "test") end, "~cars_test_annos_withlabels.mat not found")
  T.raises(function() D.StanfordCars(root, "val") end, "Unknown value 'val' for argument split. Valid values are {'train', 'test'}.")
end)

T.test("SUN397", function()
  local root = dir .. "/sun"
  local d = root .. "/SUN397"
  mkdir(d .. "/a/abbey")
  mkdir(d .. "/a/apartment_building/outdoor")
  mkdir(d .. "/b/bar")
  write(d .. "/ClassName.txt", "/a/abbey\n/a/apartment_building/outdoor\n/b/bar\n")
  save_image(d .. "/b/bar/sun_b.jpg", 3, 3)
  save_image(d .. "/a/abbey/sun_z.jpg", 4, 3)
  save_image(d .. "/a/abbey/notes.jpg", 9, 9)
  save_image(d .. "/a/apartment_building/outdoor/sun_a.jpg", 5, 3)
  local ds = D.SUN397(root)
  T.eq({ds.classes, ds.class_to_idx["apartment_building/outdoor"]}, {{"abbey", "apartment_building/outdoor", "bar"}, 1},
    "classes: ClassName.txt without its /x/ prefix")
  T.eq({#ds, ds._labels}, {3, {0, 1, 2}}, "only sun_*.jpg, labels from the folders")
  local img, y = ds:get(1)
  T.eq({size(img), y}, {{5, 3}, 1}, "a two-level class")
  save_image(d .. "/b/sun_x.jpg", 2, 2)
  T.raises(function() D.SUN397(root) end, "~sun_x.jpg is in no class of ClassName.txt")
  T.raises(function() D.SUN397(dir .. "/nosun") end, "~SUN397 not found: put SUN397.tar.gz extracted")
end)

T.test("tv_xml", function()
  local r = xml.parse([==[<?xml version="1.0"?>
<!-- a comment --><!DOCTYPE x>
<a k="1" j='two &amp; three'>head<b>x &lt; y &#65;&#x42;</b>tail<c/><d><![CDATA[<raw>]]></d></a>]==])
  T.eq({r.tag, r.attrib, r.text, #r.children}, {"a", {k = "1", j = "two & three"}, "head", 3}, "root: attributes, text")
  T.eq({r.children[1].text, r.children[2].text, r.children[3].text}, {"x < y AB", nil, "<raw>"},
    "entities, an empty element, CDATA")
  T.raises(function() xml.parse("<a><b></a>", "f.xml") end, "f.xml: not well-formed XML (mismatched tag </a>, line 1)")
  T.raises(function() xml.parse("<a>\n<b>", "f.xml") end, "f.xml: not well-formed XML (unclosed <b>, line 2)")
  T.raises(function() xml.parse("<a>&nbsp;</a>", "f.xml") end, "~undefined entity &nbsp;")
  T.raises(function() xml.parse("  ", "f.xml") end, "~no element found")
end)

T.test("VOCSegmentation and VOCDetection", function()
  local root = dir .. "/voc"
  local v = root .. "/VOCdevkit/VOC2012"
  mkdir(v .. "/JPEGImages")
  mkdir(v .. "/SegmentationClass")
  mkdir(v .. "/Annotations")
  mkdir(v .. "/ImageSets/Segmentation")
  mkdir(v .. "/ImageSets/Main")
  save_image(v .. "/JPEGImages/2007_000032.jpg", 3, 2)
  save_image(v .. "/JPEGImages/2007_000039.jpg", 4, 2)
  Image.fromarray(torch.tensor({{0, 1, 15}, {255, 0, 0}}, {dtype = torch.uint8})):save(v .. "/SegmentationClass/2007_000032.png")
  write(v .. "/ImageSets/Segmentation/train.txt", "2007_000032\n")
  write(v .. "/ImageSets/Segmentation/val.txt", "2007_000039\n")
  write(v .. "/ImageSets/Main/train.txt", "2007_000032\n2007_000039\n")
  write(v .. "/Annotations/2007_000032.xml", [[<annotation>
	<folder>VOC2012</folder>
	<filename>2007_000032.jpg</filename>
	<size><width>3</width><height>2</height><depth>3</depth></size>
	<segmented>1</segmented>
	<object>
		<name>aeroplane</name>
		<pose>Frontal</pose>
		<truncated>0</truncated>
		<bndbox><xmin>104</xmin><ymin>78</ymin><xmax>375</xmax><ymax>183</ymax></bndbox>
		<part><name>head</name></part><part><name>hand</name></part>
	</object>
	<object><name>person</name><bndbox><xmin>1</xmin><ymin>2</ymin><xmax>3</xmax><ymax>4</ymax></bndbox></object>
	<empty></empty>
	<blank> </blank>
</annotation>]])
  write(v .. "/Annotations/2007_000039.xml", "<annotation><filename>2007_000039.jpg</filename></annotation>")
  local seg = D.VOCSegmentation(root)
  T.eq({#seg, seg.year, seg.image_set, seg.masks[1]}, {1, "2012", "train", v .. "/SegmentationClass/2007_000032.png"}, "masks")
  local img, mask = seg:get(0)
  T.eq({size(img), img.mode, mask.mode, mask:getpixel({2, 0}), mask:getpixel({0, 1})}, {{3, 2}, "RGB", "L", 15, 255},
    "image and mask")
  local sv = D.VOCSegmentation(root, "2012", "val", {transforms = function(im, m) return im.width, m end})
  T.raises(function() sv:get(0) end, "~2007_000039.png") -- no mask for it
  local det = D.VOCDetection(root, {transform = size})
  T.eq(#det, 2, "Main/train.txt")
  local s, t = det:get(0)
  T.eq(s, {3, 2}, "transform")
  local a = t.annotation
  T.eq({a.folder, a.filename, a.size, a.segmented}, {"VOC2012", "2007_000032.jpg", {width = "3", height = "2", depth = "3"}, "1"},
    "leaves as strings, nested elements as tables")
  T.eq({#a.object, a.object[1].name, a.object[1].bndbox, a.object[1].part, a.object[2].name},
    {2, "aeroplane", {xmin = "104", ymin = "78", xmax = "375", ymax = "183"}, {{name = "head"}, {name = "hand"}}, "person"},
    "objects; repeated tags as lists")
  T.eq({a.empty, a.blank}, {nil, ""}, "an element without text is left out; whitespace text becomes ''")
  local _, t2 = det:get(1)
  T.eq(t2, {annotation = {filename = "2007_000039.jpg", object = {}}}, "object is always a list, here empty")
  T.eq(select(2, D.VOCDetection(root, {target_transform = function(x) return x.annotation.object[1].pose end}):get(0)),
    "Frontal", "target_transform")
  write(v .. "/Annotations/2007_000039.xml", "<annotation><filename>x</annotation>")
  T.raises(function() det:get(1) end, "~2007_000039.xml: not well-formed XML (mismatched tag </annotation>")
  T.raises(function() D.VOCDetection(root, "2013") end,
    "Unknown value '2013' for argument year. Valid values are {'2007', '2008', '2009', '2010', '2011', '2012'}.")
  T.raises(function() D.VOCDetection(root, "2012", "test") end, "~Unknown value 'test' for argument image_set")
  T.raises(function() D.VOCSegmentation(root, "2012", "trainval") end, "~Segmentation/trainval.txt not found")
  T.raises(function() D.VOCDetection(root, "2007", "test") end,
    "~VOCdevkit/VOC2007 not found: put VOCtest_06-Nov-2007.tar extracted")
  T.raises(function() D.VOCDetection(root, "2011", {download = true}) end,
    "~download=true, but nnrepl downloads nothing: put VOCtrainval_25-May-2011.tar extracted (TrainVal/VOCdevkit/VOC2011/")
  T.raises(function() D.VOCDetection(root, {transforms = size, target_transform = size}) end,
    "Only transforms or transform/target_transform can be passed as argument")
end)

T.test("LFWPeople and LFWPairs", function()
  local root = dir .. "/lfw"
  local base = root .. "/lfw-py"
  mkdir(base .. "/lfw_funneled/Aaron_Peirsol")
  mkdir(base .. "/lfw_funneled/Abel_Pacheco")
  for k = 1, 2 do save_image(string.format("%s/lfw_funneled/Aaron_Peirsol/Aaron_Peirsol_%04d.jpg", base, k), k + 2, 2) end
  save_image(base .. "/lfw_funneled/Abel_Pacheco/Abel_Pacheco_0001.jpg", 6, 2)
  write(base .. "/lfw-names.txt", "Aaron_Peirsol\t2\nAbel_Pacheco\t1\n")
  write(base .. "/peopleDevTrain.txt", "1\nAbel_Pacheco\t1\n")
  write(base .. "/people.txt", "2\n1\nAaron_Peirsol\t2\n1\nAbel_Pacheco\t1\n")
  write(base .. "/pairs.txt", "2\t1\nAaron_Peirsol\t1\t2\nAaron_Peirsol\t2\tAbel_Pacheco\t1\n" ..
    "Aaron_Peirsol\t2\t1\nAbel_Pacheco\t1\tAaron_Peirsol\t1\n")
  write(base .. "/pairsDevTest.txt", "1\nAaron_Peirsol\t1\t2\nAbel_Pacheco\t1\tAaron_Peirsol\t2\n")
  local p = D.LFWPeople(root)
  T.eq({#p, p.class_to_idx, p.targets, p.root, p.images_dir}, {3, {Aaron_Peirsol = 0, Abel_Pacheco = 1}, {0, 0, 1}, base,
    base .. "/lfw_funneled"}, "10fold: every fold")
  local img, y = p:get(1)
  T.eq({size(img), y}, {{4, 2}, 0}, "Aaron_Peirsol_0002")
  local tr = D.LFWPeople(root, "TRAIN", {transform = size})
  T.eq({#tr, tr.labels_file, tr:get(0)}, {1, "peopleDevTrain.txt", {6, 2}, 1}, "train split (case-insensitive)")
  local pairs_ = D.LFWPairs(root)
  T.eq({#pairs_, pairs_.targets, pairs_.pair_names}, {4, {1, 0, 1, 0}, {{"Aaron_Peirsol", "Aaron_Peirsol"},
    {"Aaron_Peirsol", "Abel_Pacheco"}, {"Aaron_Peirsol", "Aaron_Peirsol"}, {"Abel_Pacheco", "Aaron_Peirsol"}}}, "pairs by fold")
  local a, b, same = pairs_:get(1)
  T.eq({size(a), size(b), same}, {{4, 2}, {6, 2}, 0}, "an unmatched pair")
  local te = D.LFWPairs(root, "test", {transform = size, target_transform = function(v) return v == 1 end})
  T.eq({#te, te:get(0)}, {2, {3, 2}, {4, 2}, true}, "test split: the same person's images 1 and 2")
  T.raises(function() D.LFWPeople(root, {image_set = "deepfunneled"}) end,
    "~lfw-py/lfw-deepfunneled not found: put lfw-deepfunneled.tgz extracted")
  T.raises(function() D.LFWPairs(root, "train") end, "~pairsDevTrain.txt not found")
  T.raises(function() D.LFWPeople(root, "val") end, "Unknown value 'val' for argument split. Valid values are {'10fold', 'train', 'test'}.")
  T.raises(function() D.LFWPeople(dir .. "/nolfw", {download = true}) end, "~download=true, but nnrepl downloads nothing")
  write(base .. "/peopleDevTest.txt", "1\nNobody\t1\n")
  T.raises(function() D.LFWPeople(root, "test") end, "~Nobody is not in lfw-names.txt")
end)

T.test("RenderedSST2", function()
  local root = dir .. "/sst"
  mkdir(root .. "/rendered-sst2/valid/negative")
  mkdir(root .. "/rendered-sst2/valid/positive")
  save_image(root .. "/rendered-sst2/valid/positive/1.png", 3, 2)
  save_image(root .. "/rendered-sst2/valid/negative/7.png", 4, 2)
  local ds = D.RenderedSST2(root, "val", {transform = size})
  T.eq({#ds, ds.classes, ds.class_to_idx}, {2, {"negative", "positive"}, {negative = 0, positive = 1}}, "classes")
  T.eq({{ds:get(0)}, {ds:get(1)}}, {{{4, 2}, 0}, {{3, 2}, 1}}, "val is the valid folder")
  T.raises(function() D.RenderedSST2(root) end, "~rendered-sst2/train not found: put rendered-sst2.tgz extracted")
  T.raises(function() D.RenderedSST2(root, "valid") end, "Unknown value 'valid' for argument split. Valid values are {'train', 'val', 'test'}.")
end)

T.test("Omniglot", function()
  local root = dir .. "/omni"
  local f = root .. "/omniglot-py/images_evaluation"
  mkdir(f .. "/Angelic/character01")
  mkdir(f .. "/Angelic/character02")
  mkdir(f .. "/Bengali/character01")
  save_image(f .. "/Angelic/character01/0965_01.png", 3, 3, {255, 255, 255})
  save_image(f .. "/Angelic/character02/0966_01.png", 4, 3)
  save_image(f .. "/Angelic/character02/0966_02.png", 5, 3)
  save_image(f .. "/Bengali/character01/0100_01.png", 6, 3)
  local ds = D.Omniglot(root, false)
  T.eq({#ds, ds._alphabets, ds._characters}, {4, {"Angelic", "Bengali"}, {"Angelic/character01", "Angelic/character02",
    "Bengali/character01"}}, "alphabets and characters")
  local img, y = ds:get(2)
  T.eq({size(img), img.mode, y}, {{5, 3}, "L", 1}, "an L image; the character index")
  T.eq({ds:get(0):getpixel({0, 0}), select(2, ds:get(3))}, {255, 2}, "pixels; the second alphabet's character")
  T.raises(function() D.Omniglot(root) end, "~images_background not found: put images_background.zip extracted")
end)

T.test("Places365", function()
  local root = dir .. "/places"
  mkdir(root .. "/val_256")
  mkdir(root .. "/data_large_standard/a/airfield")
  save_image(root .. "/val_256/Places365_val_00000001.jpg", 3, 4)
  save_image(root .. "/val_256/Places365_val_00000002.jpg", 5, 4)
  save_image(root .. "/data_large_standard/a/airfield/00000001.jpg", 6, 4)
  write(root .. "/categories_places365.txt", "/b/bar 1\n/a/airfield 0\n")
  write(root .. "/places365_val.txt", "Places365_val_00000001.jpg 1\nPlaces365_val_00000002.jpg 0\n")
  write(root .. "/places365_train_standard.txt", "/a/airfield/00000001.jpg 0\n")
  local v = D.Places365(root, "val", true)
  T.eq({#v, v.classes, v.class_to_idx, v.targets, v.images_dir}, {2, {"/a/airfield", "/b/bar"}, {["/a/airfield"] = 0,
    ["/b/bar"] = 1}, {1, 0}, root .. "/val_256"}, "val, small")
  local img, y = v:get(1)
  T.eq({size(img), y}, {{5, 4}, 0}, "sample")
  local t = D.Places365(root, {transform = size})
  T.eq({#t, t.variant, t:get(0)}, {1, "standard", {6, 4}, 0}, "train-standard, large: data_large_standard")
  T.raises(function() D.Places365(root, "val") end, "~val_large not found: put the extracted image archive")
  T.raises(function() D.Places365(root, "train-challenge") end, "~places365_train_challenge.txt does not exist")
  T.raises(function() D.Places365(root, "train") end, "~Unknown value 'train' for argument split")
end)

T.test("Flickr30k", function()
  local root = dir .. "/flickr"
  mkdir(root)
  save_image(root .. "/1000.jpg", 3, 2)
  save_image(root .. "/20.jpg", 4, 2)
  write(root .. "/results.token", "20.jpg#0\tA dog .\n1000.jpg#0\tTwo men .\n20.jpg#1\tA brown dog runs .\n")
  local ds = D.Flickr30k(root, root .. "/results.token", {transform = size})
  T.eq({#ds, ds.ids}, {2, {"1000.jpg", "20.jpg"}}, "sorted image ids")
  T.eq({ds:get(1)}, {{4, 2}, {"A dog .", "A brown dog runs ."}}, "captions in the file's order")
  T.raises(function() D.Flickr30k(root, root .. "/none.token") end, "~annotation file " .. root .. "/none.token not found")
  write(root .. "/bad.token", "20.jpg A dog\n")
  T.raises(function() D.Flickr30k(root, root .. "/bad.token") end, "~bad.token line 1: expected")
end)

T.test("SEMEION", function()
  local root = dir .. "/semeion"
  mkdir(root)
  local function row(on, label)
    local v = {}
    for i = 1, 256 do v[i] = (i == on) and "1.0000" or "0.0000" end
    for i = 0, 9 do v[#v + 1] = i == label and "1" or "0" end
    return table.concat(v, " ") .. " \r\n"
  end
  write(root .. "/semeion.data", row(1, 7) .. row(18, 0))
  local ds = D.SEMEION(root)
  T.eq({#ds, ds.data.shape:totable(), ds.labels:tolist()}, {2, {2, 16, 16}, {7, 0}}, "data and labels")
  local img, y = ds:get(1)
  T.eq({img.mode, size(img), img:getpixel({1, 1}), img:getpixel({0, 0}), y}, {"L", {16, 16}, 255, 0, 0},
    "pixel 18 is row 1, column 1; x 255")
  T.eq(select(2, D.SEMEION(root, {target_transform = function(v) return v + 1 end}):get(0)), 8, "target_transform")
  write(root .. "/semeion.data", "1 0 1\n")
  T.raises(function() D.SEMEION(root) end, "~line 1: 3 values, expected 266")
  T.raises(function() D.SEMEION(dir .. "/nosem") end, "~semeion.data not found: put semeion.data")
end)

T.test("USPS", function()
  local root = dir .. "/usps"
  mkdir(root)
  local function row(label, first)
    local v = {tostring(label)}
    for i = 1, 256 do v[#v + 1] = i .. ":" .. (i == 1 and first or "-1") end
    return table.concat(v, " ") .. "\n"
  end
  write(root .. "/usps", row(10, "1") .. row(1, "0.5"))
  write(root .. "/usps.t.bz2", "BZh9")
  local ds = D.USPS(root)
  T.eq({#ds, ds.data.shape:totable(), ds.targets}, {2, {2, 16, 16}, {9, 0}}, "data, targets label - 1")
  local img, y = ds:get(1)
  T.eq({img.mode, size(img), img:getpixel({0, 0}), img:getpixel({1, 0}), y}, {"L", {16, 16}, 191, 0, 0},
    "(0.5 + 1) / 2 * 255 = 191.25 -> 191; -1 -> 0")
  T.eq(ds:get(0):getpixel({0, 0}), 255, "1 -> 255")
  T.raises(function() D.USPS(root, false) end, "~(only usps.t.bz2 is there): nnrepl cannot read bzip2")
  T.raises(function() D.USPS(dir .. "/nousps", {download = true}) end, "~nothing is downloaded")
  write(root .. "/usps", "1 1:0 2:0\n")
  T.raises(function() D.USPS(root) end, "~line 1: 2 pixels, expected 256")
end)

if torch.cuda.is_available() then
  T.test("CUDA: a transform to the GPU", function()
    local ds = D.DTD(dir .. "/dtd_root", {transform = function(im) return tv.transforms.functional.pil_to_tensor(im):to("cuda") end})
    local x, y = ds:get(1)
    T.eq({x.device.type, x.shape:totable(), y}, {"cuda", {3, 4, 3}, 0}, "image on cuda")
  end)
else
  T.skip("no CUDA device", 1)
end

os.execute("rm -rf '" .. dir .. "'")
