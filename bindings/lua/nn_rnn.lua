-- Recurrent layers: nn.RNN, nn.LSTM, nn.GRU and their cells, with PyTorch's parameters
-- (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, ..._reverse), gate order (LSTM: i, f,
-- g, o; GRU: r, z, n), initialisation and shapes. On CUDA, cuDNN's RNN runs every step of every
-- layer in one op each way (torch._cudnn_rnn, engine/rnn.c); elsewhere, and with
-- torch.backends.cudnn.enabled = false, they are composed of differentiable ops: the input's
-- projection for every step in one product, then one small product and the gates per step.
--
--   local lstm = nn.LSTM(input_size, hidden_size, {num_layers=, bias=, batch_first=, dropout=, bidirectional=})
--   local output, hc = lstm(x, {h0, c0})          -- Python: output, (h_n, c_n) = lstm(x, (h0, c0))
--   local h_n, c_n = hc[1], hc[2]
--   local output, h_n = gru(x, h0)
--   local h, c = lstm_cell(x, {h, c})              -- cells return their tuple as values
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"
local Parameter = require "nn_parameter"
local F = torch.nn.functional
local REQ = U.REQUIRED
local RnnUtils = require "nn_utils_rnn"
local Packed = RnnUtils.PackedSequence

local M = {}

local GATES = { RNN_TANH = 1, RNN_RELU = 1, LSTM = 4, GRU = 3 }

-- one step: h (and c for LSTM) from the input's projection xw and the previous state
-- (LSTM and RNN: b_hh may already be in xw, then nil here; one addmm makes the gates, and
-- one sigmoid covers the LSTM's three sigmoid gates: fewer ops a step, each launched from Lua)
local function step(mode, xw, h, c, w_hh, b_hh)
  if mode == "LSTM" then
    local gates = torch.addmm(b_hh and xw + b_hh or xw, h, w_hh:t())
    local H = h:size(-1)
    local sg = gates:sigmoid()
    local i, f, o = sg:narrow(-1, 0, H), sg:narrow(-1, H, H), sg:narrow(-1, 3 * H, H)
    c = f * c + i * gates:narrow(-1, 2 * H, H):tanh()
    return o * c:tanh(), c
  end
  local hw = F.linear(h, w_hh, b_hh)
  if mode == "GRU" then
    local xi, hi = xw:chunk(3, -1), hw:chunk(3, -1)
    local r, z = (xi[1] + hi[1]):sigmoid(), (xi[2] + hi[2]):sigmoid()
    local n = (xi[3] + r * hi[3]):tanh()
    return n + z * (h - n)
  elseif mode == "RNN_RELU" then
    return F.relu(xw + hw)
  end
  return (xw + hw):tanh()
end

local function check_state(name, t, want, what)
  if t:dim() ~= #want then
    U.errorf("%s: expected %s to be %dD, got %dD instead", name, what, #want, t:dim())
  end
  for i, n in ipairs(want) do
    if t:size(i - 1) ~= n then
      U.errorf("Expected %s size %s, got %s", what, tostring(torch.Size(want)), tostring(t:size()))
    end
  end
end

-- ---- RNN, LSTM, GRU ----

local RNNBase = Module:extend("RNNBase")
M.RNNBase = RNNBase

local rnn_spec = { { "input_size", REQ }, { "hidden_size", REQ }, { "num_layers", 1 }, { "nonlinearity", "tanh" },
  { "bias", true }, { "batch_first", false }, { "dropout", 0.0 }, { "bidirectional", false }, { "proj_size", 0 },
  { "device" }, { "dtype" } }

local function init_base(self, mode, o)
  local name = self:_get_name()
  self.mode = mode
  self.input_size = U.check_int(name, "input_size", o.input_size, 1)
  self.hidden_size = U.check_int(name, "hidden_size", o.hidden_size, 1)
  self.num_layers = U.check_int(name, "num_layers", o.num_layers, 1)
  self.bias, self.batch_first, self.bidirectional = o.bias, o.batch_first, o.bidirectional
  self.dropout = o.dropout
  if type(o.dropout) ~= "number" or o.dropout < 0 or o.dropout > 1 then
    U.error("dropout should be a number in range [0, 1] representing the probability of an element being zeroed")
  end
  if o.proj_size ~= 0 then U.errorf("%s: proj_size is not supported", name) end
  local fk = { device = o.device, dtype = o.dtype }
  local G, H, D = GATES[mode] * self.hidden_size, self.hidden_size, o.bidirectional and 2 or 1
  self._flat_weights_names = {}
  for layer = 0, self.num_layers - 1 do
    for dir = 0, D - 1 do
      local sfx = string.format("_l%d%s", layer, dir == 1 and "_reverse" or "")
      local in_size = layer == 0 and self.input_size or H * D
      local names = { "weight_ih" .. sfx, "weight_hh" .. sfx }
      self[names[1]] = Parameter(torch.empty(G, in_size, fk))
      self[names[2]] = Parameter(torch.empty(G, H, fk))
      if o.bias then
        names[3], names[4] = "bias_ih" .. sfx, "bias_hh" .. sfx
        self[names[3]] = Parameter(torch.empty(G, fk))
        self[names[4]] = Parameter(torch.empty(G, fk))
      end
      for _, n in ipairs(names) do self._flat_weights_names[#self._flat_weights_names + 1] = n end
    end
  end
  self:reset_parameters()
end

-- PyTorch packs the weights into one cuDNN buffer here; nnrepl's RNNs read them where they are
function RNNBase:flatten_parameters() end

function RNNBase:reset_parameters()
  local stdv = 1 / math.sqrt(self.hidden_size)
  for _, p in ipairs(self:parameters()) do torch.nn.init.uniform_(p, -stdv, stdv) end
end

-- every step of every layer composed of ops (the CPU, and what cuDNN does not take)
local function composed_forward(self, x, h0, c0, lengths)
  local mode, D = self.mode, self.bidirectional and 2 or 1
  local T, N = x:size(0), x:size(1)
  local hn, cn = {}, {}
  local layer_in = x
  local lens = lengths and torch.tensor(lengths, { dtype = torch.int64 }):to(x.device):view(N, 1) or nil
  for layer = 0, self.num_layers - 1 do
    local outs = {}
    for dir = 0, D - 1 do
      local k = layer * D + dir
      local sfx = string.format("_l%d%s", layer, dir == 1 and "_reverse" or "")
      local xw = F.linear(layer_in, self["weight_ih" .. sfx], self["bias_ih" .. sfx])
      local w_hh, b_hh = self["weight_hh" .. sfx], self["bias_hh" .. sfx]
      if b_hh ~= nil and mode ~= "GRU" then xw, b_hh = xw + b_hh, nil end -- both biases once for every step
      local h, c = h0[k], c0 and c0[k] or nil
      local steps = {}
      for s = 0, T - 1 do
        local t = dir == 1 and T - 1 - s or s
        local h1, c1 = step(mode, xw[t], h, c, w_hh, b_hh)
        if lens then -- past a sequence's end its state stays and its output is zero
          local live = lens:gt(t)
          h, c = torch.where(live, h1, h), c1 and torch.where(live, c1, c) or nil
          steps[t + 1] = torch.where(live, h1, torch.zeros_like(h1))
        else
          h, c = h1, c1
          steps[t + 1] = h
        end
      end
      outs[dir + 1] = torch.stack(steps, 0)
      hn[k + 1], cn[k + 1] = h, c
    end
    layer_in = D == 2 and torch.cat(outs, -1) or outs[1]
    if self.dropout > 0 and self.training and layer < self.num_layers - 1 then
      layer_in = F.dropout(layer_in, self.dropout, true)
    end
  end
  return layer_in, torch.stack(hn, 0), c0 and torch.stack(cn, 0) or nil
end

-- cuDNN's RNN: all layers in one call, or one call a layer when dropout runs between them
local function cudnn_forward(self, x, h0, c0, lengths, autocast)
  local D, L, per = self.bidirectional and 2 or 1, self.num_layers, self.bias and 4 or 2
  local ws = {}
  for i, n in ipairs(self._flat_weights_names) do ws[i] = autocast and self[n]:to(h0.dtype) or self[n] end
  if autocast then x = x:to(h0.dtype) end
  if lengths then
    local longest = 0
    for _, l in ipairs(lengths) do longest = math.max(longest, l) end
    if longest < x:size(0) then x = x:narrow(0, 0, longest) end
  end
  if not (self.dropout > 0 and self.training and L > 1) then
    return torch._cudnn_rnn(self.mode, x, h0, c0, ws, L, self.bidirectional, lengths)
  end
  local hs, cs, y = {}, {}, x
  for layer = 0, L - 1 do
    local lw = table.move(ws, layer * D * per + 1, (layer + 1) * D * per, 1, {})
    local h, c
    y, h, c = torch._cudnn_rnn(self.mode, y, h0:narrow(0, layer * D, D), c0 and c0:narrow(0, layer * D, D), lw, 1,
      self.bidirectional, lengths)
    hs[layer + 1], cs[layer + 1] = h, c
    if layer < L - 1 then y = F.dropout(y, self.dropout, true) end
  end
  return y, torch.cat(hs, 0), c0 and torch.cat(cs, 0) or nil
end

local function use_cudnn(x, packed)
  if x.device.type ~= "cuda" or torch.backends.cudnn.enabled == false then return false end
  if packed then
    for _, l in ipairs(packed._lengths) do if l < 1 then return false end end
  end
  return true
end

-- PyTorch's checks of the input and state against the parameters
local function check_operands(self, x, h0, autocast)
  local w = self[self._flat_weights_names[1]]
  if x.dtype ~= w.dtype and not autocast then
    U.errorf("input must have the type %s, got type %s", tostring(w.dtype), tostring(x.dtype))
  end
  if tostring(x.device) ~= tostring(w.device) then
    U.errorf("Input and parameter tensors are not at the same device, found input tensor at %s and parameter tensor at %s",
      tostring(x.device), tostring(w.device))
  end
  if tostring(h0.device) ~= tostring(x.device) then
    U.errorf("Input and hidden tensors are not at the same device, found input tensor at %s and hidden tensor at %s",
      tostring(x.device), tostring(h0.device))
  end
end

function RNNBase:forward(input, hx)
  local name, mode = self:_get_name(), self.mode
  local lstm = mode == "LSTM"
  local packed = Packed.is(input) and input or nil -- each sequence stops at its own length
  if packed then input = self.batch_first and packed._padded:transpose(0, 1) or packed._padded end
  if not torch.is_tensor(input) then U.errorf("%s expected a tensor as input, got %s", name, U.typename(input)) end
  local batched = input:dim() == 3
  if not batched and input:dim() ~= 2 then
    U.errorf("%s: Expected input to be 2D or 3D, got %dD tensor instead", name, input:dim())
  end
  local x = batched and (self.batch_first and input:transpose(0, 1) or input) or input:unsqueeze(1)
  if x:size(2) ~= self.input_size then
    U.errorf("input.size(-1) must be equal to input_size. Expected %d, got %d", self.input_size, x:size(2))
  end
  local D = self.bidirectional and 2 or 1
  local want = { self.num_layers * D, x:size(1), self.hidden_size }
  local h0, c0
  if hx == nil then
    h0 = torch.zeros(want, { dtype = x.dtype, device = x.device })
    c0 = lstm and h0 or nil
  else
    if lstm then
      if type(hx) ~= "table" or not torch.is_tensor(hx[1]) or not torch.is_tensor(hx[2]) then
        U.error("LSTM: hx must be a table {h_0, c_0} of tensors")
      end
      h0, c0 = hx[1], hx[2]
    else
      if not torch.is_tensor(hx) then U.errorf("%s: hx must be a tensor, got %s", name, U.typename(hx)) end
      h0 = hx
    end
    if not batched then
      h0 = h0:unsqueeze(1)
      if c0 then c0 = c0:unsqueeze(1) end
    end
    check_state(name, h0, want, lstm and "hidden[0]" or "hidden")
    if c0 then check_state(name, c0, want, "hidden[1]") end
  end
  local autocast = x.device.type == "cuda" and torch.is_autocast_enabled("cuda")
  check_operands(self, x, h0, autocast)
  if autocast then -- autocast runs recurrent layers in its dtype, state too
    local dt = torch.get_autocast_dtype("cuda")
    h0 = h0:to(dt)
    if c0 then c0 = c0:to(dt) end
  end
  local out, h_n, c_n
  if use_cudnn(x, packed) then
    out, h_n, c_n = cudnn_forward(self, x, h0, c0, packed and packed._lengths, autocast)
  else
    out, h_n, c_n = composed_forward(self, x, h0, c0, packed and packed._lengths)
  end
  if packed then
    out = RnnUtils._repack(packed, out) -- out is time first here, as a PackedSequence keeps it
  elseif not batched then
    out, h_n = out:squeeze(1), h_n:squeeze(1)
    if c_n then c_n = c_n:squeeze(1) end
  elseif self.batch_first then
    out = out:transpose(0, 1)
  end
  if lstm then return out, { h_n, c_n } end
  return out, h_n
end

function RNNBase:extra_repr()
  local s = string.format("%d, %d", self.input_size, self.hidden_size)
  if self.num_layers ~= 1 then s = s .. ", num_layers=" .. self.num_layers end
  if self.mode == "RNN_RELU" then s = s .. ", nonlinearity='relu'" end
  if not self.bias then s = s .. ", bias=False" end
  if self.batch_first then s = s .. ", batch_first=True" end
  if self.dropout ~= 0 then s = s .. ", dropout=" .. U.pyfloat(self.dropout) end
  if self.bidirectional then s = s .. ", bidirectional=True" end
  return s
end

local function recurrent(name, mode_of, spec)
  local cls = RNNBase:extend(name)
  M[name] = cls
  cls.__init = function(self, ...)
    local o = U.parse(name, spec, ...)
    init_base(self, mode_of(o), o)
  end
  return cls
end

local lstm_gru_spec = {}
for _, s in ipairs(rnn_spec) do
  if s[1] ~= "nonlinearity" then lstm_gru_spec[#lstm_gru_spec + 1] = s end
end

recurrent("RNN", function(o)
  if o.nonlinearity == "tanh" then return "RNN_TANH" end
  if o.nonlinearity == "relu" then return "RNN_RELU" end
  U.errorf("Unknown nonlinearity '%s'. Select from 'tanh' or 'relu'.", tostring(o.nonlinearity))
end, rnn_spec)
recurrent("LSTM", function() return "LSTM" end, lstm_gru_spec)
recurrent("GRU", function() return "GRU" end, lstm_gru_spec)

-- ---- cells ----

local cell_spec = { { "input_size", REQ }, { "hidden_size", REQ }, { "bias", true }, { "nonlinearity", "tanh" },
  { "device" }, { "dtype" } }

-- nn.RNNCellBase(input_size, hidden_size, bias, num_chunks, device=, dtype=): the cells' base
-- class, with their weights (num_chunks gates) and reset_parameters
local RNNCellBase = Module:extend("RNNCellBase")
M.RNNCellBase = RNNCellBase

local function cell_weights(self, name, input_size, hidden_size, bias, num_chunks, fk)
  self.input_size = U.check_int(name, "input_size", input_size, 1)
  self.hidden_size = U.check_int(name, "hidden_size", hidden_size, 1)
  self.bias = bias
  local G = num_chunks * self.hidden_size
  self.weight_ih = Parameter(torch.empty(G, self.input_size, fk))
  self.weight_hh = Parameter(torch.empty(G, self.hidden_size, fk))
  if bias then
    self.bias_ih = Parameter(torch.empty(G, fk))
    self.bias_hh = Parameter(torch.empty(G, fk))
  else
    self:register_parameter("bias_ih", nil)
    self:register_parameter("bias_hh", nil)
  end
  self:reset_parameters()
end

function RNNCellBase:__init(...)
  local o = U.parse("RNNCellBase", { { "input_size", REQ }, { "hidden_size", REQ }, { "bias", REQ }, { "num_chunks", REQ },
    { "device" }, { "dtype" } }, ...)
  cell_weights(self, "RNNCellBase", o.input_size, o.hidden_size, o.bias, U.check_int("RNNCellBase", "num_chunks", o.num_chunks, 1),
    { device = o.device, dtype = o.dtype })
end
RNNCellBase.reset_parameters = RNNBase.reset_parameters
function RNNCellBase:extra_repr()
  local s = string.format("%d, %d", self.input_size, self.hidden_size)
  if not self.bias then s = s .. ", bias=False" end
  if self.mode == "RNN_RELU" then s = s .. ", nonlinearity=relu" end
  return s
end

-- the checks of PyTorch's cell forward on hx (a tensor, or LSTMCell's pair), with its texts
local function check_cell_hx(name, lstm, hx)
  if hx == nil then return end
  if not lstm then
    if not torch.is_tensor(hx) then U.errorf("'%s' object has no attribute 'dim'", U.typename(hx)) end
    if hx:dim() ~= 1 and hx:dim() ~= 2 then U.errorf("%s: Expected hidden to be 1D or 2D, got %dD instead", name, hx:dim()) end
    return
  end
  if torch.is_tensor(hx) then U.error("lstm_cell(): argument 'hx' (position 2) must be tuple of Tensors, not Tensor") end
  if type(hx) ~= "table" then U.errorf("'%s' object is not iterable", U.typename(hx)) end
  for i, v in ipairs(hx) do
    if not torch.is_tensor(v) then U.errorf("'%s' object has no attribute 'dim'", U.typename(v)) end
    if v:dim() ~= 1 and v:dim() ~= 2 then U.errorf("%s: Expected hx[%d] to be 1D or 2D, got %dD instead", name, i - 1, v:dim()) end
  end
  if #hx ~= 2 then U.errorf("lstm_cell: expected two hidden states (h, c), got %d", #hx) end
end

-- PyTorch's check_rnn_cell_forward_hidden (x and h batched)
local function check_cell_hidden(x, h, hidden_size, label)
  if x:size(0) ~= h:size(0) then
    U.errorf("Input batch size %d doesn't match hidden%d batch size %d", x:size(0), label, h:size(0))
  end
  if h:size(1) ~= hidden_size then
    U.errorf("hidden%d has inconsistent hidden_size: got %d, expected %d", label, h:size(1), hidden_size)
  end
end

local function cell(name, mode_of)
  local cls = RNNCellBase:extend(name)
  M[name] = cls
  local spec = {}
  for _, s in ipairs(cell_spec) do
    if name == "RNNCell" or s[1] ~= "nonlinearity" then spec[#spec + 1] = s end
  end
  cls.__init = function(self, ...)
    local o = U.parse(name, spec, ...)
    self.mode = mode_of(o)
    cell_weights(self, name, o.input_size, o.hidden_size, o.bias, GATES[self.mode], { device = o.device, dtype = o.dtype })
  end
  cls.forward = function(self, input, hx)
    if not torch.is_tensor(input) then U.errorf("%s expected a tensor as input, got %s", name, U.typename(input)) end
    local batched = input:dim() == 2
    if not batched and input:dim() ~= 1 then
      U.errorf("%s: Expected input to be 1D or 2D, got %dD instead", name, input:dim())
    end
    local x = batched and input or input:unsqueeze(0)
    if x:size(1) ~= self.input_size then
      U.errorf("input has inconsistent input_size: got %d expected %d", x:size(1), self.input_size)
    end
    if not input:is_floating_point() and input.dtype ~= self.weight_ih.dtype then -- PyTorch's addmm text
      U.errorf("mat1 and mat2 must have the same dtype, but got %s and %s", U.scalar_name(input.dtype), U.scalar_name(self.weight_ih.dtype))
    end
    local lstm = self.mode == "LSTM"
    check_cell_hx(name, lstm, hx)
    local h, c
    if hx == nil then
      h = torch.zeros(x:size(0), self.hidden_size, { dtype = x.dtype, device = x.device })
      c = lstm and h or nil
    elseif lstm then
      h, c = hx[1], hx[2]
    else
      h = hx
    end
    if not batched and hx ~= nil then
      h = h:unsqueeze(0)
      if c then c = c:unsqueeze(0) end
    end
    check_cell_hidden(x, h, self.hidden_size, 0)
    if c then check_cell_hidden(x, c, self.hidden_size, 1) end
    local h1, c1 = step(self.mode, F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh, self.bias_hh)
    if not batched then
      h1 = h1:squeeze(0)
      if c1 then c1 = c1:squeeze(0) end
    end
    if lstm then return h1, c1 end
    return h1
  end
  return cls
end

cell("RNNCell", function(o)
  if o.nonlinearity == "tanh" then return "RNN_TANH" end
  if o.nonlinearity == "relu" then return "RNN_RELU" end
  U.errorf("Unknown nonlinearity: %s", tostring(o.nonlinearity))
end)
cell("LSTMCell", function() return "LSTM" end)
cell("GRUCell", function() return "GRU" end)

-- for torch.lstm / gru / rnn_tanh / rnn_relu and their cells (torch_ops_native.lua)
M._step, M._composed_forward = step, composed_forward

return M
