-- nn.DataParallel on every GPU of the machine against the module on one GPU, and
-- document 003's per-replica sizes (30 rows over 2 GPUs: 15 and 15).
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local n = torch.cuda.device_count()
print("GPUs: " .. n)
local Model = nn.Module:extend("Model")
function Model:__init(i, o) self.fc = nn.Linear(i, o) end
function Model:forward(x)
  local out = self.fc(x)
  print(string.format("\tIn Model: input size %s output size %s", tostring(x:size()), tostring(out:size())))
  return out
end
torch.manual_seed(0)
local single = Model(5, 2):cuda()
torch.manual_seed(0)
local model = nn.DataParallel(Model(5, 2)):to("cuda")
local x = torch.randn(30, 5)
local out = model(x:cuda())
print(string.format("Outside: input size %s output_size %s", tostring(x:size()), tostring(out:size())))
H.check(out.device.type == "cuda" and out:size(0) == 30, "gathered on cuda:0")
local ref = single(x:cuda())
H.close(out:cpu(), ref:detach():cpu(), 1e-5, "DataParallel forward against one GPU")
out:sum():backward()
ref:sum():backward()
H.close(model.module.fc.weight.grad:cpu(), single.fc.weight.grad:cpu(), 1e-4, "gradients reduced into the module's parameters")

-- several training steps: the kept replicas follow the optimizer's updates
torch.manual_seed(1)
local net1 = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)):cuda()
torch.manual_seed(1)
local dp = nn.DataParallel(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))):cuda()
local o1 = torch.optim.SGD(net1:parameters(), { lr = 0.1, momentum = 0.9 })
local o2 = torch.optim.SGD(dp:parameters(), { lr = 0.1, momentum = 0.9 })
local xs, ys = torch.randn(6, 32, 8):cuda(), torch.randint(0, 3, { 6, 32 }):cuda()
local first
for s = 0, 5 do
  for _, pair in ipairs({ { net1, o1 }, { dp, o2 } }) do
    pair[2]:zero_grad()
    F.cross_entropy(pair[1](xs[s]), ys[s]):backward()
    pair[2]:step()
  end
  if n > 1 then
    first = first or dp._replicas[2].module
    H.check(dp._replicas[2].module == first, "step %d: the replica is kept", s)
  end
end
for i, p in ipairs(net1:parameters()) do
  H.close(dp.module:parameters()[i]:cpu(), p:detach():cpu(), 1e-5, "parameter %d after 6 DataParallel steps", i)
end
do -- evaluation without grad sees the latest parameters
  local _ <close> = torch.no_grad()
  H.close(dp(xs[0]):cpu(), net1(xs[0]):cpu(), 1e-5, "no_grad forward after the steps")
  dp.module[0].weight:add_(1)
  net1[0].weight:add_(1)
  H.close(dp(xs[1]):cpu(), net1(xs[1]):cpu(), 1e-5, "no_grad forward after an in-place change")
  -- a change seen by a 2-row batch (2 replicas used) reaches the replicas it did not use
  dp.module[2].bias:add_(1)
  net1[2].bias:add_(1)
  H.close(dp(xs[2]:narrow(0, 0, 2)):cpu(), net1(xs[2]:narrow(0, 0, 2)):cpu(), 1e-5, "no_grad forward of 2 rows")
  H.close(dp(xs[3]):cpu(), net1(xs[3]):cpu(), 1e-5, "then of a full batch on every replica")
end

do -- model:eval() / train() after the first forward reach the kept replicas (dropout, batch norm)
  torch.manual_seed(3)
  local net = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.Dropout(0.5), nn.Linear(16, 3)):cuda()
  local dpn = nn.DataParallel(net)
  local x = torch.randn(32, 8):cuda()
  dpn(x) -- training mode: the replicas are built
  dpn:eval()
  local _ <close> = torch.no_grad()
  local a, b = dpn(x), net(x)
  H.close(a:cpu(), b:cpu(), 1e-5, "after eval(): every replica without dropout, with running statistics")
  net[2].p = 0.0
  dpn:train()
  local sizes = nn.parallel.chunk_sizes(32, n)
  local last = sizes[#sizes]
  H.close(dpn(x):narrow(0, 32 - last, last):cpu(), net(x:narrow(0, 32 - last, last)):cpu(), 1e-5,
    "after train() with p = 0: the last replica uses its own batch statistics and no dropout")
end

do -- the reduction overlaps backward: a parameter no replica used keeps no gradient, and a
  -- second backward through the same graph (retain_graph) adds its reduced gradients again
  local Two = nn.Module:extend("Two")
  function Two:__init() self.used, self.unused = nn.Linear(4, 3), nn.Linear(4, 3) end
  function Two:forward(x) return self.used(x) end
  torch.manual_seed(2)
  local ref = Two():cuda()
  torch.manual_seed(2)
  local par = nn.DataParallel(Two()):cuda()
  local x = torch.randn(16, 4):cuda()
  local lr, lp = ref(x):pow(2):sum(), par(x):pow(2):sum()
  lr:backward({ retain_graph = true }); lr:backward()
  lp:backward({ retain_graph = true }); lp:backward()
  H.close(par.module.used.weight.grad:cpu(), ref.used.weight.grad:cpu(), 1e-4, "two backward passes through one graph")
  H.close(par.module.used.bias.grad:cpu(), ref.used.bias.grad:cpu(), 1e-4, "two backward passes: bias")
  H.check(par.module.unused.weight.grad == nil, "a parameter no replica used has no gradient")
end
do -- parameters and buffers must be on device_ids[0] (PyTorch's message)
  local want = "module must have its parameters and buffers on device cuda:0 (device_ids[0]) but found one of them on device: cpu"
  local ok, err = pcall(nn.DataParallel(nn.Linear(4, 2)), torch.randn(8, 4):cuda())
  H.check(not ok and tostring(err):find(want, 1, true), "parameters on the CPU: %s", tostring(err))
  local Buf = nn.Module:extend("Buf")
  function Buf:__init() self.fc = nn.Linear(4, 2):cuda(); self:register_buffer("scale", torch.ones(1)) end
  function Buf:forward(x) return self.fc(x) end
  ok, err = pcall(nn.DataParallel(Buf()), torch.randn(8, 4):cuda())
  H.check(not ok and tostring(err):find(want, 1, true), "a buffer on the CPU: %s", tostring(err))
end
if n > 1 then -- a block another stream used, freed while another GPU is current, is not waited for
  local side = torch.cuda.Stream(1)
  local a = torch.rand(4096, 4096):to("cuda:1")
  local t = torch.empty(1 << 20):to("cuda:1")
  torch.cuda.synchronize(1)
  do
    local _ <close> = torch.cuda.stream(side)
    for _ = 1, 40 do a:mm(a) end
  end
  t:record_stream(side)
  local clock = require("time").perf_counter
  local _ <close> = torch.cuda.device(0)
  local t0 = clock()
  t = nil
  collectgarbage()
  local t1 = clock()
  torch.cuda.synchronize(1)
  local free_ms, left_ms = (t1 - t0) * 1e3, (clock() - t1) * 1e3
  H.check(left_ms > 10 and free_ms < left_ms / 2, "the free waited for the side stream: %.1f ms, then %.1f ms of its work left", free_ms, left_ms)
end
if n > 1 then -- backward takes the devices' ready nodes in turn, not one device's whole chain first
  local order, ws = {}, {}
  local function chain(dev)
    local y = torch.ones(8):to(dev)
    for _ = 1, 4 do
      local w = torch.full({ 8 }, 2.0):to(dev):requires_grad_()
      w:register_post_accumulate_grad_hook(function(p) order[#order + 1] = p.device.index end)
      ws[#ws + 1] = w
      y = y * w
    end
    return y:sum()
  end
  local l0, l1 = chain("cuda:0"), chain("cuda:1")
  local loss = l0 + l1:to("cuda:0")
  loss:backward()
  local switches = 0
  for i = 2, #order do if order[i] ~= order[i - 1] then switches = switches + 1 end end
  H.check(#order == 8 and switches >= 6, "gradients by device, in the order they were ready: %s", table.concat(order, " "))
  for _, w in ipairs(ws) do H.close(w.grad:cpu(), torch.full({ 8 }, 8.0), 0, "each factor's gradient") end
end
H.report()
