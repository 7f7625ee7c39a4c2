-- Forward-mode jvp on dual tensors (jvp_forward.lua): for each rule, torch.func.jvp's product
-- against float64 central finite differences of f and against the double-backward path
-- (torch.func._forward_mode = false), with a check that forward mode ran (no fallback); inside
-- vmap with primals and tangents batched at different levels; nested in grad; the fallback for an
-- op without a rule or any failure; errors that must still reach the caller.
local T = ...
local func = torch.func
local F = torch.nn.functional
local nn = torch.nn
local FWD = require "jvp_forward"

local f64 = { dtype = torch.float64 }

local function close(a, b, tol, msg)
  T.check(torch.is_tensor(a) and torch.is_tensor(b), msg .. ": tensors")
  T.eq(tostring(a:size()), tostring(b:size()), msg .. ": shape")
  local d = (a:double() - b:double()):abs():max():item()
  T.check(d <= tol, string.format("%s: max |difference| %.3g > %.3g", msg, d, tol))
end

-- jvp(f, primals, tangents) with forward mode on (it must not fall back unless want_fallback)
local function forward_jvp(msg, f, primals, tangents, want_fallback)
  local n0, f0 = FWD.forward, FWD.fallback
  local r = table.pack(func.jvp(f, primals, tangents))
  if want_fallback then
    T.eq(FWD.fallback, f0 + 1, msg .. ": falls back to double backward")
  else
    T.eq(FWD.fallback, f0, msg .. ": no fallback (" .. tostring(FWD.last_fallback) .. ")")
    T.eq(FWD.forward, n0 + 1, msg .. ": ran on dual tensors")
  end
  return r
end

local function double_backward_jvp(f, primals, tangents)
  func._forward_mode = false
  local r = table.pack(pcall(func.jvp, f, primals, tangents))
  func._forward_mode = nil
  if not r[1] then error(r[2], 0) end
  return table.pack(table.unpack(r, 2, r.n))
end

-- (f(x + h v) - f(x - h v)) / 2h for the single primal x
local function finite_difference(f, x, v)
  local h = 1e-6
  local a = f(x + v * h)
  local b = f(x - v * h)
  return (a - b) / (2 * h)
end

-- f of one float64 tensor: forward mode against finite differences and double backward
local function agree(msg, f, x, tol)
  local v = torch.randn_like(x)
  local r = forward_jvp(msg, f, { x }, { v })
  local want = f(x)
  close(r[1], want, 0, msg .. ": output")
  close(r[2], finite_difference(f, x, v), tol or 1e-6, msg .. ": against finite differences")
  local d = double_backward_jvp(f, { x }, { v })
  close(r[2], d[2], 1e-10, msg .. ": against double backward")
end

T.test("pointwise, views, reductions", function()
  torch.manual_seed(0)
  local x = torch.randn(3, 4, f64)
  local pos = x:abs() + 0.5
  for _, name in ipairs({ "relu", "exp", "tanh", "sigmoid", "sin", "cos", "square", "erf", "abs" }) do
    agree(name, function(t) return t[name](t) end, x + 0.01)
  end
  for _, name in ipairs({ "log", "sqrt", "rsqrt", "reciprocal", "log1p", "expm1" }) do
    agree(name, function(t) return t[name](t) end, pos)
  end
  agree("torch.tanh, torch.exp", function(t) return torch.tanh(t) + torch.exp(t) end, x)
  agree("pow, ^", function(t) return t:pow(3) + (t ^ 2) * 0.5 end, x)
  agree("clamp", function(t) return t:clamp(-0.5, 0.7) + t:clamp(nil, 0.2) end, x + 0.013)
  agree("views", function(t)
    return t:view(2, 6):t():reshape(4, 3):unsqueeze(0):transpose(1, 2):flatten():narrow(0, 1, 8):view(2, 4)
  end, x)
  agree("select, index, T", function(t) return t[1] + t:select(1, 2):sum() + t.T[0]:mean() end, x)
  agree("slices and index tensors", function(t) return t["0:2, :"]:sum(0) + t[":, 1"]:sum() + t[{ 2, 0 }][0] + t[t:gt(0)]:sum() + t:index_select(1, torch.tensor({ 3, 0, 1, 1 })) end, x)
  agree("sum, mean, cumsum, flip", function(t) return t:sum(1, true) * t:mean() + t:cumsum(1):flip(0) end, x)
  agree("split, chunk, unbind", function(t)
    local a, b = table.unpack(t:split(2, 1))
    local c = t:chunk(3, 0)[2]
    return a * b + c:sum() + t:unbind(0)[1]:sum()
  end, x)
  agree("expand, repeat, gather", function(t)
    return t:sum(0):expand(2, 4):sum(0) + t:gather(1, torch.tensor({ { 0, 1, 1, 3 }, { 2, 2, 0, 0 }, { 3, 1, 0, 2 } }))
  end, x)
  agree("to", function(t) return t:to(torch.float64) * 2 + t:double() end, x)
  local v = torch.randn_like(x)
  local rf = forward_jvp("float", function(t) return t:float() end, { x }, { v })
  T.eq(rf[2].dtype, torch.float32, "float: the tangent cast too")
  close(rf[2], v:float(), 0, "float: tangent")
  local r = forward_jvp("detach", function(t) return t * t:detach() end, { x }, { v })
  close(r[2], v * x, 0, "detach: a constant for the tangent")
  agree("comparisons, signs, roundings: no tangent", function(t)
    return t * t:gt(0):double() + t:lt(t:flip(0)):double() * 2 + t:sign() + t:floor() * t + torch.ne(t, 0):double()
      + t:argmax(1):double():sum()
  end, x + 0.013)
end)

T.test("binary ops, products, cat, where", function()
  torch.manual_seed(1)
  local x = torch.randn(3, 4, f64)
  local c = torch.randn(4, f64)
  local m = torch.randn(4, 5, f64)
  agree("operators with tensors and numbers", function(t) return (t + c) * (2 - t) / (c:abs() + 1) - 3 * t + t / 2 - (-t) end, x)
  agree("division by a dual", function(t) return c / (t:abs() + 1) + 1 / (t * t + 1) end, x)
  agree("add / sub with alpha, rsub", function(t) return t:add(c, 2) + c:sub(t, { alpha = 3 }) + torch.rsub(t, 1) end, x)
  agree("matmul, mm, mv, dot", function(t)
    return t:matmul(m):sum(1) + torch.mm(t, m):mean(1) + t:mv(c) + t[0]:dot(t[1]) + c:matmul(t:t())
  end, x)
  agree("bmm, outer", function(t) return torch.bmm(t:view(1, 3, 4), t:t():view(1, 4, 3))[0]:sum(1) + torch.outer(t[0], t[1]):sum(0):narrow(0, 0, 3) end, x)
  agree("maximum, minimum", function(t) return torch.maximum(t, c) + torch.minimum(t * 2, t:flip(0)) end, x)
  agree("where", function(t) return torch.where(t:gt(0), t * t, c) + t:where(t:lt(0.3), 0.5 * t) end, x)
  agree("cat, stack", function(t) return torch.cat({ t, c:view(1, 4), t * 2 }, 0):sum(0) + torch.stack({ t, t:exp() }, 2):sum(2):sum(0) end, x)
end)

T.test("activations, softmax and losses", function()
  torch.manual_seed(2)
  local x = torch.randn(4, 5, f64)
  agree("F activations", function(t)
    return F.relu(t) + F.gelu(t) + F.gelu(t, { approximate = "tanh" }) + F.silu(t) + F.softplus(t, 2.0)
      + F.leaky_relu(t, 0.2) + F.elu(t, 0.7) + F.logsigmoid(t) + F.hardtanh(t, -0.5, 0.5) + F.relu6(t * 4)
      + F.sigmoid(t) + F.tanh(t)
  end, x + 0.01)
  agree("softmax, log_softmax", function(t) return F.softmax(t, 1) + F.log_softmax(t, { dim = 0 }) + t:softmax(-1) + torch.log_softmax(t, 1) end, x)
  local target = torch.tensor({ 0, 4, 2, 2 })
  local w = torch.rand(5, f64) + 0.5
  agree("cross_entropy, nll_loss", function(t)
    return F.cross_entropy(t, target) + F.cross_entropy(t, target, { reduction = "sum" }) * 0.1
      + F.cross_entropy(t, target, { weight = w, ignore_index = 4 }) + F.nll_loss(F.log_softmax(t, 1), target)
  end, x)
  local y = torch.randn(4, 5, f64)
  agree("mse_loss, l1_loss", function(t)
    return F.mse_loss(t, y) + F.mse_loss(y, t * 2, { reduction = "sum" }) + F.l1_loss(t, y, { reduction = "none" }):sum(0)
  end, x)
end)

T.test("more reductions, products, embedding, interpolation, group norm, attention", function()
  torch.manual_seed(12)
  local x = torch.randn(3, 4, f64)
  agree("logsumexp", function(t) return t:logsumexp(1) + torch.logsumexp(t, 0, true):sum() + t:logsumexp({ 0, 1 }) end, x)
  agree("max, min over a dim", function(t)
    local v, i = t:max(1)
    local w = torch.min(t, 0, true)
    return v:sum() + w:sum() + i:double():sum() * 0
  end, x)
  agree("amax, amin, max, min of all", function(t) return t:amax(1) + t:amin(0):sum() + t:max() + torch.min(t) + t:amax() end, x)
  -- tied extremes: the tangent averaged over them
  local tied = torch.tensor({ { 1.0, 3.0, 3.0 }, { 2.0, 0.0, 2.0 } }, f64)
  local v = torch.tensor({ { 0.5, 1.0, 3.0 }, { 2.0, 7.0, 4.0 } }, f64)
  local r = forward_jvp("amax, ties", function(t) return t:amax(1) end, { tied }, { v })
  close(r[2], torch.tensor({ 2.0, 3.0 }, f64), 1e-15, "amax, ties: the mean of the tied tangents")
  agree("norm, var, std", function(t)
    return t:norm() + t:norm(2, 1):sum() + torch.norm(t, 2, 0, true):sum() + t:var(1) + t:std(0, { correction = 0 }):sum()
      + t:var() + t:std({ dim = 1, keepdim = true }):sum()
  end, x)
  local m = torch.randn(4, 5, f64)
  agree("einsum", function(t) return torch.einsum("ij,jk->ik", t, m) + torch.einsum("ij,ij->i", t, t):view(3, 1) + torch.einsum("ij->", t) end, x)
  agree("masked_fill, lerp, addmm", function(t)
    return t:masked_fill(t:gt(0.5), 2.0) + t:lerp(t * t, 0.3) + torch.addmm(t, t, torch.eye(4, f64), { beta = 0.5, alpha = 2 })
  end, x)
  local emb = torch.randn(6, 3, f64)
  agree("embedding", function(t) return F.embedding(torch.tensor({ { 0, 5 }, { 2, 2 } }), t) end, emb)
  local img = torch.randn(1, 2, 3, 4, f64)
  agree("interpolate", function(t)
    return F.interpolate(t, { scale_factor = 2, mode = "bilinear", align_corners = false }):sum(1)
      + F.interpolate(t, { size = { 6, 8 }, mode = "nearest" }):sum(1)
  end, img)
  local gx, gw, gb = torch.randn(2, 4, 3, f64), torch.randn(4, f64), torch.randn(4, f64)
  agree("group_norm", function(t) return F.group_norm(t, 2, gw, gb) end, gx, 1e-5)
  agree("group_norm weight", function(t) return F.group_norm(gx, 2, t, gb) end, gw, 1e-5)
  local q, k, vv = torch.randn(2, 3, 4, f64), torch.randn(2, 5, 4, f64), torch.randn(2, 5, 4, f64)
  agree("scaled_dot_product_attention", function(t) return F.scaled_dot_product_attention(t, k, vv) end, q)
  agree("scaled_dot_product_attention, causal, scale", function(t)
    return F.scaled_dot_product_attention(t, t, t, { is_causal = true, scale = 0.3 })
  end, q)
  local bm = torch.rand(3, 5):gt(0.3)
  bm[":, 0"] = true
  local fm = torch.randn(3, 5, f64)
  agree("scaled_dot_product_attention, masks", function(t)
    return F.scaled_dot_product_attention(q, t, vv, { attn_mask = bm }) + F.scaled_dot_product_attention(q, k, t, { attn_mask = fm })
  end, k)
end)

T.test("linear, convolutions, pools, norms, dropout", function()
  torch.manual_seed(3)
  local x = torch.randn(2, 3, 7, 7, f64)
  local w = torch.randn(4, 3, 3, 3, f64)
  local b = torch.randn(4, f64)
  agree("conv2d input", function(t) return F.conv2d(t, w, b, 2, 1) end, x)
  agree("conv2d weight", function(t) return F.conv2d(x, t, b, { padding = 1, dilation = 2 }) end, w)
  agree("conv2d bias, one image", function(t) return F.conv2d(x[0], w, t) end, b)
  agree("conv2d input and weight, one image", function(t) return F.conv2d(t, w, b) + F.conv2d(x[1], t:narrow(0, 0, 1):expand(4, 3, 7, 7):narrow(3, 0, 3):narrow(2, 0, 3) * 1, nil) end, x[0])
  agree("conv2d groups", function(t) return F.conv2d(t, w:narrow(1, 0, 1):narrow(0, 0, 3), nil, 1, 0, 1, 3) end, x)
  agree("conv1d, conv_transpose2d", function(t)
    return F.conv1d(t:flatten(2), w:flatten(2):narrow(2, 0, 3), nil, 2):sum() + F.conv_transpose2d(t, w:transpose(0, 1), b, 2, 1):sum()
  end, x)
  agree("pools", function(t)
    return F.max_pool2d(t, 2):sum() + F.max_pool2d(t, 3, { stride = 2, padding = 1 }):sum()
      + F.avg_pool2d(t, 2):sum() + F.adaptive_avg_pool2d(t, 1):sum() + F.adaptive_max_pool2d(t, { 2, 3 }):sum()
      + F.max_pool1d(t:flatten(2), 4):sum()
  end, x)
  agree("max_pool2d return_indices", function(t)
    local y, idx = F.max_pool2d(t, 2, { return_indices = true })
    T.eq(idx.dtype, torch.int64, "indices")
    return y
  end, x)
  agree("pad", function(t) return F.pad(t, { 1, 2, 0, 1 }, "constant", 3.0) + F.pad(t, { 1, 2, 0, 1 }, "reflect") + F.pad(t, { 1, 2, 0, 1 }, "replicate") end, x)
  local lw, lb = torch.randn(5, 7, f64), torch.randn(5, f64)
  agree("linear input", function(t) return F.linear(t, lw, lb) end, x)
  agree("linear weight", function(t) return F.linear(x, t) end, lw)
  local rm, rv = torch.randn(3, f64), torch.rand(3, f64) + 0.5
  local gw, gb = torch.randn(3, f64), torch.randn(3, f64)
  agree("batch_norm eval", function(t) return F.batch_norm(t, rm, rv, gw, gb, false) end, x)
  agree("batch_norm training, no running statistics", function(t) return F.batch_norm(t, nil, nil, gw, gb, true) end, x, 1e-5)
  agree("batch_norm weight", function(t) return F.batch_norm(x, nil, nil, t, gb, true) end, gw, 1e-5)
  agree("layer_norm", function(t) return F.layer_norm(t, { 7, 7 }) + F.layer_norm(t, 7, torch.ones(7, f64) * 2, lb:narrow(0, 0, 1):expand(7)) end, x, 1e-5)
  agree("dropout eval, p = 0", function(t) return F.dropout(t, 0.3, false) + F.dropout(t, 0.0) end, x)
  -- one mask for the primal and the tangent, drawn as plain dropout draws it
  local v = torch.randn_like(x)
  torch.manual_seed(9)
  local r = forward_jvp("dropout", function(t) return F.dropout(t, 0.4) end, { x }, { v })
  torch.manual_seed(9)
  local want = F.dropout(x, 0.4)
  close(r[1], want, 1e-15, "dropout: the primal draws the mask plain dropout draws")
  local mask = want:ne(0):double() / 0.6
  close(r[2], v * mask, 1e-12, "dropout: the tangent through the same mask")
end)

T.test("modules through functional_call, several outputs, has_aux, create", function()
  torch.manual_seed(4)
  local net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
    nn.Linear(4 * 3 * 3, 6), nn.Tanh(), nn.LayerNorm(6), nn.Dropout(0.0), nn.Linear(6, 2)):double()
  net:eval()
  local params, tangents = {}, {}
  for k, p in net:named_parameters() do params[k] = p:detach(); tangents[k] = torch.randn_like(p) end
  local x = torch.randn(5, 3, 8, 8, f64)
  local function g(p) return func.functional_call(net, p, { x }) end
  local r = forward_jvp("CNN, eval", g, { params }, { tangents })
  local d = double_backward_jvp(g, { params }, { tangents })
  close(r[1], d[1], 1e-12, "CNN, eval: output")
  close(r[2], d[2], 1e-10, "CNN, eval: against double backward")
  net:train()
  local rm = net[1].running_mean:clone()
  r = forward_jvp("CNN, train", g, { params }, { tangents })
  T.check((net[1].running_mean - rm):abs():max():item() > 0, "CNN, train: batch norm's running mean updated once")
  d = double_backward_jvp(g, { params }, { tangents })
  close(r[2], d[2], 1e-9, "CNN, train: against double backward")
  -- a transformer layer (attention, layer norms, the feed-forward block), eval mode
  local enc = nn.TransformerEncoderLayer(8, 2, 16, 0.0, { batch_first = true }):double()
  enc:eval()
  local ep, et = {}, {}
  for k, p in enc:named_parameters() do ep[k] = p:detach(); et[k] = torch.randn_like(p) end
  local xs = torch.randn(2, 5, 8, f64)
  local function e(p) return func.functional_call(enc, p, { xs }) end
  r = forward_jvp("TransformerEncoderLayer", e, { ep }, { et })
  d = double_backward_jvp(e, { ep }, { et })
  close(r[2], d[2], 1e-10, "TransformerEncoderLayer: against double backward")
  -- several outputs (one independent of the input), has_aux
  local x2 = torch.randn(3, f64)
  local function h(t) return t:exp(), torch.ones(2, f64), { aux = t:sum() } end
  local n0 = FWD.forward
  local out, jv, aux = func.jvp(function(t) local a, b, c = h(t); return { a, b }, c end, { x2 }, { torch.ones(3, f64) }, { has_aux = true })
  T.eq(FWD.forward, n0 + 1, "has_aux: forward mode")
  close(jv[1], x2:exp(), 1e-15, "has_aux: J v of exp")
  close(jv[2], torch.zeros(2, f64), 0, "has_aux: zeros for an output that depends on no input")
  close(aux.aux, x2:sum(), 0, "has_aux: aux")
  T.check(not out[1].requires_grad, "output detached")
  -- strict: an output independent of the inputs is an error
  T.raises(function() func.jvp(function(t) return torch.ones(3, f64) + 0 * t:detach() end, { x2 }, { x2 }, { strict = true }) end,
    "~independent of the inputs", "strict")
  -- nested in grad: the jvp is differentiable (forward over reverse against double backward)
  local function inner(t) local _, j = func.jvp(function(u) return (u:sin() * u):sum() end, { t }, { t:cos() }); return j end
  local gf = func.grad(inner)(x2)
  func._forward_mode = false
  local gd = func.grad(inner)(x2)
  func._forward_mode = nil
  close(gf, gd, 1e-12, "grad of jvp")
end)

T.test("inside vmap: primals and tangents batched at different levels", function()
  torch.manual_seed(5)
  local net = nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(3 * 2 * 2, 4)):double()
  local params = {}
  for k, p in net:named_parameters() do params[k] = p:detach() end
  local xs = torch.randn(3, 2, 6, 6, f64)
  -- tangents batched at the outer level (5), inputs at the inner one (3), params unbatched
  local tb = {}
  for k, p in pairs(params) do
    local s = p:size():totable()
    table.insert(s, 1, 5)
    tb[k] = torch.randn(s, f64)
  end
  local function per(t, x)
    local _, j = func.jvp(function(p) return func.functional_call(net, p, { x:unsqueeze(0) }):squeeze(0) end, { params }, { t })
    return j
  end
  local n0, f0 = FWD.forward, FWD.fallback
  local got = func.vmap(function(t) return func.vmap(function(x) return per(t, x) end)(xs) end)(tb)
  T.eq(FWD.fallback, f0, "vmap(vmap(jvp)): no fallback (" .. tostring(FWD.last_fallback) .. ")")
  T.check(FWD.forward > n0, "vmap(vmap(jvp)): forward mode")
  T.eq(tostring(got:size()), "torch.Size([5, 3, 4])", "vmap(vmap(jvp)): shape")
  for i = 0, 4 do
    for j = 0, 2 do
      local t = {}
      for k, v in pairs(tb) do t[k] = v[i] end
      local d = double_backward_jvp(function(p) return func.functional_call(net, p, { xs[j]:unsqueeze(0) }):squeeze(0) end, { params }, { t })
      close(got[i][j], d[2], 1e-10, string.format("vmap(vmap(jvp)) sample %d, %d", i, j))
    end
  end
  -- jvp of a function of a batched primal with an unbatched tangent
  local v = torch.randn(2, 6, 6, f64)
  local got2 = func.vmap(function(x) local _, j = func.jvp(function(u) return F.softmax(u:sum(0), 1) * u:sin() end, { x }, { v }); return j end)(xs)
  for j = 0, 2 do
    local d = double_backward_jvp(function(u) return F.softmax(u:sum(0), 1) * u:sin() end, { xs[j] }, { v })
    close(got2[j], d[2], 1e-12, "vmap(jvp), batched primal " .. j)
  end
end)

T.test("the fallback to double backward, and errors", function()
  torch.manual_seed(6)
  local x = torch.rand(3, 4, f64) + 0.5
  local v = torch.randn(3, 4, f64)
  -- prod has no forward rule here: f runs again by double backward, with the same result
  local r = forward_jvp("prod", function(t) return t:prod(1) * t:sum(1) end, { x }, { v }, true)
  T.check(FWD.last_fallback:find("prod", 1, true) ~= nil, "the fallback names the op: " .. FWD.last_fallback)
  close(r[2], finite_difference(function(t) return t:prod(1) * t:sum(1) end, x, v), 1e-6, "prod: against finite differences")
  -- the second run draws the random numbers the first one drew
  torch.manual_seed(11)
  local rd = forward_jvp("dropout, then prod", function(t) return F.dropout(t, 0.5):prod(1) end, { x }, { v }, true)
  local after = torch.rand(1)
  torch.manual_seed(11)
  local want = F.dropout(x, 0.5):prod(1)
  close(rd[1], want, 0, "dropout, then prod: the mask of one draw")
  close(after, torch.rand(1), 0, "dropout, then prod: the generator where one run leaves it")
  -- a transform inside f falls back too
  forward_jvp("grad inside jvp", function(t) return func.grad(function(u) return (u ^ 3):sum() end)(t) end, { x }, { v }, true)
  forward_jvp("vmap inside jvp", function(t) return func.vmap(function(u) return u:exp() end)(t) end, { x }, { v }, true)
  forward_jvp("autograd.grad inside jvp", function(t)
    local u = t:detach():requires_grad_()
    return torch.autograd.grad({ (u * t):sum() }, { u })[1]
  end, { x }, { v }, true)
  -- an error of f itself reaches the caller (from f's second run, by double backward)
  local f0 = FWD.fallback
  T.raises(function()
    func.jvp(function(t) return t:matmul(torch.ones(3, f64)) end, { x }, { v })
  end, "~cannot be multiplied", "a shape error")
  T.eq(FWD.fallback, f0 + 1, "a shape error: f ran again")
  -- a function held from before the rules were installed gets a dual and fails in its own words:
  -- the second run gives the product
  local exp = torch.Tensor.exp
  local r2 = forward_jvp("a function held before", function(t) return exp(t) end, { x }, { v }, true)
  close(r2[2], x:exp() * v, 1e-12, "a function held before: J v")
  T.raises(function() func.jvp(function() error("mine") end, { x }, { v }) end, "~mine", "f's own error")
  -- printing a dual inside f shows its primal, in the one run
  local shown = {}
  forward_jvp("tostring", function(t) shown[#shown + 1] = tostring(t); return t * 2 end, { x }, { v })
  T.eq(#shown, 1, "tostring: f ran once")
  T.eq(shown[1], tostring(x), "tostring: the primal")
  -- the rules are gone after f: plain tensors and torch.is_tensor as before
  T.check(not torch.is_tensor(FWD.dual(x, v)), "no dual is a tensor outside jvp")
  T.check(torch.is_tensor(x + 1), "tensor operators restored")
end)

T.test("jacfwd by one batched jvp", function()
  torch.manual_seed(7)
  local x = torch.randn(3, 4, f64)
  local w = torch.randn(5, 4, f64)
  local params = { w = w, b = torch.randn(5, f64) }
  local function f(p, t) return { F.linear(t, p.w, p.b):tanh(), (t * t):sum() }, t:mean() end
  local function jacs(mode)
    func._forward_mode = mode
    local r = table.pack(pcall(func.jacfwd(f, { 0, 1 }, { has_aux = true }), params, x))
    func._forward_mode = nil
    if not r[1] then error(r[2], 0) end
    return r[2], r[3]
  end
  local n0, f0 = FWD.forward, FWD.fallback
  local j, aux = jacs(nil)
  T.eq(FWD.forward, n0 + 1, "jacfwd: one run on dual tensors")
  T.eq(FWD.fallback, f0, "jacfwd: no fallback")
  local jd, auxd = jacs(false)
  close(aux, auxd, 0, "jacfwd: aux")
  close(j[1][1].w, jd[1][1].w, 1e-12, "jacfwd: d out1 / d w")
  close(j[1][1].b, jd[1][1].b, 1e-12, "jacfwd: d out1 / d b")
  close(j[1][2], jd[1][2], 1e-12, "jacfwd: d out1 / d x")
  close(j[2][2], jd[2][2], 1e-12, "jacfwd: d out2 / d x")
  close(j[2][1].w, torch.zeros(5, 4, f64), 0, "jacfwd: an output independent of w")
  T.eq(tostring(j[1][2]:size()), "torch.Size([3, 5, 3, 4])", "jacfwd: shape out .. in")
  local jr = func.jacrev(function(t) return F.linear(t, w, params.b):tanh() end)(x)
  close(j[1][2], jr, 1e-12, "jacfwd against jacrev")
  -- inside vmap: per-sample Jacobians
  local xs = torch.randn(6, 4, f64)
  local g = function(t) return (t:sin() * w):sum(1):cumsum(0) end
  n0 = FWD.forward
  local per = func.vmap(func.jacfwd(g))(xs)
  T.check(FWD.forward > n0, "vmap(jacfwd): forward mode")
  for i = 0, 5 do close(per[i], func.jacrev(g)(xs[i]), 1e-12, "vmap(jacfwd) sample " .. i) end
  -- hessian (jacfwd of jacrev) still runs, by double backward
  local hs = func.hessian(function(t) return (t:sin() * t):sum() end)(xs[0])
  close(hs, torch.diag(2 * xs[0]:cos() - xs[0] * xs[0]:sin()), 1e-12, "hessian")
end)

T.test("torch.autograd.functional.jacobian: vectorize and strategy", function()
  torch.manual_seed(8)
  local AF = torch.autograd.functional
  local a, b = torch.randn(3, f64), torch.randn(2, 3, f64)
  local function one(t) return t:sin() * t:sum() end
  local function two(t, u) return u:matmul(t):tanh(), (t * t):sum() + u:sum() end
  local function same(x, y, msg)
    if torch.is_tensor(x) then close(x, y, 1e-12, msg); return end
    T.eq(#x, #y, msg .. ": length")
    for i = 1, #y do same(x[i], y[i], msg .. "[" .. i .. "]") end
  end
  for _, case in ipairs({ { "one in, one out", one, a }, { "two in, two out", two, { a, b } } }) do
    local want = AF.jacobian(case[2], case[3])
    same(AF.jacobian(case[2], case[3], { vectorize = true }), want, case[1] .. ", vectorize")
    local n0 = FWD.forward
    same(AF.jacobian(case[2], case[3], { vectorize = true, strategy = "forward-mode" }), want, case[1] .. ", forward-mode")
    T.eq(FWD.forward, n0 + 1, case[1] .. ": one forward-mode pass")
  end
  same(AF.jacobian(function(t, u) return (t * u):sum(0) end, { a, b }, { vectorize = true, strategy = "forward-mode" }),
    AF.jacobian(function(t, u) return (t * u):sum(0) end, { a, b }), "two in, one out, forward-mode")
  T.raises(function() AF.jacobian(one, a, { strategy = "forward-mode" }) end,
    "Computing Jacobian using forward-AD or forward-over-reverse Hessian is only implemented for `vectorize=True`.", "forward-mode without vectorize")
  T.raises(function() AF.jacobian(one, a, { strategy = "forward-mode", vectorize = true, create_graph = true }) end,
    "~`create_graph=True` and `strategy=\"forward-mode\"` are not supported together", "forward-mode with create_graph")
  T.raises(function() AF.jacobian(one, a, { strategy = "sideways" }) end, '~Expected strategy to be either "forward-mode" or "reverse-mode".', "unknown strategy")
end)
