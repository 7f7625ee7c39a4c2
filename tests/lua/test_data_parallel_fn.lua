-- nn.parallel.data_parallel, the functional DataParallel (dcgan's Generator and Discriminator
-- call it when ngpu > 1): its errors, and on CUDA its outputs and gradients against the
-- module called directly.
local T = ...
local dp = nn.parallel.data_parallel

T.test("errors", function()
  T.raises(function() dp(42, torch.randn(2, 3)) end, "~data_parallel: module must be an nn.Module, got int")
  T.raises(function() dp(nn.Linear(3, 2), torch.randn(2, 3), { foo = 1 }) end, "~unknown keyword 'foo'")
  T.raises(function() dp(nn.Linear(3, 2), torch.randn(2, 3), { module_kwargs = { scale = 2 } }) end,
    "~data_parallel: module_kwargs is not supported")
  if not torch.cuda.is_available() then
    -- PyTorch's data_parallel raises the same where no accelerator is present
    T.raises(function() dp(nn.Linear(3, 2), torch.randn(2, 3)) end, "~device type could not be determined")
  end
end)

-- y = model(x) and the gradients of (y * w):sum(), by data_parallel or directly
local function run(model, x, w, fn)
  model:zero_grad()
  local y = fn(x);
  (y * w):sum():backward()
  local grads = {}
  for _, p in ipairs(model:parameters()) do grads[#grads + 1] = p.grad:clone() end
  return y:detach(), grads
end

local function same_run(model, x, ids, msg)
  local w = torch.randn(x:size(0), 4, { device = x.device })
  local y0, g0 = run(model, x, w, function(t) return model(t) end)
  local y1, g1 = run(model, x, w, function(t) return dp(model, t, ids) end)
  T.check(torch.allclose(y1, y0, { atol = 1e-5 }), msg .. ": output")
  T.eq(y1.device.type, "cuda", msg .. ": output on cuda")
  for i = 1, #g0 do T.check(torch.allclose(g1[i], g0[i], { atol = 1e-5 }), msg .. ": gradient " .. i) end
end

if torch.cuda.is_available() then
  T.test("cuda", function()
    torch.manual_seed(0)
    local model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4)):cuda()
    local x = torch.randn(10, 6, { device = "cuda" })
    same_run(model, x, { 0 }, "one device")
    same_run(model, x, nil, "all devices")
    -- after an update of the weights the kept replicas follow
    torch.no_grad(function() for _, p in ipairs(model:parameters()) do p:add_(0.1) end end)
    same_run(model, x, nil, "after an update")
    -- a tuple of inputs
    local bil = nn.Bilinear(3, 5, 4):cuda()
    local a, b = torch.randn(6, 3, { device = "cuda" }), torch.randn(6, 5, { device = "cuda" })
    T.check(torch.allclose(dp(bil, { a, b }), bil(a, b), { atol = 1e-5 }), "two inputs")
    T.raises(function() dp(nn.Linear(6, 4), x, { 0 }) end,
      "~module must have its parameters and buffers on device cuda:0 (device_ids[0]) but found one of them on device: cpu")
  end)
else
  T.skip("no CUDA", 20)
end
