-- PyTorch's native ops that scripts call from the torch namespace, returning their tuples as
-- values: torch.native_layer_norm / native_batch_norm / native_group_norm (output and the
-- saved statistics), native_dropout (output, mask), native_norm, torch.convolution,
-- torch.embedding_bag (4 outputs) and embedding_renorm_, and the recurrent functions
-- torch.lstm / gru / rnn_tanh / rnn_relu with their *_cell forms (nn_rnn's composed steps).
-- All composed of differentiable tensor ops, so they run on every device.
local torch = require "torch"
local U = require "nn_util"
require "torch_nn"
local F = torch.nn.functional
local RNN = require "nn_rnn"
local REQ = U.REQUIRED

local function dims_from(first, n)
  local d = {}
  for i = first, n - 1 do d[#d + 1] = i end
  return d
end

-- ---- normalisation ----

-- native_layer_norm(input, normalized_shape, weight, bias, eps) -> output, mean, rstd; mean and
-- rstd have input's leading dims and a 1 for each normalised one
function torch.native_layer_norm(...)
  local o = U.parse("native_layer_norm", { { "input", REQ }, { "normalized_shape", REQ }, { "weight" }, { "bias" },
    { "eps", REQ } }, ...)
  local x = U.check_tensor("native_layer_norm", "input", 1, o.input)
  local ns = type(o.normalized_shape) == "number" and { o.normalized_shape } or torch.Size(o.normalized_shape):totable()
  local axis = x:dim() - #ns
  for i, n in ipairs(ns) do
    if axis < 0 or x:size(axis + i - 1) ~= n then
      local list = table.concat(ns, ", ")
      U.errorf("Given normalized_shape=[%s], expected input with shape [*, %s], but got input of size%s", list, list,
        tostring(x:size()):match("%[.*%]"))
    end
  end
  local dims = dims_from(axis, x:dim())
  local mean = x:mean(dims, true)
  local centred = x - mean
  local rstd = ((centred * centred):mean(dims, true) + o.eps):rsqrt()
  local out = centred * rstd
  if o.weight ~= nil then out = out * o.weight end
  if o.bias ~= nil then out = out + o.bias end
  return out, mean, rstd
end

-- native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
-- -> output, save_mean, save_invstd (per channel; empty when not training). Training updates
-- the running statistics in place, as F.batch_norm.
function torch.native_batch_norm(...)
  local o = U.parse("native_batch_norm", { { "input", REQ }, { "weight" }, { "bias" }, { "running_mean" },
    { "running_var" }, { "training", REQ }, { "momentum", REQ }, { "eps", REQ } }, ...)
  local x = U.check_tensor("native_batch_norm", "input", 1, o.input)
  local out = U.call(F.batch_norm, x, o.running_mean, o.running_var, o.weight, o.bias, o.training, o.momentum, o.eps)
  if not o.training then
    local empty = torch.empty(0, { dtype = x.dtype, device = x.device })
    return out, empty, empty:clone()
  end
  local dims = { 0, table.unpack(dims_from(2, x:dim())) }
  local mean = x:mean(dims)
  local var = x:var(dims, { correction = 0 })
  return out, mean, (var + o.eps):rsqrt()
end

-- native_group_norm(input, weight, bias, N, C, HxW, group, eps) -> output, mean, rstd ((N, group))
function torch.native_group_norm(...)
  local o = U.parse("native_group_norm", { { "input", REQ }, { "weight" }, { "bias" }, { "N", REQ }, { "C", REQ },
    { "HxW", REQ }, { "group", REQ }, { "eps", REQ } }, ...)
  local x = U.check_tensor("native_group_norm", "input", 1, o.input)
  local N, C, G = o.N, o.C, o.group
  if x:numel() ~= N * C * o.HxW then
    U.errorf("native_group_norm: input of %d elements does not hold N * C * HxW = %d * %d * %d", x:numel(), N, C, o.HxW)
  end
  if C % G ~= 0 then
    U.errorf("Expected number of channels in input to be divisible by num_groups, but got input of shape %s and num_groups=%d",
      tostring(x:size()):match("%[.*%]"), G)
  end
  local g = x:reshape(N, G, -1)
  local mean = g:mean(2, true)
  local centred = g - mean
  local rstd = ((centred * centred):mean(2, true) + o.eps):rsqrt()
  local out = (centred * rstd):reshape(x:size())
  local per = { 1, C }
  for i = 3, x:dim() do per[i] = 1 end
  if o.weight ~= nil then out = out * o.weight:reshape(per) end
  if o.bias ~= nil then out = out + o.bias:reshape(per) end
  return out, mean:reshape(N, G), rstd:reshape(N, G)
end

-- native_dropout(input, p, train) -> output, mask (bool: the kept elements). train nil counts as true.
function torch.native_dropout(...)
  local o = U.parse("native_dropout", { { "input", REQ }, { "p", REQ }, { "train" } }, ...)
  local x = U.check_tensor("native_dropout", "input", 1, o.input)
  local p = o.p
  if type(p) ~= "number" or p < 0 or p > 1 then
    U.errorf("dropout probability has to be between 0 and 1, but got %s", tostring(p))
  end
  if o.train == false then return x:clone(), torch.ones_like(x, { dtype = torch.bool }) end
  local mask = torch.rand_like(x):ge(p)
  if p == 1 then mask:zero_() end
  local scale = p == 1 and 0.0 or 1 / (1 - p)
  return x * mask:to(x.dtype) * scale, mask
end

-- native_norm(input, p=2) or native_norm(input, p, dim, keepdim, dtype): the vector p-norm
function torch.native_norm(...)
  local o = U.parse("native_norm", { { "input", REQ }, { "p", 2 }, { "dim" }, { "keepdim", false }, { "dtype" } }, ...)
  local x = U.check_tensor("native_norm", "input", 1, o.input)
  return U.call(torch.linalg.vector_norm, x, o.p == nil and 2 or o.p, o.dim, o.keepdim, { dtype = o.dtype })
end

-- ---- convolution ----

-- convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
-- groups): F.conv{1,2,3}d or F.conv_transpose{1,2,3}d by weight's number of dims
function torch.convolution(...)
  local o = U.parse("convolution", { { "input", REQ }, { "weight", REQ }, { "bias" }, { "stride", REQ }, { "padding", REQ },
    { "dilation", REQ }, { "transposed", REQ }, { "output_padding", REQ }, { "groups", REQ } }, ...)
  local w = U.check_tensor("convolution", "weight", 2, o.weight)
  local nd = w:dim() - 2
  if nd < 1 or nd > 3 then U.errorf("convolution: expected a weight of 3, 4 or 5 dims, got %d", w:dim()) end
  if o.transposed then
    return U.call(F["conv_transpose" .. nd .. "d"], o.input, w, o.bias, o.stride, o.padding, o.output_padding, o.groups,
      o.dilation)
  end
  return U.call(F["conv" .. nd .. "d"], o.input, w, o.bias, o.stride, o.padding, o.dilation, o.groups)
end

-- ---- embeddings ----

local bag_modes = { [0] = "sum", [1] = "mean", [2] = "max" }

-- embedding_bag(weight, indices, offsets, scale_grad_by_freq=false, mode=0 (0 sum, 1 mean,
-- 2 max), sparse=false, per_sample_weights=nil, include_last_offset=false, padding_idx=nil)
-- -> output (F.embedding_bag's), offset2bag (the bag of each index), bag_size (the non-padding
-- indices in each bag) and max_indices (mode 2: the row that gave each maximum, -1 for an
-- empty bag; otherwise an empty tensor)
function torch.embedding_bag(...)
  local o = U.parse("embedding_bag", { { "weight", REQ }, { "indices", REQ }, { "offsets", REQ },
    { "scale_grad_by_freq", false }, { "mode", 0 }, { "sparse", false }, { "per_sample_weights" },
    { "include_last_offset", false }, { "padding_idx" } }, ...)
  local mode = bag_modes[o.mode]
  if mode == nil then U.errorf("embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got %s", tostring(o.mode)) end
  local w = U.check_tensor("embedding_bag", "weight", 1, o.weight)
  local idx = U.check_tensor("embedding_bag", "indices", 2, o.indices)
  local out = U.call(F.embedding_bag, idx, w, o.offsets, nil, 2, o.scale_grad_by_freq, mode, o.sparse, o.per_sample_weights,
    o.include_last_offset, o.padding_idx)
  local ids, offs = idx:reshape(-1):tolist(), nil
  if idx:dim() == 2 then
    offs = {}
    for b = 1, idx:size(0) do offs[b] = (b - 1) * idx:size(1) end
  else
    offs = o.offsets:tolist()
  end
  local B = out:size(0)
  local pad = o.padding_idx
  if pad ~= nil and pad < 0 then pad = pad + w:size(0) end
  local bag_of, sizes, members = {}, {}, {}
  for b = 1, B do
    local stop = b < #offs and offs[b + 1] or #ids
    sizes[b], members[b] = 0, {}
    for k = offs[b] + 1, stop do
      bag_of[k] = b - 1
      if ids[k] ~= pad then
        sizes[b] = sizes[b] + 1
        members[b][#members[b] + 1] = k - 1
      end
    end
  end
  for k = 1, #ids do bag_of[k] = bag_of[k] or B - 1 end -- past include_last_offset's last offset
  local long = { dtype = torch.int64, device = w.device }
  local offset2bag = torch.tensor(bag_of, long)
  local bag_size = torch.tensor(sizes, long)
  if mode ~= "max" then return out, offset2bag, bag_size, torch.empty(0, long) end
  local rows = {}
  for b = 1, B do
    if #members[b] == 0 then
      rows[b] = torch.full({ w:size(1) }, -1, long)
    else
      local pos = torch.tensor(members[b], long)
      local bag_ids = idx:reshape(-1):to(torch.int64):index_select(0, pos)
      local which = w:index_select(0, bag_ids):argmax(0)
      rows[b] = bag_ids:index_select(0, which)
    end
  end
  return out, offset2bag, bag_size, B > 0 and torch.stack(rows) or torch.empty(0, w:size(1), long)
end

-- embedding_renorm_(weight, indices, max_norm, norm_type): the rows of weight that indices name
-- whose norm exceeds max_norm are scaled down to it, in place (F.embedding's max_norm step)
function torch.embedding_renorm_(...)
  local o = U.parse("embedding_renorm_", { { "input", REQ }, { "indices", REQ }, { "max_norm", REQ }, { "norm_type", REQ } }, ...)
  local w = U.check_tensor("embedding_renorm_", "input", 1, o.input)
  U.check_tensor("embedding_renorm_", "indices", 2, o.indices)
  local _ <close> = torch.no_grad()
  U.call(F.embedding, o.indices, w, nil, o.max_norm, o.norm_type)
  return w
end

-- ---- recurrent functions ----

local function check_cell(name, x, h, w_ih)
  U.check_tensor(name, "input", 1, x)
  if x:dim() ~= 2 then U.errorf("%s: expected input to be 2-D (batch, input_size), got %d-D", name, x:dim()) end
  if x:size(1) ~= w_ih:size(1) then
    U.errorf("input has inconsistent input_size: got %d expected %d", x:size(1), w_ih:size(1))
  end
  if h:size(0) ~= x:size(0) then
    U.errorf("Input batch size %d doesn't match hidden0 batch size %d", x:size(0), h:size(0))
  end
end

-- lstm_cell(input, {hx, cx}, w_ih, w_hh, b_ih, b_hh) -> hy, cy
function torch.lstm_cell(...)
  local o = U.parse("lstm_cell", { { "input", REQ }, { "hx", REQ }, { "w_ih", REQ }, { "w_hh", REQ }, { "b_ih" }, { "b_hh" } }, ...)
  if type(o.hx) ~= "table" or not torch.is_tensor(o.hx[1]) or not torch.is_tensor(o.hx[2]) then
    U.error("lstm_cell: hx must be a list of two tensors {hx, cx}")
  end
  check_cell("lstm_cell", o.input, o.hx[1], o.w_ih)
  return RNN._step("LSTM", F.linear(o.input, o.w_ih, o.b_ih), o.hx[1], o.hx[2], o.w_hh, o.b_hh)
end

local function single_state_cell(name, mode)
  torch[name] = function(...)
    local o = U.parse(name, { { "input", REQ }, { "hx", REQ }, { "w_ih", REQ }, { "w_hh", REQ }, { "b_ih" }, { "b_hh" } }, ...)
    U.check_tensor(name, "hx", 2, o.hx)
    check_cell(name, o.input, o.hx, o.w_ih)
    return (RNN._step(mode, F.linear(o.input, o.w_ih, o.b_ih), o.hx, nil, o.w_hh, o.b_hh))
  end
end
single_state_cell("gru_cell", "GRU")
single_state_cell("rnn_tanh_cell", "RNN_TANH")
single_state_cell("rnn_relu_cell", "RNN_RELU")

-- lstm(input, {h0, c0}, params, has_biases, num_layers, dropout, train, bidirectional,
-- batch_first) -> output, h_n, c_n; gru / rnn_tanh / rnn_relu(input, h0, ...) -> output, h_n.
-- params lists each layer's (and direction's) w_ih, w_hh[, b_ih, b_hh], as nn.LSTM's
-- _flat_weights.
local function sequence(name, mode)
  torch[name] = function(...)
    local o = U.parse(name, { { "input", REQ }, { "hx", REQ }, { "params", REQ }, { "has_biases", REQ },
      { "num_layers", REQ }, { "dropout", REQ }, { "train", REQ }, { "bidirectional", REQ }, { "batch_first", REQ } }, ...)
    local x = U.check_tensor(name, "input", 1, o.input)
    if torch.is_tensor(o.params) then
      U.errorf("%s: the packed form %s(data, batch_sizes, hx, params, ...) is not supported; run nn.%s on a " ..
        "PackedSequence instead", name, name, mode == "LSTM" and "LSTM" or mode == "GRU" and "GRU" or "RNN")
    end
    if x:dim() ~= 3 then U.errorf("%s: expected input to be 3-D, got %d-D", name, x:dim()) end
    local h0, c0 = o.hx, nil
    if mode == "LSTM" then
      if type(o.hx) ~= "table" or not torch.is_tensor(o.hx[1]) or not torch.is_tensor(o.hx[2]) then
        U.errorf("%s: hx must be a list of two tensors {h0, c0}", name)
      end
      h0, c0 = o.hx[1], o.hx[2]
    else
      U.check_tensor(name, "hx", 2, h0)
    end
    local D, L = o.bidirectional and 2 or 1, U.check_int(name, "num_layers", o.num_layers, 1)
    local per = o.has_biases and 4 or 2
    if type(o.params) ~= "table" or #o.params ~= L * D * per then
      U.errorf("%s: expected %d tensors in params (%d layers, %d directions, %d each), got %s", name, L * D * per, L, D, per,
        type(o.params) == "table" and tostring(#o.params) or U.typename(o.params))
    end
    if h0:dim() ~= 3 or h0:size(0) ~= L * D then
      U.errorf("%s: expected hx of size (%d, batch, hidden_size), got %s", name, L * D, tostring(h0:size()))
    end
    local net = { mode = mode, bidirectional = o.bidirectional, num_layers = L, dropout = o.dropout, training = o.train }
    local k = 1
    for layer = 0, L - 1 do
      for dir = 0, D - 1 do
        local sfx = string.format("_l%d%s", layer, dir == 1 and "_reverse" or "")
        for _, n in ipairs({ "weight_ih", "weight_hh", "bias_ih", "bias_hh" }) do
          if n:sub(1, 6) == "weight" or o.has_biases then
            net[n .. sfx] = o.params[k]
            k = k + 1
          end
        end
      end
    end
    if o.batch_first then x = x:transpose(0, 1) end
    local out, hn, cn = RNN._composed_forward(net, x, h0, c0)
    if o.batch_first then out = out:transpose(0, 1) end
    if mode == "LSTM" then return out, hn, cn end
    return out, hn
  end
end
sequence("lstm", "LSTM")
sequence("gru", "GRU")
sequence("rnn_tanh", "RNN_TANH")
sequence("rnn_relu", "RNN_RELU")

return torch
