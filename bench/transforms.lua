-- Transform throughput: CIFAR-10-shaped images (random uint8, 3 x 32 x 32) through
-- Resize(227) + ToTensor, batches of 64 from a DataLoader, in samples/s; one
-- warm-up pass, then the median of `reps` passes over `n` images.
-- Two image kinds: uint8 tensors [3, 32, 32] (what torchvision.datasets.CIFAR10 gives
-- here) and PIL-like images (what torchvision's CIFAR10 gives), plus the two
-- transforms alone on PIL-like images.
-- Usage: nnrepl bench/transforms.lua [reps] [n] [num_workers]
-- Reference: bench/transforms_torchvision.py does the same work with torchvision.
local reps = tonumber(arg and arg[1]) or 5
local n = math.tointeger(tonumber(arg and arg[2]) or 1024)
local workers = math.tointeger(tonumber(arg and arg[3]) or 2)

local tv = require "tv_transforms"
local Image = require("PIL").Image
local data = torch.utils.data
local clock = require("time").perf_counter

torch.manual_seed(0)
local images = torch.randint(0, 256, {n, 3, 32, 32}, {dtype = torch.uint8})
local tensors, pils = {}, {}
for i = 1, n do
  tensors[i] = images[i - 1]
  pils[i] = Image.fromarray(images[i - 1]:permute(1, 2, 0))
end

local Images = data.Dataset:extend("Images")
function Images:__init(list, transform) self.list, self.transform = list, transform end
function Images:__len() return #self.list end
function Images:__getitem(i) return self.transform(self.list[i + 1]), 0 end

local function median_rate(f)
  f()
  local rates = {}
  for r = 1, reps do
    local t0 = clock()
    local count = f()
    rates[r] = count / (clock() - t0)
  end
  table.sort(rates)
  return rates[(reps + 1) // 2], rates[1], rates[reps]
end

local function loader_rate(list, transform)
  local loader = data.DataLoader(Images(list, transform), {batch_size = 64, num_workers = workers})
  return median_rate(function()
    local count = 0
    for x in loader:iter() do
      assert(x:size(1) == 3 and x:size(2) == 227 and x:size(3) == 227)
      count = count + x:size(0)
    end
    return count
  end)
end

local function transform_rate(list, transform)
  return median_rate(function()
    for i = 1, #list do transform(list[i]) end
    return #list
  end)
end

local pipeline = tv.Compose({tv.Resize(227), tv.ToTensor()})
local results = {}
local function report(name, m, lo, hi)
  results[#results + 1] = {name, m}
  print(string.format("%-58s median %8.0f samples/s (min %.0f, max %.0f)", name, m, lo, hi))
end
report(string.format("DataLoader batch 64, Resize(227)+ToTensor, tensors, %d workers", workers), loader_rate(tensors, pipeline))
report(string.format("DataLoader batch 64, Resize(227)+ToTensor, PIL-like, %d workers", workers), loader_rate(pils, pipeline))
report("Resize(227) alone, PIL-like", transform_rate(pils, tv.Resize(227)))
local resized = {}
for i = 1, #pils do resized[i] = tv.Resize(227)(pils[i]) end
report("ToTensor alone, 227x227 PIL-like", transform_rate(resized, tv.ToTensor()))
report("Resize(227) alone, uint8 tensors", transform_rate(tensors, tv.Resize(227)))
return results
