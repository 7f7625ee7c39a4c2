-- Whole modules in checkpoints, as torch.save(model, f) / torch.load(f) pickle them, and
-- torch.serialization's allow-list for loading them:
--
--   torch.save(model, "model.pt")
--   local _ <close> = torch.serialization.safe_globals({RNNModel, nn.LSTM, nn.Linear, ...})
--   local model = torch.load("model.pt")            -- weights_only=true: classes allow-listed
--   local model = torch.load("model.pt", {weights_only=false})      -- any class defined now
--
-- A module is stored as its class name and its state, not its code (Python's pickle does the
-- same): parameters, buffers and submodules in their order, its other attributes and its
-- training flag. Tensors are safetensors entries named by the module path ("encoder.weight"),
-- and a tensor or module met twice (tied weights) is stored once and comes back shared.
-- Functions held as attributes (an activation like F.relu) are stored by their name under
-- torch. Loading makes an instance of the class defined under that name now, without calling
-- its __init, so the class must be defined (require its file) before torch.load. Hooks are
-- functions of the program: a module holding any cannot be saved.
local torch = require "torch"
local U = require "nn_util"
local json = require "json"

local serialization = torch.serialization or {}
torch.serialization = serialization

-- ---- the allow-list (weights_only loading) ----

local safe = {} -- class or function -> true
local safe_stack = {}

local function check_list(fname, list)
  if type(list) ~= "table" or getmetatable(list) ~= nil then
    U.errorf("%s: expected a list of classes or functions, got %s", fname, U.typename(list))
  end
  for i, g in ipairs(list) do
    if type(g) ~= "function" and type(g) ~= "table" then
      U.errorf("%s: entry %d is a %s, not a class or a function", fname, i, type(g))
    end
  end
end

function serialization.add_safe_globals(list)
  check_list("add_safe_globals", list)
  for _, g in ipairs(list) do safe[g] = true end
end

function serialization.get_safe_globals()
  local out = {}
  for g in pairs(safe) do out[#out + 1] = g end
  for _, frame in ipairs(safe_stack) do for _, g in ipairs(frame) do out[#out + 1] = g end end
  return out
end

function serialization.clear_safe_globals()
  for g in pairs(safe) do safe[g] = nil end
end

-- the context manager: `local _ <close> = torch.serialization.safe_globals({...})`
function serialization.safe_globals(list)
  check_list("safe_globals", list)
  local frame = table.move(list, 1, #list, 1, {})
  safe_stack[#safe_stack + 1] = frame
  return setmetatable({}, { __close = function()
    for i = #safe_stack, 1, -1 do
      if safe_stack[i] == frame then table.remove(safe_stack, i); break end
    end
  end, __name = "safe_globals" })
end

local function allowed(g)
  if safe[g] then return true end
  for _, frame in ipairs(safe_stack) do for _, x in ipairs(frame) do if x == g then return true end end end
  return false
end

local function refuse(what, global)
  error(string.format("torch.load: %s: Weights only load failed. Unsupported global: %s was not an allowed global " ..
    "by default. Please use torch.serialization.add_safe_globals({%s}) or the torch.serialization.safe_globals({%s}) " ..
    "context manager to allowlist it if you trust it, or torch.load(f, {weights_only=false}) if you trust the file.",
    what, global, global, global), 0)
end

-- ---- functions by name ----

local function Mod() return require "nn_module" end

local function function_name(f)
  for _, place in ipairs({ { torch.nn.functional, "torch.nn.functional." }, { torch.nn.init, "torch.nn.init." },
    { torch, "torch." } }) do
    for k, v in pairs(place[1]) do
      if v == f and type(k) == "string" then return place[2] .. k end
    end
  end
end

local function resolve(name)
  local v = _G
  for part in name:gmatch("[^.]+") do
    if type(v) ~= "table" then return nil end
    v = v[part]
  end
  return type(v) == "function" and v or nil
end

-- ---- the codec torch_io.lua calls ----

local codec = {}
local load_state

-- an nn.Module class itself (an attribute such as resnet's _norm_layer = nn.BatchNorm2d): stored
-- by name, as pickle stores a class
local function is_module_class(v)
  if type(v) ~= "table" or type(rawget(v, "__name")) ~= "string" then return false end
  for _, c in ipairs(Mod()._classes_by_name[v.__name] or {}) do if c == v then return true end end
  return false
end

function codec.claims(v)
  return type(v) == "function" or Mod().is_module(v) or is_module_class(v)
end

-- ',"src":"<defining chunk>"' when several classes share the class's name (resnet's and the video
-- models' BasicBlock, ...), so that loading picks the right one; "" otherwise
local function source_field(cls)
  local list = Mod()._classes_by_name[cls.__name]
  if not list or #list < 2 then return "" end
  local src = Mod()._class_source(cls)
  return src and ',"src":' .. json.string(src) or ""
end

local function child(path, k) return (path == "" and "" or path .. ".") .. k end

local function encode_module(m, path, ctx, encode)
  ctx.module_ids = ctx.module_ids or {}
  local cls = json.string(m.__name) .. source_field(m.__class)
  if ctx.module_ids[m] then return '{"$module":' .. cls .. ',"ref":' .. ctx.module_ids[m] .. "}" end
  ctx.n_modules = (ctx.n_modules or 0) + 1
  ctx.module_ids[m] = ctx.n_modules
  for k, v in next, m do
    if type(v) == "table" and k:match("hooks") and next(v) ~= nil then
      error(string.format("torch.save: cannot save '%s' (a %s): it has %s, functions of the program that a " ..
        "checkpoint cannot hold; remove them first or save its state_dict()", path, m.__name, k), 0)
    end
  end
  local function pair(k, v) return "[" .. json.string(k) .. "," .. (v == nil and "null" or encode(v, child(path, k), ctx)) .. "]" end
  local params, buffers, modules, attrs = {}, {}, {}, {}
  for k, p in pairs(m._parameters) do params[#params + 1] = pair(k, p) end
  for k, b in pairs(m._buffers) do
    buffers[#buffers + 1] = "[" .. json.string(k) .. "," .. (b == nil and "null" or encode(b, child(path, k), ctx)) ..
      "," .. tostring(not m._non_persistent_buffers_set[k]) .. "]"
  end
  for k, sub in pairs(m._modules) do modules[#modules + 1] = pair(k, sub) end
  local values, keys = getmetatable(m).__index, {}
  for k in next, values do
    if type(k) ~= "string" then
      error(string.format("torch.save: cannot save '%s' (a %s): attribute key %s is not a string", path, m.__name, tostring(k)), 0)
    end
    if k ~= "training" and not (m._parameters:has(k) or m._buffers:has(k) or m._modules:has(k)) then keys[#keys + 1] = k end
  end
  table.sort(keys)
  for _, k in ipairs(keys) do attrs[#attrs + 1] = pair(k, values[k]) end
  return '{"$module":' .. cls .. ',"id":' .. ctx.module_ids[m] .. ',"training":' .. tostring(m.training) ..
    ',"parameters":[' .. table.concat(params, ",") .. '],"buffers":[' .. table.concat(buffers, ",") ..
    '],"modules":[' .. table.concat(modules, ",") .. '],"attrs":[' .. table.concat(attrs, ",") .. "]}"
end

function codec.encode(v, path, ctx, encode)
  if type(v) == "function" then
    local name = function_name(v)
    if not name then
      error(string.format("torch.save: cannot save '%s': a function that is not one of torch's own " ..
        "(torch.*, torch.nn.functional.*) cannot be stored by name", path), 0)
    end
    return '{"$function":' .. json.string(name) .. "}"
  end
  if is_module_class(v) then return '{"$class":' .. json.string(v.__name) .. source_field(v) .. "}" end
  return encode_module(v, path, ctx, encode)
end

function codec.begin_load(weights_only)
  load_state = { weights_only = weights_only ~= false, memo = {} }
end

local function find_class(name, what, src)
  local list = Mod()._classes_by_name[name]
  local found
  for pass = src and 1 or 2, 2 do -- first the classes from the chunk that saved it, if recorded
    for i = #(list or {}), 1, -1 do -- the latest definition first
      local c = list[i]
      if c and (pass == 2 or Mod()._class_source(c) == src) and (not load_state.weights_only or allowed(c)) then
        found = c; break
      end
    end
    if found then break end
  end
  if found then return found end
  if list and next(list) ~= nil then refuse(what, name) end
  error(string.format("torch.load: %s: the saved module's class '%s' is not defined: define it (require the " ..
    "file that does) before torch.load, as Python needs the class importable", what, name), 0)
end

function codec.decode(v, dec, what)
  local st = load_state
  if v["$function"] ~= nil then
    local f = resolve(v["$function"])
    if not f then error(string.format("torch.load: %s: function %s does not exist here", what, v["$function"]), 0) end
    if st.weights_only and not allowed(f) then refuse(what, v["$function"]) end
    return f
  end
  if v["$class"] ~= nil then return find_class(v["$class"], what, v.src) end
  if v.ref ~= nil then
    return st.memo[v.ref] or error(string.format("torch.load: %s: bad checkpoint metadata (module %s)", what, v.ref), 0)
  end
  local M = Mod()
  local m = M._new_instance(find_class(v["$module"], what, v.src))
  st.memo[v.id] = m
  local values = getmetatable(m).__index
  values.training = v.training
  for _, kv in ipairs(dec(v.parameters)) do
    local p = kv[2]
    if p ~= nil then require("nn_parameter").mark(p) end
    m._parameters:set(kv[1], p); values[kv[1]] = p
  end
  for _, kv in ipairs(dec(v.buffers)) do
    m._buffers:set(kv[1], kv[2]); values[kv[1]] = kv[2]
    m._non_persistent_buffers_set[kv[1]] = (not kv[3]) or nil
  end
  for _, kv in ipairs(dec(v.modules)) do m._modules:set(kv[1], kv[2]); values[kv[1]] = kv[2] end
  for _, kv in ipairs(dec(v.attrs)) do values[kv[1]] = kv[2] end
  return m
end

torch._io_codec = codec

return serialization
