-- DataLoader throughput: Fashion-MNIST train (60,000 images) with ToTensor, batch 128,
-- shuffle, 2 workers; one warm-up epoch, then the median of `reps` epochs, in samples/s
-- (every batch is taken from the loader, nothing else is done with it).
-- Usage: nnrepl bench/data_loader.lua [reps] [num_workers] [root]
-- Target (issue 4): >= 200,000 samples/s on the 2-core dev machine.
local reps = tonumber(arg and arg[1]) or 5
local workers = tonumber(arg and arg[2]) or 2
local root = arg and arg[3] or nil

local tv = require "torchvision"
local data = torch.utils.data
local clock = require("time").perf_counter

local to_tensor = tv.transforms and tv.transforms.ToTensor()
if not to_tensor then error("bench/data_loader.lua needs torchvision.transforms (tv_transforms)") end
local ds = tv.datasets.FashionMNIST{root = root, train = true, transform = to_tensor}
local loader = data.DataLoader(ds, {batch_size = 128, shuffle = true, num_workers = math.tointeger(workers)})

local function epoch()
  local n = 0
  local t0 = clock()
  for x, y in loader:iter() do n = n + x:size(0) end
  local dt = clock() - t0
  assert(n == 60000, "an epoch must give 60000 samples, got " .. n)
  return n / dt
end

epoch()
local rates = {}
for r = 1, reps do rates[r] = epoch() end
table.sort(rates)
local median = rates[(reps + 1) // 2]
print(string.format("nnrepl DataLoader Fashion-MNIST train, ToTensor, batch 128, shuffle, %d workers: " ..
  "median %.0f samples/s (min %.0f, max %.0f, %d epochs)", workers, median, rates[1], rates[reps], reps))
return median
