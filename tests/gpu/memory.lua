-- GPU memory over a long run, and out of memory (issue 5).
--
--   nnrepl tests/gpu/memory.lua [--device cuda] [--steps 10000]
--
-- 1. Document 001's MLP (784-32-10, batch 128, SGD) trains `steps` steps on 8 batches resident
--    on the device; the script never calls collectgarbage: dead tensors go through Lua's GC,
--    paced by the bytes each tensor reports. The peak is reset after step 10; the peak of steps
--    11..steps/10 is the reference, then the peak is reset again and the rest of the run must
--    stay within it (slack: 5% or 1 MiB, whichever is larger; one leaked 512-byte block a
--    step over 9,000 steps is past that).
--      memory flat: PASS|FAIL (...numbers...)
-- 2. A request far past the GPU (10^12 float32) must raise a Lua error saying out of memory,
--    what was asked for and what is in use; afterwards memory_allocated is what it was, and a
--    matmul and more training steps run and agree with the CPU.
--      out of memory: PASS|FAIL (...)
-- On a CPU (--device cpu, a smoke test) the Lua heap, collectgarbage("count"), stands in for
-- the device statistics, and the out-of-memory message need not say what is in use.
local args = { device = "cuda", steps = "10000" }
do
  local argv, i = { ... }, 1
  while i <= #argv do
    local k = argv[i]:match("^%-%-(.*)$")
    if not (k and args[k] and argv[i + 1]) then error("memory.lua: unknown argument " .. argv[i], 0) end
    args[k] = argv[i + 1]
    i = i + 2
  end
end
local device = torch.device(args.device)
local steps = math.tointeger(tonumber(args.steps))
local cuda = device.type == "cuda"
local MiB = 2 ^ 20

-- allocated bytes now, and the peak since the last reset
local cpu_peak = 0
local function allocated()
  if cuda then return torch.cuda.memory_allocated() end
  return collectgarbage("count") * 1024
end
local function peak()
  if cuda then return torch.cuda.max_memory_allocated() end
  return cpu_peak
end
local function reset_peak()
  if cuda then torch.cuda.reset_peak_memory_stats() else cpu_peak = allocated() end
end
local function sample()
  if not cuda then cpu_peak = math.max(cpu_peak, allocated()) end
end

torch.manual_seed(0)
local model = nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10)):to(device)
local opt = optim.SGD(model:parameters(), { lr = 0.1 })
local xs, ys = {}, {}
for i = 1, 8 do
  xs[i] = torch.rand(128, 1, 28, 28):to(device)
  ys[i] = torch.randint(0, 10, { 128 }):to(device)
end
local function step(i)
  local k = i % 8 + 1
  local loss = F.cross_entropy(model(xs[k]), ys[k])
  opt:zero_grad()
  loss:backward()
  opt:step()
  sample()
  return loss
end

-- ---- 1. flat memory ----
local split = math.max(steps // 10, 11)
local at10, early, late, loss
for i = 1, steps do
  loss = step(i)
  if i == 10 then
    if cuda then torch.cuda.synchronize() end
    at10 = allocated()
    reset_peak()
  elseif i == split then
    if cuda then torch.cuda.synchronize() end
    early = peak()
    reset_peak()
  end
end
if cuda then torch.cuda.synchronize() end
late = peak()
local at_end = allocated()
local final_loss = loss:item()
local slack = math.max(0.05 * early, MiB)
local flat = late <= early + slack and at_end <= early + slack and final_loss == final_loss
print(string.format("memory flat: %s (%s, %d steps: allocated after step 10 %.3f MiB, at the end %.3f MiB; " ..
  "peak of steps 11-%d %.3f MiB, of steps %d-%d %.3f MiB; last loss %.4f)",
  flat and "PASS" or "FAIL", cuda and "device memory" or "Lua heap", steps, at10 / MiB, at_end / MiB,
  split, early / MiB, split + 1, steps, late / MiB, final_loss))

-- ---- 2. out of memory, then business as usual ----
collectgarbage() -- a failed allocation collects dead tensors before it gives up: count only live ones
collectgarbage()
local before = cuda and torch.cuda.memory_allocated() or 0
local ok, err = pcall(torch.empty, 1000000000000, { device = device })
err = tostring(err)
local msg_ok = not ok and err:find("out of memory", 1, true) ~= nil
if cuda then
  msg_ok = msg_ok and err:find("Tried to allocate", 1, true) ~= nil and err:find("allocated by", 1, true) ~= nil
end
local after = cuda and torch.cuda.memory_allocated() or 0
-- normal work afterwards: a matmul against the CPU's, and more training steps
local a = torch.randn(512, 512)
local b = a:to(device):matmul(a:to(device)):cpu()
local ref = a:matmul(a)
local mm_err = (b - ref):abs():max():item() / ref:abs():max():item()
local l0 = step(1):item()
for i = 2, 50 do loss = step(i) end
local l1 = loss:item()
local usable = mm_err < 1e-4 and l1 == l1 and l0 == l0
local pass = msg_ok and after == before and usable
print(string.format("out of memory: %s (error %s; allocated before %.3f MiB, after %.3f MiB; matmul rel err %.2g; loss %.4f -> %.4f)",
  pass and "PASS" or "FAIL", ok and "NOT RAISED" or string.format("%q", (err:gsub("\n.*", ""))), before / MiB, after / MiB,
  mm_err, l0, l1))
if not (flat and pass) then os.exit(1) end
