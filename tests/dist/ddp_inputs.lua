-- DistributedDataParallel's forward moves its inputs to device_ids[0], as PyTorch's does: CPU
-- tensors given to a model on cuda:LOCAL_RANK (pytorch/examples' distributed/ddp/example.py
-- relies on it), in positional arguments and in nested plain tables; without device_ids the
-- inputs are left where they are. Run by test_dist.sh: gloo (CPU), and nccl where there are GPUs.
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local backend, dev = H.init(...)
local dist = torch.distributed
local DDP = nn.parallel.DistributedDataParallel
local rank, world = dist.get_rank(), dist.get_world_size()

-- records the devices its inputs arrive on; output = lin(x) + lin(extra.y)
local Probe = nn.Module:extend("Probe")
function Probe:__init() self.lin = nn.Linear(3, 2) end
function Probe:forward(x, extra, tag)
  self.seen = { x = x.device.type, y = extra.y.device.type, n = extra.n, tag = tag }
  return self.lin(x) + self.lin(extra.y)
end

torch.manual_seed(rank) -- DDP gives every rank rank 0's weights
local x = torch.full({4, 3}, rank + 1.0)
local y = torch.full({4, 3}, 0.5)

-- the reference: the same step by hand on the CPU, with rank 0's weights and the mean gradient
local function reference(probe)
  local ref = nn.Linear(3, 2)
  ref:load_state_dict(probe.lin:state_dict())
  ref:to("cpu")
  local gw = torch.zeros(2, 3)
  for r = 0, world - 1 do
    ref:zero_grad()
    local loss = (ref(torch.full({4, 3}, r + 1.0)) + ref(y)):sum()
    loss:backward()
    gw = gw + ref.weight.grad
  end
  return gw / world
end

if dev == "cpu" then
  local model = DDP(Probe())
  local out = model(x, { y = y, n = 7 }, "t")
  H.check(out.device.type == "cpu" and model.module.seen.x == "cpu" and model.module.seen.y == "cpu",
    "no device_ids: the inputs stay on the CPU")
  H.check(model.module.seen.n == 7 and model.module.seen.tag == "t", "no device_ids: other values pass as they are")
  out:sum():backward()
  H.close(model.module.lin.weight.grad, reference(model.module), 1e-5, "no device_ids: the mean gradient")
else
  local local_rank = tonumber(os.getenv("LOCAL_RANK"))
  for _, ids in ipairs({ { local_rank }, { dev }, { torch.device(dev) } }) do
    local model = DDP(Probe():to(dev), { device_ids = ids })
    local out = model(x, { y = y, n = 7 }, "t") -- CPU tensors
    local seen = model.module.seen
    H.check(tostring(out.device) == dev and seen.x == "cuda" and seen.y == "cuda",
      "device_ids %s: the inputs moved to %s (got %s %s)", tostring(ids[1]), dev, seen.x, seen.y)
    H.check(seen.n == 7 and seen.tag == "t", "device_ids: other values pass as they are")
    H.check(x.device.type == "cpu" and y.device.type == "cpu", "device_ids: the caller's tensors are not changed")
    out:sum():backward()
    H.close(model.module.lin.weight.grad:cpu(), reference(model.module), 1e-5, "device_ids: the mean gradient")
  end
end

dist.destroy_process_group()
H.report()
