-- Loss modules: CrossEntropyLoss, NLLLoss, MSELoss, L1Loss, SmoothL1Loss,
-- BCELoss, BCEWithLogitsLoss. Class weights (and pos_weight) are buffers, as in
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

local function loss_class(name, spec, fname, build_opts)
  local cls = Module:extend(name)
  function cls:__init(...)
    local o = U.parse(name, spec, ...)
    local reduction = o.reduction
    if o.size_average ~= nil or o.reduce ~= nil then reduction = legacy_reduction(o.size_average, o.reduce) end
    if not reductions[reduction] then U.errorf("%s is not a valid value for reduction", tostring(reduction)) end
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
  function cls:forward(input, target)
    return U.F(fname, input, target, build_opts(self))
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

return M
