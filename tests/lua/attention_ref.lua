-- Attention worked out with plain Lua arithmetic on lists of rows, for the attention and
-- transformer tests: R.naive (one head), R.mha (nn.MultiheadAttention from its parameters),
-- R.affine, R.layer_norm.
local R = {}

-- softmax(scale * q k^T, masked) v for lists of rows; allow(i, j) false: not attended; add(i, j): added to the score
function R.naive(q, k, v, scale, allow, add)
  local out, weights = {}, {}
  for i = 1, #q do
    local s, m = {}, -math.huge
    for j = 1, #k do
      local d = 0
      for e = 1, #q[i] do d = d + q[i][e] * k[j][e] end
      s[j] = d * scale + (add and add(i, j) or 0)
      if allow and not allow(i, j) then s[j] = -math.huge end
      if s[j] > m then m = s[j] end
    end
    local z = 0
    for j = 1, #k do s[j] = math.exp(s[j] - m); z = z + s[j] end
    out[i], weights[i] = {}, {}
    for j = 1, #k do weights[i][j] = s[j] / z end
    for c = 1, #v[1] do
      local acc = 0
      for j = 1, #k do acc = acc + weights[i][j] * v[j][c] end
      out[i][c] = acc
    end
  end
  return out, weights
end

-- rows of x (a list of lists) times W^T plus b
function R.affine(x, W, b)
  local out = {}
  for i = 1, #x do
    out[i] = {}
    for r = 1, #W do
      local acc = b and b[r] or 0
      for c = 1, #x[i] do acc = acc + x[i][c] * W[r][c] end
      out[i][r] = acc
    end
  end
  return out
end

-- plain-list matrices (lists of rows): the transpose, and the product a @ b
function R.transpose(a)
  local out = {}
  for j = 1, #a[1] do
    out[j] = {}
    for i = 1, #a do out[j][i] = a[i][j] end
  end
  return out
end

function R.matmul(a, b) return R.affine(a, R.transpose(b)) end

local function cols(x, from, n)
  local out = {}
  for i = 1, #x do
    out[i] = {}
    for c = 1, n do out[i][c] = x[i][from + c] end
  end
  return out
end

-- MultiheadAttention on one sequence (lists), from the module's parameters
function R.mha(mha, query, key, value, allow)
  local E, H = mha.embed_dim, mha.num_heads
  local hd = E // H
  local W, b = mha.in_proj_weight:tolist(), mha.in_proj_bias:tolist()
  local Q = R.affine(query, cols({ table.unpack(W, 1, E) }, 0, E), { table.unpack(b, 1, E) })
  local K = R.affine(key, { table.unpack(W, E + 1, 2 * E) }, { table.unpack(b, E + 1, 2 * E) })
  local V = R.affine(value, { table.unpack(W, 2 * E + 1, 3 * E) }, { table.unpack(b, 2 * E + 1, 3 * E) })
  local concat, avg = {}, {}
  for i = 1, #query do concat[i] = {} end
  for h = 0, H - 1 do
    local o, w = R.naive(cols(Q, h * hd, hd), cols(K, h * hd, hd), cols(V, h * hd, hd), 1 / math.sqrt(hd), allow)
    for i = 1, #query do
      for c = 1, hd do concat[i][h * hd + c] = o[i][c] end
      avg[i] = avg[i] or {}
      for j = 1, #key do avg[i][j] = (avg[i][j] or 0) + w[i][j] / H end
    end
  end
  return R.affine(concat, mha.out_proj.weight:tolist(), mha.out_proj.bias:tolist()), avg
end


-- each row normalised over its entries, then times w plus b
function R.layer_norm(x, w, b, eps)
  local out = {}
  for i = 1, #x do
    local n, mean, var = #x[i], 0, 0
    for _, v in ipairs(x[i]) do mean = mean + v / n end
    for _, v in ipairs(x[i]) do var = var + (v - mean) ^ 2 / n end
    out[i] = {}
    for c, v in ipairs(x[i]) do out[i][c] = (v - mean) / math.sqrt(var + eps) * w[c] + b[c] end
  end
  return out
end

return R
