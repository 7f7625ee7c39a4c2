-- torch.optim.lr_scheduler: every scheduler's lr sequence over 30+ steps against the
-- closed forms worked out here (the schedulers use PyTorch's recursive forms), PyTorch
-- 2.11's recorded sequences for CosineAnnealingLR and OneCycleLR, ReduceLROnPlateau on
-- hand-worked metric sequences, initial_lr, get_last_lr, state_dict, step(epoch), errors.
local T = ...
local S = optim.lr_scheduler

local function leaf()
  local x = torch.zeros(2)
  x.requires_grad = true
  return x
end

-- An SGD (or Adam) optimizer with one group per lr given.
local function make(lrs, kind)
  local groups = {}
  for i, lr in ipairs(lrs or { 0.1 }) do groups[i] = { params = { leaf() }, lr = lr } end
  if kind == "Adam" then return optim.Adam(groups) end
  return optim.SGD(groups, { lr = 0.1, momentum = 0.9 })
end

-- Step sched n times; returns the get_last_lr() lists, the first from construction.
local function run(opt, sched, n)
  local out = { sched:get_last_lr() }
  for _ = 1, n do
    opt:step()
    sched:step()
    out[#out + 1] = sched:get_last_lr()
  end
  return out
end

-- got[e+1][g] against want(e, g, base) for every epoch e and group g
local function against(got, bases, want, tol, msg)
  local worst, where = 0, nil
  for i, row in ipairs(got) do
    for g, v in ipairs(row) do
      local w = want(i - 1, g, bases[g])
      local e = math.abs(v - w) / math.max(math.abs(w), 1e-300)
      if e > worst then worst, where = e, string.format("epoch %d group %d: %.17g vs %.17g", i - 1, g, v, w) end
    end
  end
  T.check(worst <= (tol or 1e-12), (msg or "sequence") .. ": " .. (where or ""))
end

T.test("StepLR", function()
  local opt = make({ 0.1, 0.05 })
  local s = S.StepLR(opt, { step_size = 7, gamma = 0.5 })
  T.eq(opt.param_groups[1].initial_lr, 0.1, "initial_lr set")
  T.eq(opt.param_groups[2].initial_lr, 0.05)
  T.eq(s.last_epoch, 0)
  local lrs = run(opt, s, 30)
  T.eq(s.last_epoch, 30)
  against(lrs, { 0.1, 0.05 }, function(e, _, b) return b * 0.5 ^ (e // 7) end, 1e-15, "StepLR")
  T.eq(lrs[7][1], 0.1, "no change before step_size")
  T.eq(lrs[8][1], 0.05, "halved at epoch 7")
  T.eq(opt.param_groups[1].lr, lrs[31][1], "the group's lr is the last lr")
  local l = s:get_last_lr()
  l[1] = 99
  T.check(s:get_last_lr()[1] ~= 99, "get_last_lr returns a copy")
  -- positional form and step(epoch) (closed form)
  local opt2 = make()
  local s2 = S.StepLR(opt2, 3, 0.1)
  s2:step(7)
  T.near(s2:get_last_lr(), { 0.1 * 0.1 ^ 2 }, 1e-15, "step(epoch)")
  T.eq(s2.last_epoch, 7)
end)

T.test("MultiStepLR", function()
  local opt = make({ 0.1, 1.0 })
  local lrs = run(opt, S.MultiStepLR(opt, { 3, 8, 8, 20 }, 0.3), 30)
  local ms = { 3, 8, 8, 20 }
  against(lrs, { 0.1, 1.0 }, function(e, _, b)
    local k = 0
    for _, m in ipairs(ms) do if m <= e then k = k + 1 end end
    return b * 0.3 ^ k
  end, 1e-14, "MultiStepLR (a milestone listed twice counts twice)")
end)

T.test("ExponentialLR and MultiplicativeLR", function()
  local opt = make()
  against(run(opt, S.ExponentialLR(opt, { gamma = 0.9 }), 30), { 0.1 }, function(e, _, b) return b * 0.9 ^ e end, 1e-13,
    "ExponentialLR")
  opt = make()
  against(run(opt, S.MultiplicativeLR(opt, function() return 0.95 end), 30), { 0.1 },
    function(e, _, b) return b * 0.95 ^ e end, 1e-13, "MultiplicativeLR")
end)

-- PyTorch 2.11: CosineAnnealingLR(SGD(lr=0.1), T_max=10, eta_min=0.001), 45 steps
local cosine_pytorch = { 0.1, 0.09757729755661011, 0.0905463412215599, 0.07959536998847742, 0.0657963412215599, 0.0505,
  0.03520365877844011, 0.02140463001152259, 0.010453658778440109, 0.0034227024433899004, 0.001, 0.0034227024433899004,
  0.01045365877844014, 0.02140463001152267, 0.035203658778440255, 0.05050000000000022, 0.06579634122156018,
  0.07959536998847777, 0.09054634122156031, 0.09757729755661054, 0.10000000000000045, 0.09757729755661054,
  0.09054634122156033, 0.07959536998847778, 0.0657963412215602, 0.050500000000000225, 0.03520365877844027,
  0.021404630011522683, 0.010453658778440154, 0.003422702443389916, 0.001, 0.0034227024433899004, 0.010453658778440112,
  0.021404630011522607, 0.03520365877844015, 0.050500000000000086, 0.06579634122156003, 0.07959536998847759,
  0.09054634122156009, 0.09757729755661032, 0.10000000000000024, 0.09757729755661038, 0.09054634122156012,
  0.07959536998847763, 0.06579634122156017, 0.05050000000000014 }

T.test("CosineAnnealingLR", function()
  local opt = make()
  local lrs = run(opt, S.CosineAnnealingLR(opt, { T_max = 10, eta_min = 0.001 }), 45)
  local closed = function(e, _, b) return 0.001 + (b - 0.001) * (1 + math.cos(math.pi * e / 10)) / 2 end
  local worst = 0
  for i, row in ipairs(lrs) do worst = math.max(worst, math.abs(row[1] - closed(i - 1, 1, 0.1))) end
  T.check(worst <= 1e-12, "closed form within 1e-12: " .. worst)
  local got = {}
  for i, row in ipairs(lrs) do got[i] = row[1] end
  T.eq(got, cosine_pytorch, "PyTorch 2.11's values exactly (the recursive form)")
  opt = make({ 0.2, 0.1 })
  against(run(opt, S.CosineAnnealingLR(opt, 7), 30), { 0.2, 0.1 },
    function(e, _, b) return b * (1 + math.cos(math.pi * e / 7)) / 2 end, 1e-12, "T_max=7, two groups")
  -- step(epoch) uses the closed form
  opt = make()
  local s = S.CosineAnnealingLR(opt, 10)
  s:step(4)
  T.near(s:get_last_lr()[1], 0.1 * (1 + math.cos(math.pi * 0.4)) / 2, 1e-15)
end)

T.test("LambdaLR", function()
  local opt = make({ 0.1, 0.2 })
  local f1 = function(e) return 0.95 ^ e + 0.01 * e end
  local f2 = function(e) return 1 / (e + 1) end
  local lrs = run(opt, S.LambdaLR(opt, { f1, f2 }), 30)
  against(lrs, { 0.1, 0.2 }, function(e, g, b) return b * (g == 1 and f1 or f2)(e) end, 0, "one lambda per group")
  opt = make({ 0.1, 0.2 })
  lrs = run(opt, S.LambdaLR(opt, f1), 5)
  T.eq(lrs[6][2], 0.2 * f1(5), "one lambda for every group")
  T.raises(function() S.LambdaLR(make(), { f1, f2 }) end, "Expected 1 lr_lambdas, but got 2")
end)

T.test("LinearLR, ConstantLR, PolynomialLR", function()
  local opt = make()
  against(run(opt, S.LinearLR(opt, 0.25, 0.9, 12), 30), { 0.1 },
    function(e, _, b) return b * (0.25 + (0.9 - 0.25) * math.min(12, e) / 12) end, 1e-12, "LinearLR")
  opt = make()
  against(run(opt, S.LinearLR(opt), 30), { 0.1 },
    function(e, _, b) return b * (1 / 3 + (1 - 1 / 3) * math.min(5, e) / 5) end, 1e-12, "LinearLR defaults")
  opt = make()
  against(run(opt, S.ConstantLR(opt, { factor = 0.5, total_iters = 4 }), 30), { 0.1 },
    function(e, _, b) return e < 4 and b * 0.5 or b end, 1e-15, "ConstantLR")
  opt = make()
  against(run(opt, S.PolynomialLR(opt, { total_iters = 10, power = 2.0 }), 30), { 0.1 },
    function(e, _, b) return b * (1 - math.min(10, e) / 10) ^ 2 end, 1e-12, "PolynomialLR")
end)

T.test("CosineAnnealingWarmRestarts", function()
  local opt = make()
  against(run(opt, S.CosineAnnealingWarmRestarts(opt, { T_0 = 5, T_mult = 2, eta_min = 0.01 }), 40), { 0.1 },
    function(e, _, b)
      local cur, len = e, 5
      while cur >= len do cur, len = cur - len, len * 2 end
      return 0.01 + (b - 0.01) * (1 + math.cos(math.pi * cur / len)) / 2
    end, 1e-15, "restarts after 5, 15, 35")
end)

-- PyTorch 2.11: OneCycleLR(SGD(lr=0.1, momentum=0.9), max_lr=0.5, total_steps=30), lr and momentum
local onecycle_lr = { 0.020000000000000018, 0.03826891219729123, 0.09029437251522865, 0.16815597623237843, 0.26,
  0.3518440237676215, 0.42970562748477137, 0.4817310878027088, 0.5, 0.49720771772545586, 0.4888932458737294,
  0.47524231600673683, 0.4565598673402244, 0.4332632349055847, 0.40587282697488153, 0.3750005, 0.34133589075057447,
  0.30563101096814466, 0.2686834486665125, 0.23131855133348753, 0.19437098903185537, 0.15866610924942562,
  0.12500150000000004, 0.09412917302511849, 0.0667387650944153, 0.043442132659775645, 0.024759683993263143,
  0.01110875412627059, 0.002794282274544094, 2e-06 }
local onecycle_mom = { 0.95, 0.9461939766255643, 0.9353553390593273, 0.9191341716182544, 0.8999999999999999,
  0.8808658283817454, 0.8646446609406726, 0.8538060233744357, 0.85, 0.8505584586887436, 0.8522213597106929,
  0.854951556604879, 0.8586880612842003, 0.8633474064085087, 0.8688255099070633, 0.875, 0.8817329487816802,
  0.8888739533021842, 0.8962634953206787, 0.9037365046793212, 0.9111260466978157, 0.9182670512183198,
  0.9249999999999999, 0.9311744900929366, 0.9366525935914912, 0.9413119387157997, 0.945048443395121,
  0.947778640289307, 0.9494415413112564, 0.95 }

-- OneCycleLR's schedule written out: phases end at pct*T-1 (and 2*pct*T-2), then T-1
local function onecycle(e, T_, pct, lo, hi, fin, cos, three)
  local function an(a, b, t)
    if cos then return b + (a - b) / 2 * (math.cos(math.pi * t) + 1) end
    return a + (b - a) * t
  end
  local e1 = pct * T_ - 1
  if e <= e1 then return an(lo, hi, e / e1) end
  if three then
    local e2 = 2 * pct * T_ - 2
    if e <= e2 then return an(hi, lo, (e - e1) / (e2 - e1)) end
    return an(lo, fin, (e - e2) / (T_ - 1 - e2))
  end
  return an(hi, fin, (e - e1) / (T_ - 1 - e1))
end

T.test("OneCycleLR", function()
  local opt = make()
  local s = S.OneCycleLR(opt, 0.5, { total_steps = 30 })
  T.near(opt.param_groups[1].initial_lr, 0.02, 1e-15, "initial_lr = max_lr / div_factor")
  T.eq(opt.param_groups[1].max_lr, 0.5)
  T.near(opt.param_groups[1].min_lr, 0.02 / 1e4, 1e-15)
  local lrs, moms = { s:get_last_lr()[1] }, { opt.param_groups[1].momentum }
  for _ = 1, 29 do
    opt:step()
    s:step()
    lrs[#lrs + 1] = s:get_last_lr()[1]
    moms[#moms + 1] = opt.param_groups[1].momentum
  end
  T.eq(lrs, onecycle_lr, "PyTorch 2.11's lr values")
  T.eq(moms, onecycle_mom, "PyTorch 2.11's momentum values")
  local rows = {}
  for i, v in ipairs(lrs) do rows[i] = { v } end
  against(rows, { 0.5 }, function(e) return onecycle(e, 30, 0.3, 0.02, 0.5, 2e-6, true) end, 1e-12, "cos schedule")
  s:step() -- epoch 30 is still allowed (PyTorch's check is last_epoch > total_steps)
  T.raises(function() s:step() end, "Tried to step 31 times. The specified number of total steps is 30")

  -- linear, three phases, two groups, Adam's beta1 cycles
  opt = make({ 0.1, 0.1 }, "Adam")
  s = S.OneCycleLR(opt, { 0.5, 0.8 }, { epochs = 3, steps_per_epoch = 10, anneal_strategy = "linear", three_phase = true,
    pct_start = 0.25, div_factor = 10, final_div_factor = 100, base_momentum = 0.8, max_momentum = 0.9 })
  local got, betas = { s:get_last_lr() }, { opt.param_groups[2].betas[1] }
  for _ = 1, 29 do
    opt:step()
    s:step()
    got[#got + 1] = s:get_last_lr()
    betas[#betas + 1] = opt.param_groups[2].betas[1]
  end
  against(got, { 0.5, 0.8 }, function(e, _, m) return onecycle(e, 30, 0.25, m / 10, m, m / 1000, false, true) end, 1e-12,
    "linear three-phase")
  local brows = {}
  for i, v in ipairs(betas) do brows[i] = { v } end
  against(brows, { 0 }, function(e)
    local e1, e2 = 0.25 * 30 - 1, 2 * 0.25 * 30 - 2
    if e <= e1 then return 0.9 + (0.8 - 0.9) * e / e1 end
    if e <= e2 then return 0.8 + (0.9 - 0.8) * (e - e1) / (e2 - e1) end
    return 0.9
  end, 1e-12, "beta1 cycles")
  T.eq(opt.param_groups[1].betas[2], 0.999, "beta2 kept")

  T.raises(function() S.OneCycleLR(make(), { max_lr = 0.1 }) end,
    "You must define either total_steps OR (epochs AND steps_per_epoch)")
  T.raises(function() S.OneCycleLR(make(), { max_lr = 0.1, total_steps = 0 }) end, "Expected positive integer total_steps, but got 0")
  T.raises(function() S.OneCycleLR(make(), { max_lr = 0.1, total_steps = 10, pct_start = 1.5 }) end,
    "Expected float between 0 and 1 pct_start, but got 1.5")
  T.raises(function() S.OneCycleLR(make(), { max_lr = 0.1, total_steps = 10, anneal_strategy = "x" }) end,
    "anneal_strategy must be one of 'cos' or 'linear', instead got x")
  local plain = optim.RMSprop({ leaf() })
  plain.defaults.momentum = nil
  T.raises(function() S.OneCycleLR(plain, { max_lr = 0.1, total_steps = 10 }) end,
    "optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
end)

T.test("SequentialLR", function()
  local opt = make()
  local s = S.SequentialLR(opt, { S.LinearLR(opt, 0.1, 1.0, 5), S.CosineAnnealingLR(opt, 10) }, { 5 })
  against(run(opt, s, 30), { 0.1 }, function(e, _, b)
    if e < 5 then return b * (0.1 + 0.9 * e / 5) end
    return b * (1 + math.cos(math.pi * (e - 5) / 10)) / 2
  end, 1e-12, "LinearLR warmup then cosine")
end)

T.test("ReduceLROnPlateau", function()
  -- min mode, rel threshold 0.1 (better means < 0.9 * best), patience 2, cooldown 1, min_lr 0.2,
  -- worked by hand: epochs 2-4 are bad -> reduce at 4; 5 is cooldown (its bad epoch is
  -- forgotten), 6-8 bad -> reduce at 8; 9 improves (8.9 < 9.0; 9.0 itself did not);
  -- 12 improves; 13-15 bad -> 0.125 is clipped to min_lr 0.2 at 15; 19 would go below
  -- min_lr: no change; 20 improves.
  local opt = make({ 1.0 })
  local s = S.ReduceLROnPlateau(opt, { factor = 0.5, patience = 2, cooldown = 1, threshold = 0.1, min_lr = 0.2 })
  T.eq(opt.param_groups[1].initial_lr, nil, "ReduceLROnPlateau sets no initial_lr (as PyTorch)")
  local metrics = { 10, 9.5, 9.2, 9.1, 9.0, 9.0, 9.0, 9.0, 8.9, 8.5, 8.5, 7, 7, 7, 7, 7, 7, 7, 7, 6.2 }
  local want = { 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2 }
  local got, printed = {}, {}
  local real_print = print
  print = function(...) printed[#printed + 1] = table.concat({ ... }, "\t") end
  local ok, err = pcall(function()
    for i, m in ipairs(metrics) do
      s:step(m)
      got[i] = s:get_last_lr()[1]
    end
  end)
  print = real_print
  T.check(ok, tostring(err))
  T.near(got, want, 1e-15, "hand-worked lr sequence")
  T.eq(#printed, 0, "silent unless verbose")
  T.eq(s.last_epoch, 20)
  T.eq(s.best, 6.2)
  T.eq(s:is_better(9.0, 10), false, "rel threshold: 9.0 is not better than 10")
  T.eq(s:is_better(8.99, 10), true)

  -- the same with verbose: PyTorch's message
  opt = make({ 1.0 })
  s = S.ReduceLROnPlateau(opt, { factor = 0.5, patience = 2, cooldown = 1, threshold = 0.1, min_lr = 0.2, verbose = true })
  print = function(...) printed[#printed + 1] = table.concat({ ... }, "\t") end
  ok, err = pcall(function() for _, m in ipairs(metrics) do s:step(torch.tensor(m)) end end)
  print = real_print
  T.check(ok, tostring(err))
  T.eq(printed, { "Epoch 00004: reducing learning rate of group 0 to 5.0000e-01.",
    "Epoch 00008: reducing learning rate of group 0 to 2.5000e-01.",
    "Epoch 00015: reducing learning rate of group 0 to 2.0000e-01." }, "verbose messages")

  -- max mode, absolute threshold: 1 1 1 2 2 2 with patience 1 reduces at epochs 3 and 6
  opt = make({ 0.1, 0.4 })
  s = S.ReduceLROnPlateau(opt, "max", 0.1, 1, 0.15, "abs")
  got = {}
  for i, m in ipairs({ 1, 1, 1, 2, 2, 2 }) do
    s:step(m)
    got[i] = s:get_last_lr()
  end
  T.near(got, { { 0.1, 0.4 }, { 0.1, 0.4 }, { 0.01, 0.04 }, { 0.01, 0.04 }, { 0.01, 0.04 }, { 0.001, 0.004 } }, 1e-15,
    "max mode, abs threshold, two groups")
  -- eps: a reduction smaller than eps is skipped
  opt = make({ 1e-9 })
  s = S.ReduceLROnPlateau(opt, { patience = 0 })
  s:step(1); s:step(1)
  T.eq(opt.param_groups[1].lr, 1e-9, "changes below eps are ignored")

  local sd = s:state_dict()
  T.eq(sd.optimizer, nil)
  T.eq(sd.mode_worse, math.huge)
  T.eq(sd.patience, 0)
  T.raises(function() S.ReduceLROnPlateau(make(), { factor = 1.0 }) end, "Factor should be < 1.0.")
  T.raises(function() S.ReduceLROnPlateau(make(), { mode = "avg" }) end, "mode avg is unknown!")
  T.raises(function() S.ReduceLROnPlateau(make(), { threshold_mode = "x" }) end, "threshold mode x is unknown!")
  T.raises(function() S.ReduceLROnPlateau(make({ 0.1, 0.2 }), { min_lr = { 0.1 } }) end, "expected 2 min_lrs, got 1")
end)

T.test("verbose", function()
  local opt = make()
  local printed = {}
  local real_print = print
  print = function(...) printed[#printed + 1] = table.concat({ ... }, "\t") end
  local ok, err = pcall(function()
    local s = S.StepLR(opt, { step_size = 1, gamma = 0.5, verbose = true })
    s:step()
  end)
  print = real_print
  T.check(ok, tostring(err))
  T.eq(printed, { "Adjusting learning rate of group 0 to 1.0000e-01.", "Adjusting learning rate of group 0 to 5.0000e-02." })
end)

T.test("state_dict", function()
  local function pair()
    local opt = make({ 0.1, 0.3 })
    return opt, S.StepLR(opt, 4, 0.5)
  end
  local oa, a = pair()
  for _ = 1, 10 do oa:step(); a:step() end
  local sd = a:state_dict()
  T.eq(sd.last_epoch, 10)
  T.eq(sd.step_size, 4)
  T.eq(sd.gamma, 0.5)
  T.eq(sd.base_lrs, { 0.1, 0.3 })
  T.eq(sd._step_count, 11)
  T.eq(sd.optimizer, nil, "no optimizer in the state dict")
  T.eq(#sd._last_lr, 2)
  local ob, b = pair()
  ob:load_state_dict(oa:state_dict())
  b:load_state_dict(sd)
  for _ = 1, 10 do
    oa:step(); a:step()
    ob:step(); b:step()
  end
  T.eq(b:get_last_lr(), a:get_last_lr(), "continues identically")
  T.eq(b.last_epoch, 20)

  -- OneCycleLR's state (phases, anneal type) round-trips too
  local o1 = make()
  local c1 = S.OneCycleLR(o1, 0.5, { total_steps = 30 })
  for _ = 1, 10 do o1:step(); c1:step() end
  local o2 = make()
  local c2 = S.OneCycleLR(o2, 0.5, { total_steps = 30 })
  o2:load_state_dict(o1:state_dict())
  c2:load_state_dict(c1:state_dict())
  for _ = 1, 10 do
    o1:step(); c1:step()
    o2:step(); c2:step()
  end
  T.eq(c2:get_last_lr(), c1:get_last_lr())
  T.eq(o2.param_groups[1].momentum, o1.param_groups[1].momentum)
end)

T.test("errors and resuming", function()
  local opt = make()
  T.raises(function() S.StepLR(opt) end, "StepLR.__init__() missing 1 required positional argument: 'step_size'")
  T.raises(function() S.StepLR(opt, { step_size = 2, gama = 0.1 }) end, "StepLR.__init__() got an unexpected keyword argument 'gama'")
  T.raises(function() S.LinearLR(opt, { start_factor = 0 }) end,
    "Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
  T.raises(function() S.LinearLR(opt, { end_factor = 2 }) end, "Ending multiplicative factor expected to be between 0 and 1.")
  T.raises(function() S.ConstantLR(opt, { factor = 2 }) end, "Constant multiplicative factor expected to be between 0 and 1.")
  T.raises(function() S.CosineAnnealingWarmRestarts(opt, 0) end, "Expected positive integer T_0, but got 0")
  T.raises(function() S.StepLR(make(), 3, 0.1, 4) end,
    "~param 'initial_lr' is not specified in param_groups[0] when resuming scheduler with last_epoch >= 0.")
  -- resuming: initial_lr present, last_epoch given
  local o = make()
  S.StepLR(o, 3, 0.1)
  o.param_groups[1].lr = 0.05
  local s = S.StepLR(o, 3, 0.1, 5)
  T.eq(s.last_epoch, 6, "resumed at last_epoch + 1")
  T.near(s:get_last_lr(), { 0.005 }, 1e-15, "epoch 6 multiplies the current lr")
end)

-- CyclicLR's triangle written out: position p in the cycle, up then down, scaled per cycle or step
local function triangle(t, base, max, up, down, scale)
  local total = up + down
  local cycle, p = t // total + 1, t % total
  local h = p <= up and p / up or (total - p) / down
  return base + (max - base) * h * scale(cycle, t)
end

T.test("CyclicLR", function()
  local opt = make({ 0.5 })
  local s = S.CyclicLR(opt, 0.01, 0.1, { step_size_up = 4 })
  T.eq(opt.param_groups[1].lr, 0.01, "lr starts at base_lr")
  T.eq(opt.param_groups[1].momentum, 0.9, "momentum starts at max_momentum")
  local lrs, moms = { s:get_last_lr()[1] }, { opt.param_groups[1].momentum }
  for _ = 1, 20 do
    opt:step()
    s:step()
    lrs[#lrs + 1] = s:get_last_lr()[1]
    moms[#moms + 1] = opt.param_groups[1].momentum
  end
  for t = 0, 20 do
    local one = function() return 1 end
    T.near(lrs[t + 1], triangle(t, 0.01, 0.1, 4, 4, one), 1e-12, "triangular lr at " .. t)
    -- momentum mirrors the rate: max_momentum at base_lr, base_momentum at max_lr
    local h = (triangle(t, 0.01, 0.1, 4, 4, one) - 0.01) / 0.09
    T.near(moms[t + 1], 0.9 - 0.1 * h, 1e-12, "momentum at " .. t)
  end
  T.near(lrs[5], 0.1, 1e-15, "the peak after step_size_up")

  -- triangular2 halves each cycle; two groups; uneven up and down; Adam's beta1
  opt = make({ 0.1, 0.1 }, "Adam")
  s = S.CyclicLR(opt, { 0.001, 0.002 }, { 0.01, 0.02 }, { step_size_up = 3, step_size_down = 5, mode = "triangular2",
    base_momentum = 0.85, max_momentum = 0.95 })
  local got = run(opt, s, 30)
  local half = function(cycle) return 1 / 2 ^ (cycle - 1) end
  for t = 0, 30 do
    T.near(got[t + 1][1], triangle(t, 0.001, 0.01, 3, 5, half), 1e-12, "triangular2 group 0 at " .. t)
    T.near(got[t + 1][2], triangle(t, 0.002, 0.02, 3, 5, half), 1e-12, "triangular2 group 1 at " .. t)
  end
  local h = (got[31][1] - 0.001) / 0.009
  T.near(opt.param_groups[1].betas[1], 0.95 - 0.1 * h, 1e-12, "beta1 cycles")
  T.eq(opt.param_groups[1].betas[2], 0.999, "beta2 kept")

  -- exp_range scales by gamma^step; a custom scale_fn by cycle
  opt = make()
  s = S.CyclicLR(opt, 0.01, 0.1, { step_size_up = 2, mode = "exp_range", gamma = 0.9, cycle_momentum = false })
  got = run(opt, s, 12)
  for t = 0, 12 do
    T.near(got[t + 1][1], triangle(t, 0.01, 0.1, 2, 2, function(_, step) return 0.9 ^ step end), 1e-12, "exp_range at " .. t)
  end
  T.eq(opt.param_groups[1].momentum, 0.9, "cycle_momentum=false leaves momentum")
  opt = make()
  s = S.CyclicLR(opt, 0.01, 0.1, { step_size_up = 2, scale_fn = function(c) return 1 / c end, cycle_momentum = false })
  got = run(opt, s, 12)
  for t = 0, 12 do
    T.near(got[t + 1][1], triangle(t, 0.01, 0.1, 2, 2, function(c) return 1 / c end), 1e-12, "scale_fn at " .. t)
  end

  -- state_dict round trip: a new scheduler continues the sequence
  opt = make()
  s = S.CyclicLR(opt, 0.01, 0.1, { step_size_up = 3, mode = "triangular2" })
  run(opt, s, 7)
  local opt2 = make()
  local s2 = S.CyclicLR(opt2, 0.01, 0.1, { step_size_up = 3, mode = "triangular2" })
  s2:load_state_dict(s:state_dict())
  s:step(); s2:step()
  T.near(s2:get_last_lr()[1], s:get_last_lr()[1], 1e-15, "resumed")
  T.near(s:get_last_lr()[1], triangle(8, 0.01, 0.1, 3, 3, half), 1e-12, "step 8")

  T.raises(function() S.CyclicLR(make(), 0.01, 0.1, { mode = "saw" }) end, "mode is invalid and scale_fn is None")
  T.raises(function() S.CyclicLR(optim.Adagrad({ leaf() }), 0.01, 0.1) end,
    "optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
  T.raises(function() S.CyclicLR(make(), 0.01) end, "CyclicLR.__init__() missing 1 required positional argument: 'max_lr'")
  T.raises(function() S.CyclicLR(make({ 0.1, 0.1 }), { 0.1 }, 0.2) end, "expected 2 values for base_lr, got 1")
end)
