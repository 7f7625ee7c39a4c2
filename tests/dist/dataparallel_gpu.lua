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
H.report()
