-- torch.einsum(equation, operands...): Einstein summation, as PyTorch's: an explicit
-- output ("ij,jk->ik") or the implicit one (the letters used once, sorted), "..." for
-- broadcast dims, operands as arguments or as one list. Operands are contracted left to
-- right, two at a time, as one batched matrix product each: the letters both keep and the
-- output needs are the batch, those only one has stay on its side, and those both have but
-- nothing later needs are summed by the product. A letter repeated in one operand takes its
-- diagonal.
local torch = require "torch"
local U = require "nn_util"

local function letters_of(s)
  local t = {}
  for ch in s:gmatch(".") do t[#t + 1] = ch end
  return t
end

-- term (a list of letters, "." standing for the ellipsis dims) for a tensor: the ellipsis
-- expanded to capital-free placeholder names "\1", "\2", ... (right-aligned as PyTorch's)
local function expand(term, t, nell)
  local out, named = {}, 0
  for _, l in ipairs(term) do if l ~= "." then named = named + 1 end end
  local has = false
  for _, l in ipairs(term) do has = has or l == "." end
  local own = t:dim() - named
  if (has and own < 0) or (not has and own ~= 0) then
    U.errorf("einsum(): the number of subscripts in the equation (%d) does not match the number of dimensions (%d) for operand%s",
      named, t:dim(), has and " and no ellipsis was given" or "")
  end
  for _, l in ipairs(term) do
    if l == "." then
      for k = nell - own + 1, nell do out[#out + 1] = string.char(k) end
    else
      out[#out + 1] = l
    end
  end
  return out
end

-- x with its repeated letters reduced to their diagonal; returns x and its letters, each once
local function diagonals(x, term)
  local seen = {}
  local i = 1
  while i <= #term do
    local l = term[i]
    local first = seen[l]
    if first then
      x = x:diagonal(0, first - 1, i - 1):movedim(-1, first - 1)
      table.remove(term, i)
    else
      seen[l] = i
      i = i + 1
    end
  end
  return x, term
end

-- letters of `term` in the order of `order`
local function pick(term, keep)
  local out = {}
  for _, l in ipairs(term) do if keep[l] then out[#out + 1] = l end end
  return out
end

local function set_of(list)
  local s = {}
  for _, l in ipairs(list) do s[l] = true end
  return s
end

local function size_of(x, term, l)
  for i, m in ipairs(term) do if m == l then return x:size(i - 1) end end
  return 1
end

-- a permuted to the order of letters `to` (each letter of `from` appears in `to`)
local function arrange(x, from, to)
  local pos = {}
  for i, l in ipairs(from) do pos[l] = i - 1 end
  local perm = {}
  for _, l in ipairs(to) do perm[#perm + 1] = pos[l] end
  return #perm > 0 and x:permute(perm) or x
end

-- sum out the letters of term that `needed` does not hold
local function sum_unneeded(x, term, needed)
  local dims, keep = {}, {}
  for i, l in ipairs(term) do
    if needed[l] then keep[#keep + 1] = l else dims[#dims + 1] = i - 1 end
  end
  if #dims > 0 then x = x:sum(dims) end
  return x, keep
end

local function concat(...)
  local o = {}
  for _, list in ipairs({ ... }) do for _, l in ipairs(list) do o[#o + 1] = l end end
  return o
end

local function product(n, list)
  local p = 1
  for _, l in ipairs(list) do p = p * n(l) end
  return p
end

-- a (letters ta) times b (letters tb), keeping the letters in `needed`
local function contract(a, ta, b, tb, needed)
  local in_b = set_of(tb)
  local in_a = set_of(ta)
  local batch, sum, left, right = {}, {}, {}, {}
  for _, l in ipairs(ta) do
    if in_b[l] then
      if needed[l] then batch[#batch + 1] = l else sum[#sum + 1] = l end
    else
      left[#left + 1] = l
    end
  end
  for _, l in ipairs(tb) do if not in_a[l] then right[#right + 1] = l end end
  local sizes = {}
  for _, l in ipairs(ta) do sizes[l] = size_of(a, ta, l) end
  for _, l in ipairs(tb) do
    local n = size_of(b, tb, l)
    if sizes[l] and sizes[l] ~= n and sizes[l] ~= 1 and n ~= 1 then
      U.errorf("einsum(): operands do not broadcast with remapped shapes (original->remapped): subscript %s has sizes %d and %d",
        l:byte() < 32 and "..." or l, sizes[l], n)
    end
    sizes[l] = math.max(sizes[l] or 1, n)
  end
  local function n(l) return sizes[l] end
  local function expanded(x, term, order)
    local shape = {}
    for _, l in ipairs(order) do shape[#shape + 1] = n(l) end
    return arrange(x, term, order):expand(shape)
  end
  local A = expanded(a, ta, concat(batch, left, sum))
  local B = expanded(b, tb, concat(batch, sum, right))
  local nb, nl, ns, nr = product(n, batch), product(n, left), product(n, sum), product(n, right)
  local out = A:reshape(nb, nl, ns):bmm(B:reshape(nb, ns, nr))
  local term = concat(batch, left, right)
  local shape = {}
  for _, l in ipairs(term) do shape[#shape + 1] = n(l) end
  return out:reshape(shape), term
end

function torch.einsum(equation, ...)
  if type(equation) ~= "string" then U.error("einsum(): the equation must be a string") end
  local ops = table.pack(...)
  if ops.n == 1 and type(ops[1]) == "table" and not torch.is_tensor(ops[1]) then ops = table.pack(table.unpack(ops[1])) end
  for i = 1, ops.n do
    if not torch.is_tensor(ops[i]) then U.errorf("einsum(): operand %d must be a Tensor, got %s", i - 1, U.typename(ops[i])) end
  end
  local eq = equation:gsub("%s", ""):gsub("%.%.%.", ".")
  local lhs, rhs = eq:match("^(.-)%->(.*)$")
  if not lhs then lhs = eq end
  local terms = {}
  for t in (lhs .. ","):gmatch("([^,]*),") do terms[#terms + 1] = letters_of(t) end
  if #terms ~= ops.n then
    U.errorf("einsum(): more operands were provided than specified in the equation")
  end
  for _, t in ipairs(terms) do
    for _, l in ipairs(t) do
      if l ~= "." and not l:match("%a") then U.errorf("einsum(): invalid subscript given at index %d in the equation string, subscripts must be in [a-zA-Z]", 0) end
    end
  end
  local nell = 0
  for i, t in ipairs(terms) do
    local named = 0
    local has = false
    for _, l in ipairs(t) do if l == "." then has = true else named = named + 1 end end
    if has then nell = math.max(nell, ops[i]:dim() - named) end
  end
  local xs, count = {}, {}
  for i, t in ipairs(terms) do
    terms[i] = expand(t, ops[i], nell)
    for _, l in ipairs(terms[i]) do count[l] = (count[l] or 0) + 1 end -- a repeated letter is summed unless named
    xs[i], terms[i] = diagonals(ops[i], terms[i])
  end
  local out
  if rhs then
    out = {}
    for _, l in ipairs(letters_of(rhs)) do
      if l == "." then
        for k = 1, nell do out[#out + 1] = string.char(k) end
      else
        out[#out + 1] = l
      end
    end
  else -- implicit: the ellipsis dims, then the letters used once, in alphabetical order
    local once = {}
    for l, c in pairs(count) do if c == 1 and l:byte() >= 32 then once[#once + 1] = l end end
    table.sort(once)
    out = {}
    for k = 1, nell do if count[string.char(k)] then out[#out + 1] = string.char(k) end end
    for _, l in ipairs(once) do out[#out + 1] = l end
  end
  local want = set_of(out)
  for _, l in ipairs(out) do
    local found = false
    for _, t in ipairs(terms) do for _, m in ipairs(t) do found = found or m == l end end
    if not found then U.errorf("einsum(): output subscript %s does not appear in the equation for any input operand", l) end
  end
  -- operand i's letters that anything after it needs: the output's and every later operand's
  local function needed_after(i, also)
    local s = set_of(concat(out, also or {}))
    for j = i + 1, #terms do for _, l in ipairs(terms[j]) do s[l] = true end end
    return s
  end
  local acc, at = sum_unneeded(xs[1], terms[1], needed_after(1))
  for i = 2, #terms do
    local b, bt = sum_unneeded(xs[i], terms[i], needed_after(i, at))
    acc, at = contract(acc, at, b, bt, needed_after(i))
  end
  acc, at = sum_unneeded(acc, at, want)
  local shape = {}
  for _, l in ipairs(out) do shape[#shape + 1] = size_of(acc, at, l) end
  local res = arrange(acc, at, pick(out, set_of(at)))
  return res:reshape(shape)
end

return torch.einsum
