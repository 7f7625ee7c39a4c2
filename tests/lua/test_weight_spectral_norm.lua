-- nn.utils.weight_norm and spectral_norm: the weights they make against the definitions
-- worked out in plain Lua (row norms; the largest singular value by power iteration).
local T = ...
local f64 = { dtype = torch.float64 }

-- the largest singular value of a list-of-rows matrix, by power iteration on A^T A
local function sigma_max(a)
  local n = #a[1]
  local v = {}
  for j = 1, n do v[j] = 1 / math.sqrt(n) + j * 1e-3 end
  local s = 0
  for _ = 1, 500 do
    local av = {}
    for i = 1, #a do local t = 0 for j = 1, n do t = t + a[i][j] * v[j] end av[i] = t end
    local w, nrm = {}, 0
    for j = 1, n do local t = 0 for i = 1, #a do t = t + a[i][j] * av[i] end w[j] = t; nrm = nrm + t * t end
    nrm = math.sqrt(nrm)
    for j = 1, n do v[j] = w[j] / nrm end
    s = math.sqrt(nrm)
  end
  return s
end

T.test("weight_norm", function()
  torch.manual_seed(131)
  local m = nn.utils.weight_norm(nn.Linear(3, 4, { dtype = torch.float64 }))
  local keys = {}
  for k in pairs(m:state_dict()) do keys[#keys + 1] = k end
  T.eq(table.concat(keys, " "), "bias weight_g weight_v", "parameters")
  m.weight_g.data:copy_(torch.tensor({ { 1.0 }, { 2.0 }, { 0.5 }, { 3.0 } }))
  m(torch.zeros(1, 3, f64))
  local v, w = m.weight_v:tolist(), m.weight:tolist()
  local g = { 1.0, 2.0, 0.5, 3.0 }
  local ok = true
  for i = 1, 4 do
    local n = math.sqrt(v[i][1] ^ 2 + v[i][2] ^ 2 + v[i][3] ^ 2)
    for j = 1, 3 do ok = ok and math.abs(w[i][j] - g[i] * v[i][j] / n) < 1e-12 end
  end
  T.check(ok, "weight = g * v / ||v|| per output row")
  local x = torch.randn(5, 3, f64)
  m(x):sum():backward()
  T.check(m.weight_g.grad ~= nil and m.weight_v.grad ~= nil, "g and v get gradients")
  local before = m(x):detach()
  nn.utils.remove_weight_norm(m)
  keys = {}
  for k in pairs(m:state_dict()) do keys[#keys + 1] = k end
  T.eq(table.concat(keys, " "), "bias weight", "removed")
  T.near(m(x):tolist(), before:tolist(), 1e-12, "the same function after removal")
  T.raises(function() nn.utils.remove_weight_norm(m) end, "~weight_norm of 'weight' not found")
end)

T.test("spectral_norm", function()
  torch.manual_seed(132)
  local m = nn.utils.spectral_norm(nn.Linear(6, 4, { dtype = torch.float64 }))
  local keys = {}
  for k in pairs(m:state_dict()) do keys[#keys + 1] = k end
  T.eq(table.concat(keys, " "), "bias weight_orig weight_u weight_v", "parameters and buffers")
  for _ = 1, 50 do m(torch.randn(2, 6, f64)) end
  local w = m.weight:detach():tolist()
  T.near(sigma_max(w), 1.0, 1e-6, "the normalised weight's largest singular value is 1")
  T.near(sigma_max(m.weight_orig:detach():tolist()) * m.weight[0][0]:item(), m.weight_orig[0][0]:item(), 1e-6,
    "weight = weight_orig / sigma")
  m:eval()
  local u = m.weight_u:clone()
  m(torch.randn(2, 6, f64))
  T.near(m.weight_u:tolist(), u:tolist(), 0, "no power iteration in eval")
  local t = nn.utils.spectral_norm(nn.ConvTranspose2d(3, 5, 2, { dtype = torch.float64 }))
  T.eq(t.weight_u:size(), torch.Size({ 5 }), "ConvTranspose2d: normalised along dim 1")
  nn.utils.remove_spectral_norm(m)
  T.check(nn.is_parameter(m.weight) and m.weight_orig == nil, "removed")
end)
