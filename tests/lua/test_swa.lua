-- torch.optim.swa_utils: AveragedModel (SWA and EMA, with and without buffers), SWALR and
-- update_bn, against averages, schedules and BatchNorm statistics worked out in plain Lua.
local T = ...
local swa = torch.optim.swa_utils

local function flat(t) return t:reshape(-1):tolist() end

-- set every parameter of m to fresh random values; returns them as flat lists
local function randomize(m)
  local vals = {}
  torch.no_grad(function()
    for i, p in ipairs(m:parameters()) do
      p:copy_(torch.randn(p.shape, { dtype = p.dtype }))
      vals[i] = flat(p)
    end
  end)
  return vals
end

T.test("AveragedModel: the running mean of the parameters", function()
  torch.manual_seed(1)
  local model = nn.Linear(3, 2)
  local avg = swa.AveragedModel(model)
  local sum = {}
  for k = 1, 5 do
    local vals = randomize(model)
    avg:update_parameters(model)
    for i, v in ipairs(vals) do
      sum[i] = sum[i] or {}
      for j, x in ipairs(v) do sum[i][j] = (sum[i][j] or 0) + x end
    end
    T.eq(avg.n_averaged:item(), k, "n_averaged")
    for i, p in ipairs(avg.module:parameters()) do
      local want = {}
      for j, x in ipairs(sum[i]) do want[j] = x / k end
      T.near(flat(p), want, 1e-6, "mean of " .. k .. " (tensor " .. i .. ")")
    end
  end
  -- forward is the averaged module's
  local x = torch.randn(4, 3)
  local W, b = avg.module.weight, avg.module.bias
  T.near(avg(x):tolist(), (x:matmul(W:t()) + b):tolist(), 1e-6, "forward")
  -- a deep copy: the model's later changes stay out until the next update
  local before = flat(W)
  randomize(model)
  T.eq(flat(W), before, "independent of the model")
  T.eq(#avg:parameters(), 2, "the averaged module's parameters")
  T.check(avg:state_dict()["n_averaged"] ~= nil, "n_averaged is a buffer")
end)

T.test("AveragedModel: EMA", function()
  torch.manual_seed(2)
  local model = nn.Linear(2, 2)
  local one = swa.AveragedModel(model, { avg_fn = swa.get_ema_avg_fn(0.9) })
  local multi = swa.AveragedModel(model, { multi_avg_fn = swa.get_ema_multi_avg_fn(0.9) })
  local ema
  for _ = 1, 4 do
    local vals = randomize(model)
    one:update_parameters(model)
    multi:update_parameters(model)
    if not ema then ema = vals
    else
      for i, v in ipairs(vals) do
        for j, x in ipairs(v) do ema[i][j] = 0.9 * ema[i][j] + 0.1 * x end
      end
    end
  end
  for i, p in ipairs(one.module:parameters()) do T.near(flat(p), ema[i], 1e-6, "avg_fn EMA " .. i) end
  for i, p in ipairs(multi.module:parameters()) do T.near(flat(p), ema[i], 1e-6, "multi_avg_fn EMA " .. i) end
  -- the SWA functions given explicitly agree with the default
  local a = swa.AveragedModel(model, { avg_fn = swa.get_swa_avg_fn() })
  local b = swa.AveragedModel(model, { multi_avg_fn = swa.get_swa_multi_avg_fn() })
  local c = swa.AveragedModel(model)
  for _ = 1, 3 do
    randomize(model)
    a:update_parameters(model); b:update_parameters(model); c:update_parameters(model)
  end
  T.near(flat(a.module.weight), flat(c.module.weight), 1e-6, "get_swa_avg_fn")
  T.near(flat(b.module.weight), flat(c.module.weight), 1e-6, "get_swa_multi_avg_fn")
  T.raises(function() swa.get_ema_avg_fn(1.5) end, "~Invalid decay value 1.5")
end)

T.test("AveragedModel: buffers", function()
  torch.manual_seed(3)
  local model = nn.BatchNorm1d(3)
  local follow = swa.AveragedModel(model)
  local averaged = swa.AveragedModel(model, { use_buffers = true })
  local means = {}
  for k = 1, 3 do
    model(torch.randn(8, 3) * k + k) -- training: running statistics move
    means[k] = flat(model.running_mean)
    follow:update_parameters(model)
    averaged:update_parameters(model)
  end
  T.near(flat(follow.module.running_mean), means[3], 1e-7, "use_buffers=false: the model's buffers")
  local want = {}
  for j = 1, 3 do want[j] = (means[1][j] + means[2][j] + means[3][j]) / 3 end
  T.near(flat(averaged.module.running_mean), want, 1e-6, "use_buffers=true: averaged")
  T.eq(averaged.module.num_batches_tracked:item(), 1, "an integer buffer: the mean of 1, 2, 3 taken step by step, truncated")
  T.raises(function() swa.AveragedModel(42) end, "~AveragedModel: model must be a module")
  T.raises(function() follow:update_parameters(nn.Linear(2, 2)) end, "~tensor 0 has shape")
end)

T.test("SWALR", function()
  local function opt_with(lr)
    local p = torch.zeros(2)
    p.requires_grad = true
    return optim.SGD({ p }, { lr = lr, momentum = 0.9 })
  end
  local anneal = {
    cos = function(t) return (1 - math.cos(math.pi * t)) / 2 end,
    linear = function(t) return t end,
  }
  for _, strategy in ipairs({ "cos", "linear" }) do
    local opt = opt_with(0.5)
    local s = swa.SWALR(opt, { swa_lr = 0.05, anneal_epochs = 4, anneal_strategy = strategy })
    T.eq(opt.param_groups[1].swa_lr, 0.05, "swa_lr in the group")
    for k = 0, 7 do
      if k > 0 then opt:step(); s:step() end
      local alpha = anneal[strategy](math.min(1, k / 4))
      T.near(s:get_last_lr()[1], 0.05 * alpha + 0.5 * (1 - alpha), 1e-12, strategy .. " step " .. k)
    end
  end
  local opt = opt_with(0.5)
  local s = swa.SWALR(opt, 0.01, 0)
  T.near(s:get_last_lr()[1], 0.01, 1e-15, "anneal_epochs=0: swa_lr at once")
  opt:step(); s:step()
  T.near(s:get_last_lr()[1], 0.01, 1e-15, "and stays")
  T.raises(function() swa.SWALR(opt_with(0.1), 0.01, { anneal_strategy = "step" }) end,
    "anneal_strategy must by one of 'cos' or 'linear', instead got step")
  T.raises(function() swa.SWALR(opt_with(0.1), 0.01, -1) end, "anneal_epochs must be equal or greater than 0, got -1")
  T.check(optim.lr_scheduler.SWALR == nil, "SWALR lives in swa_utils")
end)

T.test("update_bn", function()
  torch.manual_seed(4)
  local lin = nn.Linear(4, 3)
  local bn = nn.BatchNorm1d(3)
  local model = nn.Sequential(lin, bn)
  local X, Y = torch.randn(30, 4) * 2 + 1, torch.zeros(30)
  local loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), { batch_size = 10 })
  model:eval()
  swa.update_bn(loader, model)
  -- reference: each batch's mean and unbiased variance of lin(x), averaged over the batches
  local H = torch.no_grad(function() return lin(X) end):tolist()
  local mean, var = { 0, 0, 0 }, { 0, 0, 0 }
  for b = 0, 2 do
    for j = 1, 3 do
      local m = 0
      for r = 1, 10 do m = m + H[b * 10 + r][j] end
      m = m / 10
      local v = 0
      for r = 1, 10 do v = v + (H[b * 10 + r][j] - m) ^ 2 end
      mean[j], var[j] = mean[j] + m / 3, var[j] + v / 9 / 3
    end
  end
  T.near(flat(bn.running_mean), mean, 1e-5, "running_mean over the pass")
  T.near(flat(bn.running_var), var, 1e-5, "running_var over the pass")
  T.eq(bn.num_batches_tracked:item(), 3, "batches counted from zero")
  T.eq(bn.momentum, 0.1, "momentum restored")
  T.eq(model.training, false, "mode restored")
  -- a list of batches works too, and a model without BatchNorm never reads the loader
  swa.update_bn({ { X:narrow(0, 0, 15) }, { X:narrow(0, 15, 15) } }, model)
  T.eq(bn.num_batches_tracked:item(), 2, "list of batches")
  swa.update_bn(function() error("read") end, nn.Linear(2, 2))
  T.raises(function() swa.update_bn(loader, "model") end, "~update_bn: model must be a module")
  -- InstanceNorm is not reset (it is not a _BatchNorm)
  local inorm = nn.InstanceNorm1d(3, { track_running_stats = true })
  inorm.running_mean:fill_(5)
  swa.update_bn({ torch.randn(2, 3, 4) }, nn.Sequential(inorm))
  T.eq(flat(inorm.running_mean), { 5.0, 5.0, 5.0 }, "InstanceNorm untouched")
end)
