-- The PyTorch tutorials' DDP pattern on NCCL: no torch.cuda.set_device, the model moved to
-- cuda:rank and DDP(model, {device_ids = {rank}}). Every collective DDP makes must run on the
-- model's GPU (with two ranks on cuda:0, NCCL refuses: "Duplicate GPU detected"); barrier too.
-- Run by test_dist.sh with nccl where there are two GPUs or more.
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed
dist.init_process_group("nccl", { timeout = 60 })
local rank, world = dist.get_rank(), dist.get_world_size()
H.check(torch.cuda.current_device() == 0, "the current device was left at 0")
torch.manual_seed(rank)
local model = nn.Linear(4, 2):to(rank)
local ddp = nn.parallel.DistributedDataParallel(model, { device_ids = { rank } })
local w0 = model.weight:detach():cpu()
local x = torch.full({ 3, 4 }, rank + 1.0)
ddp(x):sum():backward()
-- d(sum(W x + b))/dW = column sums of x, averaged over ranks: rows of (mean of r + 1) * 3
local want = 3 * (world + 1) / 2
H.close(model.weight.grad:cpu(), torch.full({ 2, 4 }, want), 1e-6, "the gradient averaged across ranks")
dist.barrier()
local all = {}
for r = 1, world do all[r] = torch.zeros(2, 4, { device = rank }) end
dist.all_gather(all, model.weight:detach())
for r = 1, world do H.close(all[r]:cpu(), w0, 0, "rank %d holds rank 0's weights", r - 1) end
dist.destroy_process_group()
H.report()
