-- The CPU pool (engine/cpu/parallel.c): large elementwise ops, a cast, a fill, where, sums over a
-- dim (and one of all, which stays on one thread) and F.mse_loss forward + backward at 1 thread and at more; best of 7 repeats of 10 calls.
--   nnrepl bench/cpu_threads.lua [elements=1000000] [threads=1,2]
-- Prints per op: "<op> <elements> <us at each thread count> <speedup of the last over the first>"
local pc = time.perf_counter
local N = tonumber(arg[1]) or 1000000
local counts = {}
for c in (arg[2] or "1,2"):gmatch("%d+") do counts[#counts + 1] = tonumber(c) end
-- OpenBLAS's idle threads spin (sched_yield) for tens of milliseconds after it loads and after each
-- threaded product; on 2 cores they take the second one from the pool: the timing starts later
time.sleep(0.3)
torch.manual_seed(0)
local x, y, out = torch.randn(N), torch.randn(N), torch.empty(N)
local xt = torch.randn(1000, N // 1000):t()
local xg = x:clone():requires_grad_(true)

local function best_us(f)
  for _ = 1, 3 do f() end
  local best = math.huge
  for _ = 1, 7 do
    local t0 = pc()
    for _ = 1, 10 do f() end
    best = math.min(best, (pc() - t0) / 10)
  end
  return best * 1e6
end

local cases = {
  { "add_out", function() torch.add(x, y, { out = out }) end },
  { "mul", function() return x * y end },
  { "exp", function() return x:exp() end },
  { "sigmoid", function() return x:sigmoid() end },
  { "add_transposed", function() return xt + xt end },
  { "to_float16", function() return x:half() end },
  { "fill_", function() out:fill_(1.5) end },
  { "where", function() return torch.where(x:gt(0), x, y) end },
  { "sum_dim1", function() return xt:t():sum(1) end },
  { "sum_dim0", function() return xt:t():sum(0) end },
  { "sum_all", function() return x:sum() end },
  { "mse_loss_fwd_bwd", function() F.mse_loss(xg, y):backward(); xg.grad = nil end },
}
local prior = torch.get_num_threads()
for _, c in ipairs(cases) do
  local us = {}
  for i, n in ipairs(counts) do
    torch.set_num_threads(n)
    us[i] = best_us(c[2])
  end
  local cols = {}
  for i = 1, #us do cols[i] = string.format("%9.1f", us[i]) end
  print(string.format("%-18s %9d %s   x%.2f", c[1], N, table.concat(cols, " "), us[1] / us[#us]))
end
torch.set_num_threads(prior)
