-- torch.optim: SGD, Adam, AdamW, RMSprop, Adagrad driven a few steps on tensors with
-- hand-set .grad, against the algorithm boxes computed here in plain Lua; param_groups
-- edits, add_param_group, zero_grad, closures, state, state_dict round trips, errors;
-- and float64 trajectories recorded from PyTorch 2.11.
local T = ...

local function flat(x) return x:reshape(-1):tolist() end

-- A leaf tensor of the given shape from a flat list.
local function leaf(values, shape, dtype)
  local x = torch.tensor(values, { dtype = dtype or torch.float64 })
  if shape then x = x:reshape(shape) end
  x.requires_grad = true
  return x
end

local function vals(n, k, step)
  local out = {}
  for i = 0, n - 1 do out[#out + 1] = ((i * 5 + step * 3 + k * 7) % 11 - 5) / 4 end
  return out
end

-- ---- the algorithm boxes in plain Lua (one param: p, g flat lists; s its state) ----
local ref = {}

function ref.SGD(o, s, p, g)
  local lr, mom, damp, wd = o.lr or 1e-3, o.momentum or 0, o.dampening or 0, o.weight_decay or 0
  for j = 1, #p do
    local d = o.maximize and -g[j] or g[j]
    if wd ~= 0 then d = d + wd * p[j] end
    if mom ~= 0 then
      s.buf = s.buf or {}
      if s.buf[j] == nil then s.buf[j] = d else s.buf[j] = mom * s.buf[j] + (1 - damp) * d end
      if o.nesterov then d = d + mom * s.buf[j] else d = s.buf[j] end
    end
    p[j] = p[j] - lr * d
  end
end

local function adam(o, s, p, g, decoupled)
  local lr, b1, b2 = o.lr or 1e-3, (o.betas or { 0.9, 0.999 })[1], (o.betas or { 0.9, 0.999 })[2]
  local eps, wd = o.eps or 1e-8, o.weight_decay or (decoupled and 1e-2 or 0)
  s.t = (s.t or 0) + 1
  s.m, s.v, s.vmax = s.m or {}, s.v or {}, s.vmax or {}
  for j = 1, #p do
    local d = o.maximize and -g[j] or g[j]
    if wd ~= 0 then
      if decoupled then p[j] = p[j] * (1 - lr * wd) else d = d + wd * p[j] end
    end
    s.m[j] = b1 * (s.m[j] or 0) + (1 - b1) * d
    s.v[j] = b2 * (s.v[j] or 0) + (1 - b2) * d * d
    local mhat = s.m[j] / (1 - b1 ^ s.t)
    local v = s.v[j]
    if o.amsgrad then
      s.vmax[j] = math.max(s.vmax[j] or 0, v)
      v = s.vmax[j]
    end
    local vhat = v / (1 - b2 ^ s.t)
    p[j] = p[j] - lr * mhat / (math.sqrt(vhat) + eps)
  end
end
function ref.Adam(o, s, p, g) adam(o, s, p, g, false) end
function ref.AdamW(o, s, p, g) adam(o, s, p, g, true) end

function ref.RMSprop(o, s, p, g)
  local lr, alpha, eps, wd, mom = o.lr or 1e-2, o.alpha or 0.99, o.eps or 1e-8, o.weight_decay or 0, o.momentum or 0
  s.v, s.ga, s.buf = s.v or {}, s.ga or {}, s.buf or {}
  for j = 1, #p do
    local d = o.maximize and -g[j] or g[j]
    if wd ~= 0 then d = d + wd * p[j] end
    s.v[j] = alpha * (s.v[j] or 0) + (1 - alpha) * d * d
    local avg
    if o.centered then
      s.ga[j] = alpha * (s.ga[j] or 0) + (1 - alpha) * d
      avg = math.sqrt(s.v[j] - s.ga[j] ^ 2) + eps
    else
      avg = math.sqrt(s.v[j]) + eps
    end
    if mom > 0 then
      s.buf[j] = mom * (s.buf[j] or 0) + d / avg
      p[j] = p[j] - lr * s.buf[j]
    else
      p[j] = p[j] - lr * d / avg
    end
  end
end

function ref.Adagrad(o, s, p, g)
  local lr, decay, wd, eps = o.lr or 1e-2, o.lr_decay or 0, o.weight_decay or 0, o.eps or 1e-10
  s.t = (s.t or 0) + 1
  s.sum = s.sum or {}
  local clr = lr / (1 + (s.t - 1) * decay)
  for j = 1, #p do
    local d = o.maximize and -g[j] or g[j]
    if wd ~= 0 then d = d + wd * p[j] end
    s.sum[j] = (s.sum[j] or o.initial_accumulator_value or 0) + d * d
    p[j] = p[j] - clr * d / (math.sqrt(s.sum[j]) + eps)
  end
end

-- Drive `name` with options o over three params (sizes 4, 2x3, 1); param 2 has no grad
-- at step 2; after step 3 the group's lr is edited. Compare each step with ref.
local shapes = { { 4 }, { 2, 3 }, { 1 } }
local function drive(name, o, dtype, tol, nsteps)
  dtype = dtype or torch.float64
  local ps, rp, rs = {}, {}, {}
  for k, sh in ipairs(shapes) do
    local n = 1
    for _, d in ipairs(sh) do n = n * d end
    ps[k] = leaf(vals(n, k, 0), sh, dtype)
    rp[k] = flat(ps[k]) -- the reference starts from the rounded values
    rs[k] = {}
  end
  local opts = {}
  for k, v in pairs(o) do opts[k] = v end
  local opt = optim[name](ps, opts)
  local ro = {}
  for k, v in pairs(o) do ro[k] = v end
  local worst = 0
  for step = 1, nsteps or 5 do
    if step == 4 then
      opt.param_groups[1].lr = opt.param_groups[1].lr * 0.5
      ro.lr = opt.param_groups[1].lr
    end
    for k, p in ipairs(ps) do
      if k == 2 and step == 2 then
        p.grad = nil
      else
        p.grad = torch.tensor(vals(#rp[k], k, step), { dtype = dtype }):reshape(shapes[k])
        ref[name](ro, rs[k], rp[k], flat(p.grad))
      end
    end
    opt:step()
    for k, p in ipairs(ps) do
      local got = flat(p)
      for j = 1, #got do
        local e = math.abs(got[j] - rp[k][j]) / math.max(1, math.abs(rp[k][j]))
        if e > worst then worst = e end
      end
    end
  end
  local desc = {}
  for k, v in pairs(o) do desc[#desc + 1] = k .. "=" .. T.show(v) end
  table.sort(desc)
  T.check(worst <= (tol or 1e-12), string.format("%s {%s} %s: max error %g", name, table.concat(desc, ", "), tostring(dtype), worst))
  return opt, ps
end

T.test("SGD formulas", function()
  for _, dtype in ipairs({ torch.float64, torch.float32 }) do
    local tol = dtype == torch.float64 and 1e-12 or 1e-5
    for _, mom in ipairs({ 0, 0.9 }) do
      for _, damp in ipairs({ 0, 0.1 }) do
        for _, wd in ipairs({ 0, 0.01 }) do
          for _, mx in ipairs({ false, true }) do
            drive("SGD", { lr = 0.1, momentum = mom, dampening = damp, weight_decay = wd, maximize = mx }, dtype, tol)
            if mom > 0 and damp == 0 then
              drive("SGD", { lr = 0.1, momentum = mom, nesterov = true, weight_decay = wd, maximize = mx }, dtype, tol)
            end
          end
        end
      end
    end
  end
  drive("SGD", {})
end)

T.test("Adam and AdamW formulas", function()
  for _, name in ipairs({ "Adam", "AdamW" }) do
    for _, dtype in ipairs({ torch.float64, torch.float32 }) do
      local tol = dtype == torch.float64 and 1e-12 or 1e-5
      for _, ams in ipairs({ false, true }) do
        for _, wd in ipairs({ 0, 0.1 }) do
          for _, mx in ipairs({ false, true }) do
            drive(name, { lr = 0.01, amsgrad = ams, weight_decay = wd, maximize = mx }, dtype, tol)
          end
        end
        drive(name, { lr = 0.05, betas = { 0.4, 0.95 }, eps = 1e-3, amsgrad = ams }, dtype, tol)
      end
    end
    drive(name, {})
  end
end)

T.test("RMSprop formulas", function()
  for _, dtype in ipairs({ torch.float64, torch.float32 }) do
    local tol = dtype == torch.float64 and 1e-12 or 1e-5
    for _, cen in ipairs({ false, true }) do
      for _, mom in ipairs({ 0, 0.8 }) do
        for _, wd in ipairs({ 0, 0.02 }) do
          for _, mx in ipairs({ false, true }) do
            drive("RMSprop", { lr = 0.01, centered = cen, momentum = mom, weight_decay = wd, maximize = mx }, dtype, tol)
          end
        end
      end
      drive("RMSprop", { alpha = 0.3, centered = cen }, dtype, tol)
    end
  end
end)

T.test("Adagrad formulas", function()
  for _, dtype in ipairs({ torch.float64, torch.float32 }) do
    local tol = dtype == torch.float64 and 1e-12 or 1e-5
    for _, decay in ipairs({ 0, 0.05 }) do
      for _, wd in ipairs({ 0, 0.1 }) do
        for _, init in ipairs({ 0, 0.5 }) do
          drive("Adagrad", { lr = 0.1, lr_decay = decay, weight_decay = wd, initial_accumulator_value = init }, dtype, tol)
        end
      end
    end
    drive("Adagrad", { maximize = true }, dtype, tol)
  end
end)

-- Five steps over params of sizes 5, 12, 1 (param 2 has no grad at step 2), float64,
-- recorded from PyTorch 2.11's torch.optim (foreach/fused off, CPU).
local pytorch = {
  {"SGD", {lr=0.1}, {{-0.7, 0.09999999999999998, -0.45, 0.07500000000000001, -0.47500000000000003}, {-0.65, -2.0816681711721685e-17, -0.42500000000000004, 0.22499999999999995, -0.2, 0.45, -0.25, 0.6749999999999999, -0.024999999999999994, 0.9, -0.07500000000000001, -0.775}, {-0.425}}},
  {"SGD", {lr=0.1, momentum=0.9}, {{-0.6872199999999999, 0.23574250000000005, -0.23361749999999998, -0.25638000000000005, -0.3025150000000001}, {-0.735275, -0.24615000000000004, -0.38405, 0.10507499999999995, -0.03282499999999995, 0.4563, -0.20409999999999998, 0.807525, 0.147125, 1.1587500000000002, -0.447375, -0.860275}, {-0.34917499999999996}}},
  {"SGD", {lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01}, {{-0.6642257520113067, 0.1925392769340053, -0.23543833356066562, -0.22781551464242644, -0.2766781651100247}, {-0.7102316567524306, -0.23226819098841775, -0.3743913969138145, 0.10357206885019833, -0.038551137075198354, 0.4394123286888145, -0.17273812723658227, 0.7752525885274307, 0.1631021326020339, 1.1110928483660467, -0.444548952033875, -0.8341721579592717}, {-0.3580281182054404}}},
  {"SGD", {lr=0.1, momentum=0.9, nesterov=true, weight_decay=0.01, maximize=true}, {{-0.8434026386389516, 0.048649637351667406, -1.1395299033268143, 0.8730695576374773, -0.6913999180146772}, {-0.4936899335971549, 0.941546028177973, -0.672949057965761, 0.762286903809367, -0.852208182334367, 0.5830277794407609, -0.287210056702973, 0.403768655072155, -0.46646918107157903, 0.22450953070354895, 0.4748188795334876, -0.6171762066102466}, {-0.7024236875715669}}},
  {"Adam", {}, {{-0.7489187259480189, 0.12484557665736126, -0.6225371414091964, 0.2470315696735621, -0.4981172109073203}, {-0.6247339426695608, 0.24716151972796, -0.49888152311330897, 0.3729965791077044, -0.37306092117651, 0.49918774160188806, -0.24908895754263424, 0.6253054103962978, -0.12332576270292032, 0.7520305738301581, -0.0025448240693994478, -0.7497339426695608}, {-0.49987537342027766}}},
  {"Adam", {lr=0.01, weight_decay=0.1, amsgrad=true}, {{-0.7346676680656423, 0.12294051700887204, -0.5976331256381714, 0.21954003421210194, -0.47922574112979816}, {-0.6202843703098392, 0.2210355373383232, -0.48711852454500115, 0.35346606144820286, -0.3545150035096666, 0.4894120318713256, -0.24011700253529583, 0.6255944562191325, -0.10793030065862619, 0.7585515409748138, -0.025417332371309574, -0.7448628592259119}, {-0.48651573073524756}}},
  {"Adam", {lr=0.01, betas={0.4, 0.95}, eps=0.001, maximize=true}, {{-0.7583028396472564, 0.12831338809275256, -0.6468981084725145, 0.2747387770775629, -0.5059260986691497}, {-0.6290974041880311, 0.2775735901811113, -0.5120385264495868, 0.39429635999662205, -0.39453774126212665, 0.5080451307971608, -0.2521607450224447, 0.6225672492449297, -0.13494614533196744, 0.7304679521904058, 0.01583455554379272, -0.7540974041880311}, {-0.5049869305984444}}},
  {"AdamW", {}, {{-0.7488812665424847, 0.1248393470542265, -0.6225059543958897, 0.24701914723275978, -0.4980922796599643}, {-0.6247089603318895, 0.247151565321716, -0.4988615482423621, 0.37298161500788773, -0.3730459549579077, 0.49916776503283183, -0.24907898962754885, 0.6252804238715295, -0.12332080215972688, 0.7520005516835618, -0.002544772939247451, -0.7497039604068891}, {-0.4998503604756135}}},
  {"AdamW", {lr=0.01, weight_decay=0.1, amsgrad=true, maximize=true}, {{-0.7570304512903514, 0.12590025677684394, -0.6464442052797498, 0.2783582582125359, -0.5162647202565541}, {-0.6251473625868297, 0.2773408923014422, -0.5091629638778665, 0.3935008133592999, -0.39285950950511606, 0.5061034349265511, -0.25808002098512023, 0.6194365674545002, -0.14120377541306045, 0.7267213479256716, 0.02539380243529505, -0.7496481120869546}, {-0.49876468586050887}}},
  {"RMSprop", {}, {{-0.6999825140398025, 0.0727839336733649, -0.4900777370661459, 0.06169639167076193, -0.45295297360469305}, {-0.5721710522849903, 0.05622608798986212, -0.4060684796002705, 0.2302573010383807, -0.24000757187149754, 0.41893564100011527, -0.2286030315466348, 0.6027402585230429, -0.053858966301133224, 0.8688769771583681, -0.08627152908718123, -0.6971710522849903}, {-0.49768858962627444}}},
  {"RMSprop", {lr=0.01, momentum=0.8, centered=true, weight_decay=0.02}, {{-0.6114235139695133, 0.036301421124820196, -0.2856308471822715, -0.2888752259122774, -0.28558455196278215}, {-0.47406462212238876, -0.14248937192181885, -0.28257013935723957, 0.08903108988330335, -0.08187142672840496, 0.3382617661680499, -0.155316048836197, 0.5620261113886993, 0.06488600216766748, 0.7454245564556835, -0.32430358773065676, -0.598443630584533}, {-0.20451758358833233}}},
  {"RMSprop", {alpha=0.3, centered=true, maximize=true}, {{-0.7591314644566025, 0.14595421550626134, -0.6558930989983228, 0.3082786029973627, -0.5034624354136049}, {-0.6370817857728015, 0.3089885941019096, -0.5237822425107171, 0.4166360732123208, -0.41078375286689917, 0.5243011320015306, -0.25195711577177415, 0.6325185469559282, -0.13794749139407825, 0.7198681218754904, 0.028472703930726862, -0.7620817857728015}, {-0.49831527103334733}}},
  {"Adagrad", {}, {{-0.7450026778618931, 0.11982447724291194, -0.6115288394665793, 0.23120592598276263, -0.49526590018795974}, {-0.6197348812321117, 0.23068890063947908, -0.4906336153720315, 0.3605714221112628, -0.3615288394665793, 0.4919244814543325, -0.24784321297573805, 0.6227944332814965, -0.11788103803601768, 0.7618881649042479, -0.008635512004420113, -0.7447348812321117}, {-0.49978192385767295}}},
  {"Adagrad", {lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.5, maximize=true}, {{-0.7529187804179761, 0.14929238736516168, -0.7090173163935034, 0.37211285182077497, -0.5253448264863303}, {-0.6022660383088184, 0.4002247919489298, -0.5418640780801672, 0.4723487354117115, -0.471087390560627, 0.5287982138910365, -0.2610830424783097, 0.5787184154606588, -0.18401380084141572, 0.6336237908475388, 0.07462320002525613, -0.7240100155979541}, {-0.4984506605590014}}},
}

T.test("PyTorch 2.11 trajectories", function()
  local sizes = { 5, 12, 1 }
  for _, case in ipairs(pytorch) do
    local name, kw, want = case[1], case[2], case[3]
    local ps = {}
    for k, n in ipairs(sizes) do
      local v = {}
      for i = 0, n - 1 do v[#v + 1] = ((i * 7 + (k - 1)) % 13 - 6) / 8 end
      ps[k] = leaf(v)
    end
    local opt = optim[name](ps, kw)
    for step = 1, 5 do
      for k, q in ipairs(ps) do
        if k == 2 and step == 2 then
          q.grad = nil
        else
          local v = {}
          for i = 0, sizes[k] - 1 do v[#v + 1] = ((i * 5 + step * 3 + (k - 1)) % 11 - 5) / 4 end
          q.grad = torch.tensor(v, { dtype = torch.float64 })
        end
      end
      opt:step()
    end
    local got = {}
    for k, q in ipairs(ps) do got[k] = q:tolist() end
    T.near(got, want, 1e-13, name .. " " .. T.show(next(kw) and kw.lr or "defaults"))
  end
end)

T.test("state", function()
  local w, b = leaf({ 1, 2, 3 }), leaf({ 0.5 })
  local opt = optim.SGD({ w, b }, { lr = 0.1, momentum = 0.9 })
  T.eq(next(opt.state), nil, "no state before a step")
  w.grad = torch.tensor({ 1.0, 1.0, 2.0 }, { dtype = torch.float64 })
  opt:step()
  T.eq(flat(opt.state[w].momentum_buffer), { 1.0, 1.0, 2.0 }, "first buffer is the gradient")
  T.eq(opt.state[b], nil, "a param without grad gets no state")
  T.near(flat(w), { 0.9, 1.9, 2.8 }, 1e-15)
  opt:step()
  T.near(flat(opt.state[w].momentum_buffer), { 1.9, 1.9, 3.8 }, 1e-15, "buf = 0.9 buf + g")
  -- another Lua object for the same tensor finds the same state
  local same = w:detach()
  T.eq(opt.state[same], nil, "a detached alias is another tensor")

  local a = optim.Adam({ w })
  w.grad = torch.ones(3, { dtype = torch.float64 })
  a:step()
  a:step()
  local s = a.state[w]
  T.eq(s.step:item(), 2.0, "step counts updates")
  T.eq(s.step.dtype, torch.float32, "step is a float32 0-dim tensor")
  T.eq(s.step:dim(), 0)
  T.eq(s.exp_avg.dtype, torch.float64, "state has the param's dtype")
  T.eq(s.max_exp_avg_sq, nil, "no max_exp_avg_sq without amsgrad")
  T.eq(tostring(s.step), "tensor(2.)")

  local ag = optim.Adagrad({ w }, { initial_accumulator_value = 0.25 })
  T.eq(ag.state[w].step:item(), 0.0, "Adagrad state exists from the start")
  T.eq(flat(ag.state[w].sum), { 0.25, 0.25, 0.25 })

  local r = optim.RMSprop({ w }, { momentum = 0.5, centered = true })
  r:step()
  T.check(r.state[w].momentum_buffer and r.state[w].grad_avg and r.state[w].square_avg, "RMSprop state")
end)

T.test("param_groups", function()
  local a, b, c = leaf({ 1, 2 }), leaf({ 3 }), leaf({ 4, 5, 6 })
  local opt = optim.SGD({ { params = { a } }, { params = { b }, lr = 0.5, momentum = 0.0 } }, { lr = 0.1, momentum = 0.9 })
  T.eq(#opt.param_groups, 2)
  T.eq(opt.param_groups[1].lr, 0.1, "group 0 takes the defaults")
  T.eq(opt.param_groups[1].momentum, 0.9)
  T.eq(opt.param_groups[2].lr, 0.5, "group 1 keeps its own lr")
  T.eq(opt.param_groups[2].nesterov, false, "and gets the other defaults")
  T.eq(opt.param_groups[1].params[1], a, "params are the tensors given")
  a.grad = torch.ones(2, { dtype = torch.float64 })
  b.grad = torch.ones(1, { dtype = torch.float64 })
  opt:step()
  T.near(flat(a), { 0.9, 1.9 }, 1e-15)
  T.near(flat(b), { 2.5 }, 1e-15)
  opt.param_groups[2].lr = 0.25 -- edits are honoured at the next step
  opt:step()
  T.near(flat(b), { 2.25 }, 1e-15)

  opt:add_param_group({ params = c, lr = 0.01 })
  T.eq(#opt.param_groups, 3)
  T.eq(opt.param_groups[3].params[1], c, "a single tensor becomes a list")
  T.eq(opt.param_groups[3].momentum, 0.9, "defaults fill the new group")
  c.grad = torch.ones(3, { dtype = torch.float64 })
  opt:step()
  T.near(flat(c), { 3.99, 4.99, 5.99 }, 1e-15)
  T.raises(function() opt:add_param_group({ params = { a } }) end, "some parameters appear in more than one parameter group")
  T.raises(function() optim.SGD({ { params = { a } }, { params = { b, a } } }) end,
    "some parameters appear in more than one parameter group")
end)

T.test("zero_grad", function()
  local w = leaf({ 1, 2 })
  local opt = optim.SGD({ w }, { lr = 0.1 })
  w.grad = torch.ones(2, { dtype = torch.float64 })
  local g = w.grad
  opt:zero_grad({ set_to_none = false })
  T.eq(flat(w.grad), { 0.0, 0.0 }, "zeroed in place")
  T.eq(flat(g), { 0.0, 0.0 }, "the same tensor")
  opt:zero_grad()
  T.eq(w.grad, nil, "set_to_none is the default")
  w.grad = torch.ones(2, { dtype = torch.float64 })
  opt:zero_grad(false)
  T.eq(flat(w.grad), { 0.0, 0.0 })
  opt:step() -- zero grad: no change for plain SGD
  T.eq(flat(w), { 1.0, 2.0 })
  T.raises(function() opt:zero_grad({ set_to_nil = true }) end, "zero_grad() got an unexpected keyword argument 'set_to_nil'")
end)

T.test("step with a closure", function()
  local w = leaf({ 1, 2 })
  local opt = optim.SGD({ w }, { lr = 0.5 })
  local calls, mode = 0, nil
  local _ <close> = torch.no_grad()
  local loss = opt:step(function()
    calls = calls + 1
    mode = torch.is_grad_enabled()
    w.grad = torch.tensor({ 2.0, 4.0 }, { dtype = torch.float64 })
    return 42
  end)
  T.eq(calls, 1)
  T.eq(loss, 42, "step returns the closure's loss")
  T.eq(mode, true, "the closure runs with grad enabled")
  T.eq(torch.is_grad_enabled(), false, "grad mode restored")
  T.eq(flat(w), { 0.0, 0.0 })
  T.eq(opt:step(), nil, "no closure: nil")
end)

T.test("state_dict", function()
  local function make()
    local ps = { leaf({ 1, 2, 3 }), leaf({ 0.5, -0.5 }), leaf({ 7 }) }
    return ps, optim.Adam({ { params = { ps[1], ps[2] } }, { params = { ps[3] }, lr = 0.01 } }, { lr = 0.1, amsgrad = true })
  end
  local function feed(ps, step)
    for k, p in ipairs(ps) do
      if k == 3 and step == 1 then p.grad = nil
      else p.grad = torch.tensor(vals(#flat(p), k, step), { dtype = torch.float64 }) end
    end
  end
  local pa, a = make()
  for step = 1, 3 do feed(pa, step); a:step() end
  local sd = a:state_dict()
  T.eq(sd.param_groups[1].params, { 0, 1 }, "integer param ids in order")
  T.eq(sd.param_groups[2].params, { 2 })
  T.eq(sd.param_groups[2].lr, 0.01)
  T.eq(sd.param_groups[1].betas, { 0.9, 0.999 })
  T.eq(sd.param_groups[1].amsgrad, true)
  T.check(torch.is_tensor(sd.state[0].exp_avg) and torch.is_tensor(sd.state[1].max_exp_avg_sq), "state keyed by id 0, 1")
  T.eq(sd.state[0].step:item(), 3.0)
  T.eq(sd.state[2].step:item(), 2.0, "param 2 missed a step")

  -- a fresh optimizer loading it continues exactly like the original
  local pb, b = make()
  for k = 1, 3 do pb[k].data = pa[k]:detach():clone() end
  b:load_state_dict(sd)
  T.eq(b.param_groups[2].lr, 0.01)
  T.eq(b.param_groups[1].params[1], pb[1], "the optimizer keeps its own params")
  T.eq(b.state[pb[1]].step:item(), 3.0)
  for step = 4, 6 do
    feed(pa, step); a:step()
    feed(pb, step); b:step()
  end
  for k = 1, 3 do T.eq(flat(pb[k]), flat(pa[k]), "round trip continues identically, param " .. k) end
  T.check(b.state[pb[1]].exp_avg ~= a.state[pa[1]].exp_avg, "loaded state is a copy")

  -- loading casts floating state to the param's dtype
  local pc = { leaf({ 1, 2, 3 }, nil, torch.float32), leaf({ 0.5, -0.5 }, nil, torch.float32), leaf({ 7 }, nil, torch.float32) }
  local c = optim.Adam({ { params = { pc[1], pc[2] } }, { params = { pc[3] } } })
  c:load_state_dict(sd)
  T.eq(c.state[pc[1]].exp_avg.dtype, torch.float32, "state cast to the param dtype")
  T.eq(c.state[pc[1]].step.dtype, torch.float32, "step kept as is")
  T.eq(c.param_groups[1].amsgrad, true, "options come from the state dict")

  T.raises(function() c:load_state_dict({ state = {}, param_groups = {} }) end,
    "loaded state dict has a different number of parameter groups")
  T.raises(function() c:load_state_dict({ state = {}, param_groups = { { params = { 0 } }, { params = { 1 } } } }) end,
    "loaded state dict contains a parameter group that doesn't match the size of optimizer's group")

  -- SGD: only params with momentum get state
  local w = leaf({ 1 })
  local s = optim.SGD({ w }, { lr = 0.1 })
  w.grad = torch.ones(1, { dtype = torch.float64 })
  s:step()
  T.eq(next(s:state_dict().state), nil, "plain SGD keeps no state")
end)

T.test("constructor forms and printing", function()
  local w = leaf({ 1, 2 })
  local o1 = optim.SGD({ w }, 0.1, 0.9)
  T.eq(o1.param_groups[1].lr, 0.1, "positional lr")
  T.eq(o1.param_groups[1].momentum, 0.9, "positional momentum")
  local o2 = optim.Adam({ w }, 0.01, { 0.8, 0.9 }, { amsgrad = true })
  T.eq(o2.param_groups[1].betas, { 0.8, 0.9 })
  T.eq(o2.param_groups[1].amsgrad, true)
  T.eq(optim.AdamW({ w }).param_groups[1].weight_decay, 0.01, "AdamW's default weight_decay")
  T.eq(optim.AdamW({ w }).param_groups[1].decoupled_weight_decay, true)
  T.eq(optim.RMSprop({ w }).param_groups[1].lr, 0.01)
  T.eq(optim.Adagrad({ w }).param_groups[1].eps, 1e-10)
  T.eq(optim.SGD({ w }).param_groups[1].lr, 0.001, "SGD's default lr")
  T.eq(tostring(optim.SGD({ w }, { lr = 0.1, momentum = 0.9, dampening = 0.1 })),
    "SGD (\nParameter Group 0\n    dampening: 0.1\n    differentiable: False\n    foreach: None\n    fused: None\n" ..
    "    lr: 0.1\n    maximize: False\n    momentum: 0.9\n    nesterov: False\n    weight_decay: 0\n)")
  T.eq(tostring(optim.Adam({ w })),
    "Adam (\nParameter Group 0\n    amsgrad: False\n    betas: (0.9, 0.999)\n    capturable: False\n" ..
    "    decoupled_weight_decay: False\n    differentiable: False\n    eps: 1e-08\n    foreach: None\n    fused: None\n" ..
    "    lr: 0.001\n    maximize: False\n    weight_decay: 0\n)")
  local list = setmetatable({ w }, { __call = function() end })
  T.eq(optim.SGD(list).param_groups[1].params[1], w, "a list with a metatable (model:parameters())")
  local named = optim.SGD({ { "fc.weight", w } })
  T.eq(named.param_groups[1].params[1], w, "named parameters")
  T.eq(named.param_groups[1].param_names, { "fc.weight" })
end)

T.test("a custom optimizer", function()
  local SignSGD = optim.Optimizer:extend("SignSGD")
  function SignSGD:__init(params, opts)
    optim.Optimizer.__init(self, params, { lr = (opts or {}).lr or 0.01 })
  end
  function SignSGD:step()
    for _, g in ipairs(self.param_groups) do
      for _, p in ipairs(g.params) do
        if p.grad then p.data = p:detach() - g.lr * p.grad:sign() end
      end
    end
  end
  local w = leaf({ 1, 2 })
  local opt = SignSGD({ w }, { lr = 0.5 })
  w.grad = torch.tensor({ -3.0, 2.0 }, { dtype = torch.float64 })
  opt:step()
  T.eq(flat(w), { 1.5, 1.5 })
  T.eq(tostring(opt), "SignSGD (\nParameter Group 0\n    lr: 0.5\n)")
  opt:zero_grad()
  T.eq(w.grad, nil, "inherited zero_grad")
end)

T.test("errors", function()
  local w = leaf({ 1, 2 })
  T.raises(function() optim.SGD({ w }, { lr = -1 }) end, "Invalid learning rate: -1")
  T.raises(function() optim.SGD({ w }, { lr = -0.5 }) end, "Invalid learning rate: -0.5")
  T.raises(function() optim.Adam({ w }, { lr = -1 }) end, "Invalid learning rate: -1")
  T.raises(function() optim.SGD({ w }, { momentum = -0.5 }) end, "Invalid momentum value: -0.5")
  T.raises(function() optim.SGD({ w }, { weight_decay = -1e-05 }) end, "Invalid weight_decay value: -1e-05")
  T.raises(function() optim.SGD({ w }, { nesterov = true }) end, "Nesterov momentum requires a momentum and zero dampening")
  T.raises(function() optim.SGD({ w }, { lr = 0.1, lrr = 3 }) end, "SGD.__init__() got an unexpected keyword argument 'lrr'")
  T.raises(function() optim.SGD({ w }, 0.1, { lr = 0.2 }) end, "SGD.__init__() got multiple values for argument 'lr'")
  T.raises(function() optim.Adam({ w }, { eps = -1 }) end, "Invalid epsilon value: -1")
  T.raises(function() optim.Adam({ w }, { betas = { 1.0, 0.9 } }) end, "Invalid beta parameter at index 0: 1.0")
  T.raises(function() optim.Adam({ w }, { betas = { 0.9, -0.1 } }) end, "Invalid beta parameter at index 1: -0.1")
  T.raises(function() optim.RMSprop({ w }, { alpha = -1 }) end, "Invalid alpha value: -1")
  T.raises(function() optim.Adagrad({ w }, { lr_decay = -1 }) end, "Invalid lr_decay value: -1")
  T.raises(function() optim.Adagrad({ w }, { initial_accumulator_value = -1 }) end,
    "Invalid initial_accumulator_value value: -1")
  T.raises(function() optim.SGD({ w * 2 }) end, "can't optimize a non-leaf Tensor")
  T.raises(function() optim.SGD({}) end, "optimizer got an empty parameter list")
  T.raises(function() optim.SGD(w) end,
    "params argument given to the optimizer should be an iterable of Tensors or dicts, but got torch.DoubleTensor")
  T.raises(function() optim.SGD({ 1.0 }) end, "optimizer can only optimize Tensors, but one of the params is float")
  -- an integer param with a gradient: the step refuses its dtype
  local i = torch.zeros(2, { dtype = torch.int64 })
  i.grad = torch.ones(2, { dtype = torch.int64 })
  T.raises(function() optim.SGD({ i }, { lr = 0.1 }):step() end, "~parameter 0 has dtype int64")
end)

T.test("non-contiguous and float32 params", function()
  local w = torch.tensor({ { 1.0, 2.0, 3.0 }, { 4.0, 5.0, 6.0 } }, { dtype = torch.float64 }):t()
  w.requires_grad = true
  T.eq(w:is_contiguous(), false)
  local opt = optim.Adam({ w }, { lr = 0.1 })
  local s = {}
  local p = flat(w)
  for step = 1, 3 do
    w.grad = torch.tensor(vals(6, 1, step), { dtype = torch.float64 }):reshape(3, 2)
    ref.Adam({ lr = 0.1 }, s, p, flat(w.grad))
    opt:step()
  end
  T.near(flat(w), p, 1e-12, "transposed param")
end)

T.test("with nn modules", function()
  if not (nn and nn.Linear and nn.MSELoss) then return end
  torch.manual_seed(0)
  local model = nn.Linear(4, 2)
  local opt = optim.SGD(model:parameters(), { lr = 0.001, momentum = 0.9, dampening = 0.1 })
  local x, y = torch.randn(8, 4), torch.randn(8, 2)
  local before = flat(model.weight)
  local ok, err = pcall(function()
    for _ = 1, 3 do
      opt:zero_grad()
      local loss = nn.MSELoss()(model(x), y)
      loss:backward()
      opt:step()
    end
  end)
  if not ok and tostring(err):find("not implemented") then return end -- autograd still being wired
  T.check(ok, tostring(err))
  T.check(flat(model.weight)[1] ~= before[1], "the model's weights moved")
  T.check(opt.state[model.weight].momentum_buffer ~= nil, "state keyed by the module's parameter")
end)
