-- nn.RNN / LSTM / GRU and their cells against recurrences worked out with plain Lua
-- arithmetic on small float64 inputs; gradients by central differences.
local T = ...
local here = debug.getinfo(1, "S").source:match("^@(.*/)")
local gradcheck = dofile(here .. "gradcheck.lua")(T)
local R = dofile(here .. "attention_ref.lua")
local f64 = { dtype = torch.float64 }

local function sigmoid(v) return 1 / (1 + math.exp(-v)) end

-- one step on lists: gates = x W_ih^T + b_ih + h W_hh^T + b_hh (GRU keeps the two apart)
local function ref_step(mode, x, h, c, p)
  local xw = R.affine({ x }, p.w_ih, p.b_ih)[1]
  local hw = R.affine({ h }, p.w_hh, p.b_hh)[1]
  local H, h1, c1 = #h, {}, {}
  for j = 1, H do
    if mode == "LSTM" then
      local g = function(k) return xw[k * H + j] + hw[k * H + j] end
      c1[j] = sigmoid(g(1)) * c[j] + sigmoid(g(0)) * math.tanh(g(2))
      h1[j] = sigmoid(g(3)) * math.tanh(c1[j])
    elseif mode == "GRU" then
      local r = sigmoid(xw[j] + hw[j])
      local z = sigmoid(xw[H + j] + hw[H + j])
      local n = math.tanh(xw[2 * H + j] + r * hw[2 * H + j])
      h1[j] = (1 - z) * n + z * h[j]
    elseif mode == "RNN_RELU" then
      h1[j] = math.max(xw[j] + hw[j], 0)
    else
      h1[j] = math.tanh(xw[j] + hw[j])
    end
  end
  return h1, c1
end

local function params(m, sfx)
  local function l(n) local t = m[n .. sfx]; return t and t:tolist() or nil end
  return { w_ih = l("weight_ih"), w_hh = l("weight_hh"), b_ih = l("bias_ih"), b_hh = l("bias_hh") }
end

-- one direction over a sequence of lists (reverse: last step first); returns outputs, h, c
local function ref_dir(mode, xs, h, c, p, reverse)
  local out = {}
  for s = 1, #xs do
    local t = reverse and #xs + 1 - s or s
    h, c = ref_step(mode, xs[t], h, c, p)
    out[t] = h
  end
  return out, h, c
end

local function ref_seq(mode, m, xs, h0, c0) -- one batch row; h0/c0: per layer*dir lists
  local D = m.bidirectional and 2 or 1
  local hn, cn, input = {}, {}, xs
  for layer = 0, m.num_layers - 1 do
    local outs = {}
    for dir = 0, D - 1 do
      local k = layer * D + dir + 1
      local sfx = string.format("_l%d%s", layer, dir == 1 and "_reverse" or "")
      outs[dir + 1], hn[k], cn[k] = ref_dir(mode, input, h0[k], c0 and c0[k], params(m, sfx), dir == 1)
    end
    input = {}
    for t = 1, #xs do
      input[t] = {}
      for _, o in ipairs(outs) do for _, v in ipairs(o[t]) do input[t][#input[t] + 1] = v end end
    end
  end
  return input, hn, cn
end

local function row(t, n) -- (A, N, B) -> lists for batch row n
  return t:select(1, n):tolist()
end

T.test("LSTM, GRU and RNN against the recurrences, 2 layers both ways", function()
  torch.manual_seed(31)
  for _, case in ipairs({ { nn.LSTM, "LSTM" }, { nn.GRU, "GRU" }, { nn.RNN, "RNN_TANH" }, { nn.RNN, "RNN_RELU", "relu" } }) do
    local opts = { num_layers = 2, bidirectional = true, dtype = torch.float64 }
    if case[3] then opts.nonlinearity = case[3] end
    local m = case[1](3, 2, opts)
    local x = torch.randn(4, 2, 3, f64)
    local h0, c0 = torch.randn(4, 2, 2, f64), torch.randn(4, 2, 2, f64)
    local out, hn = m(x, case[2] == "LSTM" and { h0, c0 } or h0)
    local cn
    if case[2] == "LSTM" then hn, cn = hn[1], hn[2] end
    for n = 0, 1 do
      local wo, wh, wc = ref_seq(case[2], m, row(x, n), row(h0, n), case[2] == "LSTM" and row(c0, n) or nil)
      T.near(row(out, n), wo, 1e-12, case[2] .. " output, row " .. n)
      T.near(row(hn, n), wh, 1e-12, case[2] .. " h_n, row " .. n)
      if cn then T.near(row(cn, n), wc, 1e-12, "LSTM c_n, row " .. n) end
    end
  end
end)

T.test("shapes: batch_first, unbatched, zero state, cells", function()
  torch.manual_seed(32)
  local lstm = nn.LSTM(3, 4, { batch_first = true })
  local x = torch.randn(2, 5, 3)
  local out, hc = lstm(x)
  T.eq(out:size(), torch.Size({ 2, 5, 4 }), "batch_first output")
  T.eq(hc[1]:size(), torch.Size({ 1, 2, 4 }), "h_n")
  local one = lstm(x[1])
  T.near(one:tolist(), out[1]:tolist(), 1e-6, "an unbatched sequence equals its batch row")
  local z = torch.zeros(1, 2, 4)
  T.near(lstm(x, { z, z }):tolist(), out:tolist(), 0, "no state is a zero state")
  local cell = nn.LSTMCell(3, 4)
  cell.weight_ih.data:copy_(lstm.weight_ih_l0.data); cell.weight_hh.data:copy_(lstm.weight_hh_l0.data)
  cell.bias_ih.data:copy_(lstm.bias_ih_l0.data); cell.bias_hh.data:copy_(lstm.bias_hh_l0.data)
  local h, c = cell(x:select(1, 0))
  T.near(h:tolist(), out:select(1, 0):tolist(), 1e-6, "LSTMCell: the first step")
  local h2 = cell(x:select(1, 1), { h, c })
  T.near(h2:tolist(), out:select(1, 1):tolist(), 1e-6, "LSTMCell: the second step")
  local g = nn.GRUCell(3, 4, { bias = false })
  T.check(g.bias_ih == nil and #g:parameters() == 2, "a cell without bias")
  T.eq(g(torch.randn(3)):size(), torch.Size({ 4 }), "an unbatched cell step")
  local stdv = 1 / math.sqrt(4)
  for _, p in ipairs(lstm:parameters()) do
    T.check(p:abs():max():item() <= stdv, "initialised within 1/sqrt(hidden_size)")
  end
end)

T.test("gradients through the recurrence", function()
  torch.manual_seed(33)
  for _, cls in ipairs({ nn.LSTM, nn.GRU }) do
    local m = cls(2, 3, { dtype = torch.float64 })
    gradcheck(m:_get_name(), function(x, h0)
      local out = m(x, cls == nn.LSTM and { h0, h0 * 0.5 } or h0)
      return out
    end, { torch.randn(3, 2, 2, f64), torch.randn(1, 2, 3, f64) })
  end
  local m = nn.GRU(2, 3)
  local out, h = m(torch.randn(4, 1, 2))
  ;(out:sum() + h:sum()):backward()
  for _, np in ipairs(m:named_parameters()) do T.check(np[2].grad ~= nil, np[1] .. " has a gradient") end
end)

T.test("mistakes are errors that name them", function()
  local m = nn.LSTM(3, 4)
  T.raises(function() m(torch.randn(5, 2, 6)) end, "input.size(-1) must be equal to input_size. Expected 3, got 6")
  T.raises(function() m(torch.randn(5, 2, 3), { torch.zeros(1, 3, 4), torch.zeros(1, 2, 4) }) end,
    "Expected hidden[0] size torch.Size([1, 2, 4]), got torch.Size([1, 3, 4])")
  T.raises(function() m(torch.randn(5, 2, 3), torch.zeros(1, 2, 4)) end, "LSTM: hx must be a table {h_0, c_0} of tensors")
  T.raises(function() nn.RNN(3, 4, { nonlinearity = "sigmoid" }) end, "Unknown nonlinearity 'sigmoid'. Select from 'tanh' or 'relu'.")
  T.raises(function() nn.LSTM(3, 4, { proj_size = 2 }) end, "LSTM: proj_size is not supported")
  T.raises(function() nn.GRU(3, 4, { nonlinearity = "relu" }) end, "~unknown keyword 'nonlinearity'")
end)

T.test("packed sequences: each sequence as if run alone", function()
  torch.manual_seed(34)
  local R = nn.utils.rnn
  local seqs = { torch.randn(5, 3, f64), torch.randn(2, 3, f64), torch.randn(4, 3, f64) }
  local padded = R.pad_sequence(seqs, { batch_first = true, padding_value = -9 })
  T.eq(padded:size(), torch.Size({ 3, 5, 3 }), "pad_sequence")
  T.eq(padded[1][3]:tolist(), { -9.0, -9.0, -9.0 }, "padding value")
  T.eq(R.pad_sequence({ torch.ones(1), torch.ones(2) }, { padding_side = "left" }):tolist(), { { 0.0, 1.0 }, { 1.0, 1.0 } }, "left padding")
  local p = R.pack_padded_sequence(padded, { 5, 2, 4 }, { batch_first = true, enforce_sorted = false })
  T.eq(p.batch_sizes:tolist(), { 3, 3, 2, 2, 1 }, "batch_sizes")
  T.eq(p.sorted_indices:tolist(), { 0, 2, 1 }, "sorted_indices")
  T.eq(p.data:size(), torch.Size({ 11, 3 }), "data holds the valid steps only")
  T.near(p.data[3]:tolist(), seqs[1][1]:tolist(), 0, "data is time-major in sorted order")
  for _, cls in ipairs({ nn.LSTM, nn.GRU }) do
    local m = cls(3, 4, { batch_first = true, bidirectional = true, dtype = torch.float64 })
    local out, h = m(p)
    local o, lens = R.pad_packed_sequence(out, { batch_first = true })
    T.eq(lens:tolist(), { 5, 2, 4 }, "lengths back")
    if cls == nn.LSTM then h = h[1] end
    for i, s in ipairs(seqs) do
      local alone, ha = m(s:unsqueeze(0))
      if cls == nn.LSTM then ha = ha[1] end
      local n = s:size(0)
      T.near(o[i - 1]:narrow(0, 0, n):tolist(), alone[0]:tolist(), 1e-12, m:_get_name() .. " output, sequence " .. i)
      if n < 5 then T.eq(o[i - 1]:narrow(0, n, 5 - n):abs():max():item(), 0.0, "zeros past the end") end
      T.near(h:select(1, i - 1):tolist(), ha:select(1, 0):tolist(), 1e-12, m:_get_name() .. " h_n, sequence " .. i)
    end
  end
  local sorted = R.pack_sequence({ torch.ones(3, 2), torch.ones(1, 2) })
  T.check(sorted.sorted_indices == nil, "enforce_sorted: no indices")
  T.raises(function() R.pack_sequence({ torch.ones(1, 2), torch.ones(3, 2) }) end, "~must be sorted in decreasing order")
  local total = R.pad_packed_sequence(sorted, { total_length = 6 })
  T.eq(total:size(), torch.Size({ 6, 2, 2 }), "total_length")
end)
