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
H.report()
