-- Helpers shared by the nn files: errors at the user's call site, PyTorch-style
-- argument parsing (positional arguments and/or one trailing keyword table),
-- Python-style value formatting for reprs, and list results that a generic `for`
-- can also iterate directly (`for name, p in model:named_parameters() do`).
local torch = require "torch"

local U = {}

-- The stack level of the first function outside the Lua library (bindings/lua/*.lua),
-- counted from the caller of U.error, so errors point at the user's line.
local function is_library(src)
  return src:find("^@bindings/lua/") ~= nil
end

function U.error(msg)
  local level = 2
  while true do
    local info = debug.getinfo(level, "S")
    if not info then return error(msg, 0) end
    if not is_library(info.source) then return error(msg, level) end
    level = level + 1
  end
end

function U.errorf(fmt, ...) return U.error(string.format(fmt, ...)) end

-- Temporary rawset patches of tables, undone in reverse order (functional_call's swapped values,
-- vmap's installed batching rules): local p = U.patches(); p:put(t, k, v); ...; p:undo()
local Patches = {}
Patches.__index = Patches
function Patches:put(tbl, key, value)
  self[#self + 1] = { tbl, key, rawget(tbl, key) }
  rawset(tbl, key, value)
end
function Patches:undo()
  for i = #self, 1, -1 do
    local s = self[i]
    rawset(s[1], s[2], s[3])
    self[i] = nil
  end
end
function U.patches() return setmetatable({}, Patches) end

-- For installed rules (vmap's BatchedTensors, jvp's DualTensors): whether an argument, or an
-- element of a plain list argument, satisfies is_special; and a function that sends calls with
-- such an argument to rule, the others to orig
function U.any_arg(is_special, ...)
  for i = 1, select("#", ...) do
    local a = select(i, ...)
    if is_special(a) then return true end
    if type(a) == "table" and getmetatable(a) == nil then
      for _, e in pairs(a) do if is_special(e) then return true end end
    end
  end
  return false
end
function U.dispatcher(is_special, orig, rule)
  return function(...)
    if U.any_arg(is_special, ...) then return rule(...) end
    return orig(...)
  end
end

-- Python's UserWarning (or the category given, e.g. "FutureWarning") on standard error, once per
-- message (its default filter; every time after torch.set_warn_always(true))
local warned = {}
function U.warn(msg, category)
  if warned[msg] and not U.warn_always then return end
  warned[msg] = true
  if io and io.stderr then io.stderr:write(category or "UserWarning", ": ", msg, "\n") end
end

-- For the function forms of with-states: the trailing function of the arguments (nil when the
-- last is not one), the arguments packed, and how many come before that function.
function U.pop_fn(...)
  local args = table.pack(...)
  if args.n > 0 and type(args[args.n]) == "function" then return args[args.n], args, args.n - 1 end
  return nil, args, args.n
end

-- Python's `with` for ctx, a to-be-closed value whose state is already entered: ctx itself; or,
-- given fn, fn(...) run in the state, ctx closed also when fn raises, and fn's results.
function U.with(ctx, fn, ...)
  if fn == nil then return ctx end
  local res = table.pack(pcall(fn, ...))
  getmetatable(ctx).__close(ctx)
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

-- U.with for a state that restore() leaves
function U.scoped(restore, fn, ...) return U.with(setmetatable({}, { __close = function() restore() end }), fn, ...) end

-- U.F(name, ...) calls torch.nn.functional[name](...); its errors are raised again
-- at the user's line (a layer's forward tail-calls this, so no library frame is
-- left between here and the caller of the module).
local function finish(ok, ...)
  if ok then return ... end
  local err = ...
  if type(err) ~= "string" then error(err, 0) end
  return U.error((err:gsub("^[^\n]-:%d+: ", "", 1)))
end

-- f(...), its error raised again at the user's line (for library functions that call C
-- functions, whose errors would otherwise name the library's line)
function U.call(f, ...) return finish(pcall(f, ...)) end

-- U.call for a wrapper that the user knows as `name`: an argument error of f ("bad argument #2
-- to 'plain' (...)", or '?' when f has no name) names `name` instead
local function finish_as(name, ok, ...)
  if ok then return ... end
  local err = ...
  if type(err) ~= "string" then error(err, 0) end
  err = err:gsub("^[^\n]-:%d+: ", "", 1)
  err = err:gsub("^(bad argument #%d+ to )'[^']*'", function(head) return head .. "'" .. name .. "'" end, 1)
  return U.error(err)
end
function U.call_as(name, f, ...) return finish_as(name, pcall(f, ...)) end

function U.F(name, ...)
  local f = torch.nn.functional
  f = f and f[name]
  if not f then U.errorf("torch.nn.functional.%s is not available", name) end
  return finish(pcall(f, ...))
end

-- ---- Python-style formatting ----

-- Python's repr of a float: the shortest digits that read back, fixed notation for
-- exponents in [-4, 16), otherwise d.ddde+XX.
function U.pyfloat(x)
  if x ~= x then return "nan" end
  if x == math.huge then return "inf" end
  if x == -math.huge then return "-inf" end
  if x == 0 then return (1 / x < 0) and "-0.0" or "0.0" end
  local s
  for p = 0, 16 do
    s = string.format("%." .. p .. "e", x)
    if tonumber(s) == x then break end
  end
  local sign, int, frac, exp = s:match("^(-?)(%d)%.?(%d*)e([-+]%d+)$")
  local digits = (int .. frac):gsub("0+$", "")
  if digits == "" then digits = "0" end
  exp = tonumber(exp)
  if exp >= -4 and exp < 16 then
    local point = exp + 1 -- digits before the decimal point
    local out
    if point <= 0 then
      out = "0." .. string.rep("0", -point) .. digits
    elseif point >= #digits then
      out = digits .. string.rep("0", point - #digits) .. ".0"
    else
      out = digits:sub(1, point) .. "." .. digits:sub(point + 1)
    end
    return sign .. out
  end
  local mant = digits:sub(1, 1)
  if #digits > 1 then mant = mant .. "." .. digits:sub(2) end
  return string.format("%s%se%s%02d", sign, mant, exp < 0 and "-" or "+", math.abs(exp))
end

local function is_size(v)
  local mt = getmetatable(v)
  return mt ~= nil and mt.__name == "torch.Size"
end

-- A value as Python's str() writes it inside a repr: True/False/None, ints, floats,
-- tuples for Lua lists ("(3, 3)", "(10,)"), strings bare.
function U.pystr(v)
  local t = type(v)
  if v == nil then return "None" end
  if t == "boolean" then return v and "True" or "False" end
  if t == "number" then
    if math.type(v) == "integer" then return tostring(v) end
    return U.pyfloat(v)
  end
  if t == "string" then return v end
  if t == "table" and getmetatable(v) == nil then
    local parts = {}
    for i = 1, #v do parts[i] = U.pystr(v[i]) end
    if #parts == 1 then return "(" .. parts[1] .. ",)" end
    return "(" .. table.concat(parts, ", ") .. ")"
  end
  return tostring(v)
end

-- Python's repr(): strings quoted, the rest as pystr.
function U.pyrepr(v)
  if type(v) == "string" then return "'" .. v .. "'" end
  return U.pystr(v)
end

-- "[32, 2000]"
function U.shape_str(x)
  local dims = {}
  for i = 0, x:dim() - 1 do dims[#dims + 1] = tostring(x:size(i)) end
  return "[" .. table.concat(dims, ", ") .. "]"
end

-- PyTorch's scalar type name of a dtype (Float, Long, ...), as its messages print it
local scalar_names = { float32 = "Float", float64 = "Double", float16 = "Half", bfloat16 = "BFloat16", int64 = "Long",
  int32 = "Int", int16 = "Short", int8 = "Char", uint8 = "Byte", bool = "Bool", complex64 = "ComplexFloat",
  complex128 = "ComplexDouble" }
function U.scalar_name(dtype)
  local d = tostring(dtype):gsub("^torch%.", "")
  return scalar_names[d] or d
end

-- Python's type name of a value, for TypeError-style messages.
function U.typename(v)
  if torch.is_tensor(v) then return v:type() end
  if type(v) == "table" and v.__name and v.__class then return v.__name end
  if v == nil then return "NoneType" end
  if math.type(v) == "integer" then return "int" end
  if math.type(v) == "float" then return "float" end
  if type(v) == "string" then return "str" end
  if type(v) == "boolean" then return "bool" end
  return type(v)
end

-- ---- arguments ----

U.REQUIRED = setmetatable({}, { __tostring = function() return "<required>" end })

-- A trailing keyword table: a plain table with no [1] (lists are positional values).
function U.is_opts(v)
  return type(v) == "table" and getmetatable(v) == nil and rawget(v, 1) == nil
end

-- Parse `...` against spec, a list of {name, default} (default U.REQUIRED for a
-- required argument), Python-style: positional values in spec order, then an
-- optional trailing keyword table. Returns a table name -> value (defaults filled).
function U.parse(fname, spec, ...)
  local n = select("#", ...)
  local opts
  if n > 0 and U.is_opts((select(n, ...))) then
    opts = (select(n, ...))
    n = n - 1
  end
  if n > #spec then
    U.errorf("bad argument #%d to '%s' (%s takes at most %d positional arguments, got %d)",
      #spec + 1, fname, fname, #spec, n)
  end
  local out, given = {}, {}
  for i = 1, n do
    local v = (select(i, ...))
    if v ~= nil then out[spec[i][1]] = v; given[spec[i][1]] = i end
  end
  if opts then
    local index = {}
    for i, s in ipairs(spec) do index[s[1]] = i end
    for k, v in pairs(opts) do
      if type(k) ~= "string" or not index[k] then
        U.errorf("bad argument #%d to '%s' (unknown keyword '%s')", n + 1, fname, tostring(k))
      end
      if given[k] then
        U.errorf("bad argument #%d to '%s' (got multiple values for argument '%s')", n + 1, fname, k)
      end
      out[k] = v
    end
  end
  for i, s in ipairs(spec) do
    if out[s[1]] == nil then
      if s[2] == U.REQUIRED then
        U.errorf("bad argument #%d to '%s' (missing required argument '%s')", i, fname, s[1])
      end
      out[s[1]] = s[2]
    end
  end
  return out
end

-- Checks for common argument kinds; they return the value.
function U.check_int(fname, name, v, min)
  if math.type(v) ~= "integer" and not (math.type(v) == "float" and v == math.floor(v) and v == v) then
    U.errorf("%s: %s must be an integer, got %s", fname, name, U.typename(v) == "float" and U.pyfloat(v) or U.typename(v))
  end
  v = math.tointeger(v)
  if min and v < min then U.errorf("%s: %s must be at least %d, got %d", fname, name, min, v) end
  return v
end

-- An int or a list of n ints as a list of n ints (PyTorch's _pair).
function U.ntuple(fname, name, v, n)
  if type(v) == "number" then
    v = U.check_int(fname, name, v)
    local out = {}
    for i = 1, n do out[i] = v end
    return out
  end
  if is_size(v) then v = v:totable() end
  if type(v) ~= "table" or #v ~= n then
    U.errorf("%s: %s must be an int or a list of %d ints, got %s", fname, name, n, U.typename(v))
  end
  local out = {}
  for i = 1, n do out[i] = U.check_int(fname, name, v[i]) end
  return out
end

-- ---- iterable lists ----

-- Give a list of {name, value} pairs a __call so that `for name, v in list do`
-- walks it; ipairs and # work as on any list. (Plain lists stay plain tables, so
-- code that tells lists from other values by their missing metatable keeps working.)
local function list_call(named)
  return function(self, _, prev)
    local mt = getmetatable(self)
    local i = 1
    if prev ~= nil then
      local pos = mt._pos
      if not pos then -- built on the first step: position of each element (or name)
        pos = {}
        for j = 1, #self do pos[named and self[j][1] or self[j]] = j end
        mt._pos = pos
      end
      i = (pos[prev] or #self) + 1
    end
    local e = self[i]
    if e == nil then return nil end
    if named then return e[1], e[2] end
    return e
  end
end
local named_call = list_call(true)

-- Base:extend(name) for a plain class (Optimizer, LRScheduler): a subclass that inherits the
-- metamethods, knows its super, and builds an instance through __init when called
function U.extend_class(self, name)
  local cls = {}
  for k, v in pairs(self) do
    if type(k) == "string" and k:sub(1, 2) == "__" then cls[k] = v end
  end
  cls.__index = cls
  cls.__name = name
  cls.super = self
  return setmetatable(cls, {
    __index = self,
    __call = function(c, ...)
      local obj = setmetatable({}, c)
      c.__init(obj, ...)
      return obj
    end,
  })
end

function U.list(t) return t end
function U.named_list(t) return setmetatable(t, { __call = named_call }) end

-- ---- OrderedDict ----
-- Entries are plain fields (sd["fc.weight"]); the key order lives in the metatable.
-- pairs() follows insertion order (__pairs); sd:keys(), sd:values(), sd:items() give
-- lists; # counts the entries. `sd[k] = nil` deletes; a key set again goes last.
-- Internally modules keep "registered as None" entries (set(k, nil)), which pairs
-- yields with a nil value.
local OD = {}
U.OrderedDict = OD

local function od_meta(t) return getmetatable(t) end

local function od_live(t, mt, k) return rawget(t, k) ~= nil or mt._none[k] end

local function od_drop(mt, k)
  local order, pos = mt._order, mt._pos
  local p = pos[k]
  if not p then return end
  table.remove(order, p)
  pos[k] = nil
  for j = p, #order do pos[order[j]] = j end
end

local function od_append(mt, k)
  local order = mt._order
  order[#order + 1] = k
  mt._pos[k] = #order
end

local od_methods = {}

function od_methods.keys(t)
  local mt, out = od_meta(t), {}
  for _, k in ipairs(mt._order) do if od_live(t, mt, k) then out[#out + 1] = k end end
  return U.list(out)
end

function od_methods.values(t)
  local mt, out = od_meta(t), {}
  for _, k in ipairs(mt._order) do if od_live(t, mt, k) then out[#out + 1] = rawget(t, k) end end
  return U.list(out)
end

function od_methods.items(t)
  local mt, out = od_meta(t), {}
  for _, k in ipairs(mt._order) do if od_live(t, mt, k) then out[#out + 1] = { k, rawget(t, k) } end end
  return U.named_list(out)
end

-- Set k (v may be nil: registered as None); a new key goes last, an existing one stays.
function od_methods.set(t, k, v)
  local mt = od_meta(t)
  if not od_live(t, mt, k) then od_drop(mt, k); od_append(mt, k) end
  rawset(t, k, v)
  mt._none[k] = (v == nil) or nil
end

function od_methods.remove(t, k)
  local mt = od_meta(t)
  local v = rawget(t, k)
  od_drop(mt, k)
  mt._none[k] = nil
  rawset(t, k, nil)
  return v
end
od_methods.pop = od_methods.remove

function od_methods.has(t, k) return od_live(t, od_meta(t), k) and true or false end

-- Python's OrderedDict.move_to_end(key, last=True) and popitem(last=True) (which returns k, v)
function od_methods.move_to_end(t, k, last)
  local mt = od_meta(t)
  if type(last) == "table" then last = U.parse("move_to_end", { { "last", true } }, last).last end
  if not od_live(t, mt, k) then U.error(U.pyrepr(k)) end -- Python's KeyError: 'k'
  od_drop(mt, k)
  if last == false then
    table.insert(mt._order, 1, k)
    for j, key in ipairs(mt._order) do mt._pos[key] = j end
  else
    od_append(mt, k)
  end
end

function od_methods.popitem(t, last)
  local order, mt = od_meta(t)._order, od_meta(t)
  if type(last) == "table" then last = U.parse("popitem", { { "last", true } }, last).last end
  local from, to, step = #order, 1, -1
  if last == false then from, to, step = 1, #order, 1 end
  for j = from, to, step do
    local k = order[j]
    if od_live(t, mt, k) then return k, od_methods.remove(t, k) end
  end
  U.error("dictionary is empty")
end

function od_methods.copy(t)
  local c = OD.new()
  for _, k in ipairs(od_meta(t)._order) do
    if od_live(t, od_meta(t), k) then od_methods.set(c, k, rawget(t, k)) end
  end
  return c
end

local function od_newindex(t, k, v)
  if v == nil then return end
  local mt = od_meta(t)
  od_drop(mt, k)
  od_append(mt, k)
  mt._none[k] = nil
  rawset(t, k, v)
end

local function od_pairs(t)
  local mt = od_meta(t)
  local order, i = mt._order, 0
  return function()
    while true do
      i = i + 1
      local k = order[i]
      if k == nil then return nil end
      if od_live(t, mt, k) then return k, rawget(t, k) end
    end
  end, t, nil
end

local function od_len(t)
  local mt, n = od_meta(t), 0
  for _, k in ipairs(mt._order) do if od_live(t, mt, k) then n = n + 1 end end
  return n
end

local function od_tostring(t)
  local parts = {}
  for k, v in od_pairs(t) do parts[#parts + 1] = U.pyrepr(k) .. ": " .. tostring(v) end
  return "OrderedDict({" .. table.concat(parts, ", ") .. "})"
end

function OD.is(v)
  local mt = getmetatable(v)
  return type(v) == "table" and mt ~= nil and mt.__name == "OrderedDict"
end

-- OrderedDict(), OrderedDict({{k, v}, ...}), or a copy of another OrderedDict.
function OD.new(init)
  local t = setmetatable({}, {
    __name = "OrderedDict", __index = od_methods, __newindex = od_newindex, __pairs = od_pairs,
    __len = od_len, __tostring = od_tostring, _order = {}, _pos = {}, _none = {},
  })
  if OD.is(init) then
    for k, v in od_pairs(init) do od_methods.set(t, k, v) end
  elseif type(init) == "table" then
    for i, kv in ipairs(init) do
      if type(kv) ~= "table" or kv[1] == nil then
        U.errorf("OrderedDict: entry %d must be a {key, value} pair", i)
      end
      od_methods.set(t, kv[1], kv[2])
    end
  end
  return t
end

-- v, or PyTorch's error for a non-tensor argument of torch.fname
function U.check_tensor(fname, name, pos, v)
  if not torch.is_tensor(v) then
    U.errorf("%s(): argument '%s' (position %d) must be Tensor, not %s", fname, name, pos, U.typename(v))
  end
  return v
end

-- v, or an error naming the function and argument
function U.tensor_arg(fname, name, v)
  if not torch.is_tensor(v) then U.errorf("%s: %s must be a Tensor, got %s", fname, name, U.typename(v)) end
  return v
end

-- f wrapped as torch.fname: its leading arguments checked against kinds, a list of
-- "name:Kind" ("name:Kind?" when nil is allowed; a keyword table ends the checks where an
-- argument is optional), with PyTorch's "fname(): argument 'other' (position 2) must be
-- Tensor, not str"; the errors of the ops inside are raised at the user's line naming fname.
-- Kinds: Tensor, Number, int, Tensor|Number, Tensors (a list of tensors), ints (an int, a list
-- of ints or a torch.Size), Function, str, Module, any (checked by f itself). kinds.plain: f is called directly (for a
-- function that calls the user's code, whose errors keep their own position).
local kind_ok
kind_ok = {
  Tensor = torch.is_tensor,
  Number = function(v) return type(v) == "number" or type(v) == "boolean" end, -- a bool is a Python number
  int = function(v) return math.type(v) == "integer" or math.type(v) == "float" and v == math.floor(v) end,
  Tensors = function(v)
    if type(v) ~= "table" or torch.is_tensor(v) or U.is_opts(v) and next(v) ~= nil then return false end
    for i = 1, #v do if not torch.is_tensor(v[i]) then return false end end
    return true
  end,
  ints = function(v)
    if kind_ok.int(v) or is_size(v) then return true end
    if type(v) ~= "table" or getmetatable(v) ~= nil then return false end
    for i = 1, #v do if not kind_ok.int(v[i]) then return false end end
    return #v > 0 or next(v) == nil
  end,
  Function = function(v) return type(v) == "function" or (getmetatable(v) or {}).__call ~= nil end,
  str = function(v) return type(v) == "string" end,
  Module = function(v) return torch.nn ~= nil and torch.nn.Module.is_module(v) end,
  any = function() return true end,
}
U.kind_ok = kind_ok
local kind_text = { Tensors = "tuple of Tensors", ints = "tuple of ints", Function = "callable" }

-- the test and the text of a kind, "A|B" for either
local function kind_of(kind)
  local tests, texts = {}, {}
  for part in kind:gmatch("[^|]+") do
    tests[#tests + 1] = assert(kind_ok[part], kind)
    texts[#texts + 1] = kind_text[part] or part
  end
  return function(v)
    for _, t in ipairs(tests) do if t(v) then return true end end
    return false
  end, table.concat(texts, " or ")
end

function U.checked(fname, kinds, f)
  local spec = {}
  -- a method's kinds start with "self": positions count from the argument after it, as Python's
  local shift = kinds[1] == "self" and 1 or 0
  for i, k in ipairs(kinds) do
    local name, kind, opt = k:match("^([%w_]+):([%w|]+)(%??)$")
    if k == "self" then name, kind, opt = "self", "Tensor", "" end
    local ok, text = kind_of(kind)
    spec[i] = { name = name, kind = kind, ok = ok, text = text, optional = opt == "?" }
  end
  return function(...)
    for i, s in ipairs(spec) do
      local v, pos = (select(i, ...)), i - shift
      if s.optional and (v == nil or U.is_opts(v) and s.kind ~= "Tensors") then break end
      if not s.ok(v) then
        local got = U.typename(v)
        if s.name == "self" then
          U.errorf("descriptor '%s' requires a 'torch._C.TensorBase' object but received a '%s'", fname, got)
        end
        if s.kind == "Tensors" and type(v) == "table" and not torch.is_tensor(v) then
          for j = 1, #v do
            if not torch.is_tensor(v[j]) then
              U.errorf("expected Tensor as element %d in argument %d, but got %s", j - 1, pos - 1, U.typename(v[j]))
            end
          end
        end
        U.errorf("%s(): argument '%s' (position %d) must be %s, not %s", fname, s.name, pos, s.text, got)
      end
    end
    if kinds.plain then return f(...) end
    return U.call_as(fname, f, ...)
  end
end

-- U.checked for each t[name] of specs (name -> kinds)
function U.check_all(t, specs)
  for name, kinds in pairs(specs) do t[name] = U.checked(name, kinds, assert(t[name], name)) end
end

-- The nd spatial sizes of a ConvTranspose's output_size (a list, torch.Size or tensor), with the
-- errors of PyTorch's _output_padding ("ConvTranspose2D: for 3D input, output_size must have 2 or 4
-- elements (got 1)")
function U.transpose_output_size(nd, x, output_size)
  if torch.is_tensor(output_size) then output_size = output_size:tolist() end
  if is_size(output_size) then output_size = output_size:totable() end
  if type(output_size) ~= "table" then
    if type(output_size) ~= "string" then U.errorf("object of type '%s' has no len()", U.typename(output_size)) end
    local chars = {}
    for c in output_size:gmatch(".") do chars[#chars + 1] = c end
    output_size = chars
  end
  local non_spatial = x:dim() == nd + 2 and 2 or 1
  local n = #output_size
  if n ~= nd and n ~= nd + non_spatial then
    U.errorf("ConvTranspose%dD: for %dD input, output_size must have %d or %d elements (got %d)", nd, x:dim(), nd,
      nd + non_spatial, n)
  end
  local want = {}
  for i = 1, nd do
    want[i] = output_size[n - nd + i]
    if type(want[i]) ~= "number" then U.errorf("'<=' not supported between instances of 'int' and '%s'", U.typename(want[i])) end
  end
  return want
end

-- PyTorch's error when the shapes of tensors a and b do not broadcast together
function U.check_broadcast(a, b)
  local na, nb = a:dim(), b:dim()
  local n = math.max(na, nb)
  for i = 1, n do
    local sa = i <= na and a:size(na - i) or 1
    local sb = i <= nb and b:size(nb - i) or 1
    if sa ~= sb and sa ~= 1 and sb ~= 1 then
      U.errorf("The size of tensor a (%d) must match the size of tensor b (%d) at non-singleton dimension %d", sa, sb, n - i)
    end
  end
end

-- Python's TypeError for a call that lacks required positional arguments (names: the missing ones)
function U.missing_args(fname, names)
  local q = {}
  for i, n in ipairs(names) do q[i] = "'" .. n .. "'" end
  local list = q[1]
  if #q == 2 then list = q[1] .. " and " .. q[2] elseif #q > 2 then list = table.concat(q, ", ", 1, #q - 1) .. ", and " .. q[#q] end
  U.errorf("%s() missing %d required positional argument%s: %s", fname, #q, #q > 1 and "s" or "", list)
end

-- U.missing_args for the names past the n given (n: select("#", ...) of the call)
function U.require_args(fname, names, n)
  if n >= #names then return end
  U.missing_args(fname, table.move(names, n + 1, #names, 1, {}))
end

-- dim wrapped into [0, ndim) (a scalar counts as one dim), or PyTorch's error
function U.wrap_dim(dim, ndim)
  if math.type(dim) ~= "integer" then U.errorf("dim must be an integer, got %s", U.typename(dim)) end
  local n = math.max(ndim, 1)
  if dim < -n or dim >= n then
    U.errorf("Dimension out of range (expected to be in range of [%d, %d], but got %d)", -n, n - 1, dim)
  end
  return dim < 0 and dim + n or dim
end

-- f(x), written into x when inplace, as PyTorch's in-place activations do. When autograd
-- records, f runs on a copy of x: the graph keeps the input it saw while x takes the result.
function U.maybe_inplace(x, f, inplace)
  if not inplace then return f(x) end
  local src = x
  if x.requires_grad and torch.is_grad_enabled() then src = x:clone() end
  x:copy_(f(src))
  return x
end

return U
