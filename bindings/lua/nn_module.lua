-- nn.Module: classes, registration in order, traversal, state_dict, modes,
-- conversion and printing, with PyTorch's names and behaviour.
--
-- Classes: `local Net = nn.Module:extend("Net")`; `Net(...)` makes an instance
-- (base state first, then Net.__init(self, ...), inherited if Net has none);
-- `Net.super` is the parent class. Methods are looked up through the class chain.
--
-- Instances: the instance table holds only the registries `_parameters`,
-- `_buffers`, `_modules` (OrderedDicts, nn_util) and `_non_persistent_buffers_set`
-- as raw fields, so every other assignment reaches __newindex, which registers
-- Parameters, Modules and (registered) buffers in order, like Python's
-- __setattr__. All attribute values live in a per-instance `values` table that is
-- the metatable's __index (a read like `self.weight` is plain table lookups in C);
-- values falls back to the class. Assigning nil to a registered name removes it.
-- Containers define `__getitem` / `__setitem` (integer keys), `__len` and
-- `__pairs` on their class.
local torch = require "torch"
local U = require "nn_util"
local Parameter = require "nn_parameter"

local OD = U.OrderedDict
local instances = setmetatable({}, { __mode = "k" })

local function is_module(v) return instances[v] == true end
-- nn.Buffer(t, persistent) tensors -> persistent (nn_module_gaps.lua): assigning one registers a buffer
local buffer_marks = setmetatable({}, { __mode = "k" })
local function values_of(self) return getmetatable(self).__index end

-- ---- attribute assignment (Python's Module.__setattr__) ----

local function setattr(self, k, v)
  local values = values_of(self)
  if type(k) ~= "string" then
    local setitem = self.__setitem
    if setitem and type(k) == "number" then return setitem(self, k, v) end
    values[k] = v
    return
  end
  local params, buffers, modules = self._parameters, self._buffers, self._modules
  if Parameter.is(v) then
    buffers:remove(k); modules:remove(k)
    self._non_persistent_buffers_set[k] = nil
    values[k] = nil
    self:register_parameter(k, v)
  elseif params:has(k) then
    if v ~= nil then
      U.errorf("cannot assign '%s' as parameter '%s' (torch.nn.Parameter or None expected)", U.typename(v), k)
    end
    params:remove(k); values[k] = nil
  elseif is_module(v) then
    params:remove(k); buffers:remove(k)
    self._non_persistent_buffers_set[k] = nil
    modules:set(k, v); values[k] = v
  elseif buffer_marks[v] ~= nil then
    params:remove(k); modules:remove(k); buffers:remove(k)
    values[k] = nil
    self:register_buffer(k, v, buffer_marks[v])
  elseif modules:has(k) then
    if v ~= nil then
      U.errorf("cannot assign '%s' as child module '%s' (torch.nn.Module or None expected)", U.typename(v), k)
    end
    modules:remove(k); values[k] = nil
  elseif buffers:has(k) then
    if v == nil then
      buffers:remove(k); self._non_persistent_buffers_set[k] = nil
    elseif torch.is_tensor(v) then
      buffers:set(k, v)
    else
      U.errorf("cannot assign '%s' as buffer '%s' (torch.Tensor or None expected)", U.typename(v), k)
    end
    values[k] = v
  else
    values[k] = v
  end
end

-- ---- metamethods shared by every instance ----

local function call_hooked(self, pre, post, ...)
  local args = table.pack(...)
  if pre then
    for _, h in ipairs(pre) do
      local r = h.fn(self, args)
      if r ~= nil then
        if type(r) == "table" and getmetatable(r) == nil then args = table.pack(table.unpack(r))
        else args = table.pack(r) end
      end
    end
  end
  local out = table.pack(self:forward(table.unpack(args, 1, args.n)))
  if post then
    for _, h in ipairs(post) do
      local r = h.fn(self, args, out[1])
      if r ~= nil then out = table.pack(r) end
    end
  end
  return table.unpack(out, 1, out.n)
end

-- Full backward hooks (PyTorch's BackwardHook): the call's tensor inputs and outputs pass
-- through identity autograd Functions; the outputs' one records grad_output (and runs the
-- backward pre-hooks, which may replace it), the inputs' one calls each hook with
-- (module, grad_input, grad_output) and takes a returned list as the new grad_input. With no
-- input that needs a gradient the hooks run from the outputs' one with an empty grad_input.
-- At most two tensor inputs and two tensor outputs take part (custom Functions' limit here).
local HookIn, HookOut

local function run_backward_hooks(st, grad_input)
  for _, h in ipairs(st.hooks) do
    local r = h.fn(st.module, grad_input, st.grad_output)
    if r ~= nil then grad_input = type(r) == "table" and getmetatable(r) == nil and r or { r } end
  end
  return grad_input
end

local function hook_functions()
  if HookIn then return end
  local Function = torch.autograd.Function
  HookIn = Function:extend("BackwardHookFunction")
  function HookIn.forward(ctx, st, ...)
    ctx.st = st
    return ...
  end
  function HookIn.backward(ctx, ...)
    local n = select("#", ...)
    return nil, table.unpack(run_backward_hooks(ctx.st, table.pack(...)), 1, n)
  end
  HookOut = Function:extend("BackwardHookFunction")
  function HookOut.forward(ctx, st, ...)
    ctx.st = st
    return ...
  end
  function HookOut.backward(ctx, ...)
    local st, g = ctx.st, table.pack(...)
    for _, h in ipairs(st.pre) do
      local r = h.fn(st.module, g)
      if r ~= nil then g = type(r) == "table" and getmetatable(r) == nil and table.pack(table.unpack(r)) or table.pack(r) end
    end
    st.grad_output = g
    if st.inputs == 0 then run_backward_hooks(st, {}) end
    return nil, table.unpack(g, 1, g.n)
  end
end

-- the tensors of vals (a packed list) that need a gradient, through f (a hook Function); in place
local function through(f, st, vals)
  local pos, ts = {}, {}
  for i = 1, vals.n do
    local v = vals[i]
    if torch.is_tensor(v) and v.requires_grad then pos[#pos + 1] = i; ts[#ts + 1] = v end
  end
  if #ts == 0 then return 0 end
  local r = table.pack(f.apply(st, table.unpack(ts)))
  for k, i in ipairs(pos) do vals[i] = r[k] end
  return #ts
end

local function call_with_backward_hooks(self, pre, post, hooks, bpre, ...)
  if not torch.is_grad_enabled() then
    if pre or post then return call_hooked(self, pre, post, ...) end
    return self:forward(...)
  end
  hook_functions()
  local st = { module = self, hooks = hooks or {}, pre = bpre or {} }
  local args = table.pack(...)
  st.inputs = through(HookIn, st, args)
  local out
  if pre or post then out = table.pack(call_hooked(self, pre, post, table.unpack(args, 1, args.n)))
  else out = table.pack(self:forward(table.unpack(args, 1, args.n))) end
  through(HookOut, st, out)
  return table.unpack(out, 1, out.n)
end

local function call(self, ...)
  local pre, post = rawget(self, "_forward_pre_hooks"), rawget(self, "_forward_hooks")
  local back, bpre = rawget(self, "_backward_hooks"), rawget(self, "_backward_pre_hooks")
  if back or bpre then return call_with_backward_hooks(self, pre, post, back, bpre, ...) end
  if pre or post then return call_hooked(self, pre, post, ...) end
  return self:forward(...)
end

local function tostr(self) return self:__tostring() end

local function len(self)
  local f = self.__len
  if f then return f(self) end
  return rawlen(self)
end

local function pairs_(self)
  local f = self.__pairs
  if f then return f(self) end
  return next, self, nil
end

-- ---- classes ----

local function class_tostring(cls) return "<class '" .. rawget(cls, "__name") .. "'>" end

local function values_meta(cls, self)
  local getitem = cls.__getitem
  if getitem then
    return { __index = function(_, k)
      if type(k) == "number" then return getitem(self, k) end
      return cls[k]
    end }
  end
  local vmt = rawget(cls, "_values_mt")
  if not vmt then
    vmt = { __index = cls }
    rawset(cls, "_values_mt", vmt)
  end
  return vmt
end

local function new_instance(cls)
  local self = {
    _parameters = OD.new(), _buffers = OD.new(), _modules = OD.new(), _non_persistent_buffers_set = {},
  }
  local values = setmetatable({ training = true }, values_meta(cls, self))
  setmetatable(self, {
    __index = values, __newindex = setattr, __call = call, __tostring = tostr, __len = len,
    __pairs = pairs_, __name = cls.__name,
  })
  instances[self] = true
  return self
end

local function construct(cls, ...)
  local self = new_instance(cls)
  local init = cls.__init
  if init then init(self, ...) end
  return self
end

-- every class made by extend, by name (a list: names repeat), for loading saved modules
local classes_by_name = {}
-- where each class was defined ("source:line"), to tell apart classes of one name on load
local class_sources = setmetatable({}, { __mode = "k" })

local function make_class(name, parent)
  local cls = { __name = name, super = parent }
  cls.__class = cls
  local here = debug.getinfo(1, "S").source
  for level = 2, 12 do -- the first Lua caller outside this file: "source:line"
    local info = debug.getinfo(level, "Sl")
    if not info then break end
    if info.what ~= "C" and info.source ~= here then class_sources[cls] = info.source .. ":" .. info.currentline; break end
  end
  local list = classes_by_name[name]
  if not list then list = setmetatable({}, { __mode = "v" }); classes_by_name[name] = list end
  list[#list + 1] = cls
  return setmetatable(cls, { __index = parent, __call = construct, __tostring = class_tostring })
end

local Module = make_class("Module", nil)

-- Net = nn.Module:extend("Net"); Sub = Net:extend("Sub")
function Module.extend(parent, name)
  if type(parent) ~= "table" or rawget(parent, "__class") ~= parent then
    U.error("extend: call it on a class, as nn.Module:extend(\"Name\")")
  end
  if name ~= nil and type(name) ~= "string" then U.error("extend: the class name must be a string") end
  return make_class(name or rawget(parent, "__name"), parent)
end

function Module.is_module(v) return is_module(v) end
Module._new_instance, Module._classes_by_name = new_instance, classes_by_name
function Module._class_source(cls) return class_sources[cls] end
Module._buffer_marks = buffer_marks

-- Python's isinstance for modules and parameters; cls may be a list of classes.
local function isinstance(v, cls)
  if type(cls) == "table" and rawget(cls, "__class") == nil and cls[1] ~= nil then
    for _, c in ipairs(cls) do if isinstance(v, c) then return true end end
    return false
  end
  if cls == Parameter then return Parameter.is(v) end
  local test = type(cls) == "table" and rawget(cls, "__isinstance") -- classes of other kinds (tv_tensors)
  if test then return test(v) end
  if cls == torch.Tensor then return torch.is_tensor(v) end
  if not is_module(v) then return false end
  local c = v.__class
  while c do
    if c == cls then return true end
    c = rawget(c, "super")
  end
  return false
end
Module.isinstance_of = isinstance

function Module:isinstance(cls) return isinstance(self, cls) end

function Module:__init() end

-- copy.deepcopy's part for modules (bindings/lua/copy.lua): an instance of the same class,
-- not made by __init, with copies of the registered tensors and modules in their order, of
-- the other attributes, and of the hook tables (the hook functions are shared, as Python's
-- deepcopy shares functions). memo maps what was copied already to its copy.
function Module:__deepcopy(memo, deepcopy)
  local c = new_instance(self.__class)
  memo[self] = c
  local values, to = values_of(self), values_of(c)
  to.training = values.training -- new_instance set it true
  for k, p in pairs(self._parameters) do c:register_parameter(k, p ~= nil and deepcopy(p, memo) or nil) end
  for k, b in pairs(self._buffers) do
    c:register_buffer(k, b ~= nil and deepcopy(b, memo) or nil, not self._non_persistent_buffers_set[k])
  end
  for k, m in pairs(self._modules) do
    local mc = m ~= nil and deepcopy(m, memo) or nil
    c._modules:set(k, mc)
    to[k] = mc
  end
  for k, v in next, values do
    if rawget(to, k) == nil and not (self._parameters:has(k) or self._buffers:has(k) or self._modules:has(k)) then
      to[k] = deepcopy(v, memo)
    end
  end
  for k, v in next, self do
    if rawget(c, k) == nil and type(v) == "table" then
      local hooks = {}
      for hk, hv in next, v do hooks[hk] = hv end
      rawset(c, k, setmetatable(hooks, getmetatable(v)))
    end
  end
  return c
end

function Module:_get_name() return self.__name end

function Module:forward()
  U.errorf('Module [%s] is missing the required "forward" function', self:_get_name())
end

-- ---- registration ----

local function check_name(self, kind, name, registry)
  if type(name) ~= "string" then
    U.errorf("%s name should be a string. Got %s", kind, U.typename(name))
  end
  if name:find(".", 1, true) then
    if kind == "module" then U.errorf('module name can\'t contain ".", got: %s', name) end
    U.errorf('%s name can\'t contain "."', kind)
  end
  if name == "" then U.errorf('%s name can\'t be empty string ""', kind) end
  if not registry:has(name) and self[name] ~= nil then
    U.errorf("attribute '%s' already exists", name)
  end
end

function Module:register_parameter(name, param)
  check_name(self, "parameter", name, self._parameters)
  if param ~= nil and not Parameter.is(param) then
    U.errorf("cannot assign '%s' object to parameter '%s' (torch.nn.Parameter or None required)",
      U.typename(param), name)
  end
  self._parameters:set(name, param)
  values_of(self)[name] = param
end

function Module:register_buffer(name, tensor, persistent)
  if U.is_opts(persistent) then
    persistent = U.parse("register_buffer", { { "persistent", true } }, persistent).persistent
  end
  if persistent == nil then persistent = true end
  check_name(self, "buffer", name, self._buffers)
  if tensor ~= nil and not torch.is_tensor(tensor) then
    U.errorf("cannot assign '%s' object to buffer '%s' (torch Tensor or None required)", U.typename(tensor), name)
  end
  self._buffers:set(name, tensor)
  self._non_persistent_buffers_set[name] = (not persistent) or nil
  values_of(self)[name] = tensor
end

function Module:add_module(name, module)
  if module ~= nil and not is_module(module) then
    U.errorf("%s is not a Module subclass", U.typename(module))
  end
  check_name(self, "module", name, self._modules)
  self._modules:set(name, module)
  values_of(self)[name] = module
end
Module.register_module = Module.add_module

-- ---- traversal ----

-- (prefix, module) pairs, self first, depth first in registration order.
local function collect_modules(self, memo, prefix, remove_duplicate, out)
  if memo[self] then return end
  if remove_duplicate then memo[self] = true end
  out[#out + 1] = { prefix, self }
  for name, m in pairs(self._modules) do
    if m ~= nil then
      collect_modules(m, memo, prefix == "" and name or (prefix .. "." .. name), remove_duplicate, out)
    end
  end
end

function Module:named_modules(...)
  local o = U.parse("named_modules",
    { { "memo" }, { "prefix", "" }, { "remove_duplicate", true } }, ...)
  local out = {}
  collect_modules(self, o.memo or {}, o.prefix, o.remove_duplicate, out)
  return U.named_list(out)
end

function Module:modules()
  local out = {}
  for _, e in ipairs(self:named_modules()) do out[#out + 1] = e[2] end
  return U.list(out)
end

function Module:named_children()
  local out, memo = {}, {}
  for name, m in pairs(self._modules) do
    if m ~= nil and not memo[m] then
      memo[m] = true
      out[#out + 1] = { name, m }
    end
  end
  return U.named_list(out)
end

function Module:children()
  local out = {}
  for _, e in ipairs(self:named_children()) do out[#out + 1] = e[2] end
  return U.list(out)
end

local function named_members(self, registry, o)
  local mods
  if o.recurse then
    mods = {}
    collect_modules(self, {}, o.prefix, o.remove_duplicate, mods)
  else
    mods = { { o.prefix, self } }
  end
  local out, memo = {}, {}
  for _, pm in ipairs(mods) do
    local mprefix, m = pm[1], pm[2]
    for k, v in pairs(m[registry]) do
      if v ~= nil and not memo[v] then
        if o.remove_duplicate then memo[v] = true end
        out[#out + 1] = { mprefix == "" and k or (mprefix .. "." .. k), v }
      end
    end
  end
  return out
end

local member_spec = { { "prefix", "" }, { "recurse", true }, { "remove_duplicate", true } }

-- for name, p in model:named_parameters() do ... end; also a list of {name, p} pairs.
function Module:named_parameters(...)
  return U.named_list(named_members(self, "_parameters", U.parse("named_parameters", member_spec, ...)))
end

function Module:named_buffers(...)
  return U.named_list(named_members(self, "_buffers", U.parse("named_buffers", member_spec, ...)))
end

-- A Lua list of the parameters (deduplicated, in registration order).
function Module:parameters(...)
  local o = U.parse("parameters", { { "recurse", true } }, ...)
  local out = {}
  for i, e in ipairs(named_members(self, "_parameters", { prefix = "", recurse = o.recurse, remove_duplicate = true })) do
    out[i] = e[2]
  end
  return U.list(out)
end

function Module:buffers(...)
  local o = U.parse("buffers", { { "recurse", true } }, ...)
  local out = {}
  for i, e in ipairs(named_members(self, "_buffers", { prefix = "", recurse = o.recurse, remove_duplicate = true })) do
    out[i] = e[2]
  end
  return U.list(out)
end

-- model:get_submodule("features.0")
function Module:get_submodule(target)
  if target == nil or target == "" then return self end
  local mod = self
  for item in tostring(target):gmatch("[^.]+") do
    if not mod._modules:has(item) and mod[item] == nil then
      U.errorf("%s has no attribute `%s`", mod:_get_name(), item)
    end
    local m = mod[item]
    if not is_module(m) then U.errorf("`%s` is not an nn.Module", item) end
    mod = m
  end
  return mod
end

local function split_last(target)
  local mod_path, name = target:match("^(.*)%.([^.]*)$")
  if not mod_path then return "", target end
  return mod_path, name
end

function Module:get_parameter(target)
  local mod_path, name = split_last(target)
  local mod = self:get_submodule(mod_path)
  if not mod._parameters:has(name) then
    U.errorf("%s has no parameter `%s`", mod:_get_name(), name)
  end
  return mod[name]
end

function Module:get_buffer(target)
  local mod_path, name = split_last(target)
  local mod = self:get_submodule(mod_path)
  if not mod._buffers:has(name) then
    U.errorf("%s has no buffer `%s`", mod:_get_name(), name)
  end
  return mod[name]
end

-- ---- modes, gradients, apply ----

function Module:train(mode)
  if mode == nil then mode = true end
  if type(mode) ~= "boolean" then U.error("training mode is expected to be boolean") end
  self.training = mode
  for _, m in pairs(self._modules) do
    if m ~= nil then m:train(mode) end
  end
  return self
end

function Module:eval() return self:train(false) end

function Module:requires_grad_(requires_grad)
  if requires_grad == nil then requires_grad = true end
  for _, p in ipairs(self:parameters()) do p:requires_grad_(requires_grad) end
  return self
end

-- zero_grad() / zero_grad(false) / zero_grad({set_to_none=false})
function Module:zero_grad(...)
  local set_to_none = U.parse("zero_grad", { { "set_to_none", true } }, ...).set_to_none
  for _, p in ipairs(self:parameters()) do
    if set_to_none then
      p.grad = nil -- (reading p.grad first would make a Tensor userdata for each, every step)
    else
      local g = p.grad
      if g ~= nil then
        if g.grad_fn ~= nil then g:detach_() else g:requires_grad_(false) end
        g:zero_()
      end
    end
  end
end

-- fn(m) for every submodule (children first), then self.
function Module:apply(fn)
  for _, m in ipairs(self:children()) do m:apply(fn) end
  fn(self)
  return self
end

-- ---- conversion ----

-- fn(t) -> converted tensor, for the parameters (in place: the same Parameter
-- objects keep their identity and grad) and buffers (replaced) of every module.
function Module:_apply(fn)
  for _, m in ipairs(self:children()) do m:_apply(fn) end
  local _ <close> = torch.no_grad()
  for _, p in pairs(self._parameters) do
    if p ~= nil then
      local new = fn(p)
      if not rawequal(new, p) then
        local g = p.grad
        if g ~= nil then p.grad = nil end
        p.data = new
        if g ~= nil then
          local ng = fn(g)
          p.grad = rawequal(ng, g) and g or ng
        end
      end
    end
  end
  local values = values_of(self)
  for name, b in pairs(self._buffers) do
    if b ~= nil then
      local new = fn(b)
      if not rawequal(new, b) then
        self._buffers:set(name, new)
        values[name] = new
      end
    end
  end
  return self
end

local function is_dtype(v)
  local mt = getmetatable(v)
  return mt ~= nil and mt.__name == "torch.dtype"
end

-- to(device), to(dtype), to(device, dtype), to(tensor), to({device=, dtype=, non_blocking=})
function Module:to(...)
  local n = select("#", ...)
  local device, dtype, non_blocking, memory_format
  for i = 1, n do
    local a = (select(i, ...))
    if a == nil then -- skipped
    elseif torch.is_tensor(a) then
      device, dtype = a.device, a.dtype
    elseif is_dtype(a) then
      dtype = a
    elseif type(a) == "boolean" then
      non_blocking = a
    elseif U.is_opts(a) then
      local o = U.parse("to", { { "device" }, { "dtype" }, { "non_blocking", false }, { "memory_format" } }, a)
      device = o.device or device
      dtype = o.dtype or dtype
      non_blocking = o.non_blocking
      memory_format = o.memory_format
    elseif type(a) == "string" and is_dtype(torch[a]) then
      dtype = torch[a]
    else
      device = a
    end
  end
  if dtype ~= nil and not dtype.is_floating_point then
    U.errorf("nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=%s", tostring(dtype))
  end
  local opts = non_blocking and { non_blocking = true } or nil
  if memory_format == torch.preserve_format then memory_format = nil end
  return self:_apply(function(t)
    local dt = t:is_floating_point() and dtype or nil
    local r
    if opts then r = t:to(device, dt, opts) else r = t:to(device, dt) end
    -- memory_format (channels_last) applies to the 4-D and 5-D tensors, as in PyTorch
    if memory_format and (t:dim() == 4 or t:dim() == 5) then r = r:contiguous({ memory_format = memory_format }) end
    return r
  end)
end

function Module:cpu() return self:_apply(function(t) return t:to("cpu") end) end

function Module:cuda(device)
  device = device or "cuda"
  return self:_apply(function(t) return t:cuda(device) end)
end

local function float_conv(dtype)
  return function(self)
    return self:_apply(function(t)
      if t:is_floating_point() then return t:to(torch[dtype]) end
      return t
    end)
  end
end
-- to_empty({device=}): every parameter and buffer replaced by uninitialised storage on device
function Module:to_empty(...)
  local o = U.parse("to_empty", { { "device", U.REQUIRED }, { "recurse", true } }, ...)
  return self:_apply(function(t) return torch.empty(t.shape, { dtype = t.dtype, device = o.device }) end)
end

-- type(dtype): every parameter and buffer cast to dtype (integer ones too, as PyTorch's)
function Module:type(dst_type)
  if not is_dtype(dst_type) then U.errorf("type: expected a torch.dtype, got %s", U.typename(dst_type)) end
  return self:_apply(function(t) return t:to(dst_type) end)
end

Module.float = float_conv("float32")
Module.double = float_conv("float64")
Module.half = float_conv("float16")
Module.bfloat16 = float_conv("bfloat16")

-- ---- state_dict ----

function Module:_save_to_state_dict(destination, prefix, keep_vars)
  for name, p in pairs(self._parameters) do
    if p ~= nil then destination[prefix .. name] = keep_vars and p or p:detach() end
  end
  local skip = self._non_persistent_buffers_set
  for name, b in pairs(self._buffers) do
    if b ~= nil and not skip[name] then destination[prefix .. name] = keep_vars and b or b:detach() end
  end
  if self.get_extra_state ~= Module.get_extra_state then destination[prefix .. "_extra_state"] = self:get_extra_state() end
end

-- A module that defines get_extra_state / set_extra_state keeps that value in its state
-- dict under "<prefix>_extra_state", as PyTorch's.
function Module:get_extra_state()
  U.error("Reached a code path in Module.get_extra_state() that should never be called. Please file an issue")
end
function Module:set_extra_state()
  U.error("Reached a code path in Module.set_extra_state() that should never be called. Please file an issue")
end

local function run_hooks(self, field, ...)
  local list = rawget(self, field)
  if not list then return end
  for _, h in ipairs(list) do
    if h.fn(self, ...) ~= nil and field ~= "_load_state_dict_pre_hooks" then
      U.errorf("%s hooks should return nothing (they change the state dict or the key lists in place)", field:sub(2, -7))
    end
  end
end

-- An OrderedDict (nn_util): sd["fc.weight"], pairs(sd) in PyTorch's order, sd:keys().
function Module:state_dict(...)
  local o = U.parse("state_dict", { { "destination" }, { "prefix", "" }, { "keep_vars", false } }, ...)
  local dest = o.destination or OD.new()
  run_hooks(self, "_state_dict_pre_hooks", o.prefix, o.keep_vars)
  self:_save_to_state_dict(dest, o.prefix, o.keep_vars)
  for name, m in pairs(self._modules) do
    if m ~= nil then m:state_dict({ destination = dest, prefix = o.prefix .. name .. ".", keep_vars = o.keep_vars }) end
  end
  run_hooks(self, "_state_dict_hooks", dest, o.prefix, {})
  return dest
end

local function same_shape(a, b)
  if a:dim() ~= b:dim() then return false end
  for i = 0, a:dim() - 1 do
    if a:size(i) ~= b:size(i) then return false end
  end
  return true
end

-- PyTorch's Module._load_from_state_dict: copy this module's own entries; record
-- missing and unexpected keys and error messages. assign: parameters take the
-- checkpoint tensor's storage (same Parameter objects), buffers are replaced.
function Module:_load_from_state_dict(state_dict, prefix, missing, unexpected, errors, assign)
  run_hooks(self, "_load_state_dict_pre_hooks", state_dict, prefix, {}, true, missing, unexpected, errors)
  local extra_key = prefix .. "_extra_state"
  if self.set_extra_state ~= Module.set_extra_state then
    if state_dict[extra_key] ~= nil then self:set_extra_state(state_dict[extra_key]) else missing[#missing + 1] = extra_key end
  end
  local local_state = OD.new()
  for name, p in pairs(self._parameters) do
    if p ~= nil then local_state[name] = p end
  end
  local skip = self._non_persistent_buffers_set
  for name, b in pairs(self._buffers) do
    if b ~= nil and not skip[name] then local_state[name] = b end
  end
  for name, param in pairs(local_state) do
    local key = prefix .. name
    local input = state_dict[key]
    if input ~= nil then
      if not torch.is_tensor(input) then
        errors[#errors + 1] = string.format(
          "While copying the parameter named \"%s\", expected torch.Tensor or Tensor-like object from checkpoint but received <class '%s'>",
          key, U.typename(input))
      else
        if param:dim() == 0 and input:dim() == 1 then input = input[0] end
        if not same_shape(input, param) then
          errors[#errors + 1] = string.format(
            "size mismatch for %s: copying a param with shape %s from checkpoint, the shape in current model is %s.",
            key, tostring(input.shape), tostring(param.shape))
        else
          local ok, err = pcall(function()
            local _ <close> = torch.no_grad()
            if not assign then
              param:copy_(input)
            elseif Parameter.is(param) then
              param.data = input
            else
              self._buffers:set(name, input)
              values_of(self)[name] = input
            end
          end)
          if not ok then
            errors[#errors + 1] = string.format(
              'While copying the parameter named "%s", whose dimensions in the model are %s and whose dimensions in the checkpoint are %s, an exception occurred : (%s,).',
              key, tostring(param.shape), tostring(input.shape), U.pyrepr(tostring(err)))
          end
        end
      end
    else
      missing[#missing + 1] = key
    end
  end
  for key in pairs(state_dict) do
    if type(key) == "string" and key:sub(1, #prefix) == prefix and key ~= extra_key then
      local rest = key:sub(#prefix + 1)
      local first = rest:match("^([^.]*)%.")
      if first then
        if not self._modules:has(first) then unexpected[#unexpected + 1] = key end
      elseif not local_state:has(rest) then
        unexpected[#unexpected + 1] = key
      end
    end
  end
end

local function quoted_list(keys)
  local q = {}
  for i, k in ipairs(keys) do q[i] = '"' .. k .. '"' end
  return table.concat(q, ", ")
end

-- load_state_dict(sd), load_state_dict(sd, false), load_state_dict(sd, {strict=false})
-- Returns {missing_keys=, unexpected_keys=}; raises PyTorch's message on errors
-- (missing/unexpected keys only when strict).
function Module:load_state_dict(state_dict, ...)
  local o = U.parse("load_state_dict", { { "strict", true }, { "assign", false } }, ...)
  if type(state_dict) ~= "table" then
    U.errorf("Expected state_dict to be dict-like, got %s.", U.typename(state_dict))
  end
  local sd
  if OD.is(state_dict) then
    sd = state_dict:copy()
  else -- a plain table has no order: sort its keys for deterministic messages
    local keys = {}
    for k in pairs(state_dict) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    sd = OD.new()
    for _, k in ipairs(keys) do sd[k] = state_dict[k] end
  end
  local missing, unexpected, errors = {}, {}, {}
  local function load(m, prefix)
    m:_load_from_state_dict(sd, prefix, missing, unexpected, errors, o.assign)
    for name, child in pairs(m._modules) do
      if child ~= nil then load(child, prefix .. name .. ".") end
    end
    run_hooks(m, "_load_state_dict_post_hooks", { missing_keys = missing, unexpected_keys = unexpected })
  end
  load(self, "")
  if o.strict then
    if #unexpected > 0 then
      table.insert(errors, 1, "Unexpected key(s) in state_dict: " .. quoted_list(unexpected) .. ". ")
    end
    if #missing > 0 then
      table.insert(errors, 1, "Missing key(s) in state_dict: " .. quoted_list(missing) .. ". ")
    end
  end
  if #errors > 0 then
    U.errorf("Error(s) in loading state_dict for %s:\n\t%s", self:_get_name(), table.concat(errors, "\n\t"))
  end
  return setmetatable({ missing_keys = missing, unexpected_keys = unexpected }, {
    __tostring = function(r)
      if #r.missing_keys == 0 and #r.unexpected_keys == 0 then return "<All keys matched successfully>" end
      local function lst(t)
        local q = {}
        for i, k in ipairs(t) do q[i] = "'" .. k .. "'" end
        return "[" .. table.concat(q, ", ") .. "]"
      end
      return string.format("_IncompatibleKeys(missing_keys=%s, unexpected_keys=%s)", lst(r.missing_keys), lst(r.unexpected_keys))
    end,
  })
end

-- ---- hooks ----

-- a module's hook list {{id = , fn = }, ...} also answers as PyTorch's OrderedDict id -> hook
local HookDict = { __index = {} }
function HookDict.__index:keys() local r = {}; for i, h in ipairs(self) do r[i] = h.id end; return r end
function HookDict.__index:values() local r = {}; for i, h in ipairs(self) do r[i] = h.fn end; return r end
function HookDict.__index:items() local r = {}; for i, h in ipairs(self) do r[i] = { h.id, h.fn } end; return r end
function HookDict.__tostring(self)
  local parts = {}
  for i, h in ipairs(self) do parts[i] = h.id .. ": " .. tostring(h.fn) end
  return "OrderedDict({" .. table.concat(parts, ", ") .. "})"
end

local hook_id = 0 -- as PyTorch's RemovableHandle ids: 0, 1, ... in the order handed out
local function add_hook(self, field, fn)
  local list = rawget(self, field)
  if not list then
    list = setmetatable({}, HookDict)
    rawset(self, field, list)
  end
  local id = hook_id
  hook_id = hook_id + 1
  list[#list + 1] = { id = id, fn = fn }
  return {
    id = id,
    remove = function()
      local l = rawget(self, field)
      if not l then return end
      for i, h in ipairs(l) do
        if h.id == id then table.remove(l, i); break end
      end
      if #l == 0 then rawset(self, field, nil) end
    end,
  }
end

-- state dict hooks, as PyTorch's: pre(module, prefix, keep_vars); post(module, state_dict, prefix,
-- local_metadata); load pre(module, state_dict, prefix, local_metadata, strict, missing_keys,
-- unexpected_keys, error_msgs); load post(module, incompatible_keys) where incompatible_keys has
-- missing_keys and unexpected_keys (lists it may change: load_state_dict's strict check follows)
function Module:register_state_dict_pre_hook(hook) return add_hook(self, "_state_dict_pre_hooks", hook) end
function Module:register_state_dict_post_hook(hook) return add_hook(self, "_state_dict_hooks", hook) end
function Module:register_load_state_dict_pre_hook(hook) return add_hook(self, "_load_state_dict_pre_hooks", hook) end
function Module:register_load_state_dict_post_hook(hook) return add_hook(self, "_load_state_dict_post_hooks", hook) end

-- hook(module, args) -> nil or new input (one value, or a list of values)
function Module:register_forward_pre_hook(hook) return add_hook(self, "_forward_pre_hooks", hook) end
-- hook(module, args, output) -> nil or a new output
function Module:register_forward_hook(hook) return add_hook(self, "_forward_hooks", hook) end
-- hook(module, grad_input, grad_output) -> nil or a new grad_input (a list), once the gradients
-- with respect to the module's inputs are known
function Module:register_full_backward_hook(hook) return add_hook(self, "_backward_hooks", hook) end
Module.register_backward_hook = Module.register_full_backward_hook
-- hook(module, grad_output) -> nil or a new grad_output, before the module's gradients are computed
function Module:register_full_backward_pre_hook(hook) return add_hook(self, "_backward_pre_hooks", hook) end

-- ---- printing ----

function Module:extra_repr() return "" end

local function split_lines(s)
  local out = {}
  for line in (s .. "\n"):gmatch("(.-)\n") do out[#out + 1] = line end
  return out
end

local function addindent(s, n)
  local lines = split_lines(s)
  if #lines == 1 then return s end
  local pad = string.rep(" ", n)
  for i = 2, #lines do lines[i] = pad .. lines[i] end
  return table.concat(lines, "\n")
end
Module._addindent = addindent

function Module:__tostring()
  local extra = self:extra_repr()
  local extra_lines = extra ~= "" and split_lines(extra) or {}
  local child_lines = {}
  for key, m in pairs(self._modules) do
    child_lines[#child_lines + 1] = "(" .. key .. "): " .. addindent(m == nil and "None" or tostring(m), 2)
  end
  local s = self:_get_name() .. "("
  if #extra_lines + #child_lines > 0 then
    if #extra_lines == 1 and #child_lines == 0 then
      s = s .. extra_lines[1]
    else
      local lines = {}
      for _, l in ipairs(extra_lines) do lines[#lines + 1] = l end
      for _, l in ipairs(child_lines) do lines[#lines + 1] = l end
      s = s .. "\n  " .. table.concat(lines, "\n  ") .. "\n"
    end
  end
  return s .. ")"
end

return Module
