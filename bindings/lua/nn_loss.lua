-- Loss modules: CrossEntropyLoss, NLLLoss, MSELoss, L1Loss, SmoothL1Loss,
-- BCELoss, BCEWithLogitsLoss, the losses of torch_functional_more.lua and
-- TripletMarginWithDistanceLoss. Class weights (and pos_weight) are buffers, as in
-- PyTorch; the legacy size_average/reduce arguments map to `reduction`.
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"

local M = {}


-- PyTorch's _Reduction.legacy_get_string
local function legacy_reduction(size_average, reduce)
  if size_average == nil then size_average = true end
  if reduce == nil then reduce = true end
  if not reduce then return "none" end
  return size_average and "mean" or "sum"
end

local reductions = { none = true, mean = true, sum = true }

-- the names of forward's arguments where they are not (input, target)
local forward_args = { PoissonNLLLoss = { "log_input", "target" }, MarginRankingLoss = { "input1", "input2", "target" },
  CosineEmbeddingLoss = { "input1", "input2", "target" }, TripletMarginLoss = { "anchor", "positive", "negative" },
  GaussianNLLLoss = { "input", "target", "var" } }

-- forward(...) passes its tensors (input and target, or three) and then build_opts(self)
local function loss_class(name, spec, fname, build_opts, allowed)
  local cls = Module:extend(name)
  local args = forward_args[name] or { "input", "target" }
  local is_arg = {}
  for _, a in ipairs(args) do is_arg[a] = true end
  function cls:__init(...)
    local o = U.parse(name, spec, ...)
    local reduction = o.reduction
    if o.size_average ~= nil or o.reduce ~= nil then reduction = legacy_reduction(o.size_average, o.reduce) end
    if not (allowed or reductions)[reduction] then U.errorf("%s is not a valid value for reduction", tostring(reduction)) end
    self.reduction = reduction
    for _, s in ipairs(spec) do
      local k = s[1]
      if k == "weight" or k == "pos_weight" then
        if o[k] ~= nil and not torch.is_tensor(o[k]) then
          U.errorf("%s: %s must be a tensor, got %s", name, k, U.typename(o[k]))
        end
        self:register_buffer(k, o[k])
      elseif k ~= "reduction" and k ~= "size_average" and k ~= "reduce" then
        self[k] = o[k]
      end
    end
  end
  function cls:forward(...)
    local a = table.pack(...)
    local o = build_opts(self)
    local named = {}
    if a.n > 0 and U.is_opts(a[a.n]) then -- forward's arguments by name: loss(x1, x2, {target = y})
      for k, v in pairs(a[a.n]) do
        if o[k] ~= nil or not is_arg[k] then U.errorf("%s.forward() got an unexpected keyword argument '%s'", name, k) end
        o[k], named[k] = v, true
      end
      a.n = a.n - 1
    end
    local missing = {}
    for i = a.n + 1, #args do
      if not named[args[i]] then missing[#missing + 1] = args[i] end
    end
    if #missing > 0 then U.missing_args(name .. ".forward", missing) end
    if a.n >= 1 then U.check_tensor(fname, args[1], 1, a[1]) end -- nil as well: PyTorch's parser text
    a.n = a.n + 1
    a[a.n] = o
    return U.F(fname, table.unpack(a, 1, a.n))
  end
  M[name] = cls
  return cls
end

local function plain_opts(self) return { reduction = self.reduction } end

loss_class("CrossEntropyLoss", {
  { "weight" }, { "size_average" }, { "ignore_index", -100 }, { "reduce" }, { "reduction", "mean" },
  { "label_smoothing", 0.0 },
}, "cross_entropy", function(self)
  return { weight = self.weight, ignore_index = self.ignore_index, reduction = self.reduction,
    label_smoothing = self.label_smoothing }
end)

loss_class("NLLLoss", {
  { "weight" }, { "size_average" }, { "ignore_index", -100 }, { "reduce" }, { "reduction", "mean" },
}, "nll_loss", function(self)
  return { weight = self.weight, ignore_index = self.ignore_index, reduction = self.reduction }
end)

local plain_spec = { { "size_average" }, { "reduce" }, { "reduction", "mean" } }
loss_class("MSELoss", plain_spec, "mse_loss", plain_opts)
loss_class("L1Loss", plain_spec, "l1_loss", plain_opts)

loss_class("SmoothL1Loss", { { "size_average" }, { "reduce" }, { "reduction", "mean" }, { "beta", 1.0 } },
  "smooth_l1_loss", function(self) return { reduction = self.reduction, beta = self.beta } end)

loss_class("BCELoss", { { "weight" }, { "size_average" }, { "reduce" }, { "reduction", "mean" } },
  "binary_cross_entropy", function(self) return { weight = self.weight, reduction = self.reduction } end)

loss_class("BCEWithLogitsLoss", {
  { "weight" }, { "size_average" }, { "reduce" }, { "reduction", "mean" }, { "pos_weight" },
}, "binary_cross_entropy_with_logits", function(self)
  return { weight = self.weight, reduction = self.reduction, pos_weight = self.pos_weight }
end)

-- the losses of torch_functional_more.lua: each module keeps its arguments as attributes
local function kept_opts(keys)
  return function(self)
    local o = { reduction = self.reduction }
    for _, k in ipairs(keys) do o[k] = self[k] end
    return o
  end
end

-- PyTorch's order: the loss's own arguments first, then size_average, reduce, reduction
local function with_reduction(extra)
  local s = {}
  for _, e in ipairs(extra) do s[#s + 1] = e end
  for _, e in ipairs({ { "size_average" }, { "reduce" }, { "reduction", "mean" } }) do s[#s + 1] = e end
  return s
end

loss_class("HuberLoss", { { "reduction", "mean" }, { "delta", 1.0 } }, "huber_loss", kept_opts({ "delta" }))
loss_class("KLDivLoss", { { "size_average" }, { "reduce" }, { "reduction", "mean" }, { "log_target", false } }, "kl_div",
  kept_opts({ "log_target" }), { none = true, mean = true, sum = true, batchmean = true })
loss_class("MarginRankingLoss", with_reduction({ { "margin", 0.0 } }), "margin_ranking_loss", kept_opts({ "margin" }))
loss_class("HingeEmbeddingLoss", with_reduction({ { "margin", 1.0 } }), "hinge_embedding_loss", kept_opts({ "margin" }))
loss_class("SoftMarginLoss", plain_spec, "soft_margin_loss", plain_opts)
loss_class("MultiLabelSoftMarginLoss", { { "weight" }, { "size_average" }, { "reduce" }, { "reduction", "mean" } },
  "multilabel_soft_margin_loss", function(self) return { weight = self.weight, reduction = self.reduction } end)
loss_class("CosineEmbeddingLoss", with_reduction({ { "margin", 0.0 } }), "cosine_embedding_loss", kept_opts({ "margin" }))
loss_class("TripletMarginLoss", { { "margin", 1.0 }, { "p", 2.0 }, { "eps", 1e-6 }, { "swap", false }, { "size_average" },
  { "reduce" }, { "reduction", "mean" } }, "triplet_margin_loss", kept_opts({ "margin", "p", "eps", "swap" }))
loss_class("PoissonNLLLoss", { { "log_input", true }, { "full", false }, { "size_average" }, { "eps", 1e-8 }, { "reduce" },
  { "reduction", "mean" } }, "poisson_nll_loss", kept_opts({ "log_input", "full", "eps" }))
loss_class("GaussianNLLLoss", { { "full", false }, { "eps", 1e-6 }, { "reduction", "mean" } }, "gaussian_nll_loss",
  kept_opts({ "full", "eps" }))

-- TripletMarginWithDistanceLoss{distance_function=nil, margin=1, swap=false, reduction="mean"}: the
-- default distance is an nn.PairwiseDistance submodule, as in PyTorch
local TMWDLoss = Module:extend("TripletMarginWithDistanceLoss")
M.TripletMarginWithDistanceLoss = TMWDLoss
function TMWDLoss:__init(...)
  local o = U.parse("TripletMarginWithDistanceLoss", { { "distance_function" }, { "margin", 1.0 }, { "swap", false },
    { "reduction", "mean" } }, ...)
  if not reductions[o.reduction] then U.errorf("%s is not a valid value for reduction", tostring(o.reduction)) end
  if o.margin <= 0 then
    U.errorf("TripletMarginWithDistanceLoss: expected margin to be greater than 0, got %s instead", U.pystr(o.margin))
  end
  self.reduction = o.reduction
  self.distance_function = o.distance_function or torch.nn.PairwiseDistance()
  self.margin, self.swap = o.margin, o.swap
end
function TMWDLoss:forward(anchor, positive, negative)
  return U.F("triplet_margin_with_distance_loss", anchor, positive, negative, { distance_function = self.distance_function,
    margin = self.margin, swap = self.swap, reduction = self.reduction })
end

return M
