-- Python subscripts as strings (x[":, 1:3"], x["..., 0"], x["None, ::2"]), tensor and list
-- keys (x[idx], x[mask]) and assignment through each, against a plain reference written
-- here: nested Lua lists walked element by element with Python's rules for integers,
-- slices (clamped), `...` and None.
local T = ...

-- ---- the reference ----

-- Python's range of a slice over a dim of the given size (step > 0): 0-based positions.
local function slice_positions(size, start, stop, step)
  local function clamp(v, default)
    if v == nil then return default end
    if v < 0 then v = math.max(v + size, 0) end
    return math.min(v, size)
  end
  local out, i, b = {}, clamp(start, 0), clamp(stop, size)
  while i < b do out[#out + 1] = i; i = i + (step or 1) end
  return out
end

-- items: {"int", v}, {"slice", start, stop, step} (nil: omitted), {"none"}, {"ell"}.
-- Returns the result's shape and, in its row-major order, the source coordinates (0-based
-- lists); or nil and PyTorch's message.
local function ref_index(shape, items)
  local nd, nspec, nell = #shape, 0, 0
  for _, it in ipairs(items) do
    if it[1] == "int" or it[1] == "slice" then nspec = nspec + 1 elseif it[1] == "ell" then nell = nell + 1 end
  end
  if nell > 1 then return nil, "an index can only have a single ellipsis ('...')" end
  if nspec > nd then return nil, "too many indices for tensor of dimension " .. nd end
  local fixed, axes, d = {}, {}, 0
  for pos, it in ipairs(items) do
    if it[1] == "ell" then
      for _ = 1, nd - nspec do axes[#axes + 1] = {dim = d, idx = slice_positions(shape[d + 1])}; d = d + 1 end
    elseif it[1] == "none" then
      axes[#axes + 1] = {idx = {0}}
    elseif it[1] == "int" then
      local size, v = shape[d + 1], it[2]
      if v < -size or v >= size then
        return nil, string.format("index %d is out of bounds for dimension %d with size %d", v, pos - 1, size)
      end
      fixed[d] = v < 0 and v + size or v
      d = d + 1
    else
      axes[#axes + 1] = {dim = d, idx = slice_positions(shape[d + 1], it[2], it[3], it[4])}
      d = d + 1
    end
  end
  while d < nd do axes[#axes + 1] = {dim = d, idx = slice_positions(shape[d + 1])}; d = d + 1 end
  local out_shape, coords, cur = {}, {}, {}
  for i, a in ipairs(axes) do out_shape[i] = #a.idx end
  local function walk(k)
    if k > #axes then
      local c = {}
      for i = 0, nd - 1 do c[i + 1] = cur[i] or fixed[i] end
      coords[#coords + 1] = c
      return
    end
    for _, p in ipairs(axes[k].idx) do
      if axes[k].dim then cur[axes[k].dim] = p end
      walk(k + 1)
    end
  end
  walk(1)
  return out_shape, coords
end

-- Element c (0-based coordinates) of a nested list, and setting it.
local function get(list, c)
  for i = 1, #c do list = list[c[i] + 1] end
  return list
end
local function set(list, c, v)
  for i = 1, #c - 1 do list = list[c[i] + 1] end
  if #c == 0 then return v end
  list[c[#c] + 1] = v
  return nil
end

-- A nested list of the given shape from a flat list, row-major (0 dims: the number).
local function nest(shape, flat)
  local k = 0
  local function build(d)
    if d > #shape then k = k + 1; return flat[k] end
    local out = {}
    for i = 1, shape[d] do out[i] = build(d + 1) end
    return out
  end
  return build(1)
end

local function item_string(it)
  if it[1] == "int" then return tostring(it[2]) end
  if it[1] == "none" then return "None" end
  if it[1] == "ell" then return "..." end
  local function part(v) return v and tostring(v) or (math.random() < 0.2 and "None" or "") end
  local s = part(it[2]) .. ":" .. part(it[3])
  if it[4] then s = s .. ":" .. it[4] elseif math.random() < 0.2 then s = s .. ":" end
  return s
end

local function shape_of(t) return t.shape:totable() end

-- A float64 tensor with distinct values; transposed (non-contiguous) when asked.
local function make(shape, transposed)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local x = torch.arange(n):double()
  if not transposed or #shape < 2 then return x:view(table.unpack(shape)) end
  local rev = {}
  for i = #shape, 1, -1 do rev[#rev + 1] = shape[i] end
  local perm = {}
  for i = #shape - 1, 0, -1 do perm[#perm + 1] = i end
  return x:view(table.unpack(rev)):permute(table.unpack(perm))
end

-- ---- random subscripts against the reference ----

T.test("random subscripts: read, write through the view, assign", function()
  math.randomseed(7)
  local cases, errors = 0, 0
  for case = 1, 2000 do
    local nd = math.random(1, 4)
    local shape = {}
    for d = 1, nd do shape[d] = math.random(1, 5) end
    local x = make(shape, case % 2 == 0)
    local items, nones, ell = {}, 0, false
    for _ = 1, math.random(1, nd + 2) do
      local r = math.random()
      if r < 0.15 and (not ell or math.random() < 0.1) then items[#items + 1] = {"ell"}; ell = true
      elseif r < 0.3 and nones < 2 then items[#items + 1] = {"none"}; nones = nones + 1
      elseif r < 0.55 then items[#items + 1] = {"int", math.random(-6, 5)}
      else
        local function bound() if math.random() < 0.3 then return nil end return math.random(-6, 6) end
        items[#items + 1] = {"slice", bound(), bound(), math.random() < 0.5 and math.random(1, 3) or nil}
      end
    end
    local parts = {}
    for i, it in ipairs(items) do parts[i] = item_string(it) end
    local s = table.concat(parts, math.random() < 0.5 and ", " or ",")
    if math.random() < 0.2 then s = s .. "," end
    local where = string.format("x%s[%q]", T.show(shape), s)
    local out_shape, coords = ref_index(shape, items)
    if not out_shape then
      errors = errors + 1
      T.raises(function() return x[s] end, coords, where)
      T.raises(function() x[s] = 0 end, coords, where .. " = 0")
    else
      cases = cases + 1
      local xl = x:tolist()
      local r = x[s]
      local want = {}
      for k, c in ipairs(coords) do want[k] = get(xl, c) end
      T.eq(shape_of(r), out_shape, where .. " shape")
      T.eq(r:tolist(), nest(out_shape, want), where .. " values")
      -- the result is a view: writing into it writes into x
      local y = x:clone()
      local expect = y:tolist()
      for _, c in ipairs(coords) do expect = set(expect, c, -1.0) or expect end
      y[s]:fill_(-1)
      T.eq(y:tolist(), expect, where .. ":fill_(-1) through the view")
      local z = x:clone()
      z[s] = -1
      T.eq(z:tolist(), expect, where .. " = -1")
      -- assigning a tensor of the result's shape puts its elements in row-major order
      local n = #coords
      local vals = torch.arange(n):double():neg():sub(100)
      if #out_shape > 0 then vals = vals:view(table.unpack(out_shape)) else vals = vals:view({}) end
      local w = make(shape, case % 2 == 0):clone()
      local expect2 = w:tolist()
      for k, c in ipairs(coords) do expect2 = set(expect2, c, -100.0 - (k - 1)) or expect2 end
      w[s] = vals
      T.eq(w:tolist(), expect2, where .. " = tensor")
    end
  end
  T.check(cases > 500 and errors > 100, string.format("both kinds covered (%d cases, %d errors)", cases, errors))
end)

-- ---- the forms of the brief, by hand ----

local function grid() -- x[i][j] = 10 i + j, 3 x 4
  local rows = {}
  for i = 0, 2 do
    rows[i + 1] = {}
    for j = 0, 3 do rows[i + 1][j + 1] = 10.0 * i + j end
  end
  return torch.tensor(rows), rows
end

T.test("basic forms", function()
  local x, rows = grid()
  T.eq(x[":, 1:3"]:tolist(), {{1.0, 2.0}, {11.0, 12.0}, {21.0, 22.0}}, ":, 1:3")
  T.eq(x["..., 0"]:tolist(), {0.0, 10.0, 20.0}, "..., 0")
  T.eq(x["None, :, -1"]:tolist(), {{3.0, 13.0, 23.0}}, "None, :, -1")
  T.eq(x["::2"]:tolist(), {rows[1], rows[3]}, "::2")
  T.eq(x["1:-1, ::3"]:tolist(), {{10.0, 13.0}}, "1:-1, ::3")
  T.eq(x["0, 1"]:item(), 1.0, "0, 1")
  T.eq(x["0, 1"]:dim(), 0, "two integers give a 0-dim tensor")
  T.eq(x[":"]:tolist(), rows, ":")
  T.eq(x["-1"]:tolist(), rows[3], "a negative integer literal")
  T.eq(x["0,"]:tolist(), rows[1], "a trailing comma")
  T.eq(x[" 1 : 3 , - 1 "]:tolist(), {13.0, 23.0}, "spaces and a spaced sign")
  T.eq(x["None:None:None, 1_0:"]:tolist(), {{}, {}, {}}, "None bounds and 1_0")
  T.eq(x["-100:100"]:tolist(), rows, "bounds clamp")
  T.eq(shape_of(x["2:1"]), {0, 4}, "an empty slice")
  T.eq(shape_of(x[":, 4:"]), {3, 0}, "an empty slice on dim 1")
  T.eq(shape_of(x["5:, 1"]), {0}, "empty then select")
  T.eq(x["1::2, 1::2"]:tolist(), {{11.0, 13.0}}, "start with a step")
  T.eq(x["0:2, :"]:tolist(), {rows[1], rows[2]}, "a slice from 0 short of the end, then a full one")
  T.eq(x[":, 0:3"]:tolist(), {{0.0, 1.0, 2.0}, {10.0, 11.0, 12.0}, {20.0, 21.0, 22.0}}, "0:3 of 4 in a tuple")
  T.eq(shape_of(x["None, None"]), {1, 1, 3, 4}, "two new axes")
  T.eq(shape_of(x["..., None"]), {3, 4, 1}, "..., None")
  T.eq(shape_of(x["None, ..."]), {1, 3, 4}, "None, ...")
  T.eq(shape_of(x["Ellipsis, 1"]), {3}, "Ellipsis spelled out")
  local y = torch.arange(24):view(2, 3, 4)
  T.eq(y["0, ..., 1"]:tolist(), {1, 5, 9}, "ellipsis in the middle")
  T.eq(y["..., 1, 2"]:tolist(), {6, 18}, "ellipsis first")
  T.eq(y["1, 2, ..."]:tolist(), {20, 21, 22, 23}, "ellipsis last")
  T.eq(y["1, 2, 3, ..."]:item(), 23, "ellipsis standing for no dim")
  T.eq(y["..."]:tolist(), y:tolist(), "ellipsis alone")
  T.eq(y[":, None, 1, ::2"]:tolist(), {{{4, 6}}, {{16, 18}}}, "None between")
end)

T.test("results are views", function()
  local x = grid()
  local v = x[":, 1:3"]
  v:fill_(0)
  T.eq(x[0]:tolist(), {0.0, 0.0, 0.0, 3.0}, "writing the view writes x")
  local a = x["..."]
  T.check(rawequal(a, x) == false, "x[...] is a new tensor")
  a[0][0] = 42
  T.eq(x[0][0]:item(), 42.0, "x[...] shares storage")
  local n = x["None"]
  n[0][2][3] = -5
  T.eq(x[2][3]:item(), -5.0, "x[None] shares storage")
  T.eq(x[":, 1"]:stride(), {4}, "strides of a column")
  T.eq(x["::2, 1::2"]:stride(), {8, 2}, "strides with steps")
end)

T.test("0-dim tensors", function()
  local s = torch.tensor(5.0)
  T.eq(s["..."]:item(), 5.0, "s[...]")
  T.eq(s["..."]:dim(), 0, "s[...] stays 0-dim")
  T.eq(shape_of(s["None"]), {1}, "s[None]")
  T.eq(shape_of(s["..., None"]), {1}, "s[..., None]")
  T.eq(shape_of(s["None, None"]), {1, 1}, "s[None, None]")
  T.raises(function() return s["0"] end,
    "invalid index of a 0-dim tensor. Use `tensor:item()` to convert a 0-dim tensor to a number", "s[0]")
  T.raises(function() return s["0,"] end, "too many indices for tensor of dimension 0", "s[0,]")
  T.raises(function() return s[":"] end, "slice() cannot be applied to a 0-dim tensor.", "s[:]")
  s["..."] = 7
  T.eq(s:item(), 7.0, "s[...] = 7")
  s["None"] = torch.tensor({8})
  T.eq(s:item(), 8.0, "s[None] = tensor([8])")
end)

T.test("errors", function()
  local x = grid()
  T.raises(function() return x["5"] end, "index 5 is out of bounds for dimension 0 with size 3")
  T.raises(function() return x["-4"] end, "index -4 is out of bounds for dimension 0 with size 3")
  T.raises(function() return x[":, 4"] end, "index 4 is out of bounds for dimension 1 with size 4")
  T.raises(function() return x["None, 0, 9"] end, "index 9 is out of bounds for dimension 2 with size 4",
    "the dimension counts the subscript's items, as PyTorch's does")
  T.raises(function() return x["0, 0, 0"] end, "too many indices for tensor of dimension 2")
  T.raises(function() return x["::-1"] end, "step must be greater than zero")
  T.raises(function() return x[":, ::-2"] end, "step must be greater than zero")
  T.raises(function() return x["::0"] end, "slice step cannot be zero")
  T.raises(function() return x["..., ..."] end, "an index can only have a single ellipsis ('...')")
  T.raises(function() x["5"] = 1 end, "index 5 is out of bounds for dimension 0 with size 3", "assignment")
  -- malformed subscripts raise; other strings are missing methods (nil)
  for _, bad in ipairs({"1:2:3:4", "0,,1", ",", ",0", "a, b", "1.5:", "01", "1 2", "0x1", "--", "1__0", "[0]", "0:1 2"}) do
    T.raises(function() return x[bad] end, "~invalid tensor subscript \"" .. bad .. "\"", bad)
  end
  T.raises(function() x["1:2:3:4"] = 0 end, "~invalid tensor subscript", "malformed assignment")
  T.raises(function() return x["True"] end, "invalid tensor subscript \"True\": True and False indices are not supported")
  T.eq(x.foo, nil, "an unknown field is nil")
  T.eq(x["not_a_method"], nil, "an unknown name is nil")
  T.eq(x[""], nil, "an empty string is nil")
  T.eq(x.Nonesuch, nil, "a name that starts like None is nil")
  T.eq(x:sum():item(), 138.0, "methods still work")
  T.raises(function() x.numel = 1 end, "cannot set field 'numel' of a tensor")
  x.foo = 1 -- a Python-style attribute of this tensor value
  T.eq(x.foo, 1, "x.foo = 1 sets an attribute")
  T.raises(function() x[":, 0"] = "a" end, "cannot assign a string to a tensor element (tensor or number expected)")
  T.raises(function() return x[0.5] end, "tensors are indexed by integers (0-based), got number")
  T.raises(function() return x[print] end, "tensors are indexed by integers (0-based), got function")
  local e = torch.zeros(2, 2, 2, 2, 2, 2, 2, 2)
  T.raises(function() return e["None"] end, "~at most 8 dimensions", "past the dimension limit")
  T.raises(function() return e[torch.tensor(true)] end, "~not supported", "a 0-dim mask past the dimension limit")
  T.raises(function() e[torch.tensor(true)] = 1 end, "~not supported", "a 0-dim mask assignment past the limit")
end)

T.test("assignment", function()
  local x = torch.zeros(3, 4)
  x[":, 0"] = 5
  x["1:, 1:3"] = torch.tensor({1, 2}) -- broadcast over rows, int64 cast to float
  x["0"] = torch.tensor({{9, 8, 7, 6}}) -- a leading size-1 dim is dropped, as PyTorch's setitem does
  x["2, -1"] = torch.tensor(-3.5)
  T.eq(x:tolist(), {{9.0, 8.0, 7.0, 6.0}, {5.0, 1.0, 2.0, 0.0}, {5.0, 1.0, 2.0, -3.5}}, "values")
  x["..."] = 0
  T.eq(x:sum():item(), 0.0, "x[...] = 0")
  x["None, 1"] = torch.ones(1, 1, 4)
  T.eq(x[1]:tolist(), {1.0, 1.0, 1.0, 1.0}, "through a None")
  T.raises(function() x[":, 0"] = torch.ones(2) end, "~must match the existing size (2)", "shape mismatch")
  local i = torch.zeros(2, 3, {dtype = torch.int64})
  i[":, 1"] = 2.7
  T.eq(i:tolist(), {{0, 2, 0}, {0, 2, 0}}, "a float into an int64 tensor truncates")
  i["0"] = 9007199254740993
  T.eq(i[0][2]:item(), 9007199254740993, "int64 values are exact")
  local b = torch.zeros(3, {dtype = torch.bool})
  b["1:"] = true
  T.eq(b:tolist(), {false, true, true}, "booleans")
  -- integer keys work as before
  local y = torch.zeros(2, 2)
  y[0] = 1
  y[-1] = torch.tensor({2, 3})
  T.eq(y:tolist(), {{1.0, 1.0}, {2.0, 3.0}}, "x[i] = v")
end)

T.test("autograd through subscripts", function()
  local x = torch.randn(3, 4, {requires_grad = true})
  x[":, 1:3"]:sum():backward()
  T.eq(x.grad:tolist(), {{0.0, 1.0, 1.0, 0.0}, {0.0, 1.0, 1.0, 0.0}, {0.0, 1.0, 1.0, 0.0}}, "x[:, 1:3].sum()")
  local y = torch.randn(3, 4, {dtype = torch.float64, requires_grad = true})
  ;(y["::2, None, -1"]:squeeze(1) * torch.tensor({2.0, 3.0}, {dtype = torch.float64})):sum():backward()
  local g = y.grad:tolist()
  T.eq(g, {{0.0, 0.0, 0.0, 2.0}, {0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 3.0}}, "steps, None, negative index")
  local z = torch.randn(2, 3, {requires_grad = true})
  z["..."]:sum():backward()
  T.eq(z.grad:tolist(), {{1.0, 1.0, 1.0}, {1.0, 1.0, 1.0}}, "x[...]")
  T.eq(tostring(x[":, 1"].grad_fn):match("<(%w+)"), "SelectBackward0", "x[:, 1] is a select, the full slice skipped")

  -- assignment: an in-place copy on the view
  local leaf = torch.randn(3, 4, {requires_grad = true})
  T.raises(function() leaf[":, 0"] = 1 end, "~leaf Variable that requires grad", "assigning into a leaf that requires grad")
  local a = leaf * 1
  local v = torch.ones(3, {requires_grad = true})
  a[":, 0"] = 5
  a[":, 1"] = v * 2
  a:sum():backward()
  T.eq(leaf.grad:tolist(), {{0.0, 0.0, 1.0, 1.0}, {0.0, 0.0, 1.0, 1.0}, {0.0, 0.0, 1.0, 1.0}}, "overwritten entries get no gradient")
  T.eq(v.grad:tolist(), {2.0, 2.0, 2.0}, "the assigned value gets its gradient")
  -- the version counter moves: a saved tensor overwritten through a subscript is caught
  local c = leaf * 1
  local d = c * c
  c["0, 0"] = 3
  T.raises(function() d:sum():backward() end, "~modified by an inplace operation", "version counter")
end)

-- ---- tensor and list keys ----

T.test("integer tensor keys", function()
  local x, rows = grid()
  for _, dt in ipairs({torch.int64, torch.int32}) do
    local idx = torch.tensor({2, 0, -1, 0}, {dtype = dt})
    T.eq(x[idx]:tolist(), {rows[3], rows[1], rows[3], rows[1]}, "x[idx] " .. tostring(dt))
  end
  T.eq(x[{0, 2}]:tolist(), {rows[1], rows[3]}, "a Lua list of integers")
  T.eq(shape_of(x[torch.tensor({}, {dtype = torch.int64})]), {0, 4}, "an empty index")
  T.eq(shape_of(x[{}]), {0, 4}, "an empty list")
  local i2 = torch.tensor({{0, 1}, {2, 2}})
  local r = x[i2]
  T.eq(shape_of(r), {2, 2, 4}, "idx.shape + x.shape[1:]")
  T.eq(r:tolist(), {{rows[1], rows[2]}, {rows[3], rows[3]}}, "2-D index values")
  local one = torch.tensor({1, 2, 0})
  T.eq(torch.arange(5)[one]:tolist(), {1, 2, 0}, "1-D tensor")
  -- a copy, not a view
  local c = x[torch.tensor({0})]
  c:fill_(-1)
  T.eq(x[0][0]:item(), 0.0, "x[idx] is a copy")
  -- a 0-dim integer tensor indexes like an integer: a view
  local s = x[torch.tensor(1)]
  T.eq(s:tolist(), rows[2], "0-dim index")
  s:fill_(7)
  T.eq(x[1][0]:item(), 7.0, "0-dim index gives a view")
  T.raises(function() return x[torch.tensor({0, 3})] end, "index 3 is out of bounds for dimension 0 with size 3")
  T.raises(function() return x[torch.tensor({-4})] end, "index -4 is out of bounds for dimension 0 with size 3")
  T.raises(function() return x[torch.tensor(5)] end, "index 5 is out of bounds for dimension 0 with size 3")
  T.raises(function() return x[torch.tensor({0.0})] end, "tensors used as indices must be long, int, byte or bool tensors")
  T.raises(function() return torch.tensor(1.0)[torch.tensor({0})] end, "too many indices for tensor of dimension 0")
  T.raises(function() return x[{0, "a"}] end, "~must hold only integers or only booleans", "a bad list")
  -- gradient: repeated rows add up
  local w = torch.randn(3, 2, {requires_grad = true})
  w[torch.tensor({0, 2, 0})]:sum():backward()
  T.eq(w.grad:tolist(), {{2.0, 2.0}, {0.0, 0.0}, {1.0, 1.0}}, "gradient of x[idx]")
end)

-- The reference for masks: the elements (or rows) where the mask is true, row-major.
local function ref_mask(xl, ml, mdims)
  local out = {}
  local function walk(x, m, d)
    if d == mdims then
      if m then out[#out + 1] = x end
      return
    end
    for i = 1, #m do walk(x[i], m[i], d + 1) end
  end
  walk(xl, ml, 0)
  return out
end

-- x with the elements (or rows) where the mask is true replaced by value() in row-major order.
local function ref_put(xl, ml, mdims, value)
  local function fill(t)
    if type(t) ~= "table" then return value() end
    local o = {}
    for i = 1, #t do o[i] = fill(t[i]) end
    return o
  end
  local function walk(x, m, d)
    if d == mdims then return m and fill(x) or x end
    local o = {}
    for i = 1, #m do o[i] = walk(x[i], m[i], d + 1) end
    return o
  end
  return walk(xl, ml, 0)
end

T.test("bool mask keys", function()
  math.randomseed(11)
  for case = 1, 40 do
    local nd = math.random(1, 3)
    local shape = {}
    for d = 1, nd do shape[d] = math.random(1, 4) end
    local x = make(shape, case % 2 == 0)
    local md = math.random(1, nd)
    local mshape = {}
    for d = 1, md do mshape[d] = shape[d] end
    local mask = torch.rand(table.unpack(mshape)):gt(0.5)
    if case % 3 == 0 then mask = mask:to(torch.uint8) end
    local want = ref_mask(x:tolist(), mask:to(torch.bool):tolist(), md)
    local r = x[mask]
    local wshape = {#want}
    for d = md + 1, nd do wshape[#wshape + 1] = shape[d] end
    local where = string.format("x%s[mask%s]", T.show(shape), T.show(mshape))
    T.eq(shape_of(r), wshape, where .. " shape")
    T.eq(r:tolist(), want, where .. " values")
    -- x[mask] = number fills the selected elements (rows); x[mask] = tensor puts its
    -- elements there in row-major order
    local y = x:clone()
    y[mask] = -1
    T.eq(y:tolist(), ref_put(x:tolist(), mask:to(torch.bool):tolist(), md, function() return -1.0 end), where .. " = -1")
    local z = x:clone()
    z[mask] = torch.arange(r:numel()):double():neg():sub(100):view(table.unpack(wshape))
    local k = 0
    T.eq(z:tolist(), ref_put(x:tolist(), mask:to(torch.bool):tolist(), md, function() k = k + 1; return -99.0 - k end),
      where .. " = tensor")
  end
  local x, rows = grid()
  local m = x:gt(15)
  T.eq(x[m]:tolist(), {20.0, 21.0, 22.0, 23.0}, "x[x > 15]")
  T.eq(x[{true, false, true}]:tolist(), {rows[1], rows[3]}, "a Lua list of booleans")
  T.eq(shape_of(x[torch.tensor(true)]), {1, 3, 4}, "a 0-dim true mask")
  T.eq(shape_of(x[torch.tensor(false)]), {0, 3, 4}, "a 0-dim false mask")
  T.eq(shape_of(x[torch.zeros(3, 4, {dtype = torch.bool})]), {0}, "an all-false mask")
  local nc = x:t()[x:t():gt(15)]
  T.eq(nc:tolist(), {20.0, 21.0, 22.0, 23.0}, "a transposed tensor and mask: row-major order of the transposed view")
  T.raises(function() return x[torch.tensor({true, false})] end,
    "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0")
  T.raises(function() return x[torch.ones(3, 3, {dtype = torch.bool})] end,
    "The shape of the mask [3, 3] at index 1 does not match the shape of the indexed tensor [3, 4] at index 1")
  T.raises(function() return x[torch.ones(3, 4, 1, {dtype = torch.bool})] end, "too many indices for tensor of dimension 2")
  -- a copy
  local c = x[m]
  c:fill_(0)
  T.eq(x[2][0]:item(), 20.0, "x[mask] is a copy")
  -- gradient
  local w = torch.randn(3, 4, {requires_grad = true})
  w[torch.tensor({true, false, true})]:sum():backward()
  T.eq(w.grad:tolist(), {{1.0, 1.0, 1.0, 1.0}, {0.0, 0.0, 0.0, 0.0}, {1.0, 1.0, 1.0, 1.0}}, "gradient of x[mask]")
end)

T.test("assignment through tensor keys", function()
  local x = grid()
  x[x:gt(20)] = 0
  T.eq(x[2]:tolist(), {20.0, 0.0, 0.0, 0.0}, "x[x > 20] = 0")
  x = grid()
  local m = torch.tensor({{true, false, false, true}, {false, false, false, false}, {false, true, false, false}})
  x[m] = torch.tensor({-1.0, -2.0, -3.0})
  T.eq(x:tolist(), {{-1.0, 1.0, 2.0, -2.0}, {10.0, 11.0, 12.0, 13.0}, {20.0, -3.0, 22.0, 23.0}}, "x[mask] = tensor, row-major")
  x = grid()
  x[torch.tensor({false, true, false})] = torch.tensor({7.0, 8.0, 9.0, 10.0})
  T.eq(x[1]:tolist(), {7.0, 8.0, 9.0, 10.0}, "a prefix mask with a row broadcast")
  x[{true, false, false}] = torch.tensor({5}) -- one CPU element: masked_fill, which casts
  T.eq(x[0]:tolist(), {5.0, 5.0, 5.0, 5.0}, "a one-element value of another dtype")
  x[torch.tensor({0, -1})] = -4
  T.eq(x[0][1]:item() + x[2][3]:item(), -8.0, "x[idx] = number")
  T.eq(x[1][0]:item(), 7.0, "rows not indexed stay")
  x[torch.tensor({2, 0})] = torch.tensor({{1.0, 2.0, 3.0, 4.0}, {5.0, 6.0, 7.0, 8.0}})
  T.eq(x:tolist(), {{5.0, 6.0, 7.0, 8.0}, {7.0, 8.0, 9.0, 10.0}, {1.0, 2.0, 3.0, 4.0}}, "x[idx] = rows")
  x[{1}] = torch.tensor({0.5})
  T.eq(x[1]:tolist(), {0.5, 0.5, 0.5, 0.5}, "a list key with a broadcast value")
  local s = torch.tensor(3.0)
  s[torch.tensor(true)] = 4
  T.eq(s:item(), 4.0, "0-dim mask on a 0-dim tensor")
  x[torch.tensor(1)] = 9
  T.eq(x[1]:tolist(), {9.0, 9.0, 9.0, 9.0}, "a 0-dim integer key")
  T.raises(function() x[m] = torch.tensor({1.0, 2.0, 3.0}, {dtype = torch.float64}) end,
    "Index put requires the source and destination dtypes match, got Float for the destination and Double for the source.")
  T.raises(function() x[m] = torch.tensor({1.0, 2.0}) end,
    "shape mismatch: value tensor of shape [2] cannot be broadcast to indexing result of shape [3]")
  T.raises(function() x[torch.tensor({5})] = 0 end, "index 5 is out of bounds for dimension 0 with size 3")
  T.raises(function() x[torch.tensor({true})] = 0 end,
    "The shape of the mask [1] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0")
  -- the version counter moves, and gradients flow to the value and the untouched entries
  local leaf = torch.randn(3, 2, {requires_grad = true})
  local a = leaf * 1
  local v = torch.tensor({1.0, 2.0}, {requires_grad = true})
  a[torch.tensor({true, false, true})] = v
  ;(a * torch.tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}})):sum():backward()
  T.eq(leaf.grad:tolist(), {{0.0, 0.0}, {3.0, 4.0}, {0.0, 0.0}}, "overwritten rows get no gradient")
  T.eq(v.grad:tolist(), {6.0, 8.0}, "the value gets the gradient of the rows it wrote")
  local b = leaf * 1
  local c = b * b
  b[torch.tensor({0})] = 1
  T.raises(function() c:sum():backward() end, "~modified by an inplace operation", "version counter")
end)

T.test("cuda", function()
  if not torch.cuda.is_available() then return T.skip("no GPU", 4) end
  local x = torch.arange(12):view(3, 4):float():cuda()
  T.eq(x[":, 1:3"]:cpu():tolist(), {{1.0, 2.0}, {5.0, 6.0}, {9.0, 10.0}}, "subscript on cuda")
  T.eq(x[x:gt(9)]:cpu():tolist(), {10.0, 11.0}, "cuda mask")
  T.eq(x[torch.tensor({2, -3})]:cpu():tolist(), {{8.0, 9.0, 10.0, 11.0}, {0.0, 1.0, 2.0, 3.0}}, "cpu index into cuda")
  x[x:lt(2)] = torch.tensor({-1.0, -2.0}):cuda()
  T.eq(x[0]:cpu():tolist(), {-1.0, -2.0, 2.0, 3.0}, "cuda index_put")
end)
