-- A rank started by hand, as document 004's scripts are:
--   nnrepl byhand.lua --rank R --world_size W --init_method tcp://127.0.0.1:P
local opts = {}
for i = 1, #arg, 2 do opts[arg[i]:gsub("^%-%-", "")] = arg[i + 1] end
local dist = torch.distributed
dist.init_process_group("gloo", { init_method = opts.init_method, rank = tonumber(opts.rank) // 1,
  world_size = tonumber(opts.world_size) // 1, timeout = 30 })
local rank, world = dist.get_rank(), dist.get_world_size()
local t = torch.full({ 5 }, rank + 1.0)
dist.all_reduce(t)
local expect = world * (world + 1) / 2
local ok = t:eq(expect):all():item() and rank == tonumber(opts.rank)
dist.destroy_process_group()
print(string.format("rank %d: %s", rank, ok and "ok" or ("bad " .. tostring(t))))
os.exit(ok and 0 or 1)
