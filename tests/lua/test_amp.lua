-- Mixed precision from Lua: torch.autocast as a <close> value, a function runner and a
-- decorator (wrap) on a module's forward; aliases; nesting and enabled=false; the dtypes
-- the policy gives F and nn ops under CPU autocast (bfloat16); gradients reaching
-- float32 parameters in float32; one cast per parameter per region; on CUDA, the float16
-- copies the optimizer step writes, taken instead of casts (bit for bit the same forward
-- and updates as fresh casts, through skipped steps and in-place changes); autocast's linear on
-- CUDA giving float32 weight and bias gradients rounded once (against float64) whose inf
-- check reads the product's operands; conv2d's bias gradient summed in float32; GradScaler on CPU
-- tensors: scaling, a skipped step on inf (parameters unchanged bit for bit, scale
-- halved), growth after growth_interval clean steps, a scale sequence worked out from
-- PyTorch's rule, unscale_ + clipping + step, state_dict round trips, a disabled scaler,
-- its errors; memory formats (channels_last).
local T = ...

local function bits(t) -- exact contents, for bit-for-bit comparisons
  return t:detach():reshape(-1):to(torch.float64):tolist()
end

local function stats() return torch._amp.stats() end

-- One scaled step: zero_grad, the loss from loss_of() under autocast on device, backward, poke()
-- (to plant an inf or a nan) where given, then the scaler's step and update. Returns whether
-- param changed, i.e. the step was not skipped.
local function scaled_step(opt, scaler, device, param, loss_of, poke)
  opt:zero_grad()
  do
    local _ <close> = torch.autocast(device)
    scaler:scale(loss_of()):backward()
  end
  if poke then poke() end
  local before = param:detach():clone()
  scaler:step(opt)
  scaler:update()
  return not torch.equal(param:detach(), before)
end

T.test("autocast forms", function()
  T.check(not torch.is_autocast_enabled("cpu"), "off at start")
  do
    local r <close> = torch.autocast("cpu")
    T.check(torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16, "on in the region")
    T.eq(torch.mm(torch.randn(2, 3), torch.randn(3, 2)).dtype, torch.bfloat16, "mm in bfloat16")
  end
  T.check(not torch.is_autocast_enabled("cpu"), "closed")
  -- function runner, results passed through
  local a, b = torch.autocast("cpu", { dtype = torch.float16 }, function()
    return torch.mm(torch.randn(2, 3), torch.randn(3, 2)).dtype, torch.get_autocast_dtype("cpu")
  end)
  T.check(a == torch.float16 and b == torch.float16, "runner with dtype")
  T.eq(torch.autocast("cpu", function() return 7 end), 7, "runner without options")
  T.eq(torch.amp.autocast, torch.autocast, "torch.amp.autocast alias")
  -- an error inside the function still closes the region
  local ok = pcall(torch.autocast, "cpu", function() error("boom") end)
  T.check(not ok and not torch.is_autocast_enabled("cpu"), "closed after an error")
  -- nesting and enabled=false
  do
    local _ <close> = torch.autocast("cpu")
    do
      local _ <close> = torch.autocast("cpu", { enabled = false })
      T.eq(torch.mm(torch.randn(2, 3), torch.randn(3, 2)).dtype, torch.float32, "disabled inside")
      do
        local _ <close> = torch.autocast("cpu", { dtype = torch.float16 })
        T.eq(torch.mm(torch.randn(2, 3), torch.randn(3, 2)).dtype, torch.float16, "re-enabled in float16")
      end
    end
    T.eq(torch.mm(torch.randn(2, 3), torch.randn(3, 2)).dtype, torch.bfloat16, "outer again")
  end
  -- cpu.amp alias and the region object's exit
  local r = torch.cpu.amp.autocast()
  T.check(torch.is_autocast_enabled("cpu"), "torch.cpu.amp.autocast()")
  r:exit()
  r:exit() -- a second exit does nothing
  T.check(not torch.is_autocast_enabled("cpu"), "exit()")
  -- errors
  T.raises(function() return torch.autocast("cpu", { dtyp = torch.float16 }) end, "bad argument #2 to 'autocast' (unknown keyword 'dtyp')")
  T.raises(function() return torch.autocast("xpu") end,
    "bad argument #1 to 'autocast' (User specified an unsupported autocast device_type 'xpu')")
  T.raises(function() return torch.autocast("cpu", { dtype = torch.int64 }) end, "~autocast: dtype int64 is not supported")
  T.check(not torch.is_autocast_enabled("cpu"), "errors leave it off")
  if not torch.cuda.is_available() then
    -- PyTorch disables a cuda region when there is no GPU (with a warning)
    local _ <close> = torch.cuda.amp.autocast()
    T.check(not torch.is_autocast_enabled("cuda") and not torch.is_autocast_enabled(), "cuda region disabled without CUDA")
  end
end)

T.test("the policy through F and nn", function()
  local x = torch.randn(4, 3)
  local lin = nn.Linear(3, 5)
  local conv = nn.Conv2d(2, 3, 3)
  local img = torch.randn(2, 2, 6, 6)
  local t = torch.tensor({ 0, 1, 4, 2 })
  local _ <close> = torch.autocast("cpu")
  local y = lin(x)
  T.eq(y.dtype, torch.bfloat16, "nn.Linear")
  T.eq(lin(torch.randn(2, 4, 3)).dtype, torch.bfloat16, "nn.Linear on 3-D input (matmul + bias)")
  T.eq(conv(img).dtype, torch.bfloat16, "nn.Conv2d")
  T.eq(F.relu(y).dtype, torch.bfloat16, "relu keeps the dtype")
  T.eq(F.softmax(y, 1).dtype, torch.float32, "softmax in float32")
  T.eq(F.log_softmax(y, 1).dtype, torch.float32, "log_softmax in float32")
  T.eq(F.cross_entropy(y, t).dtype, torch.float32, "cross_entropy in float32")
  T.eq(F.mse_loss(y, torch.randn(4, 5)).dtype, torch.float32, "mse_loss in float32")
  T.eq(y:sum().dtype, torch.float32, "sum in float32")
  T.eq(y:mean().dtype, torch.float32, "mean in float32")
  T.eq(y:exp().dtype, torch.float32, "exp in float32")
  T.eq((y ^ 2).dtype, torch.float32, "pow in float32")
  T.eq((y + torch.randn(4, 5)).dtype, torch.float32, "add promotes to the widest")
  T.eq((y + 1).dtype, torch.bfloat16, "a number does not widen")
  T.eq(torch.cat({ y, torch.randn(1, 5) }).dtype, torch.float32, "cat promotes")
  T.eq(torch.mm(torch.randn(2, 2):double(), torch.randn(2, 2):double()).dtype, torch.float64, "float64 is left alone")
end)

T.test("gradients reach float32 parameters in float32", function()
  local Net = nn.Module:extend("AmpNet")
  function Net:__init()
    Net.super.__init(self)
    self.conv = nn.Conv2d(2, 4, 3)
    self.fc = nn.Linear(4 * 4 * 4, 3)
  end
  function Net:forward(x) return self.fc(torch.flatten(F.relu(self.conv(x)), 1)) end
  local net = Net()
  local x, t = torch.randn(2, 2, 6, 6), torch.tensor({ 0, 2 })
  local loss
  do
    local _ <close> = torch.autocast("cpu")
    loss = F.cross_entropy(net(x), t)
  end
  loss:backward()
  for i, p in ipairs(net:parameters()) do
    T.check(p.grad ~= nil and p.grad.dtype == torch.float32, "parameter " .. i .. ": grad is float32")
  end
  -- against float32: the loss agrees to bfloat16 precision
  local ref = F.cross_entropy(net(x), t)
  T.near(loss:item(), ref:item(), 5e-2, "loss close to float32's")
end)

T.test("decorated forward (wrap)", function()
  local Net = nn.Module:extend("WrappedNet")
  function Net:__init()
    Net.super.__init(self)
    self.fc = nn.Linear(3, 2)
  end
  function Net:forward(x) return self.fc(x) end
  Net.forward = torch.autocast.wrap(Net.forward, "cpu")
  local net = Net()
  T.eq(net(torch.randn(4, 3)).dtype, torch.bfloat16, "the policy holds inside forward")
  T.check(not torch.is_autocast_enabled("cpu"), "and ends with it")
  local f16 = torch.cpu.amp.autocast.wrap(function(a, b) return torch.mm(a, b), "second" end, { dtype = torch.float16 })
  local r, s = f16(torch.randn(2, 2), torch.randn(2, 2))
  T.check(r.dtype == torch.float16 and s == "second", "wrap with options passes arguments and results")
  T.raises(function() torch.autocast.wrap(42) end, "bad argument #1 to 'autocast.wrap' (function expected, got number)")
end)

T.test("one cast per parameter per region", function()
  local lin = nn.Linear(3, 5)
  local x = torch.randn(4, 3):bfloat16() -- already in the region's dtype: only the parameters are cast
  do
    local _ <close> = torch.autocast("cpu")
    local s0 = stats()
    local y1 = lin(x)
    local s1 = stats()
    local y2 = lin(x)
    local s2 = stats()
    T.eq(s1.casts - s0.casts, 2, "weight and bias cast on first use")
    T.eq(s2.casts - s1.casts, 0, "not again")
    T.eq(s2.cache_hits - s1.cache_hits, 2, "served from the cache")
    T.eq(s2.cached, 2, "two entries")
    T.check(y1.dtype == torch.bfloat16 and y2.dtype == torch.bfloat16, "outputs")
  end
  T.eq(stats().cached, 0, "dropped at close")
end)

T.test("autocast takes the float16 copies the optimizer step wrote (CUDA)", function()
  local dev = torch.cuda.is_available() and "cuda" or "cpu"
  local makers = {
    function(ps) return optim.AdamW(ps, { lr = 0.01 }) end,
    function(ps) return optim.SGD(ps, { lr = 0.05, momentum = 0.9 }) end,
  }
  for which, make in ipairs(makers) do
    local function build()
      torch.manual_seed(11)
      local m = nn.Sequential(nn.Linear(40, 24), nn.ReLU(), nn.Linear(24, 6)):to(dev)
      return m, make(m:parameters()), torch.amp.GradScaler(dev, { init_scale = 256 })
    end
    local a, opt_a, sc_a = build()
    local b, opt_b, sc_b = build() -- the reference: its copies are dropped, so it casts every step
    local function step(m, opt, scaler, x)
      opt:zero_grad()
      local y
      do
        local _ <close> = torch.autocast(dev)
        y = m(x)
        scaler:scale(y:float():pow(2):mean()):backward()
      end
      scaler:step(opt)
      scaler:update()
      return y
    end
    local function both(x, what)
      local h0 = stats().lowp_hits
      local ya = step(a, opt_a, sc_a, x)
      local h1 = stats().lowp_hits
      for _, p in ipairs(b:parameters()) do p.data = p.data end -- a new .data drops the copy
      local yb = step(b, opt_b, sc_b, x)
      T.eq(stats().lowp_hits, h1, what .. ": the reference casts")
      T.check(not torch.isfinite(x):all():item() or torch.equal(ya, yb), what .. ": the forward matches fresh casts bit for bit")
      for i, p in ipairs(a:parameters()) do
        T.check(torch.equal(p:detach(), b:parameters()[i]:detach()), what .. ": parameter " .. i .. " matches")
      end
      return h1 - h0
    end
    local tag = dev .. " optimizer " .. which
    torch.manual_seed(12)
    local x = torch.randn(16, 40):to(dev)
    local cuda = dev == "cuda"
    T.eq(both(x, tag .. " step 1"), 0, tag .. ": nothing to take before a step")
    for k = 2, 4 do T.eq(both(x, tag .. " step " .. k), cuda and 4 or 0, tag .. ": copies taken on CUDA only") end
    local bad = x:clone()
    bad[1][1] = math.huge
    both(bad, tag .. " skipped step")
    T.eq(sc_a:get_scale(), 128.0, tag .. ": the inf step was skipped")
    T.eq(both(x, tag .. " after the skip"), cuda and 4 or 0, tag .. ": the skipped step wrote the copies too")
    torch.no_grad(function()
      a[0].weight:mul_(0.5)
      b[0].weight:mul_(0.5)
    end)
    T.eq(both(x, tag .. " after an in-place change"), cuda and 3 or 0, tag .. ": a param changed in place is cast afresh")
  end
end)

T.test("autocast's linear on CUDA: float32 parameter gradients straight from the product", function()
  if not torch.cuda.is_available() then return T.skip("no GPU", 9) end
  torch.manual_seed(21)
  local lin = nn.Linear(300, 200):cuda()
  local x = torch.randn(64, 300, { device = "cuda" }):requires_grad_(true)
  local R = torch.randn(64, 200, { device = "cuda" })
  local y
  do
    local _ <close> = torch.autocast("cuda")
    y = lin(x)
  end
  T.check(y.dtype == torch.float16 and y.grad_fn:name() == "AddmmBackward0", "float16 output, recorded as addmm")
  ;(y:float() * R):sum():backward()
  -- float64 from the same 16-bit operands: the gradient reaching y is R rounded to float16
  local g, x16, w16 = R:half():double(), x:detach():half():double(), lin.weight:detach():half():double()
  local function rel(a, ref) return (a:double() - ref):abs():max():item() / ref:abs():max():item() end
  T.check(lin.weight.grad.dtype == torch.float32 and rel(lin.weight.grad, g:t():matmul(x16)) < 1e-5,
    "weight gradient rounded once to float32 (a float16 product cast up is ~1e-3 off)")
  T.check(rel(lin.bias.grad, g:sum(0)) < 1e-5, "bias gradient summed in float32")
  T.check(x.grad.dtype == torch.float32 and rel(x.grad, g:matmul(w16)) < 2e-3, "input gradient through the float16 product")
  T.check(torch._amp.flags_hold(lin.weight.grad), "the product's operands speak for the weight gradient")
  -- GradScaler: an inf where only the saved input shows it (the gradient reaching y is all zeros)
  local opt = optim.SGD(lin:parameters(), { lr = 0.1 })
  local scaler = torch.amp.GradScaler("cuda", { init_scale = 1024 })
  local function step(xin, loss_of, poke)
    return scaled_step(opt, scaler, "cuda", lin.weight, function() return loss_of(lin(xin)) end, poke)
  end
  local clean = x:detach()
  local bad = clean:clone()
  bad[3][7] = math.huge
  T.check(step(clean, function(o) return o:float():pow(2):mean() end), "a clean step updates")
  T.check(not step(bad, function(o) return (o:float() * 0):sum() end), "an inf in the input alone: skipped")
  T.eq(scaler:get_scale(), 512.0, "halved")
  T.check(not step(clean, function(o) return o:float():pow(2):mean() end, function()
    lin.weight.grad[0][0] = 0 / 0
  end), "a nan written into the weight's .grad: its values are read, skipped")
  T.check(step(clean, function(o) return o:float():pow(2):mean() end), "clean again")
end)

T.test("autocast's conv2d sums a float32 bias param's gradient in float32", function()
  local devices = { "cpu" }
  if torch.cuda.is_available() then devices[2] = "cuda" end
  for _, dev in ipairs(devices) do
    torch.manual_seed(31)
    local conv = nn.Conv2d(3, 8, 3):to(dev)
    local x = torch.randn(4, 3, 10, 10, { device = dev })
    local R = torch.randn(4, 8, 8, 8, { device = dev })
    local y
    do
      local _ <close> = torch.autocast(dev)
      y = conv(x)
    end
    ;(y:float() * R):sum():backward()
    -- float64 from the 16-bit gradient that reaches y; a 16-bit sum cast up would be ~1e-3 off
    local ref = R:to(y.dtype):double():sum({ 0, 2, 3 })
    local err = (conv.bias.grad:double() - ref):abs():max():item() / ref:abs():max():item()
    T.check(y.dtype ~= torch.float32 and conv.bias.grad.dtype == torch.float32 and err < 1e-5, dev .. ": bias gradient rounded once, rel err " .. err)
  end
end)

-- ---- GradScaler ----

local function model_and_opt(lr)
  torch.manual_seed(3)
  local m = nn.Linear(4, 3)
  return m, optim.SGD(m:parameters(), { lr = lr or 0.1 })
end

local function loss_of(m)
  torch.manual_seed(5)
  return m(torch.randn(6, 4)):pow(2):mean()
end

T.test("GradScaler: scale, step, update", function()
  local m, opt = model_and_opt()
  local scaler = torch.amp.GradScaler("cpu")
  T.check(scaler:is_enabled(), "enabled on cpu")
  T.eq(scaler:get_scale(), 65536.0, "init scale before use")
  local loss = loss_of(m)
  local scaled = scaler:scale(loss)
  T.near(scaled:item(), loss:item() * 65536, 1e-6, "scaled loss")
  opt:zero_grad()
  scaled:backward()
  -- the reference: the same step without scaling
  local m2, opt2 = model_and_opt()
  opt2:zero_grad()
  loss_of(m2):backward()
  opt2:step()
  scaler:step(opt)
  scaler:update()
  T.near(bits(m.weight), bits(m2.weight), 1e-6, "the step equals the unscaled one")
  T.eq(scaler:get_scale(), 65536.0, "no growth after one step")
  T.eq(scaler:_get_growth_tracker(), 1, "one clean step counted")
  -- a list of outputs scales elementwise
  local two = scaler:scale({ loss, loss * 2 })
  T.near({ two[1]:item(), two[2]:item() }, { loss:item() * 65536, loss:item() * 131072 }, 1e-6, "list of outputs")
end)

T.test("GradScaler: an inf skips the step and halves the scale", function()
  local m, opt = model_and_opt()
  local scaler = torch.amp.GradScaler("cpu", { init_scale = 1024 })
  opt:zero_grad()
  scaler:scale(loss_of(m)):backward()
  m.bias.grad[1] = math.huge -- an inf in one gradient
  local w0, b0 = bits(m.weight), bits(m.bias)
  local ret = scaler:step(opt)
  scaler:update()
  T.eq(bits(m.weight), w0, "weight unchanged bit for bit")
  T.eq(bits(m.bias), b0, "bias unchanged bit for bit")
  T.check(ret == nil, "step skipped")
  T.eq(scaler:get_scale(), 512.0, "scale halved")
  T.eq(scaler:_get_growth_tracker(), 0, "tracker reset")
  -- a nan does the same
  opt:zero_grad()
  scaler:scale(loss_of(m)):backward()
  m.weight.grad[0][1] = 0 / 0
  scaler:step(opt)
  scaler:update()
  T.eq(bits(m.weight), w0, "nan: unchanged")
  T.eq(scaler:get_scale(), 256.0, "nan: halved")
end)

-- The skip decided where the gradients are: on the CPU, and on the GPU without a read back
-- (the step counters move there); every optimizer, an inf on steps 2 and 5, against a run
-- that never saw those steps.
T.test("GradScaler: skipped steps leave every optimizer as if they never happened", function()
  local devices = { "cpu" }
  if torch.cuda.is_available() then devices[2] = "cuda" end
  local makers = {
    SGD = function(ps) return optim.SGD(ps, { lr = 0.05, momentum = 0.9 }) end,
    Adam = function(ps) return optim.Adam(ps, { lr = 0.01 }) end,
    AdamW = function(ps) return optim.AdamW(ps, { lr = 0.01, amsgrad = true }) end,
    RMSprop = function(ps) return optim.RMSprop(ps, { lr = 0.01, momentum = 0.5 }) end,
    Adagrad = function(ps) return optim.Adagrad(ps, { lr = 0.1, lr_decay = 0.01 }) end,
  }
  for _, dev in ipairs(devices) do
    for name, make in pairs(makers) do
      torch.manual_seed(3)
      local m = nn.Linear(4, 3):to(dev)
      torch.manual_seed(3)
      local ref = nn.Linear(4, 3):to(dev)
      local opt, ropt = make(m:parameters()), make(ref:parameters())
      local scaler = torch.amp.GradScaler(dev, { init_scale = 256 })
      for step = 1, 6 do
        local x = torch.randn(6, 4):to(dev)
        opt:zero_grad()
        scaler:scale(m(x):pow(2):mean()):backward()
        local skip = step == 2 or step == 5
        if skip then m.bias.grad[1] = math.huge end
        scaler:step(opt)
        scaler:update()
        if not skip then
          ropt:zero_grad()
          ref(x):pow(2):mean():backward()
          ropt:step()
        end
      end
      local what = name .. " on " .. dev
      T.near(bits(m.weight), bits(ref.weight), 1e-5, what .. ": weights as without the skipped steps")
      T.eq(scaler:get_scale(), 64.0, what .. ": the scale halved twice")
      local s = opt.state[m.weight]
      if name ~= "SGD" then
        T.eq(s.step:item(), 4.0, what .. ": 4 steps counted")
        T.eq(s.step.device.type, dev, what .. ": the step counter lives where the gradients are")
      end
    end
  end
end)

-- step() without unscale_ takes the path of PyTorch's fused optimizers: a read-only inf
-- check, the unscale inside the update, .grad left scaled; with unscale_ first, .grad is
-- unscaled in place. The parameters come out the same bit for bit (a power-of-two scale).
T.test("GradScaler: the unscale fused into the optimizer's update", function()
  local devices = { "cpu" }
  if torch.cuda.is_available() then devices[2] = "cuda" end
  for _, dev in ipairs(devices) do
    for _, make in ipairs({ function(ps) return optim.AdamW(ps, { lr = 0.01 }) end,
      function(ps) return optim.SGD(ps, { lr = 0.05, momentum = 0.9 }) end }) do
      torch.manual_seed(5)
      local a = nn.Linear(4, 3):to(dev)
      torch.manual_seed(5)
      local b = nn.Linear(4, 3):to(dev)
      local oa, ob = make(a:parameters()), make(b:parameters())
      local sa, sb = torch.amp.GradScaler(dev, { init_scale = 512 }), torch.amp.GradScaler(dev, { init_scale = 512 })
      for _ = 1, 3 do
        local x = torch.randn(5, 4):to(dev)
        oa:zero_grad(); ob:zero_grad()
        sa:scale(a(x):pow(2):mean()):backward()
        sb:scale(b(x):pow(2):mean()):backward()
        local scaled = a.weight.grad:clone()
        sa:step(oa)
        sb:unscale_(ob)
        T.eq(bits(b.weight.grad), bits(scaled / 512), dev .. ": unscale_ unscales .grad in place")
        sb:step(ob)
        T.eq(bits(a.weight.grad), bits(scaled), dev .. ": step alone leaves .grad scaled")
        sa:update(); sb:update()
      end
      T.eq(bits(a.weight), bits(b.weight), dev .. ": the same parameters bit for bit")
      T.eq(bits(a.bias), bits(b.bias), dev .. ": bias")
    end
  end
end)

-- Under autocast a parameter's float16/bfloat16 gradient becomes its float32 .grad through a
-- cast that also flags infs and nans; step()'s check reads those flags instead of .grad, until
-- .grad is written again.
T.test("GradScaler: the inf check through autocast's gradient casts", function()
  local devices = { "cpu" }
  if torch.cuda.is_available() then devices[2] = "cuda" end
  for _, dev in ipairs(devices) do
    torch.manual_seed(7)
    local m = nn.Linear(8, 4):to(dev)
    local opt = optim.AdamW(m:parameters(), { lr = 0.01 })
    local scaler = torch.amp.GradScaler(dev, { init_scale = 1024 })
    local function step(x, poke)
      return scaled_step(opt, scaler, dev, m.weight, function() return m(x):float():pow(2):mean() end, poke)
    end
    local x = torch.randn(5, 8):to(dev)
    T.check(step(x), dev .. ": a clean step updates")
    -- (on CUDA, linear's float32 bias gradient comes from a float32 sum and is read as it is)
    T.check(torch._amp.flags_hold(m.weight.grad) and torch._amp.flags_hold(m.bias.grad) == (dev == "cpu"), dev .. ": .grad came with flags")
    T.eq(scaler:get_scale(), 1024.0, dev .. ": scale kept")
    local bad = x:clone()
    bad[1][2] = math.huge
    T.check(not step(bad), dev .. ": an inf in the input: skipped, seen through the flags")
    T.eq(scaler:get_scale(), 512.0, dev .. ": halved")
    T.check(not step(x, function()
      m.bias.grad[1] = math.huge
      T.check(not torch._amp.flags_hold(m.bias.grad), dev .. ": a write to .grad retires its flags")
    end), dev .. ": an inf written into .grad after the cast: skipped")
    T.eq(scaler:get_scale(), 256.0, dev .. ": halved again")
    T.check(not step(x, function() m.weight.grad.data = torch.full({ 4, 8 }, 0 / 0, { device = dev }) end),
      dev .. ": .grad.data replaced by nans: skipped")
    T.check(step(x), dev .. ": clean again")
  end
end)

T.test("GradScaler: growth and the scale sequence of PyTorch's rule", function()
  local m, opt = model_and_opt(1e-3)
  local growth_interval = 3
  local scaler = torch.amp.GradScaler("cpu", { init_scale = 8.0, growth_factor = 4.0, backoff_factor = 0.25,
    growth_interval = growth_interval })
  local pattern = "..x....x.x...xx......"
  -- the rule: inf -> scale * backoff, tracker 0; else tracker + 1 == interval -> scale * growth, tracker 0
  local want, s, tracker = {}, 8.0, 0
  for i = 1, #pattern do
    if pattern:sub(i, i) == "x" then s, tracker = s * 0.25, 0
    elseif tracker + 1 == growth_interval then s, tracker = s * 4.0, 0
    else tracker = tracker + 1 end
    want[i] = s
  end
  local got = {}
  for i = 1, #pattern do
    opt:zero_grad()
    scaler:scale(loss_of(m)):backward()
    if pattern:sub(i, i) == "x" then m.weight.grad[2][3] = -math.huge end
    scaler:step(opt)
    scaler:update()
    got[i] = scaler:get_scale()
  end
  T.eq(got, want, "scale after each step")
  -- written out by hand for this pattern
  T.eq(want, { 8.0, 8.0, 2.0, 2.0, 2.0, 8.0, 8.0, 2.0, 2.0, 0.5, 0.5, 0.5, 2.0, 0.5, 0.125, 0.125, 0.125, 0.5, 0.5, 0.5, 2.0 },
    "hand-computed sequence")
  -- growth after growth_interval clean steps (the default interval, with a short one here)
  local g = torch.amp.GradScaler("cpu", { init_scale = 2.0, growth_interval = 2 })
  for _ = 1, 4 do
    opt:zero_grad()
    g:scale(loss_of(m)):backward()
    g:step(opt)
    g:update()
  end
  T.eq(g:get_scale(), 8.0, "grew twice in four clean steps")
end)

T.test("GradScaler: unscale_, clip, step", function()
  local m, opt = model_and_opt()
  local m2, opt2 = model_and_opt()
  local scaler = torch.amp.GradScaler("cpu")
  local function clip(params, max_norm)
    local total = 0
    for _, p in ipairs(params) do total = total + (p.grad ^ 2):sum():item() end
    total = math.sqrt(total)
    local coef = max_norm / (total + 1e-6)
    if coef < 1 then for _, p in ipairs(params) do p.grad:mul_(coef) end end
  end
  opt:zero_grad()
  scaler:scale(loss_of(m)):backward()
  scaler:unscale_(opt)
  clip(m:parameters(), 0.1)
  scaler:step(opt)
  scaler:update()
  opt2:zero_grad()
  loss_of(m2):backward()
  clip(m2:parameters(), 0.1)
  opt2:step()
  T.near(bits(m.weight), bits(m2.weight), 1e-6, "clipped step equals the unscaled one")
  -- stage errors
  opt:zero_grad()
  scaler:scale(loss_of(m)):backward()
  scaler:unscale_(opt)
  T.raises(function() scaler:unscale_(opt) end, "~unscale_() has already been called on this optimizer since the last update().")
  scaler:step(opt)
  T.raises(function() scaler:step(opt) end, "~step() has already been called since the last update().")
  T.raises(function() scaler:unscale_(opt) end, "~unscale_() is being called after step().")
  scaler:update()
  local fresh = torch.amp.GradScaler("cpu")
  T.raises(function() fresh:update() end, "~Attempted update but _scale is None.")
  T.raises(function() torch.amp.GradScaler("cpu", { growth_factor = 1 }) end, "~The growth factor must be > 1.0.")
  T.raises(function() torch.amp.GradScaler("cpu", { init = 1 }) end, "~unknown keyword 'init'")
  -- half gradients cannot be unscaled
  local h = nn.Linear(2, 2):half()
  local ho = optim.SGD(h:parameters(), { lr = 0.1 })
  local hs = torch.amp.GradScaler("cpu")
  hs:scale(h(torch.randn(3, 2):half()):float():sum()):backward()
  T.raises(function() hs:step(ho) end, "~Attempting to unscale FP16 gradients.")
  -- update(new_scale)
  scaler:update(32.0)
  T.eq(scaler:get_scale(), 32.0, "update(number)")
  scaler:update(torch.tensor(16.0))
  T.eq(scaler:get_scale(), 16.0, "update(tensor)")
end)

T.test("GradScaler: state_dict round trip, disabled scaler", function()
  local m, opt = model_and_opt()
  local a = torch.amp.GradScaler("cpu", { init_scale = 256, growth_interval = 5 })
  for _ = 1, 3 do
    opt:zero_grad()
    a:scale(loss_of(m)):backward()
    a:step(opt)
    a:update()
  end
  local sd = a:state_dict()
  T.eq(sd.scale, 256.0, "scale")
  T.eq(sd._growth_tracker, 3, "tracker")
  T.eq(sd.growth_interval, 5, "interval")
  local b = torch.amp.GradScaler("cpu")
  b:load_state_dict(sd)
  T.eq(b:get_scale(), 256.0, "loaded scale")
  T.eq(b:_get_growth_tracker(), 3, "loaded tracker")
  -- two more clean steps grow it (interval 5)
  for _ = 1, 2 do
    opt:zero_grad()
    b:scale(loss_of(m)):backward()
    b:step(opt)
    b:update()
  end
  T.eq(b:get_scale(), 512.0, "continues where it left off")
  if torch.save then
    local p = os.tmpname()
    torch.save(a:state_dict(), p)
    local c = torch.amp.GradScaler("cpu")
    c:load_state_dict(torch.load(p))
    os.remove(p)
    T.eq(c:get_scale(), 256.0, "through torch.save/torch.load")
  end
  T.raises(function() b:load_state_dict({}) end, "~The source state dict is empty")
  -- disabled: everything passes through
  local d = torch.amp.GradScaler("cpu", { enabled = false })
  local loss = loss_of(m)
  T.check(rawequal(d:scale(loss), loss), "scale passes the loss through")
  T.eq(d:get_scale(), 1.0, "scale 1")
  T.eq(next(d:state_dict()), nil, "empty state_dict")
  opt:zero_grad()
  loss:backward()
  local w0 = bits(m.weight)
  d:step(opt)
  d:update()
  T.check(bits(m.weight)[1] ~= w0[1], "step runs")
  if not torch.cuda.is_available() then
    T.check(not torch.cuda.amp.GradScaler():is_enabled(), "a cuda scaler is disabled without CUDA")
  end
end)

-- ---- memory formats ----

T.test("channels_last", function()
  local x = torch.randn(2, 3, 4, 5)
  T.eq(tostring(torch.channels_last), "torch.channels_last", "name")
  local c = x:contiguous({ memory_format = torch.channels_last })
  T.eq(c:stride(), { 60, 1, 15, 3 }, "NHWC strides")
  T.check(c:is_contiguous({ memory_format = torch.channels_last }) and not c:is_contiguous(), "is_contiguous")
  T.check(x:is_contiguous({ memory_format = torch.contiguous_format }) and not x:is_contiguous({ memory_format = torch.channels_last }),
    "an NCHW tensor")
  T.eq(bits(c), bits(x), "same values")
  T.check(rawequal(c:contiguous({ memory_format = torch.channels_last }), c), "already channels_last: itself")
  T.eq(x:to({ memory_format = torch.channels_last }):stride(), { 60, 1, 15, 3 }, "to{memory_format=}")
  T.eq(x:to(torch.float64, { memory_format = torch.channels_last }).dtype, torch.float64, "to(dtype, {memory_format=})")
  T.raises(function() torch.randn(3, 4):contiguous({ memory_format = torch.channels_last }) end,
    "~required rank 4 tensor to use channels_last format")
  T.raises(function() x:contiguous({ memory_format = "channels_last" }) end, "~memory_format must be a torch.memory_format")
  local conv = nn.Conv2d(3, 4, 3):to({ memory_format = torch.channels_last })
  T.check(conv.weight:is_contiguous({ memory_format = torch.channels_last }), "model:to{memory_format=}")
  T.check(torch.is_tensor(conv.bias) and conv.bias:dim() == 1, "1-D parameters untouched")
  local y, ref = conv(c), conv(x)
  T.check(y:is_contiguous({ memory_format = torch.channels_last }), "conv keeps channels_last")
  T.near(bits(y), bits(ref), 1e-5, "conv values")
  -- gradients through a channels-last input
  local xl = x:contiguous({ memory_format = torch.channels_last }):requires_grad_()
  conv(xl):sum():backward()
  T.check(xl.grad ~= nil and xl.grad.shape[1] == 3, "grad")
  -- the gradients keep the channels-last layout (the weight's .grad takes the weight's strides)
  -- and equal those of the same convolution in NCHW
  local ref_conv = nn.Conv2d(3, 4, 3)
  ref_conv.weight.data:copy_(conv.weight.data)
  ref_conv.bias.data:copy_(conv.bias.data)
  local xr = x:clone():requires_grad_()
  ref_conv(xr):sum():backward()
  T.check(xl.grad:is_contiguous({ memory_format = torch.channels_last }), "input grad channels_last")
  T.eq(conv.weight.grad:stride(), conv.weight:stride(), "weight grad has the weight's strides")
  T.near(bits(conv.weight.grad), bits(ref_conv.weight.grad), 1e-5, "weight grad values")
  T.near(bits(xl.grad), bits(xr.grad), 1e-5, "input grad values")
  -- a channels-last input through an NCHW weight: the gradients as PyTorch lays them out
  local xm = x:contiguous({ memory_format = torch.channels_last }):requires_grad_()
  ref_conv:zero_grad(true)
  ref_conv(xm):sum():backward()
  T.check(xm.grad:is_contiguous({ memory_format = torch.channels_last }), "NCHW weight: input grad channels_last")
  T.check(ref_conv.weight.grad:is_contiguous(), "NCHW weight: weight grad contiguous")
  T.near(bits(xm.grad), bits(xr.grad), 1e-5, "NCHW weight: input grad values")
  T.near(bits(ref_conv.weight.grad), bits(conv.weight.grad), 1e-5, "NCHW weight: weight grad values")
  conv:zero_grad(true)
  do -- the same under bfloat16 autocast: the cast back to float32 keeps the layout
    local _ <close> = torch.autocast("cpu", { dtype = torch.bfloat16 })
    conv(c):float():sum():backward()
  end
  T.eq(conv.weight.grad:stride(), conv.weight:stride(), "autocast: weight grad has the weight's strides")
  T.near(bits(conv.weight.grad), bits(ref_conv.weight.grad), 0.05, "autocast: weight grad values")
end)

T.test("batch_norm keeps a float16/bfloat16 input's dtype", function()
  torch.manual_seed(3)
  local bn = nn.BatchNorm2d(3)
  local x = torch.randn(4, 3, 5, 5)
  for _, dt in ipairs({ torch.bfloat16, torch.float16 }) do
    local xl = x:to(dt)
    local ref = F.batch_norm(xl:float(), torch.zeros(3), torch.ones(3), bn.weight, bn.bias, true)
    local y = F.batch_norm(xl, torch.zeros(3), torch.ones(3), bn.weight, bn.bias, true)
    T.eq(y.dtype, dt, "result dtype " .. tostring(dt))
    T.check((y:float() - ref:to(dt):float()):abs():max():item() == 0, "float32 math, rounded once: " .. tostring(dt))
  end
  do -- under autocast: the conv's bfloat16 output goes through batch_norm as bfloat16
    local _ <close> = torch.autocast("cpu")
    local y = bn(nn.Conv2d(3, 3, 1)(x))
    T.eq(y.dtype, torch.bfloat16, "BatchNorm2d under autocast")
  end
  local y = F.batch_norm(x, torch.zeros(3), torch.ones(3), nil, nil, true)
  T.eq(y.dtype, torch.float32, "float32 stays float32")
end)
