-- Batching rules of torch.* and torch.nn.functional.* for vmap (see vmap_batched.lua), and their
-- installation: while a batched vmap runs f, each function with a rule is replaced by a
-- dispatcher that sends calls with a BatchedTensor argument to the rule (others to the original),
-- the tensor operators and a few tensor methods accept BatchedTensor operands, torch.is_tensor
-- is true for them, and random functions refuse (the loop handles randomness) unless
-- randomness="same" and no argument is batched. Everything is restored when f returns or fails.
local torch = require "torch"
local V = require "vmap_batched"

local F = torch.nn.functional
local methods, is_bt, wrap, at, rank, lift, norule = V.methods, V.is, V.wrap, V.at, V.rank, V.lift, V.norule
local level_of, batched, shift, is_kw, is_tensorish = V.level_of, V.batched, V.shift, V.is_kw, V.is_tensorish

local torch_rules, F_rules = {}, {}

-- ---------------------------------------------------------------- torch.*

local function as_method(name)
  return function(x, ...)
    if not is_bt(x) then norule("torch." .. name .. " with an unbatched first argument") end
    return methods[name](x, ...)
  end
end
for _, name in ipairs(V.unary_names) do if torch[name] then torch_rules[name] = as_method(name) end end
for _, name in ipairs({ "sum", "mean", "amax", "amin", "prod", "all", "any", "nansum", "nanmean", "count_nonzero",
  "argmax", "argmin", "logsumexp", "std", "var", "softmax", "log_softmax", "cumsum", "cumprod", "cummax", "cummin",
  "sort", "argsort", "median", "mode", "topk", "norm", "reshape", "flatten", "unflatten", "unsqueeze", "squeeze",
  "permute", "transpose", "swapaxes", "swapdims", "t", "movedim", "moveaxis", "select", "narrow", "index_select",
  "chunk", "split", "tensor_split", "unbind", "flip", "numel", "is_floating_point", "is_complex" }) do
  if torch[name] then torch_rules[name] = as_method(name) end
end
for _, name in ipairs(V.binary_names) do
  if torch[name] then torch_rules[name] = function(a, b, ...) return methods[name](a, b, ...) end end
end
for _, name in ipairs({ "max", "min", "matmul", "mm", "bmm", "mv", "dot", "masked_fill", "lerp" }) do
  torch_rules[name] = function(a, ...) return methods[name](a, ...) end
end
torch_rules.where = function(c, a, b)
  if a == nil then norule("torch.where(condition)") end
  return V.elementwise(function(x, y, z) return torch.where(x, y, z) end, { c, a, b }, 3)
end
for _, name in ipairs({ "zeros_like", "ones_like", "empty_like", "full_like" }) do
  torch_rules[name] = function(x, ...)
    for i = 1, select("#", ...) do if is_tensorish((select(i, ...))) then norule(name .. " with a tensor") end end
    return lift(x._l, torch[name](x._v, ...))
  end
end

-- cat / stack: every element batched at the highest level (unbatched ones expanded)
local function list_rule(name, extra)
  return function(list, ...)
    local a = table.pack(...)
    local d = a[1]
    if is_kw(d) then d = d.dim end
    if a.n > 1 or (a.n == 1 and not is_kw(a[1]) and math.type(a[1]) ~= "integer") then norule(name .. " arguments") end
    if is_kw(a[1]) then for k in pairs(a[1]) do if k ~= "dim" then norule(name .. " keyword " .. k) end end end
    local L = level_of(list)
    local vs = {}
    for i, e in ipairs(list) do vs[i] = batched(e, L) end
    return wrap(torch[name](vs, shift(d or 0, rank(list[1], L) + extra)), L)
  end
end
torch_rules.cat = list_rule("cat", 0)
torch_rules.concat, torch_rules.concatenate = torch_rules.cat, torch_rules.cat
torch_rules.stack = list_rule("stack", 1)

torch_rules.is_tensor = function() return true end

-- outer(a, b) of per-sample vectors: a[:, None] * b[None, :] per sample
torch_rules.outer = function(a, b)
  local L = level_of(a, b)
  if rank(a, L) ~= 1 or rank(b, L) ~= 1 then norule("torch.outer of non-vectors") end
  local av, bv = at(a, L), at(b, L)
  local A = av and av:unsqueeze(2) or a:unsqueeze(1)
  local Bv = bv and bv:unsqueeze(1) or b:unsqueeze(0)
  return wrap(A * Bv, L)
end
torch_rules.ger = torch_rules.outer

-- einsum: the batch dim as a fresh letter in front of every batched operand's subscripts and
-- of the output's (the implicit output made explicit first: the letters used once, sorted)
torch_rules.einsum = function(eq, ...)
  local ops = table.pack(...)
  if ops.n == 1 and type(ops[1]) == "table" and getmetatable(ops[1]) == nil then ops = table.pack(table.unpack(ops[1])) end
  if type(eq) ~= "string" then norule("einsum without an equation") end
  eq = eq:gsub("%s", "")
  local lhs, rhs = eq:match("^(.-)%->(.*)$")
  if not lhs then
    lhs = eq
    if lhs:find(".", 1, true) then norule("einsum: an implicit output with an ellipsis") end
    local count, letters = {}, {}
    for ch in lhs:gmatch("%a") do
      if not count[ch] then letters[#letters + 1] = ch end
      count[ch] = (count[ch] or 0) + 1
    end
    local once = {}
    for _, ch in ipairs(letters) do if count[ch] == 1 then once[#once + 1] = ch end end
    table.sort(once) -- PyTorch's order: upper case before lower case, as byte order
    rhs = table.concat(once)
  end
  local z
  for ch in ("zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA"):gmatch(".") do
    if not eq:find(ch, 1, true) then z = ch; break end
  end
  if not z then norule("einsum with every letter used") end
  local L = level_of(table.unpack(ops, 1, ops.n))
  local terms, vs, i = {}, {}, 0
  for t in (lhs .. ","):gmatch("([^,]*),") do
    i = i + 1
    local v = at(ops[i], L)
    if v then terms[i] = z .. t; vs[i] = v else terms[i] = t; vs[i] = ops[i] end
  end
  if i ~= ops.n then norule("einsum: operands and subscripts differ in number") end
  return wrap(torch.einsum(table.concat(terms, ",") .. "->" .. z .. rhs, table.unpack(vs, 1, ops.n)), L)
end

-- ---------------------------------------------------------------- torch.nn.functional.*

-- activations: the function on the value; an inplace flag is dropped (see vmap_batched.lua)
local inplace_at = { relu = 2, relu6 = 2, selu = 2, silu = 2, hardsigmoid = 2, hardswish = 2, mish = 2, elu = 3,
  celu = 3, leaky_relu = 3, hardtanh = 4, threshold = 4 }
for _, name in ipairs({ "relu", "relu6", "elu", "selu", "celu", "gelu", "silu", "mish", "softplus", "leaky_relu",
  "hardtanh", "hardsigmoid", "hardswish", "logsigmoid", "softsign", "tanhshrink", "sigmoid", "tanh", "threshold",
  "hardshrink", "softshrink" }) do
  F_rules[name] = function(x, ...)
    if not is_bt(x) then norule("F." .. name .. " with an unbatched input") end
    local a = table.pack(...)
    for i = 1, a.n do
      if is_tensorish(a[i]) then norule("F." .. name .. " with a tensor argument") end
      if is_kw(a[i]) and a[i].inplace ~= nil then
        local kw = {}
        for k, v in pairs(a[i]) do kw[k] = v end
        kw.inplace = nil
        a[i] = next(kw) ~= nil and kw or nil
      end
    end
    local p = inplace_at[name]
    if p and a[p - 1] == true then a[p - 1] = false end
    return lift(x._l, F[name](x._v, table.unpack(a, 1, a.n)))
  end
end

-- the F function with its dim argument (position p after the input, or keyword dim) shifted;
-- default: the dim used when none is given (nil: a rule only with a dim)
local function F_dim(name, p, default)
  return function(x, ...)
    if not is_bt(x) then norule("F." .. name .. " with an unbatched input") end
    local a = table.pack(...)
    local n = x._v:dim() - 1
    for i = 1, a.n do if is_tensorish(a[i]) then norule("F." .. name .. " with a tensor argument") end end
    local last = a.n > 0 and a[a.n] or nil
    local kw = is_kw(last) and last or nil
    if a.n >= p and not (kw and a.n == p) and a[p] ~= nil then
      a[p] = shift(a[p], n)
    elseif kw and kw.dim ~= nil then
      local k2 = {}
      for k, v in pairs(kw) do k2[k] = v end
      k2.dim = shift(kw.dim, n)
      a[a.n] = k2
    elseif default ~= nil then
      local k2 = {}
      for k, v in pairs(kw or {}) do k2[k] = v end
      k2.dim = shift(default, n)
      if kw then a[a.n] = k2 else a.n = a.n + 1; a[a.n] = k2 end
    else
      norule("F." .. name .. " without a dim")
    end
    return lift(x._l, F[name](x._v, table.unpack(a, 1, a.n)))
  end
end
F_rules.softmax = F_dim("softmax", 1)
F_rules.log_softmax = F_dim("log_softmax", 1)
F_rules.softmin = F_dim("softmin", 1)
F_rules.normalize = F_dim("normalize", 2, 1)
F_rules.glu = F_dim("glu", 1, -1)

-- pools and the like: per-sample [N, C, ...] or [C, ...]: the batch folded into N
local function fold(name, base)
  return function(x, ...)
    if not is_bt(x) then norule("F." .. name .. " with an unbatched input") end
    for i = 1, select("#", ...) do if is_tensorish((select(i, ...))) then norule("F." .. name .. " with a tensor") end end
    local v, n = x._v, x._v:dim() - 1
    if n == base then return lift(x._l, F[name](v, ...)) end
    if n ~= base + 1 then norule("F." .. name .. " of this rank") end
    local B, N = v:size(0), v:size(1)
    local s = v:size():totable()
    table.remove(s, 1)
    s[1] = B * N
    local r = table.pack(F[name](v:reshape(s), ...))
    for i = 1, r.n do
      if is_tensorish(r[i]) then
        local o = r[i]:size():totable()
        o[1] = N
        table.insert(o, 1, B)
        r[i] = wrap(r[i]:reshape(o), x._l)
      end
    end
    return table.unpack(r, 1, r.n)
  end
end
for _, name in ipairs({ "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "adaptive_max_pool2d", "lp_pool2d",
  "pixel_shuffle", "pixel_unshuffle" }) do
  F_rules[name] = fold(name, 3)
end
for _, name in ipairs({ "max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d" }) do
  F_rules[name] = fold(name, 2)
end

local opt_args = V.opt_args

F_rules.linear = function(x, w, ...)
  local o = opt_args(table.pack(...), { "bias" })
  local b = o.bias
  local L = level_of(x, w, b)
  if at(w, L) == nil then
    if level_of(b) == L then return F.linear(x, w) + b end  -- the batched bias broadcast per sample
    local xv = at(x, L)
    if rank(x, L) == 0 then norule("F.linear of a 0-dim input") end
    return wrap(F.linear(xv, w, b), L)
  end
  -- batched weight [B, out, in]: a batched matmul of x [B, M, in] (M: the leading dims flattened)
  if rank(w, L) ~= 2 or rank(x, L) == 0 then norule("F.linear of these ranks") end
  local wv, xv = at(w, L), at(x, L)
  local s = batched(x, L):size():totable()  -- {B, *, in}
  local inn = s[#s]
  local y
  -- as W x^T: the weight's gradient [B, out, in] then comes out contiguous
  if xv then
    y = torch.matmul(wv, xv:reshape(s[1], -1, inn):transpose(1, 2)):transpose(1, 2)
  else
    y = torch.matmul(wv, x:reshape(-1, inn):t()):transpose(1, 2)
  end
  if b ~= nil then
    local bv = at(b, L)
    y = y + (bv and bv:unsqueeze(1) or b)
  end
  s[#s] = wv:size(1)
  return wrap(y:reshape(s), L)
end

-- convNd with sd spatial dims: per-sample input [N, C, *S] or [C, *S]
local function conv_rule(name, sd)
  return function(x, w, ...)
    local o = opt_args(table.pack(...), { "bias", "stride", "padding", "dilation", "groups" })
    local b, stride, padding, dilation, groups = o.bias, o.stride or 1, o.padding or 0, o.dilation or 1, o.groups or 1
    local L = level_of(x, w, b)
    local n = rank(x, L)
    if n ~= sd + 1 and n ~= sd + 2 then norule("F." .. name .. " of this rank") end
    if rank(w, L) ~= sd + 2 then norule("F." .. name .. " with a weight of this rank") end
    local wv = at(w, L)
    if wv == nil then
      if b ~= nil and level_of(b) == L then
        -- a batched bias: added per sample after the convolution
        local bs = { -1 }
        for i = 1, sd do bs[i + 1] = 1 end
        return F[name](x, w, nil, stride, padding, dilation, groups) + b:view(bs)
      end
      -- batched input only: the batch folded into N
      local xv = at(x, L)
      if n == sd + 1 then return wrap(F[name](xv, w, b, stride, padding, dilation, groups), L) end
      local B, N = xv:size(0), xv:size(1)
      local s = xv:size():totable()
      table.remove(s, 1)
      s[1] = B * N
      local y = F[name](xv:reshape(s), w, b, stride, padding, dilation, groups)
      local ys = y:size():totable()
      ys[1] = N
      table.insert(ys, 1, B)
      return wrap(y:reshape(ys), L)
    end
    if at(x, L) == nil then
      -- batched weight, one input for every sample: the samples' filters side by side as the
      -- output channels of one convolution (each group's filters of every sample adjacent)
      local B, Cout = wv:size(0), wv:size(1)
      local g = groups
      local ws = wv:size():totable()
      local fw = { g * B * (Cout // g) }
      for i = 3, #ws do fw[#fw + 1] = ws[i] end
      local gs = { B, g, Cout // g }
      for i = 3, #ws do gs[#gs + 1] = ws[i] end
      local wf = wv:reshape(gs):transpose(0, 1):reshape(fw)
      local bb = nil
      if b ~= nil then bb = batched(b, L):reshape(B, g, Cout // g):transpose(0, 1):reshape(-1) end
      local xu = n == sd + 1 and x:unsqueeze(0) or x
      local y = F[name](xu, wf, bb, stride, padding, dilation, g)
      local N = y:size(0)
      local ys = { N, g, B, Cout // g }
      for i = 2, y:dim() - 1 do ys[#ys + 1] = y:size(i) end
      y = y:reshape(ys):transpose(1, 2):transpose(0, 1)  -- [B, N, g, Cout/g, *S]
      local os = { B, N, Cout }
      for i = 4, y:dim() - 1 do os[#os + 1] = y:size(i) end
      y = y:reshape(os)
      if n == sd + 1 then y = y:squeeze(1) end
      return wrap(y, L)
    end
    -- batched weight [B, Cout, Cin/g, *k] and input: one convolution with B * groups groups over
    -- the samples' channels side by side ([N, B * Cin, *S])
    local xv = batched(x, L)
    if n == sd + 1 then xv = xv:unsqueeze(1) end
    local xs = xv:size():totable() -- {B, N, C, *S}
    local B, N, C = xs[1], xs[2], xs[3]
    local Cout = wv:size(1)
    local ws = wv:size():totable()
    table.remove(ws, 1)
    ws[1] = B * Cout
    local bb = nil
    if b ~= nil then bb = batched(b, L):reshape(B * Cout) end
    local fs = { N, B * C }
    for i = 4, #xs do fs[#fs + 1] = xs[i] end
    local y = F[name](xv:transpose(0, 1):reshape(fs), wv:reshape(ws), bb, stride, padding, dilation, B * groups)
    local os = { N, B, Cout }
    for i = 3, y:dim() do os[#os + 1] = y:size(i - 1) end
    y = y:reshape(os):transpose(0, 1)
    if n == sd + 1 then y = y:squeeze(1) end
    return wrap(y, L)
  end
end
F_rules.conv1d = conv_rule("conv1d", 1)
F_rules.conv2d = conv_rule("conv2d", 2)
F_rules.conv3d = conv_rule("conv3d", 3)

-- batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps) of a
-- per-sample [N, C, *S]: the samples side by side as B * C channels ([N, B * C, *S]), so that
-- each sample has its own statistics (training) or its own running ones (eval), as functorch's.
-- Training with running statistics (updated in place) is left to the loop.
F_rules.batch_norm = function(x, ...)
  local o = opt_args(table.pack(...), { "running_mean", "running_var", "weight", "bias", "training", "momentum", "eps" })
  local rm, rv, w, b = o.running_mean, o.running_var, o.weight, o.bias
  local training = o.training == true
  if training and (rm ~= nil or rv ~= nil) then norule("F.batch_norm training with running statistics") end
  local L = level_of(x, rm, rv, w, b)
  local n = rank(x, L)
  if n < 2 then norule("F.batch_norm of this rank") end
  local xv = batched(x, L) -- [B, N, C, *S]
  local xs = xv:size():totable()
  local B, N, C = xs[1], xs[2], xs[3]
  local fs = { N, B * C }
  for i = 4, #xs do fs[#fs + 1] = xs[i] end
  local function per_channel(t)
    if t == nil then return nil end
    if rank(t, L) ~= 1 then norule("F.batch_norm with statistics of this rank") end
    return batched(t, L):reshape(B * C)
  end
  local y = F.batch_norm(xv:transpose(0, 1):reshape(fs), per_channel(rm), per_channel(rv), per_channel(w),
    per_channel(b), training, o.momentum or 0.1, o.eps or 1e-5)
  local os = { N, B, C }
  for i = 4, #xs do os[#os + 1] = xs[i] end
  return wrap(y:reshape(os):transpose(0, 1), L)
end

-- dropout(input, p=0.5, training=true, inplace=false)
F_rules.dropout = function(x, ...)
  local o = opt_args(table.pack(...), { "p", "training", "inplace" })
  local p, training = o.p == nil and 0.5 or o.p, o.training == nil and true or o.training
  if type(p) ~= "number" or p < 0 or p > 1 then norule("dropout's p") end
  if not training or p == 0 then return x end
  local L = level_of(x)
  local r = V.levels[L].randomness
  if r == "same" then
    -- one mask for every sample: drawn at the per-sample shape, as the loop draws it for each
    local mask = F.dropout(torch.ones(x:size(), { dtype = x.dtype, device = x.device }), p, true)
    return x * mask
  elseif r == "different" then
    return wrap(F.dropout(batched(x, L), p, true), L)
  end
  norule("dropout with randomness='error'")
end

-- nll_loss(input, target, weight, size_average, ignore_index=-100, reduce, reduction="mean") for
-- per-sample [N, C] / [N] or [C] / []: per-sample reductions
local function nll(input, target, ignore_index, reduction)
  local L = level_of(input, target)
  local ri, rt = rank(input, L), rank(target, L)
  if not ((ri == 2 and rt == 1) or (ri == 1 and rt == 0)) then norule("nll_loss of these ranks") end
  if reduction ~= "mean" and reduction ~= "sum" and reduction ~= "none" then norule("nll_loss reduction") end
  local x, t = batched(input, L), batched(target, L)
  if ri == 1 then x, t = x:unsqueeze(1), t:unsqueeze(1) end
  local B, N, C = x:size(0), x:size(1), x:size(2)
  local l = F.nll_loss(x:reshape(B * N, C), t:reshape(B * N), { ignore_index = ignore_index, reduction = "none" })
  l = l:reshape(B, N)
  if reduction == "none" then
    return wrap(ri == 1 and l:squeeze(1) or l, L)
  elseif reduction == "sum" then
    return wrap(l:sum(1), L)
  end
  return wrap(l:sum(1) / t:ne(ignore_index):sum(1):to(l.dtype), L)
end
local loss_names = { "weight", "size_average", "ignore_index", "reduce", "reduction" }
F_rules.nll_loss = function(input, target, ...)
  local o = opt_args(table.pack(...), loss_names)
  if o.weight ~= nil or o.size_average ~= nil or o.reduce ~= nil then norule("nll_loss's legacy or weight arguments") end
  return nll(input, target, o.ignore_index or -100, o.reduction or "mean")
end
F_rules.cross_entropy = function(input, target, ...)
  local o = opt_args(table.pack(...), { "weight", "size_average", "ignore_index", "reduce", "reduction", "label_smoothing" })
  if o.weight ~= nil or o.size_average ~= nil or o.reduce ~= nil or (o.label_smoothing or 0) ~= 0 then
    norule("cross_entropy's weight, legacy or label_smoothing arguments")
  end
  if target.dtype ~= torch.int64 then norule("cross_entropy with probability targets") end
  local L = level_of(input, target)
  local ri = rank(input, L)
  if ri ~= 1 and ri ~= 2 then norule("cross_entropy of this rank") end
  return nll(F.log_softmax(input, { dim = ri == 2 and 1 or 0 }), target, o.ignore_index or -100, o.reduction or "mean")
end
-- elementwise losses: the kernel's "none" result per element, reduced per sample
for _, name in ipairs({ "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss" }) do
  F_rules[name] = function(input, target, ...)
    local a = table.pack(...)
    local kw = a.n > 0 and is_kw(a[a.n]) and a[a.n] or {}
    for i = 1, a.n do if not (i == a.n and is_kw(a[i])) then norule("F." .. name .. " positional options") end end
    local red = kw.reduction or "mean"
    if kw.size_average ~= nil or kw.reduce ~= nil then norule("F." .. name .. " legacy arguments") end
    local k2 = {}
    for k, v in pairs(kw) do k2[k] = v end
    k2.reduction = "none"
    -- both batched (an unbatched one expanded): equal per-sample shapes give the kernel equal shapes
    local L = level_of(input, target)
    local r = math.max(rank(input, L), rank(target, L))
    local xv, tv = batched(input, L), batched(target, L)
    xv, tv = V.pad(xv, r - (xv:dim() - 1)), V.pad(tv, r - (tv:dim() - 1))
    local l = wrap(F[name](xv, tv, k2), L)
    if red == "none" then return l end
    if red == "sum" then return l:sum() end
    if red == "mean" then return l:mean() end
    norule("F." .. name .. " reduction")
  end
end

F_rules.layer_norm = function(x, shape, ...)
  local o = opt_args(table.pack(...), { "weight", "bias", "eps" })
  if is_bt(x) and level_of(o.weight, o.bias) == 0 then
    return wrap(F.layer_norm(x._v, shape, o.weight, o.bias, o.eps or 1e-5), x._l)
  end
  -- a batched affine: normalize, then scale and shift per sample
  local y = F.layer_norm(x, shape, nil, nil, o.eps or 1e-5)
  if o.weight ~= nil then y = y * o.weight end
  if o.bias ~= nil then y = y + o.bias end
  return y
end

F_rules.embedding = function(idx, w, ...)
  if not is_bt(idx) or is_bt(w) then norule("F.embedding with a batched weight") end
  for i = 1, select("#", ...) do if is_tensorish((select(i, ...))) then norule("F.embedding with a tensor") end end
  return lift(idx._l, F.embedding(idx._v, w, ...))
end

F_rules.pad = function(x, p, ...)
  if not is_bt(x) then norule("F.pad with an unbatched input") end
  local mode = ...
  if is_kw(mode) then mode = mode.mode end
  if (mode ~= nil and mode ~= "constant") or type(p) ~= "table" or #p // 2 > x._v:dim() - 1 then
    norule("F.pad in this mode")
  end
  return lift(x._l, F.pad(x._v, p, ...))
end

-- ---------------------------------------------------------------- random functions

local random_torch = { "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "normal", "bernoulli",
  "multinomial", "randperm", "poisson" }
local random_F = { "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "rrelu",
  "gumbel_softmax" }
local random_methods = { "uniform_", "normal_", "bernoulli_", "random_", "exponential_", "geometric_", "cauchy_",
  "log_normal_", "bernoulli", "multinomial" }

-- ---------------------------------------------------------------- installation

local U = require "nn_util"
local function has_bt(...) return U.any_arg(is_bt, ...) end

local installed = U.patches()
local function put(tbl, name, fn) installed:put(tbl, name, fn) end
local function dispatcher(orig, rule) return U.dispatcher(is_bt, orig, rule) end
local function refuser(orig, what)
  return function(...)
    local lv = V.levels
    if lv[#lv].randomness == "same" and not has_bt(...) then return orig(...) end
    norule(what)
  end
end

local function install()
  for name, rule in pairs(torch_rules) do
    -- (functions only: torch.float, torch.long and torch.cuda share method names)
    local orig = torch[name]
    if type(orig) == "function" then put(torch, name, dispatcher(orig, rule)) end
  end
  put(torch, "is_tensor", function(v) return is_bt(v) or V.is_real(v) end)
  for name, rule in pairs(F_rules) do
    local orig = F[name]
    if orig then put(F, name, dispatcher(orig, rule)) end
  end
  for _, name in ipairs(random_torch) do
    if torch[name] then put(torch, name, refuser(torch[name], "torch." .. name)) end
  end
  for _, name in ipairs(random_F) do
    if F[name] then put(F, name, refuser(F[name], "F." .. name)) end
  end
  -- plain tensors with batched operands: their operators and binary methods
  local TM = torch.Tensor
  for _, name in ipairs(random_methods) do
    if TM[name] then put(TM, name, refuser(TM[name], "Tensor." .. name)) end
  end
  local plain_binary = { "matmul", "mm", "bmm", "mv", "dot", "where", "masked_fill", "max", "min", "lerp", "gather",
    "take_along_dim" }
  for _, name in ipairs(V.binary_names) do plain_binary[#plain_binary + 1] = name end
  for _, name in ipairs(plain_binary) do
    local orig, rule = TM[name], methods[name]
    if orig then put(TM, name, dispatcher(orig, rule)) end
  end
  for _, name in ipairs({ "expand_as", "view_as", "reshape_as" }) do
    local orig, base = TM[name], name:gsub("_as$", "")
    if orig then
      put(TM, name, function(self, o)
        if is_bt(o) then return self[base == "view" and "reshape" or base](self, o:size()) end
        return orig(self, o)
      end)
    end
  end
  if TM.type_as then
    local orig = TM.type_as
    put(TM, "type_as", function(self, o) if is_bt(o) then return self:to(o.dtype) end return orig(self, o) end)
  end
  local mt = getmetatable(torch.zeros(0))
  for mm, fn in pairs(V.OPS) do
    local orig = mt[mm]
    local bt_op = getmetatable(wrap(nil, 0))[mm]
    put(mt, mm, function(a, b)
      if is_bt(a) or is_bt(b) then return bt_op(a, b) end
      return orig(a, b)
    end)
  end
end

local function uninstall() installed:undo() end

V.set_installer(install, uninstall)
return { torch_rules = torch_rules, F_rules = F_rules }
