-- torch.save(obj, path) and torch.load(path, {map_location=, weights_only=}):
-- checkpoints as safetensors files (engine/safetensors.c, written atomically). torch.load also
-- reads the zip checkpoints PyTorch's torch.save writes (pth.lua).
--
--   torch.save(model:state_dict(), "model.pth")
--   model:load_state_dict(torch.load("model.pth", {map_location = device}))
--   torch.save({model = model:state_dict(), optimizer = opt:state_dict(), epoch = 3}, "ckpt.pth")
--
-- File layout (PyTorch's safetensors.torch.load_file reads the tensors):
--  * Every tensor in obj is one safetensors entry, named by its path in obj
--    joined with '.': a state_dict's keys as they are ("fc.weight"),
--    {model = sd} as "model.fc.weight", an optimizer's state as
--    "state.0.exp_avg"; elements of a Lua list count from 0 ("1" is the second).
--    A tensor saved alone is named "tensor". A name already taken gets "#2",
--    "#3" appended. The same tensor object met twice is stored once. Data is
--    the tensor's values in row-major order, whatever its strides or device.
--  * __metadata__ = {"format": "pt", "nnrepl": <skeleton>}. The skeleton is
--    obj as JSON with each tensor replaced by a reference:
--      integer       JSON integer            3
--      float         always with '.' or 'e'  0.001, 1.0, 1e-08
--      inf/-inf/nan  {"$float": "inf"}
--      string        JSON string (not UTF-8: {"$bytes": "<hex>"})
--      boolean       true / false
--      tensor        {"$tensor": "<entry name>"} plus "device": "cuda:0" when not
--                    on the CPU and "requires_grad": true when set
--      dtype, device {"$dtype": "float32"}, {"$device": "cuda:1"}; torch.Size {"$size": [2, 3]}
--      nn.OrderedDict {"$odict": [[key, value], ...]} in its order (a state_dict)
--      Lua list      JSON array (keys 1..n, n >= 1)
--      table of string keys (none starting with '$'): JSON object, keys sorted
--      other tables  {"$table": [[key, value], ...]}: integer keys such as an
--                    optimizer's state {[0] = {...}}, mixed keys; numbers first
--  * A file without "nnrepl" metadata (written by safetensors.torch.save_file)
--    loads as an nn.OrderedDict name -> tensor in the header's order.
--
-- torch.load puts each tensor back on the device it was saved from (an error
-- if that device is missing, as in PyTorch) unless map_location says otherwise:
-- a device or "cpu"/"cuda:0", a table {["cuda:1"] = "cuda:0"} renaming
-- locations, or a function(tensor, location) returning a tensor (nil: keep).
-- weights_only (default true) only matters for whole modules (torch_serialization.lua):
-- their classes must be allowed by torch.serialization.add_safe_globals / safe_globals.
local torch = require "torch"
local C = torch._io

-- ---- JSON ----

local json = require "json"
local json_string, json_float = json.string, json.float

local function json_decode(text, what)
  return json.decode(text, function(msg, pos)
    error(string.format("torch.load: %s: bad checkpoint metadata (%s at byte %d)", what, msg, pos), 0)
  end)
end

-- ---- saving ----

local function od_class()
  local ok, U = pcall(require, "nn_util")
  return ok and U.OrderedDict or nil
end

local function mt_name(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__name") or nil
end

local function key_order(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then return ta == "number" end
  return a < b
end

local function describe(path) return path == "" and "the saved object" or "'" .. path .. "'" end

-- Walks obj; returns its skeleton as JSON text. ctx holds the tensor list.
local function encode(v, path, ctx)
  local tv = type(v)
  if tv == "number" then
    if math.type(v) == "integer" then return tostring(v) end
    if v ~= v then return '{"$float":"nan"}' end
    if v == math.huge then return '{"$float":"inf"}' end
    if v == -math.huge then return '{"$float":"-inf"}' end
    return json_float(v)
  elseif tv == "string" then
    if utf8.len(v) then return json_string(v) end
    return '{"$bytes":"' .. v:gsub(".", function(c) return string.format("%02x", c:byte()) end) .. '"}'
  elseif tv == "boolean" then
    return tostring(v)
  elseif torch.is_tensor(v) then
    local name = ctx.seen[v]
    if not name then
      name = path == "" and "tensor" or path
      if ctx.taken[name] then
        local i = 2
        while ctx.taken[name .. "#" .. i] do i = i + 1 end
        name = name .. "#" .. i
      end
      ctx.taken[name], ctx.seen[v] = true, name
      ctx.names[#ctx.names + 1], ctx.tensors[#ctx.tensors + 1] = name, v
    end
    local out = '{"$tensor":' .. json_string(name)
    if v.device.type ~= "cpu" then out = out .. ',"device":' .. json_string(tostring(v.device)) end
    if v.requires_grad then out = out .. ',"requires_grad":true' end
    return out .. "}"
  end
  local name = mt_name(v)
  if name == "torch.dtype" then return '{"$dtype":' .. json_string((tostring(v):gsub("^torch%.", ""))) .. "}" end
  if name == "torch.device" then return '{"$device":' .. json_string(tostring(v)) .. "}" end
  if name == "torch.Size" then return '{"$size":[' .. table.concat(v:totable(), ",") .. "]}" end
  local codec = torch._io_codec -- whole modules and functions (torch_serialization.lua)
  if codec and codec.claims(v) then return codec.encode(v, path, ctx, encode) end
  if tv ~= "table" or (name and name ~= "OrderedDict") then
    local what = name or tv
    if type(v) == "table" and v.state_dict then
      error(string.format("torch.save: cannot save %s (a %s): nnrepl checkpoints hold tensors and plain values; save its state_dict() instead",
        describe(path), what), 0)
    end
    error(string.format("torch.save: cannot save %s: values of type %s are not supported", describe(path), what), 0)
  end
  if ctx.active[v] then error(string.format("torch.save: %s contains itself", describe(path)), 0) end
  ctx.active[v] = true
  local function child(k) -- the path of a child, list elements counted from 0
    return (path == "" and "" or path .. ".") .. tostring(k)
  end
  local out
  local OD = od_class()
  if name == "OrderedDict" and OD and OD.is(v) then
    local parts = {}
    for k, x in pairs(v) do
      if x ~= nil then
        parts[#parts + 1] = "[" .. encode(k, path, ctx) .. "," .. encode(x, child(k), ctx) .. "]"
      end
    end
    out = '{"$odict":[' .. table.concat(parts, ",") .. "]}"
  else
    local keys, n, strings_only, dollar = {}, 0, true, false
    for k in next, v do
      keys[#keys + 1] = k
      if type(k) ~= "string" then strings_only = false elseif k:sub(1, 1) == "$" then dollar = true end
      if math.type(k) == "integer" and k >= 1 then n = math.max(n, k) end
    end
    table.sort(keys, key_order)
    if #keys > 0 and n == #keys then -- a list 1..n
      local parts = {}
      for i = 1, n do parts[i] = encode(v[i], child(i - 1), ctx) end
      out = "[" .. table.concat(parts, ",") .. "]"
    elseif strings_only and not dollar then
      local parts = {}
      for i, k in ipairs(keys) do parts[i] = json_string(k) .. ":" .. encode(v[k], child(k), ctx) end
      out = "{" .. table.concat(parts, ",") .. "}"
    else
      local parts = {}
      for i, k in ipairs(keys) do
        if type(k) ~= "string" and type(k) ~= "number" and type(k) ~= "boolean" then
          error(string.format("torch.save: %s has a key of type %s, which cannot be saved", describe(path), type(k)), 0)
        end
        parts[i] = "[" .. encode(k, path, ctx) .. "," .. encode(v[k], child(k), ctx) .. "]"
      end
      out = '{"$table":[' .. table.concat(parts, ",") .. "]}"
    end
  end
  ctx.active[v] = nil
  return out
end

function torch.save(obj, path, ...)
  path = require("pyos_sys").pathlike(path)
  if type(path) ~= "string" then
    error(string.format("bad argument #2 to 'save' (file path expected, got %s)", type(path)), 2)
  end
  local ctx = { names = {}, tensors = {}, seen = {}, taken = {}, active = {} }
  local skeleton = encode(obj, "", ctx)
  local ok, err = pcall(C.save, path, ctx.names, ctx.tensors, { "format", "nnrepl" }, { "pt", skeleton })
  if not ok then error("torch.save: " .. tostring(err):gsub("^torch%.save: ", ""), 2) end
end

-- ---- loading ----

local function location_of(v) -- "cpu", "cuda:0"
  return v.device.type == "cpu" and "cpu" or tostring(v.device)
end

-- A function (tensor, saved location) -> tensor from map_location.
local function mapper(map_location)
  local function to(dev)
    return function(t) return t:to(dev) end
  end
  if map_location == nil then
    return function(t, loc)
      if loc == "cpu" then return t end
      if loc:match("^cuda") and not (torch.cuda and torch.cuda.is_available()) then
        error("torch.load: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. " ..
          "If you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') " ..
          "to map your storages to the CPU.", 0)
      end
      return t:to(loc)
    end
  end
  if type(map_location) == "string" or mt_name(map_location) == "torch.device" then
    local dev = torch.device(map_location)
    return function(t) return t:to(dev) end
  end
  if type(map_location) == "function" then
    return function(t, loc)
      local r = map_location(t, loc)
      if r == nil then return t end
      if not torch.is_tensor(r) then error("torch.load: map_location function must return a tensor or nil", 0) end
      return r
    end
  end
  if type(map_location) == "table" then
    local default = mapper(nil)
    return function(t, loc)
      local dest = map_location[loc]
      if dest == nil then return default(t, loc) end
      return to(torch.device(dest))(t)
    end
  end
  error("torch.load: map_location must be a device, a string, a table or a function", 0)
end

local function decode(v, tensors, map, what)
  if type(v) ~= "table" then return v end
  local mt = getmetatable(v)
  if mt and mt.array then
    local out = {}
    for i = 1, v.n do out[i] = decode(v[i], tensors, map, what) end
    return out
  end
  local function pairs_of(list)
    if type(list) ~= "table" then error("torch.load: " .. what .. ": bad checkpoint metadata", 0) end
    return list
  end
  if v["$tensor"] ~= nil then
    local t = tensors[v["$tensor"]]
    if not t then
      error(string.format("torch.load: %s: tensor '%s' is missing from the file", what, tostring(v["$tensor"])), 0)
    end
    if not t.done then
      local x = map(t.tensor, v.device or "cpu")
      if v.requires_grad then x:requires_grad_(true) end
      t.done, t.tensor = true, x
    end
    return t.tensor
  end
  if v["$module"] ~= nil or v["$function"] ~= nil or v["$class"] ~= nil then
    return torch._io_codec.decode(v, function(x) return decode(x, tensors, map, what) end, what)
  end
  if v["$float"] ~= nil then
    local f = ({ inf = math.huge, ["-inf"] = -math.huge, nan = 0.0 / 0.0 })[v["$float"]]
    return f
  end
  if v["$bytes"] ~= nil then return (v["$bytes"]:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end)) end
  if v["$dtype"] ~= nil then return torch[v["$dtype"]] end
  if v["$device"] ~= nil then return torch.device(v["$device"]) end
  if v["$size"] ~= nil then return torch.Size(decode(v["$size"], tensors, map, what)) end
  if v["$odict"] ~= nil then
    local od = od_class().new()
    for _, kv in ipairs(decode(pairs_of(v["$odict"]), tensors, map, what)) do od[kv[1]] = kv[2] end
    return od
  end
  if v["$table"] ~= nil then
    local out = {}
    for _, kv in ipairs(decode(pairs_of(v["$table"]), tensors, map, what)) do out[kv[1]] = kv[2] end
    return out
  end
  local out = {}
  for k, x in pairs(v) do out[k] = decode(x, tensors, map, what) end
  return out
end

local LOAD_KEYS = { map_location = true, weights_only = true, mmap = true }

function torch.load(path, map_location, opts)
  path = require("pyos_sys").pathlike(path)
  if type(path) ~= "string" then
    error(string.format("bad argument #1 to 'load' (file path expected, got %s)", type(path)), 2)
  end
  if opts == nil and type(map_location) == "table" and getmetatable(map_location) == nil then
    local is_opts = false -- a keyword table, not a {saved = wanted} location table
    for k in pairs(map_location) do if LOAD_KEYS[k] then is_opts = true end end
    if is_opts then map_location, opts = nil, map_location end
  end
  opts = opts or {}
  for k in pairs(opts) do
    if not LOAD_KEYS[k] then error(string.format("bad argument #3 to 'load' (unknown keyword '%s')", tostring(k)), 2) end
  end
  if opts.map_location ~= nil then map_location = opts.map_location end
  local map = mapper(map_location)
  if require("pth").sniff(path) then -- PyTorch's own format (torch.save in Python)
    local ok, obj = pcall(require("pth").load, path, map)
    if not ok then error(tostring(obj), 2) end
    return obj
  end
  local ok, names, list, meta = pcall(C.load, path)
  if not ok then error("torch.load: " .. tostring(names), 2) end
  local tensors = {}
  for i, name in ipairs(names) do tensors[name] = { tensor = list[i] } end
  if meta.nnrepl == nil then -- a plain safetensors file: a state_dict in the header's order
    local od = od_class().new()
    for i, name in ipairs(names) do od[name] = map(list[i], "cpu") end
    return od
  end
  local ok2, result = pcall(function()
    if torch._io_codec then torch._io_codec.begin_load(opts.weights_only) end
    return decode(json_decode(meta.nnrepl, "'" .. path .. "'"), tensors, map, "'" .. path .. "'")
  end)
  if not ok2 then error(tostring(result), 2) end
  return result
end

return torch
