-- DistributedDataParallel on Fashion-MNIST: every rank trains the same MLP on its
-- share of each epoch (DistributedSampler); gradients are averaged over the ranks
-- while backward runs, so all ranks keep identical weights. Rank 0 prints.
--
--   build/nnrepl --nproc-per-node 2 scripts/ddp_demo.lua [--epochs 2] [--lr 0.1]
--       [--batch-size 64] [--backend gloo|nccl] [--data-root DIR]
--
-- or one process per rank by hand, as document 004's scripts start theirs:
--   build/nnrepl scripts/ddp_demo.lua --init-method tcp://127.0.0.1:29500 --rank 0 --world-size 2 &
--   build/nnrepl scripts/ddp_demo.lua --init-method tcp://127.0.0.1:29500 --rank 1 --world-size 2
-- The batch size is per rank: the global batch is world size times it.
local torchvision = require "torchvision"
local argparse = require "argparse"
local time = require "time"
local dist = torch.distributed
local DDP = nn.parallel.DistributedDataParallel
local DataLoader = torch.utils.data.DataLoader
local DistributedSampler = torch.utils.data.distributed.DistributedSampler

local parser = argparse.ArgumentParser({ prog = "ddp_demo.lua", description = "DDP training of an MLP on Fashion-MNIST" })
parser:add_argument("--epochs", { type = "int", default = 2 })
parser:add_argument("--lr", { type = "float", default = 0.1 })
parser:add_argument("--batch-size", { type = "int", default = 64, help = "per rank (default %(default)s)" })
parser:add_argument("--backend", { choices = { "gloo", "nccl" }, help = "default: nccl with GPUs, else gloo" })
parser:add_argument("--init-method", { default = "env://" })
parser:add_argument("--rank", { type = "int", default = -1 })
parser:add_argument("--world-size", { type = "int", default = -1 })
parser:add_argument("--data-root", { help = "folder with the IDX files (default /usr/share/datasets/fashion-mnist)" })
local args = parser:parse_args({ ... })

local cuda = torch.cuda.is_available()
local backend = args.backend or (cuda and "nccl" or "gloo")
dist.init_process_group(backend, { init_method = args.init_method, rank = args.rank, world_size = args.world_size })
local rank, world = dist.get_rank(), dist.get_world_size()
local device = "cpu"
if backend == "nccl" then
  local local_rank = dist.get_node_local_rank(rank) % torch.cuda.device_count()
  torch.cuda.set_device(local_rank)
  device = "cuda:" .. local_rank
end
local function log(...) if rank == 0 then print(string.format(...)) end end
log("%d ranks, backend %s, %d per rank per step", world, backend, args.batch_size)

local ToTensor = torchvision.transforms.ToTensor
local train = torchvision.datasets.FashionMNIST({ root = args.data_root, train = true, transform = ToTensor() })
local test = torchvision.datasets.FashionMNIST({ root = args.data_root, train = false, transform = ToTensor() })
local sampler = DistributedSampler(train, { shuffle = true, seed = 0 })
local loader = DataLoader(train, { batch_size = args.batch_size, sampler = sampler, num_workers = 1 })
local test_loader = DataLoader(test, { batch_size = 1000 })

torch.manual_seed(rank) -- on purpose: DDP starts every rank from rank 0's weights
local net = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)):to(device)
local model = DDP(net)
local opt = optim.SGD(model:parameters(), { lr = args.lr, momentum = 0.9 })

for epoch = 1, args.epochs do
  sampler:set_epoch(epoch)
  model:train()
  local t0, seen, total = time.time(), 0, torch.zeros(1)
  for x, y in loader:iter() do
    x, y = x:to(device), y:to(device)
    opt:zero_grad()
    local loss = F.cross_entropy(model(x), y)
    loss:backward()
    opt:step()
    total:add_(loss:detach():cpu() * x:size(0))
    seen = seen + x:size(0)
  end
  local counts = torch.tensor({ total:item(), seen }, { dtype = torch.float64 })
  dist.all_reduce(counts) -- the mean training loss over every rank's samples
  local elapsed = time.time() - t0
  model:eval()
  local correct, n = 0, 0
  do
    local _ <close> = torch.no_grad()
    for x, y in test_loader:iter() do
      local out = net(x:to(device))
      correct = correct + out:argmax(1):cpu():eq(y):sum():item()
      n = n + x:size(0)
    end
  end
  log("epoch %d: train loss %.4f over %d samples, test accuracy %.2f%%, %.1f s (%.0f samples/s)", epoch,
    counts[0]:item() / counts[1]:item(), math.tointeger(counts[1]:item()), 100 * correct / n, elapsed,
    counts[1]:item() / elapsed)
end

-- every rank ends with the same weights
local mine = torch.cat({ net[1].weight:detach():reshape(-1), net[3].bias:detach() }, 0):cpu()
local first = mine:clone()
dist.broadcast(first, 0)
log("ranks agree on the weights: %s", tostring((mine - first):abs():max():item() == 0))
dist.destroy_process_group()
