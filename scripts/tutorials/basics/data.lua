-- PyTorch tutorial "Learn the Basics: Datasets & DataLoaders" (beginner_source/basics/data_tutorial.py)
-- in Lua: FashionMNIST, indexing samples, a custom Dataset over image files and a CSV of labels,
-- DataLoader with shuffling.
--
--   cd somewhere && ln -s /usr/share/datasets/fashion-mnist data   (once: the tutorial's root="data")
--   nnrepl scripts/tutorials/basics/data.lua [--annotations FILE.csv --img-dir DIR]
--
-- Differences from the original:
-- * Nothing is downloaded: root="data" must hold FashionMNIST's IDX files (gzipped or not), in
--   data/FashionMNIST/raw, data/FashionMNIST or data itself (a link named data to Debian's
--   /usr/share/datasets/fashion-mnist is enough); otherwise FashionMNIST raises "download=true,
--   but nnrepl downloads nothing: put ...".
-- * No matplotlib: the 3x3 figure of random samples prints each sample's index and label instead,
--   and the image shown at the end prints its shape.
-- * No pandas: read_csv below reads the annotations file as pandas.read_csv does for it (the first
--   row is the header, fields split at commas); iloc[idx, 0] is img_labels[idx + 1][1].
-- * The tutorial only defines CustomImageDataset; --annotations and --img-dir (extras) build one
--   and print its length and first sample.
local torchvision = require "torchvision"
local argparse = require "argparse"
local Dataset = torch.utils.data.Dataset
local datasets = torchvision.datasets
local ToTensor = torchvision.transforms.ToTensor

local parser = argparse.ArgumentParser({ description = "Learn the Basics: Datasets & DataLoaders" })
parser:add_argument("--annotations", { help = "a labels CSV (file name, label) for CustomImageDataset" })
parser:add_argument("--img-dir", { help = "the folder of the images the CSV names" })
local args = parser:parse_args({ ... })

local training_data = datasets.FashionMNIST({
  root = "data",
  train = true,
  download = true,
  transform = ToTensor(),
})

local test_data = datasets.FashionMNIST({
  root = "data",
  train = false,
  download = true,
  transform = ToTensor(),
})

local labels_map = {
  [0] = "T-Shirt",
  [1] = "Trouser",
  [2] = "Pullover",
  [3] = "Dress",
  [4] = "Coat",
  [5] = "Sandal",
  [6] = "Shirt",
  [7] = "Sneaker",
  [8] = "Bag",
  [9] = "Ankle Boot",
}
local cols, rows = 3, 3
for i = 1, cols * rows do
  local sample_idx = torch.randint(#training_data, { 1 }):item()
  local img, label = table.unpack(training_data[sample_idx])
  -- (matplotlib: one subplot per sample, titled with its label)
  print(string.format("sample %d: %s, image %s", sample_idx, labels_map[label], img:squeeze().shape))
end

-- pandas.read_csv for a plain "name,label" file: the rows after the header, each a list of fields
local function read_csv(path)
  local rows, header = {}, true
  for line in io.lines(path) do
    if header then
      header = false
    elseif line:match("%S") then
      local fields = {}
      for field in (line .. ","):gmatch("%s*([^,]-)%s*,") do fields[#fields + 1] = field end
      rows[#rows + 1] = fields
    end
  end
  return rows
end

local read_image = torchvision.io.read_image

local CustomImageDataset = Dataset:extend("CustomImageDataset")

function CustomImageDataset:__init(annotations_file, img_dir, transform, target_transform)
  self.img_labels = read_csv(annotations_file)
  self.img_dir = img_dir
  self.transform = transform
  self.target_transform = target_transform
end

function CustomImageDataset:__len()
  return #self.img_labels
end

function CustomImageDataset:__getitem(idx)
  local img_path = self.img_dir .. "/" .. self.img_labels[idx + 1][1]
  local image = read_image(img_path)
  local label = math.tointeger(tonumber(self.img_labels[idx + 1][2]))
  if self.transform then
    image = self.transform(image)
  end
  if self.target_transform then
    label = self.target_transform(label)
  end
  return { image, label }
end

if args.annotations then
  local custom = CustomImageDataset(args.annotations, args.img_dir or ".")
  local image, label = table.unpack(custom[0])
  print(string.format("CustomImageDataset: %d samples, the first %s %s, label %s", #custom, image.shape,
    image.dtype, label))
end

local DataLoader = torch.utils.data.DataLoader

local train_dataloader = DataLoader(training_data, { batch_size = 64, shuffle = true })
local test_dataloader = DataLoader(test_data, { batch_size = 64, shuffle = true })

local train_features, train_labels = train_dataloader:iter()()
print(string.format("Feature batch shape: %s", train_features:size()))
print(string.format("Labels batch shape: %s", train_labels:size()))
local img = train_features[0]:squeeze()
local label = train_labels[0]
-- (matplotlib: the image shown in gray)
print(string.format("Image: %s", img.shape))
print(string.format("Label: %s", label))
