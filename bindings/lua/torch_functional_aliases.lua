-- The torch.* forms of functional ops (torch.conv1d, torch.dropout, torch.kl_div, ...), with
-- torch's own signatures where they differ from torch.nn.functional's: dropout(input, p, train)
-- with every argument required, losses taking reduction as PyTorch's enum (0 none, 1 mean,
-- 2 sum; a name works too), instance_norm's argument order, grid_sampler's integer modes,
-- adaptive_max_pool1d returning the indices too. F is looked up when called.
local torch = require "torch"
local U = require "nn_util"
local REQ = U.REQUIRED

local function F() return torch.nn.functional end

-- torch.name = F.name, the same signature
for _, name in ipairs({ "conv1d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "avg_pool1d",
  "max_pool1d", "max_pool1d_with_indices", "max_pool3d", "adaptive_avg_pool1d", "group_norm", "rms_norm", "bilinear",
  "cosine_similarity", "pairwise_distance", "pdist", "celu", "celu_", "selu", "selu_", "rrelu", "rrelu_", "hardshrink",
  "prelu", "pixel_shuffle", "pixel_unshuffle", "threshold", "threshold_" }) do
  if torch[name] == nil then torch[name] = function(...) return U.call(F()[name], ...) end end
end

function torch.adaptive_max_pool1d(input, output_size) return U.call(F().adaptive_max_pool1d, input, output_size, true) end

function torch.layer_norm(...)
  local o = U.parse("layer_norm", { { "input", REQ }, { "normalized_shape", REQ }, { "weight" }, { "bias" }, { "eps", 1e-5 },
    { "cudnn_enable", true } }, ...)
  return U.call(F().layer_norm, o.input, o.normalized_shape, o.weight, o.bias, o.eps)
end

function torch.instance_norm(...)
  local o = U.parse("instance_norm", { { "input", REQ }, { "weight" }, { "bias" }, { "running_mean" },
    { "running_var" }, { "use_input_stats", REQ }, { "momentum", REQ }, { "eps", REQ }, { "cudnn_enabled", REQ } }, ...)
  return U.call(F().instance_norm, o.input, o.running_mean, o.running_var, o.weight, o.bias, o.use_input_stats,
    o.momentum, o.eps)
end

-- ---- dropout: (input, p, train), all required, and the in-place forms ----

local function dropout_args(fname, ...)
  local o = U.parse(fname, { { "input", REQ }, { "p", REQ }, { "train", REQ } }, ...)
  if o.p < 0 or o.p > 1 then U.errorf("dropout probability has to be between 0 and 1, but got %s", U.pyfloat(o.p)) end
  return o
end

-- feature dropout: whole channels (dim 1) zeroed, the rest scaled by 1 / (1 - p)
local function feature_dropout(input, p, train)
  if not train or p == 0 then return input end
  if input:dim() < 2 then U.error("Feature dropout requires at least 2 dimensions in the input") end
  if p == 1 then return input * 0 end
  local shape = { input:size(0), input:size(1) }
  for i = 3, input:dim() do shape[i] = 1 end
  local keep = torch.empty(shape, { dtype = input.dtype, device = input.device }):bernoulli_(1 - p)
  return input * keep / (1 - p)
end

local dropouts = {
  dropout = function(x, p, train, inplace) return F().dropout(x, p, train, inplace) end,
  alpha_dropout = function(x, p, train, inplace) return F().alpha_dropout(x, p, train, inplace) end,
  feature_alpha_dropout = function(x, p, train, inplace) return F().feature_alpha_dropout(x, p, train, inplace) end,
  feature_dropout = function(x, p, train, inplace)
    local y = feature_dropout(x, p, train)
    if inplace and y ~= x then return x:copy_(y) end
    return y
  end,
}
for name, f in pairs(dropouts) do
  torch[name] = function(...)
    local o = dropout_args(name, ...)
    return U.call(f, o.input, o.p, o.train, false)
  end
  torch[name .. "_"] = function(...)
    local o = dropout_args(name .. "_", ...)
    return U.call(f, o.input, o.p, o.train, true)
  end
end

-- ---- losses with reduction as an enum ----

local reductions = { [0] = "none", [1] = "mean", [2] = "sum" }
local function reduction(fname, r)
  if type(r) == "string" then return r end
  local name = math.type(r) == "integer" and reductions[r]
  if not name then U.errorf("%s: reduction must be 0 (none), 1 (mean) or 2 (sum), got %s", fname, tostring(r)) end
  return name
end

-- torch.name(spec...): F.name with the spec's arguments by keyword, reduction mapped
local function loss(name, spec)
  torch[name] = function(...)
    local o = U.parse(name, spec, ...)
    local kw = {}
    for i, s in ipairs(spec) do
      if s[1]:find("^input") or s[1] == "target" then U.check_tensor(name, s[1], i, o[s[1]]) end -- PyTorch's parser text
      kw[s[1]] = o[s[1]]
    end
    kw.reduction = reduction(name, o.reduction)
    return U.call(F()[name], kw)
  end
end
loss("kl_div", { { "input", REQ }, { "target", REQ }, { "reduction", 1 }, { "log_target", false } })
loss("cosine_embedding_loss", { { "input1", REQ }, { "input2", REQ }, { "target", REQ }, { "margin", 0.0 }, { "reduction", 1 } })
loss("margin_ranking_loss", { { "input1", REQ }, { "input2", REQ }, { "target", REQ }, { "margin", 0.0 }, { "reduction", 1 } })
loss("hinge_embedding_loss", { { "input", REQ }, { "target", REQ }, { "margin", 1.0 }, { "reduction", 1 } })
loss("poisson_nll_loss", { { "input", REQ }, { "target", REQ }, { "log_input", REQ }, { "full", REQ }, { "eps", REQ },
  { "reduction", REQ } })
loss("triplet_margin_loss", { { "anchor", REQ }, { "positive", REQ }, { "negative", REQ }, { "margin", 1.0 }, { "p", 2.0 },
  { "eps", 1e-6 }, { "swap", false }, { "reduction", 1 } })
loss("binary_cross_entropy_with_logits", { { "input", REQ }, { "target", REQ }, { "weight" }, { "pos_weight" }, { "reduction", 1 } })
loss("ctc_loss", { { "log_probs", REQ }, { "targets", REQ }, { "input_lengths", REQ }, { "target_lengths", REQ },
  { "blank", 0 }, { "reduction", 1 }, { "zero_infinity", false } })

-- ---- grids and padding ----

local interpolation = { [0] = "bilinear", [1] = "nearest", [2] = "bicubic" }
local paddings = { [0] = "zeros", [1] = "border", [2] = "reflection" }
function torch.grid_sampler(...)
  local o = U.parse("grid_sampler", { { "input", REQ }, { "grid", REQ }, { "interpolation_mode", REQ }, { "padding_mode", REQ },
    { "align_corners", REQ } }, ...)
  local mode, pad = interpolation[o.interpolation_mode], paddings[o.padding_mode]
  if not mode then U.errorf("grid_sampler: interpolation_mode must be 0, 1 or 2, got %s", tostring(o.interpolation_mode)) end
  if not pad then U.errorf("grid_sampler: padding_mode must be 0, 1 or 2, got %s", tostring(o.padding_mode)) end
  return U.call(F().grid_sample, o.input, o.grid, { mode = mode, padding_mode = pad, align_corners = o.align_corners })
end

function torch.affine_grid_generator(...)
  local o = U.parse("affine_grid_generator", { { "theta", REQ }, { "size", REQ }, { "align_corners", REQ } }, ...)
  return U.call(F().affine_grid, o.theta, o.size, o.align_corners)
end

function torch.constant_pad_nd(...)
  local o = U.parse("constant_pad_nd", { { "input", REQ }, { "pad", REQ }, { "value", 0 } }, ...)
  return U.call(F().pad, o.input, o.pad, "constant", o.value)
end

-- conv_tbc(input [T, B, Cin], weight [K, Cin, Cout], bias [Cout], pad): a 1-d convolution over time
function torch.conv_tbc(...)
  local o = U.parse("conv_tbc", { { "input", REQ }, { "weight", REQ }, { "bias", REQ }, { "pad", 0 } }, ...)
  local x, w = U.tensor_arg("conv_tbc", "input", o.input), U.tensor_arg("conv_tbc", "weight", o.weight)
  if x:dim() ~= 3 then U.errorf("conv_tbc: Input must have 3 dims: time, batch, in_channel (got %d)", x:dim()) end
  if w:dim() ~= 3 then U.errorf("conv_tbc: Weight tensor must have 3 dims: kernel_width, in_channels, out_channels (got %d)", w:dim()) end
  local y = U.call(F().conv1d, x:permute(1, 2, 0), w:permute(2, 1, 0), o.bias, 1, o.pad)
  return y:permute(2, 0, 1)
end
