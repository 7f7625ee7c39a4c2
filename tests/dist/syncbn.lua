-- SyncBatchNorm against one process with BatchNorm on the whole batch: outputs,
-- running statistics, input and parameter gradients, then DDP training of a model
-- converted with convert_sync_batchnorm. Run by test_dist.sh with 2 and 3 ranks (gloo, CPU)
-- and with `nccl` as argument on every GPU (each rank on cuda:LOCAL_RANK).
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed
local _, dev = H.init(arg[1])
local rank, world = dist.get_rank(), dist.get_world_size()
local B = 3 -- per rank; the whole batch is B * world
local function slice(t) return t:narrow(0, rank * B, B) end

torch.manual_seed(5) -- the same data and weights on every rank
local X = torch.randn(B * world, 4, 5, 5, { dtype = torch.float64 }) * 2 + 1
local G = torch.randn(B * world, 4, 5, 5, { dtype = torch.float64 })

-- 1. one layer: forward, statistics, backward
local ref = nn.BatchNorm2d(4):to(torch.float64)
local sync = nn.SyncBatchNorm(4):to(torch.float64)
torch.no_grad(function()
  ref.weight:copy_(torch.rand(4) + 0.5); ref.bias:copy_(torch.randn(4))
  sync.weight:copy_(ref.weight); sync.bias:copy_(ref.bias)
end)
local xr = X:clone():requires_grad_()
local yr = ref(xr)
sync:to(dev)
local xs = slice(X):to(dev):requires_grad_()
local ys = sync(xs)
H.check(ys.device.type == sync.weight.device.type, "output on the module's device")
H.close(ys:detach():cpu(), slice(yr:detach()), 1e-12, "output: the whole batch's statistics")
H.close(sync.running_mean:cpu(), ref.running_mean, 1e-12, "running_mean")
H.close(sync.running_var:cpu(), ref.running_var, 1e-12, "running_var (unbiased over the whole batch)")
H.check(sync.num_batches_tracked:item() == 1, "num_batches_tracked")
yr:backward(G)
ys:backward(slice(G):to(dev))
H.close(xs.grad:cpu(), slice(xr.grad), 1e-12, "input gradient")
local gw, gb = sync.weight.grad:clone(), sync.bias.grad:clone()
dist.all_reduce(gw); dist.all_reduce(gb)
H.close(gw:cpu(), ref.weight.grad, 1e-12, "weight gradient summed over ranks")
H.close(gb:cpu(), ref.bias.grad, 1e-12, "bias gradient summed over ranks")
-- eval: the running statistics, no communication
sync:eval(); ref:eval()
H.close(sync(slice(X):to(dev)):cpu(), slice(ref(X)), 1e-12, "eval output")

-- 2. DDP training of a converted model equals one process on the whole batch
local function net()
  torch.manual_seed(11)
  return nn.Sequential(nn.Conv2d(4, 6, 3), nn.BatchNorm2d(6), nn.ReLU(), nn.Flatten(), nn.Linear(6 * 9, 2)):to(torch.float64)
end
local single = net()
local converted = nn.SyncBatchNorm.convert_sync_batchnorm(net()):to(dev)
H.check(converted[1]:isinstance(nn.SyncBatchNorm), "convert_sync_batchnorm replaced the BatchNorm2d")
H.check(not converted[0]:isinstance(nn.SyncBatchNorm), "and nothing else")
local model = nn.parallel.DistributedDataParallel(converted, dev ~= "cpu" and { device_ids = { torch.device(dev).index } } or nil)
local o1 = optim.SGD(single:parameters(), { lr = 0.1, momentum = 0.9 })
local o2 = optim.SGD(model:parameters(), { lr = 0.1, momentum = 0.9 })
local Y = torch.randn(B * world, 2, { dtype = torch.float64 })
for _ = 1, 4 do
  o1:zero_grad(); o2:zero_grad()
  nn.functional.mse_loss(single(X), Y):backward()
  nn.functional.mse_loss(model(slice(X):to(dev)), slice(Y):to(dev)):backward()
  o1:step(); o2:step()
end
local pa, pb = single:parameters(), converted:parameters()
local worst = 0
for i = 1, #pa do worst = math.max(worst, H.maxdiff(pa[i]:detach(), pb[i]:detach():cpu())) end
H.check(worst < 1e-10, "DDP + SyncBatchNorm trains as one process: parameters differ by %g", worst)
H.close(converted[1].running_var:cpu(), single[1].running_var, 1e-10, "running_var after training")

dist.destroy_process_group()
H.report()
