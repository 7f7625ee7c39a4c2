-- Host cost of `c = a + b` on two 4-element float32 tensors from Lua: the median
-- over repeats of 10^6 calls, in microseconds per call (the result's __gc included:
-- the collector runs inside the timed loop). `host_overhead.lua N REPS cuda` does it
-- on the GPU (kernel launch included; the loop ends with a synchronize).
-- With a fourth argument BURST the calls come in bursts of BURST, each timed alone and
-- followed by an untimed synchronize: the host's cost without waiting on a full launch
-- queue (a stream of tiny kernels can run slower on the GPU than the host issues them).
-- bench/host_overhead.py is PyTorch's side of the same measurement.
local n = tonumber(arg and arg[1]) or 1000000
local reps = tonumber(arg and arg[2]) or 7
local dev = arg and arg[3] or "cpu"
local burst = tonumber(arg and arg[4])
local sync = dev == "cpu" and function() end or torch.cuda.synchronize

local a, b = torch.rand(4, {device = dev}), torch.rand(4, {device = dev})
local c
for _ = 1, 100000 do c = a + b end

local times = {}
for r = 1, reps do
  collectgarbage()
  local total = 0
  if burst then
    for _ = 1, n // burst do
      sync()
      local t0 = time.perf_counter()
      for _ = 1, burst do c = a + b end
      total = total + (time.perf_counter() - t0)
    end
    sync()
  else
    local t0 = time.perf_counter()
    for _ = 1, n do c = a + b end
    sync()
    total = time.perf_counter() - t0
  end
  times[r] = total / (burst and (n // burst) * burst or n) * 1e6
end
table.sort(times)
local median = times[(reps + 1) // 2]
print(string.format("nnrepl a+b (%s%s): median %.3f us/call (min %.3f, max %.3f, %d x %d calls)",
  dev, burst and (", bursts of " .. burst) or "", median, times[1], times[reps], reps, n))
assert(c:numel() == 4)
return median
