-- pytorch/tutorials intermediate_source/dist_tuto.rst ("Writing Distributed Applications with
-- PyTorch") in Lua: blocking and non-blocking send/recv, all_reduce over a group, a ring
-- all-reduce built from isend/recv, and distributed synchronous SGD on a partitioned MNIST.
--
--   nnrepl --nproc-per-node 2 scripts/tutorials/distributed/dist_tuto.lua [SECTION ...]
--          [--backend gloo|nccl] [--epochs 10] [--data-root ./data]
--   SECTION: blocking, nonblocking, all_reduce, ring, sgd (default: all five, in that order)
--
-- Differences from the tutorial:
-- * The tutorial forks its processes with torch.multiprocessing.Process; nnrepl starts the ranks
--   with its launcher, which also sets MASTER_ADDR and MASTER_PORT (init_process keeps those
--   instead of 127.0.0.1:29500). init_process(rank, size, fn, backend) is called once per rank.
-- * The tutorial redefines run() in each section; here each is run_<section> and the sections
--   named on the command line run in turn in one process group.
-- * The ring section calls the tutorial's allreduce(send, recv) (which it only defines) and
--   prints whether it equals dist.all_reduce.
-- * --backend nccl makes the tutorial's "use multiple GPUs" changes: device cuda:<rank>, the
--   model and every tensor on it. The default is the tutorial's gloo on the CPU.
-- * Python's random.Random is nnrepl's `random` module: DataPartitioner's Random(1234) shuffle
--   draws Python's numbers, so each rank holds the tutorial's samples.
-- * bsz is 128 // size (the tutorial's 128 / float(size) is a float, which DataLoader refuses).
-- * No download: the MNIST IDX files must be under --data-root (new; default ./data, the
--   tutorial's): DATA_ROOT/MNIST/raw, DATA_ROOT/MNIST or DATA_ROOT. When they are missing,
--   torchvision.datasets.MNIST stops with an error naming the files and the folder. Debian's
--   Fashion-MNIST has the same format: --data-root /usr/share/datasets/fashion-mnist.
-- * Net is the PyTorch MNIST example's network of the time the tutorial cites (conv 10, conv
--   20, Dropout2d, fc 320 -> 50 -> 10, log_softmax), as in the tutorial's companion repository.
-- * --epochs (new; default 10, the tutorial's) shortens the SGD run.
local torchvision = require "torchvision"
local argparse = require "argparse"
local random = require "random"
local dist = torch.distributed
local datasets, transforms = torchvision.datasets, torchvision.transforms

local device = torch.device("cpu") -- cuda:<rank> with --backend nccl
local args

-- """Blocking point-to-point communication."""
local function run_blocking(rank, size)
  local tensor = torch.zeros(1, { device = device })
  if rank == 0 then
    tensor:add_(1)
    -- to process 1
    dist.send(tensor, { dst = 1 })
  else
    -- from process 0
    dist.recv(tensor, { src = 0 })
  end
  print(string.format("Rank  %d  has data  %s", rank, tostring(tensor[0])))
end

-- """Non-blocking point-to-point communication."""
local function run_nonblocking(rank, size)
  local tensor = torch.zeros(1, { device = device })
  local req = nil
  if rank == 0 then
    tensor:add_(1)
    req = dist.isend(tensor, { dst = 1 })
    print("Rank 0 started sending")
  else
    req = dist.irecv(tensor, { src = 0 })
    print("Rank 1 started receiving")
  end
  req:wait()
  print(string.format("Rank  %d  has data  %s", rank, tostring(tensor[0])))
end

-- """ All-Reduce example."""
local function run_all_reduce(rank, size)
  local group = dist.new_group({ 0, 1 })
  local tensor = torch.ones(1, { device = device })
  dist.all_reduce(tensor, { op = dist.ReduceOp.SUM, group = group })
  print(string.format("Rank  %d  has data  %s", rank, tostring(tensor[0])))
end

-- """ Implementation of a ring-reduce with addition. """
local function allreduce(send, recv)
  local rank = dist.get_rank()
  local size = dist.get_world_size()
  local send_buff = send:clone()
  local recv_buff = send:clone()
  local accum = send:clone()

  local left = ((rank - 1) + size) % size
  local right = (rank + 1) % size

  for i = 0, size - 2 do
    local send_req
    if i % 2 == 0 then
      -- pass send_buff on, receive into recv_buff
      send_req = dist.isend(send_buff, right)
      dist.recv(recv_buff, left)
      accum[":"] = accum[":"] + recv_buff[":"]
    else
      -- pass recv_buff on, receive into send_buff
      send_req = dist.isend(recv_buff, right)
      dist.recv(send_buff, left)
      accum[":"] = accum[":"] + send_buff[":"]
    end
    send_req:wait()
  end
  recv[":"] = accum[":"]
end

local function run_ring(rank, size)
  local send = torch.arange(4, { dtype = torch.float32, device = device }) + 10 * rank
  local recv = torch.zeros(4, { device = device })
  allreduce(send, recv)
  local expected = send:clone()
  dist.all_reduce(expected, { op = dist.ReduceOp.SUM })
  print(string.format("Rank  %d  ring allreduce  %s  equals dist.all_reduce:  %s", rank, tostring(recv:cpu()),
    torch.equal(recv, expected) and "True" or "False"))
end

-- """ Dataset partitioning helper """
local Partition = torch.utils.data.Dataset:extend("Partition")

function Partition:__init(data, index)
  self.data = data
  self.index = index
end

function Partition:__len()
  return #self.index
end

function Partition:__getitem(index)
  local data_idx = self.index[index + 1]
  return self.data:__getitem(data_idx)
end

local DataPartitioner = setmetatable({}, { __call = function(cls, ...) -- a plain class
  local self = setmetatable({}, { __index = cls })
  self:__init(...)
  return self
end })

function DataPartitioner:__init(data, sizes, seed)
  sizes = sizes or { 0.7, 0.2, 0.1 }
  seed = seed or 1234
  self.data = data
  self.partitions = {}
  local rng = random.Random()
  rng:seed(seed)
  local data_len = #data
  local indexes = {}
  for x = 0, data_len - 1 do indexes[#indexes + 1] = x end
  rng:shuffle(indexes) -- Python's draws: the partitions hold the tutorial's samples

  local start = 1
  for _, frac in ipairs(sizes) do
    local part_len = math.floor(frac * data_len)
    self.partitions[#self.partitions + 1] = table.move(indexes, start, start + part_len - 1, 1, {})
    start = start + part_len
  end
end

function DataPartitioner:use(partition)
  return Partition(self.data, self.partitions[partition + 1])
end

-- """ Partitioning MNIST """
local function partition_dataset()
  local dataset = datasets.MNIST(args.data_root, { train = true, download = false,
    transform = transforms.Compose({
      transforms.ToTensor(),
      transforms.Normalize({ 0.1307 }, { 0.3081 }),
    }) })
  local size = dist.get_world_size()
  local bsz = 128 // size
  local partition_sizes = {}
  for i = 1, size do partition_sizes[i] = 1.0 / size end
  local partition = DataPartitioner(dataset, partition_sizes)
  partition = partition:use(dist.get_rank())
  local train_set = torch.utils.data.DataLoader(partition, { batch_size = bsz, shuffle = true })
  return train_set, bsz
end

local Net = nn.Module:extend("Net")

function Net:__init()
  self.conv1 = nn.Conv2d(1, 10, { kernel_size = 5 })
  self.conv2 = nn.Conv2d(10, 20, { kernel_size = 5 })
  self.conv2_drop = nn.Dropout2d()
  self.fc1 = nn.Linear(320, 50)
  self.fc2 = nn.Linear(50, 10)
end

function Net:forward(x)
  x = F.relu(F.max_pool2d(self.conv1(x), 2))
  x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
  x = x:view(-1, 320)
  x = F.relu(self.fc1(x))
  x = F.dropout(x, { training = self.training })
  x = self.fc2(x)
  return F.log_softmax(x, { dim = 1 })
end

-- """ Gradient averaging. """
local function average_gradients(model)
  local size = dist.get_world_size()
  for _, param in ipairs(model:parameters()) do
    dist.all_reduce(param.grad.data, { op = dist.ReduceOp.SUM })
    param.grad.data:div_(size)
  end
end

-- """ Distributed Synchronous SGD Example """
local function run_sgd(rank, size)
  torch.manual_seed(1234)
  local train_set, bsz = partition_dataset()
  local model = Net():to(device)
  local optimizer = optim.SGD(model:parameters(), { lr = 0.01, momentum = 0.5 })

  local num_batches = math.ceil(#train_set.dataset / bsz)
  for epoch = 0, args.epochs - 1 do
    local epoch_loss = 0.0
    for data, target in train_set:iter() do
      data, target = data:to(device), target:to(device)
      optimizer:zero_grad()
      local output = model(data)
      local loss = F.nll_loss(output, target)
      epoch_loss = epoch_loss + loss:item()
      loss:backward()
      average_gradients(model)
      optimizer:step()
    end
    print(string.format("Rank  %d , epoch  %d :  %s", dist.get_rank(), epoch,
      require("nn_util").pyfloat(epoch_loss / num_batches)))
  end
end

local runs = { blocking = run_blocking, nonblocking = run_nonblocking, all_reduce = run_all_reduce,
  ring = run_ring, sgd = run_sgd }

-- """ Initialize the distributed environment. """
local function init_process(rank, size, fns, backend)
  backend = backend or "gloo"
  dist.init_process_group(backend, { rank = rank, world_size = size })
  for _, fn in ipairs(fns) do fn(rank, size) end
  dist.destroy_process_group()
end

local parser = argparse.ArgumentParser({ description = "Writing Distributed Applications with PyTorch" })
parser:add_argument("sections", { nargs = "*", default = { "blocking", "nonblocking", "all_reduce", "ring", "sgd" },
  help = "sections to run: blocking, nonblocking, all_reduce, ring, sgd" })
parser:add_argument("--backend", { default = "gloo", choices = { "gloo", "nccl" } })
parser:add_argument("--epochs", { type = "int", default = 10 })
parser:add_argument("--data-root", { default = "./data" })
args = parser:parse_args({ ... })

local fns = {}
for i, name in ipairs(args.sections) do
  fns[i] = runs[name] or error(string.format("unknown section '%s' (blocking, nonblocking, all_reduce, ring, sgd)", name), 0)
end
local rank = tonumber(os.getenv("RANK") or error("RANK is not set: start the ranks with nnrepl's launcher, "
  .. "nnrepl --nproc-per-node 2 dist_tuto.lua", 0))
local size = tonumber(os.getenv("WORLD_SIZE"))
if args.backend == "nccl" then device = torch.device("cuda", rank) end
init_process(rank, size, fns, args.backend)
