-- The batching vmap (vmap_batched.lua, vmap_rules.lua): for each rule, the batched result against
-- vmap's per-sample loop (torch.func._vmap_batching = false) and against a plain per-sample loop
-- written here; per-sample gradients of SimpleCNN and of an MLP against autograd.grad per sample;
-- the fallback to the loop for an op without a rule.
local T = ...
local func = torch.func
local vmap, grad = func.vmap, func.grad
local nn = torch.nn

local function close(a, b, tol, msg)
  T.check(torch.is_tensor(a) and torch.is_tensor(b), msg .. ": tensors")
  T.eq(tostring(a:size()), tostring(b:size()), msg .. ": shape")
  local d = (a:double() - b:double()):abs():max():item()
  T.check(d <= tol, string.format("%s: max |difference| %.3g > %.3g", msg, d, tol))
end

-- the flattened tensors of a result tree (plain tables: sorted keys)
local function leaves(v, out)
  out = out or {}
  if torch.is_tensor(v) then out[#out + 1] = v; return out end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do leaves(v[k], out) end
  return out
end

-- vmap(f, ...)(args): batched (and it must stay batched unless want_mode says "loop"), the loop,
-- and manual() (a list of expected results) agree
local function agree(name, f, opts, args, manual, tol, want_mode)
  tol = tol or 1e-6
  func._vmap_batching = true
  local got = table.pack(vmap(f, table.unpack(opts, 1, opts.n or #opts))(table.unpack(args, 1, args.n or #args)))
  local mode = func._vmap_last
  if want_mode == "loop" then
    T.check(mode:sub(1, 5) == "loop:", name .. ": falls back to the loop (" .. tostring(mode) .. ")")
  else
    T.eq(mode, "batched", name .. ": batched")
  end
  func._vmap_batching = false
  local loop = table.pack(vmap(f, table.unpack(opts, 1, opts.n or #opts))(table.unpack(args, 1, args.n or #args)))
  func._vmap_batching = true
  local want = manual()
  local g, l, w = leaves({ table.unpack(got, 1, got.n) }), leaves({ table.unpack(loop, 1, loop.n) }), leaves(want)
  T.eq(#g, #w, name .. ": number of outputs")
  for i = 1, #w do
    close(g[i], l[i], tol, name .. " output " .. i .. " against the loop")
    close(g[i], w[i], tol, name .. " output " .. i .. " against a plain loop")
  end
end

-- every result of f on sample b of the args, stacked over b (a list)
local function per_all(B, f, ...)
  local args = { ... }
  local outs = {}
  for b = 0, B - 1 do
    local sl = {}
    for i, a in ipairs(args) do sl[i] = a[b] end
    outs[b + 1] = table.pack(f(table.unpack(sl)))
  end
  local r = {}
  for k = 1, outs[1].n do
    local col = {}
    for b = 1, B do col[b] = outs[b][k] end
    r[k] = torch.stack(col)
  end
  return r
end

-- the per-sample results fn(b) stacked at dim d
local function per(B, fn, d)
  local rs = {}
  for b = 0, B - 1 do rs[b + 1] = fn(b) end
  return torch.stack(rs, d or 0)
end

torch.manual_seed(0)
local X, Y = torch.randn(4, 3), torch.randn(4, 3)
local M3 = torch.randn(4, 2, 3)
local y, W = torch.randn(3), torch.randn(5, 3)

T.test("elementwise ops broadcast batched and unbatched operands", function()
  local f = function(a, b) return (a * b + a:exp() - 2 / (b + 3)):tanh() * 0.5 + torch.maximum(a, b) end
  agree("in_dims {0, 0}", f, { 0 }, { X, Y }, function() return { per(4, function(i) return f(X[i], Y[i]) end) } end)
  agree("in_dims {0, None}", f, { { 0, false } }, { X, y }, function() return { per(4, function(i) return f(X[i], y) end) } end)
  agree("in_dims {None, 0}", f, { { false, 0 } }, { y, X }, function() return { per(4, function(i) return f(y, X[i]) end) } end)
  -- a per-sample vector against an unbatched matrix: the batched operand padded
  local Z = torch.randn(2, 3)
  local g = function(a, b) return a + b, torch.where(a:gt(0), a, b), a:pow(2):sub(b) end
  agree("ranks 1 and 2", g, { { 0, false } }, { X, Z }, function()
    return { per(4, function(i) return X[i] + Z end), per(4, function(i) return torch.where(X[i]:gt(0), X[i], Z) end),
      per(4, function(i) return X[i]:pow(2):sub(Z) end) }
  end)
  agree("plain tensor on the left", function(a) return y * a - y end, { 0 }, { X },
    function() return { per(4, function(i) return y * X[i] - y end) } end)
  agree("method of a plain tensor", function(a) return y:mul(a):add(a) end, { 0 }, { X },
    function() return { per(4, function(i) return y:mul(X[i]):add(X[i]) end) } end)
end)

T.test("reductions over a dim (negative, keyword) and over all per-sample dims", function()
  local f = function(a)
    local mx, ix = a:max(1)
    return a:sum(), a:mean(0), a:sum(-1, true), a:amax({ dim = 1 }), mx, ix, a:argmax(), a:std(1), a:var(),
      a:logsumexp(1), torch.sum(a, 0), a:norm(), a:max(), a:prod(1)
  end
  agree("reductions", f, { 0 }, { M3 }, function() return per_all(4, f, M3) end, 1e-5)
  agree("softmax / log_softmax", function(a) return a:softmax(-1), F.log_softmax(a, { dim = 0 }), F.softmax(a, 1) end,
    { 0 }, { M3 }, function()
      return { per(4, function(i) return M3[i]:softmax(-1) end), per(4, function(i) return F.log_softmax(M3[i], { dim = 0 }) end),
        per(4, function(i) return F.softmax(M3[i], 1) end) }
    end)
end)

T.test("views and sizes are per sample", function()
  local f = function(a)
    T.eq(a:dim(), 2, "dim")
    T.eq(a:size(0), 2, "size(0)")
    T.eq(a:size(-1), 3, "size(-1)")
    T.eq(tostring(a.shape), "torch.Size([2, 3])", "shape")
    T.eq(a:numel(), 6, "numel")
    T.eq(#a, 2, "#")
    return a:view(3, 2), a:reshape(-1), a:flatten(), a:unsqueeze(-1), a:unsqueeze(0):squeeze(0), a:permute(1, 0),
      a:transpose(0, 1), a:t(), a.T, a:select(1, 2), a:narrow(1, 1, 2), a[1], a:chunk(3, 1)[2], a:expand(5, 2, 3),
      a:unsqueeze(1):expand(2, 4, 3), a:movedim(0, 1), a:flip(0)
  end
  agree("views", f, { 0 }, { M3 }, function() return per_all(4, f, M3) end)
  T.raises(function()
    func._vmap_batching = true
    vmap(function(a) return a + 1, a:item() end)(torch.ones(2))
  end, "~", "item(): the loop then runs it, returning a number that cannot be stacked")
end)

T.test("matmul, mm, linear (batched weight), dot", function()
  local A = torch.randn(4, 2, 3)
  local Bm = torch.randn(4, 3, 5)
  local v = torch.randn(3)
  local f = function(a, b) return torch.matmul(a, b) end
  agree("mat @ mat, both batched", f, { 0 }, { A, Bm }, function() return { per(4, function(i) return A[i]:matmul(Bm[i]) end) } end)
  agree("mat @ mat, right unbatched", f, { { 0, false } }, { A, Bm[0] }, function() return { per(4, function(i) return A[i]:matmul(Bm[0]) end) } end)
  agree("mat @ mat, left unbatched", f, { { false, 0 } }, { A[0], Bm }, function() return { per(4, function(i) return A[0]:matmul(Bm[i]) end) } end)
  agree("vec @ mat", f, { 0 }, { X, Bm }, function() return { per(4, function(i) return X[i]:matmul(Bm[i]) end) } end)
  agree("mat @ vec", f, { { 0, false } }, { A, v }, function() return { per(4, function(i) return A[i]:matmul(v) end) } end)
  agree("vec @ vec", f, { 0 }, { X, Y }, function() return { per(4, function(i) return X[i]:matmul(Y[i]) end) } end)
  local A4 = torch.randn(4, 2, 2, 3)
  agree("batched matrices @ a batched matrix", f, { 0 }, { A4, Bm }, function() return { per(4, function(i) return A4[i]:matmul(Bm[i]) end) } end)
  agree("unbatched batch of matrices @ a batched vector", f, { { false, 0 } }, { A4[0], X }, function() return { per(4, function(i) return A4[0]:matmul(X[i]) end) } end)
  agree("mm / dot", function(a, b) return a:mm(b), a:select(0, 0):dot(b:select(1, 0)) end, { 0 }, { A, Bm }, function()
    return { per(4, function(i) return A[i]:mm(Bm[i]) end), per(4, function(i) return A[i][0]:dot(Bm[i]:select(1, 0)) end) }
  end)
  local Ws, bs = torch.randn(4, 5, 3), torch.randn(4, 5)
  local lin = function(x, w, b) return F.linear(x, w, b) end
  agree("linear, weight batched", lin, { { 0, 0, 0 } }, { M3, Ws, bs }, function() return { per(4, function(i) return F.linear(M3[i], Ws[i], bs[i]) end) } end, 1e-5)
  agree("linear, input unbatched", lin, { { false, 0, false } }, { M3[0], Ws, bs[0] }, function() return { per(4, function(i) return F.linear(M3[0], Ws[i], bs[0]) end) } end, 1e-5)
  agree("linear, input batched", lin, { { 0, false, 0 } }, { X, W, bs }, function() return { per(4, function(i) return F.linear(X[i], W, bs[i]) end) } end, 1e-5)
  local lin_m = nn.Linear(3, 5)
  agree("nn.Linear", function(x) return lin_m(x) end, { 0 }, { M3 }, function() return { per(4, function(i) return lin_m(M3[i]) end) } end, 1e-5)
end)

T.test("conv2d (batched input folded into N, batched weight as groups), pools, activations", function()
  torch.manual_seed(1)
  local x4 = torch.randn(3, 2, 4, 6, 6) -- per sample [N=2, C=4, 6, 6]
  local x3 = torch.randn(3, 4, 6, 6)    -- per sample [C, H, W]
  local w = torch.randn(3, 6, 2, 3, 3)  -- per sample [Cout=6, Cin/g=2, 3, 3] (groups 2)
  local b = torch.randn(3, 6)
  local conv = function(x, w_, b_) return F.conv2d(x, w_, b_, 1, 1, 1, 2) end
  local tol = 1e-4
  agree("input batched", conv, { { 0, false, false } }, { x4, w[0], b[0] }, function() return { per(3, function(i) return conv(x4[i], w[0], b[0]) end) } end, tol)
  agree("input batched, 3-d", conv, { { 0, false, false } }, { x3, w[0], b[0] }, function() return { per(3, function(i) return conv(x3[i], w[0], b[0]) end) } end, tol)
  agree("weight and bias batched", conv, { { 0, 0, 0 } }, { x4, w, b }, function() return { per(3, function(i) return conv(x4[i], w[i], b[i]) end) } end, tol)
  agree("weight batched, input unbatched, 3-d", conv, { { false, 0, false } }, { x3[0], w, b[0] }, function() return { per(3, function(i) return conv(x3[0], w[i], b[0]) end) } end, tol)
  agree("bias batched only", conv, { { 0, false, 0 } }, { x4, w[0], b }, function() return { per(3, function(i) return conv(x4[i], w[0], b[i]) end) } end, tol)
  -- one input for every sample's filters: the filters as output channels of one convolution
  agree("weight and bias batched, input unbatched", conv, { { false, 0, 0 } }, { x4[1], w, b }, function() return { per(3, function(i) return conv(x4[1], w[i], b[i]) end) } end, tol)
  local w1 = torch.randn(3, 5, 4, 3, 2)
  local conv1 = function(x, w_, b_) return F.conv2d(x, w_, b_, { 2, 1 }, { 0, 1 }) end
  agree("weight batched, input unbatched, groups 1", conv1, { { false, 0, false } }, { x4[2], w1, b[0]:narrow(0, 0, 5) },
    function() return { per(3, function(i) return conv1(x4[2], w1[i], b[0]:narrow(0, 0, 5)) end) } end, tol)
  local w3 = torch.randn(3, 6, 1, 3, 3)
  local conv4 = function(x, w_) return F.conv2d(x, w_, nil, 1, 0, 1, 4):sum() end
  agree("weight batched, input unbatched, 4 groups, gradient", function(x, w_)
    return func.grad(conv4, { 0, 1 })(x, w_)
  end, { { false, 0 } }, { x4[0], w3:narrow(1, 0, 4) }, function()
    return { per(3, function(i) local gx, gw = table.unpack(func.grad(conv4, { 0, 1 })(x4[0], w3[i]:narrow(0, 0, 4))); return gx end),
      per(3, function(i) local gx, gw = table.unpack(func.grad(conv4, { 0, 1 })(x4[0], w3[i]:narrow(0, 0, 4))); return gw end) }
  end, tol)
  local pools = function(x)
    local m, idx = F.max_pool2d(x, 2, { return_indices = true })
    return m, idx, F.avg_pool2d(x, 3, 1), F.adaptive_avg_pool2d(x, 2), F.adaptive_max_pool2d(x, { 3, 1 }), F.relu(x),
      F.gelu(x), F.sigmoid(x), F.leaky_relu(x, 0.1), torch.tanh(x), F.silu(x), F.elu(x), F.softplus(x)
  end
  for _, xx in ipairs({ x4, x3 }) do
    agree("pools and activations rank " .. (xx:dim() - 1), pools, { 0 }, { xx }, function() return per_all(3, pools, xx) end, 1e-6)
  end
end)

T.test("losses: per-sample reductions", function()
  torch.manual_seed(2)
  local logits = torch.randn(4, 5, 3)
  local tg = torch.randint(3, { 4, 5 })
  tg[1][2] = -100
  tg[2][0] = 1
  local losses = function(x, t)
    return F.cross_entropy(x, t), F.cross_entropy(x, t, { reduction = "sum" }), F.cross_entropy(x, t, { reduction = "none" }),
      F.nll_loss(F.log_softmax(x, 1), t), F.cross_entropy(x, t:clamp(0), { ignore_index = 1 }), F.cross_entropy(x[0], t[0])
  end
  agree("cross_entropy / nll_loss", losses, { 0 }, { logits, tg }, function() return per_all(4, losses, logits, tg) end, 1e-6)
  local tgt = torch.randn(5, 3)
  agree("mse_loss / l1_loss", function(x, t) return F.mse_loss(x, t), F.mse_loss(x, t, { reduction = "sum" }), F.l1_loss(x, t) end,
    { { 0, false } }, { logits, tgt }, function()
      return { per(4, function(i) return F.mse_loss(logits[i], tgt) end), per(4, function(i) return F.mse_loss(logits[i], tgt, { reduction = "sum" }) end),
        per(4, function(i) return F.l1_loss(logits[i], tgt) end) }
    end, 1e-5)
end)

T.test("cat / stack, in_dims 1 and negative, out_dims, pytrees", function()
  local f = function(a, b) return torch.cat({ a, b }, 0), torch.stack({ a, b }, -1), torch.cat({ a, y }, { dim = 0 }) end
  agree("cat / stack", f, { { 0, false } }, { X, y }, function()
    return { per(4, function(i) return torch.cat({ X[i], y }, 0) end), per(4, function(i) return torch.stack({ X[i], y }, -1) end),
      per(4, function(i) return torch.cat({ X[i], y }, 0) end) }
  end)
  local Xt = X:t():contiguous() -- [3, 4]: mapped over dim 1 / -1
  agree("in_dims 1", function(a) return a * 2 end, { 1 }, { Xt }, function() return { per(4, function(i) return Xt:select(1, i) * 2 end) } end)
  agree("in_dims -1, out_dims 1", function(a) return a:unsqueeze(0) + 1 end, { -1, 1 }, { Xt }, function() return { per(4, function(i) return Xt:select(1, i):unsqueeze(0) + 1 end, 1) } end)
  agree("out_dims per output", function(a) return a * 2, a:sum() end, { 0, { 1, 0 } }, { M3 }, function()
    return { per(4, function(i) return M3[i] * 2 end, 1), per(4, function(i) return M3[i]:sum() end) }
  end)
  agree("pytrees in and out", function(p) return { s = p.x + p.y, t = { p.x:sum(), p.x * p.y } } end, { { { x = 0, y = false } } },
    { { x = X, y = y } }, function()
      return { s = per(4, function(i) return X[i] + y end), t = { per(4, function(i) return X[i]:sum() end), per(4, function(i) return X[i] * y end) } }
    end)
  agree("an unbatched output is stacked", function(a) return a + 1, y * 2 end, { 0 }, { X }, function()
    return { per(4, function(i) return X[i] + 1 end), per(4, function() return y * 2 end) }
  end)
end)

T.test("nested vmap: both levels batched", function()
  local dot = function(a, b) return (a * b):sum() end
  agree("vmap(vmap(dot))", vmap(dot, { false, 0 }), { { 0, false } }, { X, Y }, function() return { X:matmul(Y:t()) } end, 1e-5)
  local inner
  agree("inner level batched too", function(a)
    local r = vmap(function(b) return F.linear(b, a:unsqueeze(0)):squeeze(-1) + a:sum() end)(M3[0])
    inner = func._vmap_last
    return r
  end, { 0 }, { X }, function()
    return { per(4, function(i) return per(2, function(j) return F.linear(M3[0][j], X[i]:unsqueeze(0)):squeeze(-1) + X[i]:sum() end) end) }
  end, 1e-5)
  T.eq(inner, "batched", "the inner vmap (run inside the batched outer one) batched")
end)

-- per-sample gradients of model against a loop of autograd.grad on one sample at a time
local function per_sample_grads_check(name, model, data, targets, loss_fn, tol)
  local params = {}
  for k, v in model:named_parameters() do params[k] = v:detach() end
  local function compute_loss(p, sample, target)
    return loss_fn(func.functional_call(model, p, { sample:unsqueeze(0) }), target:unsqueeze(0))
  end
  func._vmap_batching = true
  local got = vmap(grad(compute_loss), { in_dims = { false, 0, 0 } })(params, data, targets)
  T.eq(func._vmap_last, "batched", name .. ": batched")
  local names, ps = {}, {}
  for k, v in model:named_parameters() do names[#names + 1] = k; ps[#ps + 1] = v end
  for i = 0, data:size(0) - 1 do
    local gs = torch.autograd.grad(loss_fn(model(data[i]:unsqueeze(0)), targets[i]:unsqueeze(0)), ps)
    for j, k in ipairs(names) do close(got[k][i], gs[j], tol, name .. " sample " .. i .. " " .. k) end
  end
end

T.test("per-sample gradients: the tutorial's SimpleCNN (float32) and an MLP (float64)", function()
  torch.manual_seed(3)
  local SimpleCNN = nn.Module:extend("SimpleCNNTest")
  function SimpleCNN:__init()
    self.conv1 = nn.Conv2d(1, 32, 3, 1)
    self.conv2 = nn.Conv2d(32, 64, 3, 1)
    self.fc1 = nn.Linear(9216, 128)
    self.fc2 = nn.Linear(128, 10)
  end
  function SimpleCNN:forward(x)
    x = F.relu(self.conv2(F.relu(self.conv1(x))))
    x = torch.flatten(F.max_pool2d(x, 2), 1)
    return F.log_softmax(self.fc2(F.relu(self.fc1(x))), { dim = 1 })
  end
  per_sample_grads_check("SimpleCNN", SimpleCNN(), torch.randn(3, 1, 28, 28), torch.randint(10, { 3 }),
    function(p, t) return F.nll_loss(p, t) end, 1e-6)
  local mlp = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 3)):double()
  per_sample_grads_check("MLP", mlp, torch.randn(5, 6, { dtype = torch.float64 }), torch.randint(3, { 5 }),
    function(p, t) return F.cross_entropy(p, t) end, 1e-12)
  -- grad_and_value and has_aux inside vmap; argnums over a mapped input
  local w = torch.randn(3, { dtype = torch.float64 })
  local Xd = X:double()
  local gv = function(a, x) local l = (a * x):sin():sum(); return l, x * 2 end
  func._vmap_batching = true
  local g, v, aux = vmap(func.grad_and_value(gv, { argnums = { 0, 1 }, has_aux = true }), { false, 0 })(w, Xd)
  T.eq(func._vmap_last, "batched", "grad_and_value batched")
  for i = 0, 3 do
    local a, x = w:clone():requires_grad_(), Xd[i]:clone():requires_grad_()
    local l = (a * x):sin():sum()
    local ga, gx = table.unpack(torch.autograd.grad(l, { a, x }))
    close(g[1][i], ga, 1e-12, "d/dw sample " .. i)
    close(g[2][i], gx, 1e-12, "d/dx sample " .. i)
    close(v[i], l:detach(), 1e-12, "value sample " .. i)
    close(aux[i], Xd[i] * 2, 1e-12, "aux sample " .. i)
  end
end)

T.test("vjp inside vmap: per-sample vector-Jacobian products", function()
  local w = torch.randn(3, { dtype = torch.float64 })
  local Xd, Vd = X:double(), torch.randn(4, 2, { dtype = torch.float64 })
  local g = function(a, x) return torch.stack({ (a * x):sin():sum(), (a - x):pow(2):sum() }) end
  local f = function(x, v)
    local out, fn = func.vjp(g, w, x)
    local r = fn(v)
    return out, r[1], r[2]
  end
  agree("vjp", f, { 0 }, { Xd, Vd }, function()
    local outs, ga, gx = {}, {}, {}
    for i = 0, 3 do
      local a, x = w:clone():requires_grad_(), Xd[i]:clone():requires_grad_()
      local y = g(a, x)
      local gs = torch.autograd.grad({ y }, { a, x }, { Vd[i] })
      outs[i + 1], ga[i + 1], gx[i + 1] = y:detach(), gs[1], gs[2]
    end
    return { torch.stack(outs), torch.stack(ga), torch.stack(gx) }
  end, 1e-12)
end)

T.test("jacrev inside vmap: per-sample Jacobians", function()
  local w = torch.randn(2, 3, { dtype = torch.float64 })
  local Xd = X:double()
  local g = function(a, x) return { (a:matmul(x)):tanh(), x:sum() * a } end
  local f = function(x)
    local j = func.jacrev(g, { argnums = { 0, 1 } })(w, x)
    return j[1][1], j[1][2], j[2][1], j[2][2]
  end
  agree("jacrev", f, { 0 }, { Xd }, function()
    local r = { {}, {}, {}, {} }
    for i = 0, 3 do
      -- by hand: y1 = tanh(a x): dy1/da[k, l] = (1 - y1^2)[k] x[l] (row k only); dy1/dx = (1 - y1^2) * a;
      -- y2 = sum(x) a: dy2/da = sum(x) I, dy2/dx[k, l, m] = a[k, l]
      local x = Xd[i]
      local d = 1 - w:matmul(x):tanh():pow(2)
      local ja = torch.zeros(2, 2, 3, { dtype = torch.float64 })
      for k = 0, 1 do ja[k][k] = x * d[k] end
      r[1][i + 1] = ja
      r[2][i + 1] = d:unsqueeze(1) * w
      r[3][i + 1] = torch.eye(6, { dtype = torch.float64 }):reshape(2, 3, 2, 3) * x:sum()
      r[4][i + 1] = w:unsqueeze(2):expand(2, 3, 3)
    end
    return { torch.stack(r[1]), torch.stack(r[2]), torch.stack(r[3]), torch.stack(r[4]) }
  end, 1e-12)
  -- a dict of parameters, has_aux, chunk_size, an output that depends on one input only
  local p = { w = w, b = torch.randn(2, { dtype = torch.float64 }) }
  local h = function(q, x) return { (q.w:matmul(x) + q.b):sin(), q.b * 2 }, x:sum() end
  local jf = function(x)
    local j, aux = func.jacrev(h, { has_aux = true, chunk_size = 3 })(p, x)
    return j[1].w, j[1].b, j[2].w, j[2].b, aux
  end
  agree("jacrev of a dict, has_aux, chunk_size", jf, { 0 }, { Xd }, function()
    local r = { {}, {}, {}, {}, {} }
    for i = 0, 3 do
      local x = Xd[i]
      local c = (w:matmul(x) + p.b):cos()
      local jw = torch.zeros(2, 2, 3, { dtype = torch.float64 })
      for k = 0, 1 do jw[k][k] = x * c[k] end
      r[1][i + 1], r[2][i + 1] = jw, torch.diag(c)
      r[3][i + 1], r[4][i + 1] = torch.zeros(2, 2, 3, { dtype = torch.float64 }), torch.eye(2, { dtype = torch.float64 }) * 2
      r[5][i + 1] = x:sum()
    end
    local out = {}
    for k = 1, 5 do out[k] = torch.stack(r[k]) end
    return out
  end, 1e-12)
end)

T.test("torch's dtypes and torch.cuda stay as they are inside vmap", function()
  local Xd = torch.randn(4, 3, { dtype = torch.float64 })
  agree("x:to(torch.float), torch.cuda.is_available()", function(x)
    T.check(type(torch.cuda) == "table" and torch.is_tensor(torch.zeros(1, { dtype = torch.long })), "torch.cuda, torch.long")
    local one = torch.cuda.is_available() and 1 or 1
    return x:to(torch.float):to(torch.double) * one + x:type(torch.half):double()
  end, { 0 }, { Xd }, function()
    return { Xd:float():double() + Xd:half():double() }
  end, 0)
end)

T.test("fallback: an op without a rule runs f again in the loop, with the same results", function()
  local Sq = torch.randn(4, 3, 3)
  local f = function(a) return a:sum(0) * torch.trace(a) end
  agree("torch.trace", f, { 0 }, { Sq }, function() return { per(4, function(i) return Sq[i]:sum(0) * torch.trace(Sq[i]) end) } end, 1e-6, "loop")
  T.check(func._vmap_last:find("diagonal", 1, true) ~= nil or func._vmap_last:find("Tensor", 1, true) ~= nil, "the reason names the op: " .. func._vmap_last)
  local g = function(a) if a:sum():item() > 0 then return a * 2 end return -a end
  agree("a branch on item()", g, { 0 }, { X }, function() return { per(4, function(i) return g(X[i]) end) } end, 1e-6, "loop")
  -- everything is restored after a batched attempt that failed
  T.check(not torch.is_tensor({ _v = X, _l = 1 }), "torch.is_tensor restored")
  T.raises(function() vmap(function(a) return a + {} end)(X) end, "~", "an error in f is f's error, from the loop")
  T.check(getmetatable(X).__add == getmetatable(Y).__add, "operators")
  -- errors keep their messages
  T.raises(function() vmap(function(a) return a:view(5) end)(X) end, "~view", "an error of f is the loop's error")
end)

T.test("dropout: randomness same / different batched, error falls back", function()
  local x = torch.randn(6, 20)
  local d = function(a) return F.dropout(a, 0.5, true) end
  for _, r in ipairs({ "same", "different" }) do
    torch.manual_seed(5)
    func._vmap_batching = true
    local got = vmap(d, 0, 0, r)(x)
    T.eq(func._vmap_last, "batched", r .. ": batched")
    local after = torch.rand(1)
    torch.manual_seed(5)
    func._vmap_batching = false
    local loop = vmap(d, 0, 0, r)(x)
    func._vmap_batching = true
    close(got, loop, 1e-6, r .. ": equal to the loop's draws")
    close(torch.rand(1), after, 0, r .. ": the generator left in the same state")
  end
  torch.manual_seed(5)
  vmap(d)(x)
  T.check(func._vmap_last:sub(1, 5) == "loop:", "randomness='error': the loop")
  torch.manual_seed(5)
  local r1 = vmap(function(a) return a + torch.randn(20) end, 0, 0, "same")(x)
  T.eq(func._vmap_last, "batched", "an unbatched random op under 'same'")
  close(r1[0] - x[0], r1[3] - x[3], 1e-6, "the same draw for every sample")
  vmap(function(a) return a + torch.randn(20) end, 0, 0, "different")(x)
  T.check(func._vmap_last:sub(1, 5) == "loop:", "an unbatched random op under 'different': the loop")
end)

-- ---------------------------------------------------------------- second pass

local D = torch.float64
torch.manual_seed(7)
local Wd = torch.randn(2, 3, { dtype = D })
local Xd, Vd, Cd = torch.randn(4, 3, { dtype = D }), torch.randn(4, 3, { dtype = D }), torch.randn(4, 2, { dtype = D })
local tanhW = function(x) return Wd:matmul(x):tanh() end
-- closed forms of g(x) = tanh(W x): J = diag(1 - t^2) W; of h(x) = sum(tanh(W x)):
-- H = W^T diag(-2 t (1 - t^2)) W
local function J_of(x) local t = Wd:matmul(x):tanh(); return (1 - t:pow(2)):unsqueeze(1) * Wd end
local function H_of(x) local t = Wd:matmul(x):tanh(); return Wd:t():matmul((-2 * t * (1 - t:pow(2))):unsqueeze(1) * Wd) end

T.test("jvp, jacfwd and hessian inside vmap: per sample", function()
  agree("jvp", function(x, v)
    local out, jv = func.jvp(tanhW, { x }, { v })
    return out, jv
  end, { 0 }, { Xd, Vd }, function()
    return { per(4, function(i) return tanhW(Xd[i]) end), per(4, function(i) return J_of(Xd[i]):matmul(Vd[i]) end) }
  end, 1e-12)
  agree("jvp, tangent unbatched", function(x) return select(2, func.jvp(tanhW, { x }, { Vd[0] })) end, { 0 }, { Xd },
    function() return { per(4, function(i) return J_of(Xd[i]):matmul(Vd[0]) end) } end, 1e-12)
  agree("jvp, primal unbatched, tangent batched", function(v) return select(2, func.jvp(tanhW, { Xd[1] }, { v })) end, { 0 }, { Vd },
    function() return { per(4, function(i) return J_of(Xd[1]):matmul(Vd[i]) end) } end, 1e-12)
  -- two primals (a dict and a tensor), has_aux
  local two = function(p, x) return (p.w:matmul(x) + p.b):sin(), x:sum() end
  local P = { w = Wd, b = torch.randn(2, { dtype = D }) }
  local Tb = torch.randn(4, 2, { dtype = D })
  agree("jvp of a dict primal, has_aux", function(x, tb)
    local _, jv, aux = func.jvp(two, { P, x }, { { w = Wd * 0.5, b = tb }, x * 2 }, { has_aux = true })
    return jv, aux
  end, { 0 }, { Xd, Tb }, function()
    -- d sin(w x + b) = cos(w x + b) * (dw x + w dx + db)
    return { per(4, function(i)
      local x = Xd[i]
      return P.w:matmul(x):add(P.b):cos() * ((Wd * 0.5):matmul(x) + P.w:matmul(x * 2) + Tb[i])
    end), per(4, function(i) return Xd[i]:sum() end) }
  end, 1e-12)
  agree("jacfwd", function(x) return func.jacfwd(tanhW)(x) end, { 0 }, { Xd },
    function() return { per(4, function(i) return J_of(Xd[i]) end) } end, 1e-12)
  agree("jacfwd, argnums {0, 1}", function(x)
    local j = func.jacfwd(function(w, y) return w:matmul(y):tanh() end, { argnums = { 0, 1 } })(Wd, x)
    return j[1], j[2]
  end, { 0 }, { Xd }, function()
    local ja, jx = {}, {}
    for i = 0, 3 do
      local x = Xd[i]
      local d = 1 - Wd:matmul(x):tanh():pow(2)
      local m = torch.zeros(2, 2, 3, { dtype = D })
      for k = 0, 1 do m[k][k] = x * d[k] end
      ja[i + 1], jx[i + 1] = m, J_of(x)
    end
    return { torch.stack(ja), torch.stack(jx) }
  end, 1e-12)
  local h = function(x) return tanhW(x):sum() end
  agree("hessian", function(x) return func.hessian(h)(x) end, { 0 }, { Xd },
    function() return { per(4, function(i) return H_of(Xd[i]) end) } end, 1e-12)
  agree("jacfwd(jacfwd)", function(x) return func.jacfwd(func.jacfwd(h))(x) end, { 0 }, { Xd },
    function() return { per(4, function(i) return H_of(Xd[i]) end) } end, 1e-12)
  agree("hessian in_dims {None, 0}", function(w, x) return func.hessian(function(y) return w:matmul(y):tanh():sum() end)(x) end,
    { { false, 0 } }, { Wd, Xd }, function() return { per(4, function(i) return H_of(Xd[i]) end) } end, 1e-12)
end)

T.test("a vjp_fn made outside vmap, vmapped over cotangents", function()
  local _, vjp_fn = func.vjp(tanhW, Xd[0])
  agree("vmap(vjp_fn)", function(c) return vjp_fn(c)[1] end, { 0 }, { Cd },
    function() return { per(4, function(i) return J_of(Xd[0]):t():matmul(Cd[i]) end) } end, 1e-12)
  -- the tutorial's manual jacrev: the unit vectors as cotangents give the Jacobian's rows
  agree("vmap(vjp_fn)(eye)", function(c) return vjp_fn(c)[1] end, { 0 }, { torch.eye(2, { dtype = D }) },
    function() return { J_of(Xd[0]) } end, 1e-12)
  local _, fn2 = func.vjp(function(w, x) return { w:matmul(x):sin(), x:exp() } end, Wd, Xd[1])
  local C3 = torch.randn(4, 3, { dtype = D })
  agree("two primals, two outputs, one cotangent unbatched", function(c2, c3)
    local r = fn2({ c2, c3 })
    return r[1], r[2]
  end, { { 0, false } }, { Cd, C3[0] }, function()
    local gw, gx = {}, {}
    for i = 0, 3 do
      local w, x = Wd:clone():requires_grad_(), Xd[1]:clone():requires_grad_()
      local g = torch.autograd.grad({ w:matmul(x):sin(), x:exp() }, { w, x }, { Cd[i], C3[0] })
      gw[i + 1], gx[i + 1] = g[1], g[2]
    end
    return { torch.stack(gw), torch.stack(gx) }
  end, 1e-12)
end)

T.test("chunk_size: the batch in chunks, each batched", function()
  local Xs = torch.randn(7, 3, { dtype = D })
  local calls = 0
  local f = function(x, y) calls = calls + 1; return x:sin() * y, x:sum() end
  agree("chunk_size 3 of 7", f, { { 0, false }, { 1, 0 }, "error", { chunk_size = 3 } }, { Xs, Xd[0] }, function()
    return { per(7, function(i) return Xs[i]:sin() * Xd[0] end, 1), per(7, function(i) return Xs[i]:sum() end) }
  end, 1e-12)
  calls = 0
  vmap(f, { 0, false }, 0, "error", { chunk_size = 3 })(Xs, Xd[0])
  T.eq(calls, 3, "f runs once per chunk")
  calls = 0
  vmap(f, { 0, false }, 0, "error", { chunk_size = 10 })(Xs, Xd[0])
  T.eq(calls, 1, "a chunk larger than the batch: one run")
  agree("per-sample grads in chunks of 2", grad(function(x) return tanhW(x):sum() end), { 0, 0, "error", { chunk_size = 2 } }, { Xd },
    function() return { per(4, function(i) return J_of(Xd[i]):sum(0) end) } end, 1e-12)
  local Sq = torch.randn(5, 3, 3, { dtype = D })
  agree("a chunk falls back: the loop", function(a) return a:sum(0) * torch.trace(a) end, { 0, 0, "error", { chunk_size = 2 } },
    { Sq }, function() return { per(5, function(i) return Sq[i]:sum(0) * torch.trace(Sq[i]) end) } end, 1e-12, "loop")
end)

T.test("outer, einsum, conv1d", function()
  agree("outer", function(a, b) return torch.outer(a, b), torch.outer(a, y:double()), torch.ger(y:double(), b) end, { 0 }, { Xd, Vd },
    function()
      return { per(4, function(i) return torch.outer(Xd[i], Vd[i]) end), per(4, function(i) return torch.outer(Xd[i], y:double()) end),
        per(4, function(i) return torch.outer(y:double(), Vd[i]) end) }
    end, 1e-12)
  local A = torch.randn(4, 2, 3, { dtype = D })
  local Bm = torch.randn(3, 5, { dtype = D })
  local es = function(a, b, x)
    return torch.einsum("ij,jk->ik", a, b), torch.einsum("ij,j", a, x), torch.einsum("ij->", a), torch.einsum("...j,jk->...k", a, b),
      torch.einsum("i,i->", x, x), torch.einsum("ij,jk", { a, b }), torch.einsum("ii", a:matmul(b):narrow(1, 0, 2))
  end
  agree("einsum, batched and unbatched operands", es, { { 0, false, 0 } }, { A, Bm, Xd }, function()
    local r = per_all(4, function(a, x) return es(a, Bm, x) end, A, Xd)
    return r
  end, 1e-12)
  torch.manual_seed(8)
  local x3 = torch.randn(3, 2, 4, 9, { dtype = D }) -- per sample [N=2, C=4, L=9]
  local x2 = torch.randn(3, 4, 9, { dtype = D })    -- per sample [C, L]
  local w = torch.randn(3, 6, 2, 3, { dtype = D })  -- per sample [Cout=6, Cin/g=2, k=3] (groups 2)
  local b = torch.randn(3, 6, { dtype = D })
  local conv = function(xx, w_, b_) return F.conv1d(xx, w_, b_, 2, 1, 1, 2) end
  agree("conv1d input batched", conv, { { 0, false, false } }, { x3, w[0], b[0] }, function() return { per(3, function(i) return conv(x3[i], w[0], b[0]) end) } end, 1e-12)
  agree("conv1d input batched, 2-d", conv, { { 0, false, false } }, { x2, w[0], b[0] }, function() return { per(3, function(i) return conv(x2[i], w[0], b[0]) end) } end, 1e-12)
  agree("conv1d weight and bias batched", conv, { { 0, 0, 0 } }, { x3, w, b }, function() return { per(3, function(i) return conv(x3[i], w[i], b[i]) end) } end, 1e-12)
  agree("conv1d weight batched, 2-d input unbatched", conv, { { false, 0, false } }, { x2[0], w, b[0] }, function() return { per(3, function(i) return conv(x2[0], w[i], b[0]) end) } end, 1e-12)
  agree("conv1d bias batched only", conv, { { 0, false, 0 } }, { x3, w[0], b }, function() return { per(3, function(i) return conv(x3[i], w[0], b[i]) end) } end, 1e-12)
end)

T.test("batch_norm: eval (running statistics, batched or not) and training (per-sample statistics)", function()
  torch.manual_seed(9)
  local x = torch.randn(3, 5, 4, 2, { dtype = D }) -- per sample [N=5, C=4, L=2]
  local rm, rv = torch.randn(3, 4, { dtype = D }), torch.rand(3, 4, { dtype = D }) + 0.5
  local w, b = torch.randn(3, 4, { dtype = D }), torch.randn(3, 4, { dtype = D })
  local bn = function(xx, m, v, ww, bb, tr) return F.batch_norm(xx, m, v, ww, bb, tr, 0.1, 1e-5) end
  agree("eval, statistics unbatched", function(xx) return bn(xx, rm[0], rv[0], w[0], b[0], false) end, { 0 }, { x },
    function() return { per(3, function(i) return bn(x[i], rm[0], rv[0], w[0], b[0], false) end) } end, 1e-12)
  agree("eval, everything batched", function(xx, m, v, ww, bb) return bn(xx, m, v, ww, bb, false) end, { 0 }, { x, rm, rv, w, b },
    function() return { per(3, function(i) return bn(x[i], rm[i], rv[i], w[i], b[i], false) end) } end, 1e-12)
  agree("eval, input unbatched, statistics batched", function(m, v) return bn(x[0], m, v, nil, nil, false) end, { 0 }, { rm, rv },
    function() return { per(3, function(i) return bn(x[0], rm[i], rv[i], nil, nil, false) end) } end, 1e-12)
  agree("training without running statistics: each sample's own", function(xx, ww) return bn(xx, nil, nil, ww, b[1], true) end,
    { 0 }, { x, w }, function() return { per(3, function(i) return bn(x[i], nil, nil, w[i], b[1], true) end) } end, 1e-12)
  -- nn.BatchNorm1d in eval through an ensemble of buffers, and in training with
  -- track_running_stats=False; in training with running statistics (updated in place) the loop
  local m = nn.BatchNorm1d(4):double()
  m.running_mean:copy_(rm[1]); m.running_var:copy_(rv[1])
  m:eval()
  agree("nn.BatchNorm1d eval", function(xx) return m(xx) end, { 0 }, { x }, function() return { per(3, function(i) return m(x[i]) end) } end, 1e-12)
  local m2 = nn.BatchNorm1d(4, { track_running_stats = false }):double()
  agree("nn.BatchNorm1d track_running_stats=False", function(xx) return m2(xx) end, { 0 }, { x },
    function() return { per(3, function(i) return m2(x[i]) end) } end, 1e-12)
  func._vmap_batching = true
  local m3 = nn.BatchNorm1d(4):double()
  vmap(function(xx) return m3(xx) end)(x)
  T.check(func._vmap_last:find("running statistics", 1, true) ~= nil, "training with running statistics: the loop (" .. func._vmap_last .. ")")
end)

-- grad transforms inside nested vmaps, over values batched at several levels (the arguments, the
-- cotangents or tangents, and values the function closes over): every level batched, against
-- plain loops of autograd on one pair of samples at a time
T.test("grad transforms over several vmap levels (the NTK tutorial's vmap(vmap(vjp ... jvp)))", function()
  torch.manual_seed(3)
  local net = nn.Sequential(nn.Conv2d(2, 3, 3), nn.Tanh(), nn.Flatten(), nn.Linear(3 * 4 * 4, 2)):double()
  local params = {}
  for k, v in net:named_parameters() do params[k] = v:detach() end
  local function fnet(p, x) return func.functional_call(net, p, { x:unsqueeze(0) }):squeeze(0) end
  local X1, X2 = torch.randn(3, 2, 6, 6, { dtype = D }), torch.randn(2, 2, 6, 6, { dtype = D })
  -- the Jacobian of fnet at one point, [2, #params] (flattened), by autograd row by row
  local names = {}
  for k in pairs(params) do names[#names + 1] = k end
  table.sort(names)
  local function jac(x)
    local ps = {}
    for i, k in ipairs(names) do ps[i] = params[k]:clone():requires_grad_() end
    local p = {}
    for i, k in ipairs(names) do p[k] = ps[i] end
    local y = fnet(p, x)
    local rows = {}
    for r = 0, 1 do
      local g = torch.autograd.grad({ y[r] }, ps, nil, { retain_graph = true })
      local flat = {}
      for i = 1, #g do flat[i] = g[i]:reshape(-1) end
      rows[r + 1] = torch.cat(flat)
    end
    return torch.stack(rows)
  end
  local calls, slices = 0, 0
  local function get_ntk(a, b)
    calls = calls + 1
    local out, vjp_fn = func.vjp(function(p) return fnet(p, a) end, params)
    local function slice(vec)
      slices = slices + 1
      local _, jvps = func.jvp(function(p) return fnet(p, b) end, { params }, vjp_fn(vec))
      return jvps
    end
    return vmap(slice)(torch.eye(out:numel(), { dtype = D }))
  end
  local ntk = vmap(vmap(get_ntk, { false, 0 }), { 0, false })(X1, X2)
  T.eq(func._vmap_last, "batched", "the outer vmap batched")
  T.eq(calls .. " " .. slices, "1 1", "get_ntk and the basis slice each ran once (every level batched)")
  close(ntk, per(3, function(i) return per(2, function(j) return jac(X1[i]):matmul(jac(X2[j]):t()) end) end), 1e-10,
    "the NTK of every pair against J(x1) J(x2)^T")

  -- grad inside two levels, the function's two inputs one at each level, a weight closed over
  local w = torch.randn(3, { dtype = D })
  local g2 = vmap(vmap(grad(function(a, b) return ((a * w):sin() * b):sum() end), { false, 0 }), { 0, false })(Xd, Vd)
  close(g2, per(4, function(i) return per(4, function(j) return (Xd[i] * w):cos() * w * Vd[j] end) end),
    1e-12, "vmap(vmap(grad)): d/da of sum(sin(a w) b)")
  -- jacrev at the inner level of a function closing over the outer level's input
  local jr = vmap(function(a) return vmap(function(b) return func.jacrev(function(x) return (x * a):tanh() end)(b) end)(Cd:narrow(1, 0, 2)) end)(Xd:narrow(1, 0, 2))
  close(jr, per(4, function(i) return per(4, function(j)
    local t = (Cd[j]:narrow(0, 0, 2) * Xd[i]:narrow(0, 0, 2)):tanh()
    return torch.diag((1 - t * t) * Xd[i]:narrow(0, 0, 2))
  end) end), 1e-12, "vmap(vmap(jacrev)) closing over the outer input")
  -- jacfwd likewise
  local jf = vmap(function(a) return vmap(function(b) return func.jacfwd(function(x) return (x * a):sin() end)(b) end)(Cd:narrow(1, 0, 2)) end)(Xd:narrow(1, 0, 2))
  close(jf, per(4, function(i) return per(4, function(j)
    return torch.diag((Cd[j]:narrow(0, 0, 2) * Xd[i]:narrow(0, 0, 2)):cos() * Xd[i]:narrow(0, 0, 2))
  end) end), 1e-12, "vmap(vmap(jacfwd)) closing over the outer input")
end)
