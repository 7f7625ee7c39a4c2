-- pytorch/tutorials beginner_source/data_loading_tutorial.py ported to nnrepl: a custom Dataset
-- of face landmarks (a CSV of 68 (x, y) points per image), transform classes (Rescale,
-- RandomCrop, ToTensor), transforms.Compose and a DataLoader over the dict samples.
--
--   nnrepl scripts/tutorials/data_loading_tutorial.lua
--
-- Run it from the folder holding data/faces/ (face_landmarks.csv and its images, from
-- faces.zip; nothing is downloaded: a missing CSV stops with an error naming it). Same prints
-- as the tutorial. Differences:
-- * pandas.read_csv is a small CSV reader below (landmarks_frame.columns / .rows, a row a Lua
--   list); numpy arrays are tensors: the landmarks are float64 [68, 2] tensors, the image an
--   H x W x C tensor (uint8 as read, float64 in [0, 1] after Rescale, as skimage gives). Shapes
--   print as numpy's tuples, "First 4 Landmarks" as a tensor.
-- * skimage.io.imread is torchvision.io.read_image (RGB), permuted to H x W x C;
--   skimage.transform.resize is torchvision's antialiased bilinear resize: sizes agree, pixel
--   values differ slightly from skimage's Gaussian anti-aliasing.
-- * np.random.randint is math.random; the transform classes are plain Lua classes whose
--   instances are callable (Python's __call__).
-- * no matplotlib: show_landmarks, the subplots and show_landmarks_batch are dropped; each plot
--   prints what it would show (a title and the shapes).
local torchvision = require "torchvision"
local transforms, utils = torchvision.transforms, torchvision.utils
local TF = transforms.functional
local Dataset, DataLoader = torch.utils.data.Dataset, torch.utils.data.DataLoader

-- pd.read_csv for a plain CSV (no quoted fields): columns and rows, numbers converted
local function read_csv(path)
  local f = io.open(path, "r")
  if not f then
    error(string.format("[Errno 2] No such file or directory: '%s' (nnrepl downloads nothing: extract faces.zip into data/faces/)", path), 2)
  end
  local frame = { rows = {} }
  for line in f:lines() do
    local fields = {}
    for field in (line .. ","):gmatch("([^,]*),") do fields[#fields + 1] = tonumber(field) or field end
    if frame.columns then frame.rows[#frame.rows + 1] = fields else frame.columns = fields end
  end
  f:close()
  return frame
end

-- io.imread: an H x W x 3 uint8 image
local function imread(path)
  return torchvision.io.read_image(path, torchvision.io.ImageReadMode.RGB):permute(1, 2, 0)
end

-- numpy's shape tuple, "(68, 2)"
local function np_shape(t)
  local dims = t:size():totable()
  return "(" .. table.concat(dims, ", ") .. (#dims == 1 and ",)" or ")")
end

-- a plain class whose instances are callable: Python's class with __init__ and __call__
local function class(name)
  local cls = { __name = name }
  cls.__index = cls
  cls.__call = function(self, ...) return self:call(...) end
  return setmetatable(cls, { __call = function(c, ...)
    local obj = setmetatable({}, c)
    if c.__init then obj:__init(...) end
    return obj
  end })
end

-- plt.ion(): no plotting here

local landmarks_frame = read_csv("data/faces/face_landmarks.csv")

local n = 65
local row = landmarks_frame.rows[n + 1]
local img_name = row[1]
local landmarks = torch.tensor(table.move(row, 2, #row, 1, {}), { dtype = torch.float64 })
landmarks = landmarks:reshape(-1, 2)

print(string.format("Image name: %s", img_name))
print(string.format("Landmarks shape: %s", np_shape(landmarks)))
print(string.format("First 4 Landmarks: %s", tostring(landmarks[":4"])))

-- show_landmarks(io.imread(...), landmarks) plots the image and its points: dropped

-- the Dataset: the CSV read once, each image when its sample is asked for
local FaceLandmarksDataset = Dataset:extend("FaceLandmarksDataset")

-- csv_file: the annotations; root_dir: the images' folder; transform: applied to each sample
function FaceLandmarksDataset:__init(csv_file, root_dir, transform)
  self.landmarks_frame = read_csv(csv_file)
  self.root_dir = root_dir
  self.transform = transform
end

function FaceLandmarksDataset:__len()
  return #self.landmarks_frame.rows
end

function FaceLandmarksDataset:__getitem(idx)
  if torch.is_tensor(idx) then
    idx = idx:tolist()
  end

  local r = self.landmarks_frame.rows[idx + 1]
  local img_name = self.root_dir .. "/" .. r[1] -- os.path.join
  local image = imread(img_name)
  local landmarks = torch.tensor({ table.move(r, 2, #r, 1, {}) }, { dtype = torch.float64 })
  landmarks = landmarks:reshape(-1, 2)
  local sample = { image = image, landmarks = landmarks }

  if self.transform then
    sample = self.transform(sample)
  end

  return sample
end

local face_dataset = FaceLandmarksDataset("data/faces/face_landmarks.csv", "data/faces/")

for i = 0, #face_dataset - 1 do
  local sample = face_dataset[i]

  print(string.format("%d %s %s", i, np_shape(sample.image), np_shape(sample.landmarks)))

  -- plotted as 'Sample #i' with its landmarks in the tutorial

  if i == 3 then
    break
  end
end

-- Rescale: the image to output_size (a number: the shorter side, keeping the aspect ratio;
-- a pair {h, w}: exactly), the landmarks with it
local Rescale = class("Rescale")

function Rescale:__init(output_size)
  assert(math.type(output_size) == "integer" or type(output_size) == "table")
  self.output_size = output_size
end

function Rescale:call(sample)
  local image, landmarks = sample.image, sample.landmarks

  local h, w = image:size(0), image:size(1)
  local new_h, new_w
  if math.type(self.output_size) == "integer" then
    if h > w then
      new_h, new_w = self.output_size * h / w, self.output_size
    else
      new_h, new_w = self.output_size, self.output_size * w / h
    end
  else
    new_h, new_w = self.output_size[1], self.output_size[2]
  end

  new_h, new_w = math.floor(new_h), math.floor(new_w)

  -- transform.resize: float64 in [0, 1], H x W x C
  local chw = image:permute(2, 0, 1)
  if chw.dtype == torch.uint8 then chw = chw:double() / 255 end
  local img = TF.resize(chw, { new_h, new_w }, { antialias = true }):clamp(0, 1):permute(1, 2, 0)

  -- x is the column (w), y the row (h)
  landmarks = landmarks * torch.tensor({ new_w / w, new_h / h }, { dtype = torch.float64 })

  return { image = img, landmarks = landmarks }
end

-- RandomCrop: a random output_size crop (a number: square)
local RandomCrop = class("RandomCrop")

function RandomCrop:__init(output_size)
  assert(math.type(output_size) == "integer" or type(output_size) == "table")
  if math.type(output_size) == "integer" then
    self.output_size = { output_size, output_size }
  else
    assert(#output_size == 2)
    self.output_size = output_size
  end
end

function RandomCrop:call(sample)
  local image, landmarks = sample.image, sample.landmarks

  local h, w = image:size(0), image:size(1)
  local new_h, new_w = self.output_size[1], self.output_size[2]

  local top = math.random(0, h - new_h - 1) -- np.random.randint(0, h - new_h)
  local left = math.random(0, w - new_w - 1)

  image = image[string.format("%d:%d, %d:%d", top, top + new_h, left, left + new_w)]

  landmarks = landmarks - torch.tensor({ left, top }, { dtype = torch.float64 })

  return { image = image, landmarks = landmarks }
end

-- ToTensor: H x W x C to the C x H x W of torch images
local ToTensor = class("ToTensor")

function ToTensor:call(sample)
  local image, landmarks = sample.image, sample.landmarks

  image = image:permute(2, 0, 1):contiguous()
  return { image = image, landmarks = landmarks }
end

local scale = Rescale(256)
local crop = RandomCrop(128)
local composed = transforms.Compose({ Rescale(256),
  RandomCrop(224) })

-- each transform on one sample (three subplots in the tutorial, titled by the class)
local sample = face_dataset[65]
for _, tsfrm in ipairs({ scale, crop, composed }) do
  local transformed_sample = tsfrm(sample)

  print(string.format("%s: %s %s", tsfrm.__name, np_shape(transformed_sample.image),
    np_shape(transformed_sample.landmarks)))
end

local transformed_dataset = FaceLandmarksDataset("data/faces/face_landmarks.csv", "data/faces/",
  transforms.Compose({
    Rescale(256),
    RandomCrop(224),
    ToTensor()
  }))

for i = 0, #transformed_dataset - 1 do
  sample = transformed_dataset[i]

  print(string.format("%d %s %s", i, tostring(sample.image:size()), tostring(sample.landmarks:size())))

  if i == 3 then
    break
  end
end

local dataloader = DataLoader(transformed_dataset, { batch_size = 4,
  shuffle = true, num_workers = 4 })

-- show_landmarks_batch (a grid of the batch with its landmarks) is dropped with the plots
for i_batch, sample_batched in dataloader:enumerate() do
  print(string.format("%d %s %s", i_batch, tostring(sample_batched.image:size()),
    tostring(sample_batched.landmarks:size())))

  -- the 4th batch: plotted in the tutorial, here its grid's size
  if i_batch == 3 then
    local grid = utils.make_grid(sample_batched.image)
    print(string.format("Batch from dataloader: grid %s", tostring(grid:size())))
    break
  end
end
