-- Gaps the PyTorch recipes' ports found (scripts/tutorials/recipes/): torch.utils.swap_tensors,
-- `with torch.device(d):` as torch.device(d):__enter__(), SummaryWriter() with no arguments.
-- Expected values are worked out by hand in the comments.
local T = ...

T.test("swap_tensors swaps data, shape, attributes", function()
  local t1, t2 = torch.arange(2), torch.arange(3)
  local alias = t1 -- another reference to t1 sees the swap, as a Python name would
  t1.tag = "one"
  torch.utils.swap_tensors(t1, t2)
  T.eq(t1:tolist(), { 0, 1, 2 }, "t1 holds arange(3)")
  T.eq(t2:tolist(), { 0, 1 }, "t2 holds arange(2)")
  T.eq(alias:tolist(), { 0, 1, 2 }, "alias is t1")
  T.eq(t2.tag, "one", "the attribute went with the tensor")
  T.eq(t1.tag, nil, "t1 has t2's (none)")
  T.raises(function() torch.utils.swap_tensors(t1, 3) end, "~Expected t2 to be a Tensor")
end)

T.test("swap_tensors keeps an optimizer's reference valid", function()
  local mod = nn.Linear(1, 2, { bias = false })
  local opt = optim.SGD(mod:parameters(), { lr = 0.5 })
  local w0 = mod.weight:detach():clone()
  torch.utils.swap_tensors(mod.weight, nn.Parameter(2 * mod.weight))
  T.check(rawequal(opt.param_groups[1].params[1], mod.weight), "the optimizer holds the module's weight")
  T.check(nn.is_parameter(mod.weight), "still a Parameter")
  -- loss = sum(w * 1) for x = 1: grad 1 everywhere, so a step takes w from 2*w0 to 2*w0 - 0.5
  mod(torch.ones(1, 1)):sum():backward()
  opt:step()
  T.eq(mod.weight:detach():tolist(), (2 * w0 - 0.5):tolist(), "the step reached the new weight")
end)

T.test("swap_tensors moves Parameter-ness", function()
  local p, t = nn.Parameter(torch.zeros(2)), torch.ones(3)
  torch.utils.swap_tensors(p, t)
  T.check(not nn.is_parameter(p) and nn.is_parameter(t), "the class goes with the tensor")
  T.eq(p:tolist(), { 1.0, 1.0, 1.0 }, "p holds the ones")
end)

T.test("torch.device as a context manager", function()
  T.eq(tostring(torch.get_default_device()), "cpu", "starts on the CPU")
  do
    local _ <close> = torch.device("meta"):__enter__()
    local m = nn.Linear(20, 30)
    T.eq(m.weight.device.type, "meta", "a module built inside is on meta")
    T.eq(torch.randn(128, 20).device.type, "meta", "factories follow")
    T.eq(torch.zeros(1, { device = "cpu" }).device.type, "cpu", "an explicit device= wins")
    T.eq(m(torch.randn(128, 20)).shape:totable(), { 128, 30 }, "shapes still compute")
  end
  T.eq(tostring(torch.get_default_device()), "cpu", "restored on leaving")
  local ok = pcall(function()
    local _ <close> = torch.device("meta"):__enter__()
    error("boom")
  end)
  T.check(not ok and torch.randn(1).device.type == "cpu", "restored after an error too")
end)

T.test("SummaryWriter() writes under runs/<date>_<host>", function()
  local dir = os.tmpname()
  os.remove(dir)
  local cwd = os.getenv("PWD")
  local pyos = require "pyos"
  pyos.makedirs(dir)
  pyos.chdir(dir)
  local ok, w = pcall(torch.utils.tensorboard.SummaryWriter)
  pyos.chdir(cwd)
  T.check(ok, "no error: " .. tostring(w))
  if ok then
    T.check(w.log_dir:match("^runs/%a%a%a%d%d_%d%d%-%d%d%-%d%d_") ~= nil, "PyTorch's default name: " .. w.log_dir)
    w:add_scalar("Loss/train", 0.25, 0)
    w:close()
  end
  os.execute("rm -rf '" .. dir .. "'")
end)
