-- torch.einsum against a plain Lua evaluator that loops over every assignment of the letters
-- (float64, small sizes); gradients by central differences; movedim.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local f64 = { dtype = torch.float64 }

-- value of einsum(eq, ...) with an explicit "->"; operands as nested lists with their shapes
local function naive(eq, ops)
  local lhs, rhs = eq:match("^(.-)%->(.*)$")
  local terms = {}
  for t in (lhs .. ","):gmatch("([^,]*),") do terms[#terms + 1] = t end
  local size, letters = {}, {}
  for i, t in ipairs(terms) do
    local shape = ops[i]:size()
    for k = 1, #t do
      local l = t:sub(k, k)
      if not size[l] then letters[#letters + 1] = l end
      size[l] = shape[k - 1]
    end
  end
  local lists = {}
  for i, x in ipairs(ops) do lists[i] = x:tolist() end
  local function at(list, t, val)
    local v = list
    for k = 1, #t do v = v[val[t:sub(k, k)] + 1] end
    return v
  end
  local out = {}
  local val = {}
  local function put(v)
    if #rhs == 0 then out[1] = (out[1] or 0) + v; return end
    local node = out
    for k = 1, #rhs do
      local i = val[rhs:sub(k, k)] + 1
      if k == #rhs then node[i] = (node[i] or 0) + v
      else node[i] = node[i] or {}; node = node[i] end
    end
  end
  local function loop(n)
    if n > #letters then
      local p = 1
      for i, t in ipairs(terms) do p = p * at(lists[i], t, val) end
      put(p)
      return
    end
    for i = 0, size[letters[n]] - 1 do val[letters[n]] = i; loop(n + 1) end
  end
  loop(1)
  return #rhs == 0 and out[1] or out
end

T.test("einsum against the loops", function()
  torch.manual_seed(81)
  local r = function(...)
    local shape = { ... }
    shape[#shape + 1] = f64
    return torch.randn(table.unpack(shape))
  end
  local cases = {
    { "ij,jk->ik", { r(3, 4), r(4, 5) } }, { "bij,bjk->bik", { r(2, 3, 4), r(2, 4, 2) } },
    { "bhqd,bhkd->bhqk", { r(2, 2, 3, 4), r(2, 2, 5, 4) } }, { "i,j->ij", { r(3), r(4) } }, { "i,i->", { r(5), r(5) } },
    { "ij->ji", { r(3, 4) } }, { "ii->i", { r(4, 4) } }, { "ii->", { r(4, 4) } }, { "ij->", { r(3, 4) } },
    { "ijk->kij", { r(2, 3, 4) } }, { "ij,jk,kl->il", { r(2, 3), r(3, 4), r(4, 2) } }, { "bi,bi->b", { r(3, 5), r(3, 5) } },
    { "ij,kj->ik", { r(3, 4), r(2, 4) } }, { "abc,cd->abd", { r(2, 3, 4), r(4, 2) } }, { "ij,ij->ij", { r(3, 4), r(3, 4) } },
    { "iij,jk->ik", { r(3, 3, 2), r(2, 4) } }, { "ij,k->ijk", { r(2, 3), r(2) } },
  }
  for _, c in ipairs(cases) do
    local got = torch.einsum(c[1], table.unpack(c[2]))
    local want = naive(c[1], c[2])
    T.near(type(want) == "table" and got:tolist() or got:item(), want, 1e-12, c[1])
  end
  local a, b = r(2, 3, 4), r(2, 4, 5)
  T.near(torch.einsum("...ij,...jk->...ik", a, b):tolist(), a:bmm(b):tolist(), 1e-12, "ellipsis")
  T.near(torch.einsum("bij,bjk", { a, b }):tolist(), a:bmm(b):sum(0):tolist(), 1e-12, "implicit output (b used twice: summed), operands as a list")
  local m = r(3, 3)
  T.near(torch.einsum("ii", m):item(), m:diagonal():sum():item(), 1e-12, "implicit trace")
  T.near(torch.einsum("ji", m):tolist(), m:t():tolist(), 0, "implicit output sorted: a transpose")
  T.near(torch.einsum("i j , j k -> i k", r(2, 2):fill_(1), r(2, 2):fill_(2)):tolist(), { { 4.0, 4.0 }, { 4.0, 4.0 } }, 0, "spaces")
  local x1 = r(1, 4)
  T.near(torch.einsum("ij,kj->ik", x1, r(3, 4):fill_(1)):tolist(), naive("ij,kj->ik", { x1, r(3, 4):fill_(1) }), 1e-12, "broadcast-free check")
  gradcheck("einsum bij,bjk", function(u, v) return torch.einsum("bij,bjk->bik", u, v) end, { r(2, 2, 3), r(2, 3, 2) })
  gradcheck("einsum ii,i->i", function(u, v) return torch.einsum("ii,i->i", u, v) end, { r(3, 3), r(3) })
  T.raises(function() torch.einsum("ij,jk->ik", r(2, 3)) end, "~more operands")
  T.raises(function() torch.einsum("ijk,jk->ik", r(2, 3), r(3, 2)) end, "~does not match the number of dimensions")
  T.raises(function() torch.einsum("ij->iz", r(2, 3)) end, "~output subscript z does not appear")
end)

T.test("movedim", function()
  local x = torch.randn(2, 3, 4, 5)
  T.eq(x:movedim(1, 3):size(), torch.Size({ 2, 4, 5, 3 }), "one dim")
  T.eq(torch.movedim(x, { 0, 1 }, { -1, -2 }):size(), torch.Size({ 4, 5, 3, 2 }), "two dims")
  T.eq(x:moveaxis(-1, 0):size(), torch.Size({ 5, 2, 3, 4 }), "moveaxis")
  T.near(x:movedim(1, 3):permute(0, 3, 1, 2):tolist(), x:tolist(), 0, "values follow")
  T.raises(function() x:movedim({ 0, 1 }, { 2 }) end, "~should contain the same number of dims")
end)
