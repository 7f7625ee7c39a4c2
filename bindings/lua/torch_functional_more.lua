-- More of torch.nn.functional, made of the differentiable ops: the activations mish, selu,
-- celu, hardsigmoid, hardswish, softsign, tanhshrink, glu, threshold and prelu; the distances
-- cosine_similarity and pairwise_distance; and the losses kl_div, margin_ranking_loss,
-- triplet_margin_loss, triplet_margin_with_distance_loss, cosine_embedding_loss,
-- hinge_embedding_loss, soft_margin_loss, multilabel_soft_margin_loss, poisson_nll_loss and
-- gaussian_nll_loss, with PyTorch's arguments, defaults and formulas.
local torch = require "torch"
local U = require "nn_util"
local F = torch.nn.functional
local REQ = U.REQUIRED
local ACT = require "nn_fused_activations"

local tensor_arg = U.tensor_arg

local maybe_inplace = U.maybe_inplace

local function reduce(fname, v, reduction)
  if reduction == "mean" then return v:mean() end
  if reduction == "sum" then return v:sum() end
  if reduction == "none" then return v end
  U.errorf("%s: %s is not a valid value for reduction", fname, tostring(reduction))
end

-- ---- activations ----

function F.mish(...)
  local o = U.parse("mish", { { "input", REQ }, { "inplace", false } }, ...)
  local x = tensor_arg("mish", "input", o.input)
  return maybe_inplace(x, ACT.mish, o.inplace)
end

local SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

function F.selu(...)
  local o = U.parse("selu", { { "input", REQ }, { "inplace", false } }, ...)
  local x = tensor_arg("selu", "input", o.input)
  return maybe_inplace(x, function(v) return F.elu(v, SELU_ALPHA) * SELU_SCALE end, o.inplace)
end

function F.celu(...)
  local o = U.parse("celu", { { "input", REQ }, { "alpha", 1.0 }, { "inplace", false } }, ...)
  local x = tensor_arg("celu", "input", o.input)
  if o.alpha == 0 then U.error("ZeroDivisionError in celu: alpha cannot be 0") end
  return maybe_inplace(x, function(v)
    return torch.where(v:gt(0), v, ((v / o.alpha):clamp(nil, 0):exp() - 1) * o.alpha)
  end, o.inplace)
end

function F.hardsigmoid(...)
  local o = U.parse("hardsigmoid", { { "input", REQ }, { "inplace", false } }, ...)
  local x = tensor_arg("hardsigmoid", "input", o.input)
  return maybe_inplace(x, ACT.hardsigmoid, o.inplace)
end

function F.hardswish(...)
  local o = U.parse("hardswish", { { "input", REQ }, { "inplace", false } }, ...)
  local x = tensor_arg("hardswish", "input", o.input)
  return maybe_inplace(x, ACT.hardswish, o.inplace)
end

function F.softsign(input)
  local x = tensor_arg("softsign", "input", input)
  return x / (x:abs() + 1)
end

function F.tanhshrink(input)
  local x = tensor_arg("tanhshrink", "input", input)
  return x - x:tanh()
end

function F.glu(...)
  local o = U.parse("glu", { { "input", REQ }, { "dim", -1 } }, ...)
  local x = tensor_arg("glu", "input", o.input)
  local d = o.dim < 0 and o.dim + x:dim() or o.dim
  if x:size(d) % 2 ~= 0 then
    U.errorf("Halving dimension must be even, but dimension %d is size %d", d, x:size(d))
  end
  local half = x:size(d) // 2
  return x:narrow(d, 0, half) * x:narrow(d, half, half):sigmoid()
end

function F.threshold(...)
  local o = U.parse("threshold", { { "input", REQ }, { "threshold", REQ }, { "value", REQ }, { "inplace", false } }, ...)
  local x = tensor_arg("threshold", "input", o.input)
  return maybe_inplace(x, function(v)
    return torch.where(v:gt(o.threshold), v, torch.full({}, o.value, { dtype = v.dtype, device = v.device }))
  end, o.inplace)
end

-- weight: one value, or one per channel (dim 1 of the input)
function F.prelu(input, weight)
  local x, w = tensor_arg("prelu", "input", input), tensor_arg("prelu", "weight", weight)
  if w:numel() ~= 1 then
    if x:dim() < 2 or x:size(1) ~= w:numel() then
      U.errorf("Mismatch of parameter numbers and input channel size. Found parameter numbers = %d and channel size = %d.",
        w:numel(), x:dim() >= 2 and x:size(1) or 1)
    end
    local shape = { 1, w:numel() }
    for _ = 3, x:dim() do shape[#shape + 1] = 1 end
    w = w:view(shape)
  end
  return torch.where(x:gt(0), x, x * w)
end

-- ---- distances ----

function F.cosine_similarity(...)
  local o = U.parse("cosine_similarity", { { "x1", REQ }, { "x2", REQ }, { "dim", 1 }, { "eps", 1e-8 } }, ...)
  local a, b = tensor_arg("cosine_similarity", "x1", o.x1), tensor_arg("cosine_similarity", "x2", o.x2)
  local na = (a * a):sum(o.dim):sqrt():clamp(o.eps)
  local nb = (b * b):sum(o.dim):sqrt():clamp(o.eps)
  return (a * b):sum(o.dim) / (na * nb)
end

function F.pairwise_distance(...)
  local o = U.parse("pairwise_distance", { { "x1", REQ }, { "x2", REQ }, { "p", 2.0 }, { "eps", 1e-6 }, { "keepdim", false } }, ...)
  local a, b = tensor_arg("pairwise_distance", "x1", o.x1), tensor_arg("pairwise_distance", "x2", o.x2)
  local d = (a - b + o.eps):abs()
  local dim = math.max(a:dim(), b:dim()) - 1
  if o.p == math.huge then return d:amax(dim, o.keepdim) end
  return (d ^ o.p):sum(dim, o.keepdim) ^ (1 / o.p)
end

-- ---- losses ----

local loss_spec2 = { { "input", REQ }, { "target", REQ } }

local function spec(extra, ...)
  local s = {}
  for _, v in ipairs(extra) do s[#s + 1] = v end
  for _, v in ipairs({ ... }) do s[#s + 1] = v end
  s[#s + 1] = { "size_average" }
  s[#s + 1] = { "reduce" }
  s[#s + 1] = { "reduction", "mean" }
  return s
end

-- PyTorch's legacy size_average / reduce, when given, decide the reduction
local function reduction_of(o)
  if o.size_average == nil and o.reduce == nil then return o.reduction end
  if o.reduce == false then return "none" end
  return o.size_average == false and "sum" or "mean"
end

function F.kl_div(...)
  local s = spec(loss_spec2)
  s[#s + 1] = { "log_target", false } -- after reduction, as in PyTorch
  local o = U.parse("kl_div", s, ...)
  local input, target = tensor_arg("kl_div", "input", o.input), tensor_arg("kl_div", "target", o.target)
  local v
  if o.log_target then
    v = target:exp() * (target - input)
  else
    v = torch.where(target:gt(0), target * (target:clamp(1e-45):log() - input), torch.zeros_like(input))
  end
  local reduction = reduction_of(o)
  if reduction == "batchmean" then return v:sum() / (input:dim() > 0 and input:size(0) or 1) end
  return reduce("kl_div", v, reduction)
end

function F.margin_ranking_loss(...)
  local o = U.parse("margin_ranking_loss", spec({ { "input1", REQ }, { "input2", REQ }, { "target", REQ } }, { "margin", 0.0 }), ...)
  local v = F.relu(-o.target * (o.input1 - o.input2) + o.margin)
  return reduce("margin_ranking_loss", v, reduction_of(o))
end

function F.hinge_embedding_loss(...)
  local o = U.parse("hinge_embedding_loss", spec(loss_spec2, { "margin", 1.0 }), ...)
  local x, y = o.input, o.target
  local zeros = torch.zeros_like(x)
  local v = torch.where(y:eq(1), x, zeros) + torch.where(y:eq(-1), F.relu(-x + o.margin), zeros)
  return reduce("hinge_embedding_loss", v, reduction_of(o))
end

function F.soft_margin_loss(...)
  local o = U.parse("soft_margin_loss", spec(loss_spec2), ...)
  local v = F.softplus(-o.target * o.input)
  return reduce("soft_margin_loss", v, reduction_of(o))
end

function F.multilabel_soft_margin_loss(...)
  local o = U.parse("multilabel_soft_margin_loss", spec(loss_spec2, { "weight" }), ...)
  local x, y = o.input, o.target
  local v = -(y * F.logsigmoid(x) + (1 - y) * F.logsigmoid(-x))
  if o.weight ~= nil then v = v * o.weight end
  v = v:mean(x:dim() - 1)
  return reduce("multilabel_soft_margin_loss", v, reduction_of(o))
end

function F.cosine_embedding_loss(...)
  local o = U.parse("cosine_embedding_loss", spec({ { "input1", REQ }, { "input2", REQ }, { "target", REQ } }, { "margin", 0.0 }), ...)
  local a, b, y = o.input1, o.input2, o.target
  local dim = a:dim() - 1
  local eps = 1e-12
  local cos = (a * b):sum(dim) / (((a * a):sum(dim) + eps) * ((b * b):sum(dim) + eps)):sqrt()
  local zeros = torch.zeros_like(cos)
  local v = torch.where(y:eq(1), 1 - cos, zeros) + torch.where(y:eq(-1), F.relu(cos - o.margin), zeros)
  return reduce("cosine_embedding_loss", v, reduction_of(o))
end

function F.triplet_margin_loss(...)
  local o = U.parse("triplet_margin_loss", spec({ { "anchor", REQ }, { "positive", REQ }, { "negative", REQ } },
    { "margin", 1.0 }, { "p", 2.0 }, { "eps", 1e-6 }, { "swap", false }), ...)
  local d_ap = F.pairwise_distance(o.anchor, o.positive, o.p, o.eps)
  local d_an = F.pairwise_distance(o.anchor, o.negative, o.p, o.eps)
  if o.swap then d_an = torch.minimum(d_an, F.pairwise_distance(o.positive, o.negative, o.p, o.eps)) end
  return reduce("triplet_margin_loss", F.relu(d_ap - d_an + o.margin), reduction_of(o))
end

-- triplet_margin_with_distance_loss(anchor, positive, negative, {distance_function=nil (pairwise_distance),
-- margin=1, swap=false, reduction="mean"}): max(d(a, p) - d(a, n) + margin, 0)
function F.triplet_margin_with_distance_loss(...)
  local o = U.parse("triplet_margin_with_distance_loss", { { "anchor", REQ }, { "positive", REQ }, { "negative", REQ },
    { "distance_function" }, { "margin", 1.0 }, { "swap", false }, { "reduction", "mean" } }, ...)
  local a, p, n = o.anchor, o.positive, o.negative
  for i, t in ipairs({ a, p, n }) do tensor_arg("triplet_margin_with_distance_loss", ({ "anchor", "positive", "negative" })[i], t) end
  if o.margin <= 0 then U.errorf("triplet_margin_with_distance_loss: expected margin to be greater than 0, got %s instead", U.pystr(o.margin)) end
  if a:dim() ~= p:dim() or a:dim() ~= n:dim() then
    U.errorf("The anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: " ..
      "anchor %dD, positive %dD, and negative %dD inputs", a:dim(), p:dim(), n:dim())
  end
  local dist = o.distance_function or F.pairwise_distance
  local d_ap, d_an = dist(a, p), dist(a, n)
  if o.swap then d_an = torch.minimum(d_an, dist(p, n)) end
  return reduce("triplet_margin_with_distance_loss", (o.margin + d_ap - d_an):clamp(0), reduction_of(o))
end

function F.poisson_nll_loss(...)
  local o = U.parse("poisson_nll_loss", { { "input", REQ }, { "target", REQ }, { "log_input", true }, { "full", false },
    { "size_average" }, { "eps", 1e-8 }, { "reduce" }, { "reduction", "mean" } }, ...)
  local x, t = o.input, o.target
  local v = o.log_input and x:exp() - t * x or x - t * (x + o.eps):log()
  if o.full then -- Stirling's term where target > 1
    local stirling = t * t:clamp(1):log() - t + (t * 2 * math.pi):clamp(1):log() * 0.5
    v = v + torch.where(t:gt(1), stirling, torch.zeros_like(stirling))
  end
  return reduce("poisson_nll_loss", v, reduction_of(o))
end

function F.gaussian_nll_loss(...)
  local o = U.parse("gaussian_nll_loss", { { "input", REQ }, { "target", REQ }, { "var", REQ }, { "full", false },
    { "eps", 1e-6 }, { "reduction", "mean" } }, ...)
  local x, t, var = o.input, o.target, o.var
  if torch.is_tensor(var) and var:dim() == x:dim() - 1 then var = var:unsqueeze(-1) end
  if not torch.is_tensor(var) then var = torch.full({}, var, { dtype = x.dtype, device = x.device }) end
  if (var:lt(0)):any():item() then U.error("var has negative entry/entries") end
  local v = torch.no_grad(function() return var:clamp(o.eps) end)
  v = var + (v - var):detach() -- clamped, with the gradient of var itself, as PyTorch's
  local loss = ((v:log()) + (x - t) ^ 2 / v) * 0.5
  if o.full then loss = loss + 0.5 * math.log(2 * math.pi) end
  return reduce("gaussian_nll_loss", loss, o.reduction)
end

return F
