-- pytorch/examples distributed/ddp/example.py in Lua: the smallest DistributedDataParallel
-- program. Each rank prints its launcher variables and process group, wraps a two-layer ToyModel
-- in DDP, takes one SGD step on random data and says so.
--
--   nnrepl --nproc-per-node 2 scripts/examples/ddp/example.lua
--   (or bash scripts/examples/ddp/run_example.sh [example.lua] [nprocs], as the original's
--   run_example.sh runs torchrun)
--
-- nnrepl's launcher is torchrun's stand-in. Difference from the original: it exits when it finds
-- fewer than 2 GPUs; the port then runs its ranks on the CPU with gloo (it needs a GPU per
-- rank), saying so. The input batch is made on the CPU and DDP moves it to the rank's GPU, as
-- PyTorch's DDP does.
local dist = torch.distributed
local DDP = nn.parallel.DistributedDataParallel

local function verify_min_gpu_count(min_gpus)
  -- at least min_gpus GPUs (2 by default) to run the distributed examples
  min_gpus = min_gpus or 2
  local has_gpu = torch.accelerator.is_available()
  local gpu_count = torch.accelerator.device_count()
  return has_gpu and gpu_count >= min_gpus
end

local ToyModel = nn.Module:extend("ToyModel")

function ToyModel:__init()
  self.net1 = nn.Linear(10, 10)
  self.relu = nn.ReLU()
  self.net2 = nn.Linear(10, 5)
end

function ToyModel:forward(x)
  return self.net2(self.relu(self.net1(x)))
end

local use_gpu -- set below: one GPU per rank, or the CPU

local function demo_basic(rank)
  print(string.format("[%d] rank = %d, ", os.getpid(), dist.get_rank())
    .. string.format("world_size = %d", dist.get_world_size()))

  local device = use_gpu and torch.device("cuda", rank) or torch.device("cpu")
  local model = ToyModel():to(device)
  local ddp_model = DDP(model, { device_ids = use_gpu and { rank } or nil })

  local loss_fn = nn.MSELoss()
  local optimizer = optim.SGD(ddp_model:parameters(), { lr = 0.001 })

  optimizer:zero_grad()
  local outputs = ddp_model(torch.randn(20, 10))
  local labels = torch.randn(20, 5):to(device)
  loss_fn(outputs, labels):backward()
  optimizer:step()

  print(string.format("training completed in rank %d!", rank))
end

local function main()
  -- what the process group is made from
  local keys = { "MASTER_ADDR", "MASTER_PORT", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE" }
  local env_dict = {}
  for _, key in ipairs(keys) do
    env_dict[key] = os.getenv(key) or error(string.format("KeyError: '%s' (start the ranks with nnrepl's launcher: "
      .. "nnrepl --nproc-per-node 2 example.lua)", key), 0)
  end
  local rank = tonumber(env_dict["RANK"])
  local local_rank = tonumber(env_dict["LOCAL_RANK"])
  local local_world_size = tonumber(env_dict["LOCAL_WORLD_SIZE"])

  if package.config:sub(1, 1) == "\\" then
    -- Windows: gloo over a FileStore (an INIT_METHOD file:// URL, or a file in the temp folder)
    local init_method = os.getenv("INIT_METHOD")
    if init_method then
      print(string.format("init_method is %s", init_method))
      if not init_method:lower():match("^file:") then error("ValueError: Windows only supports FileStore", 0) end
    else
      init_method = "file:///" .. (os.getenv("TEMP") or ".") .. "\\ddp_example"
    end
    dist.init_process_group("gloo", { init_method = init_method, rank = tonumber(env_dict["RANK"]),
      world_size = tonumber(env_dict["WORLD_SIZE"]) })
  else
    local shown = {}
    for i, key in ipairs(keys) do shown[i] = string.format("'%s': '%s'", key, env_dict[key]) end
    print(string.format("[%d] Initializing process group with: {%s}", os.getpid(), table.concat(shown, ", ")))
    local acc = use_gpu and torch.accelerator.current_accelerator() or torch.device("cpu")
    local backend = dist.get_default_backend_for_device(acc)
    if use_gpu then torch.accelerator.set_device_index(rank) end
    dist.init_process_group(backend)
  end

  io.write(string.format("[%d]: world_size = %d, ", os.getpid(), dist.get_world_size())
    .. string.format("rank = %d, backend=%s \n", dist.get_rank(), dist.get_backend()))

  demo_basic(rank)

  -- done: tear the process group down
  dist.destroy_process_group()
end

local _min_gpu_count = math.max(2, tonumber(os.getenv("WORLD_SIZE") or "2"))
use_gpu = verify_min_gpu_count(_min_gpu_count)
if not use_gpu then
  print(string.format("Unable to locate sufficient %d gpus to run this example. Running it on the CPU with gloo.",
    _min_gpu_count))
end
main()
