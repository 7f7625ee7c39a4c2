-- torch.amp.custom_fwd / custom_bwd: decorators for a torch.autograd.Function's forward and
-- backward under autocast, and torch.amp.is_autocast_available.
--   MyMM.forward = torch.amp.custom_fwd(function(ctx, a, b) ... end, {device_type = "cuda", cast_inputs = torch.float32})
--   MyMM.backward = torch.amp.custom_bwd(function(ctx, g) ... end, {device_type = "cuda"})
-- (torch.amp.custom_fwd{device_type = "cuda"} alone returns the decorator.) Without cast_inputs,
-- forward runs in the caller's autocast state and backward in the same one; with it, inside an
-- autocast region the floating inputs on device_type (float64 ones aside) are cast to
-- cast_inputs and forward runs with autocast off.
require "torch_amp"
local torch = require "torch"
local U = require "nn_util"

function torch.amp.is_autocast_available(device_type)
  if type(device_type) ~= "string" then U.errorf("is_autocast_available: device_type must be a string, got %s", U.typename(device_type)) end
  return device_type == "cuda" or device_type == "cpu"
end

-- f(fn, opts) or f(opts) -> decorator
local function decorator(make)
  return function(fn, opts)
    if U.is_opts(fn) and opts == nil then
      return function(f) return make(f, fn) end
    end
    return make(fn, opts)
  end
end

local function check_fn(fname, fn)
  if type(fn) ~= "function" then U.errorf("%s: expected a function to decorate, got %s", fname, U.typename(fn)) end
end

-- v with its eligible tensors cast to dtype (lists looked into)
local function cast(v, device_type, dtype)
  if torch.is_tensor(v) then
    if v:is_floating_point() and v.device.type == device_type and v.dtype ~= torch.float64 then return v:to(dtype) end
    return v
  end
  if type(v) == "table" and getmetatable(v) == nil then
    local out = {}
    for k, x in pairs(v) do out[k] = cast(x, device_type, dtype) end
    return out
  end
  return v
end

torch.amp.custom_fwd = decorator(function(fwd, opts)
  check_fn("custom_fwd", fwd)
  local o = U.parse("custom_fwd", { { "device_type", U.REQUIRED }, { "cast_inputs" } }, opts or {})
  if type(o.device_type) ~= "string" then U.errorf("custom_fwd: device_type must be a string, got %s", U.typename(o.device_type)) end
  return function(ctx, ...)
    ctx._dtype = torch.get_autocast_dtype(o.device_type)
    local on = torch.is_autocast_enabled(o.device_type)
    if o.cast_inputs == nil then
      ctx._fwd_used_autocast = on
      return fwd(ctx, ...)
    end
    ctx._fwd_used_autocast = false
    if not on then return fwd(ctx, ...) end
    local args = table.pack(...)
    for i = 1, args.n do args[i] = cast(args[i], o.device_type, o.cast_inputs) end
    return torch.autocast(o.device_type, { enabled = false }, function() return fwd(ctx, table.unpack(args, 1, args.n)) end)
  end
end)

torch.amp.custom_bwd = decorator(function(bwd, opts)
  check_fn("custom_bwd", bwd)
  local o = U.parse("custom_bwd", { { "device_type", U.REQUIRED } }, opts or {})
  return function(ctx, ...)
    local args = table.pack(...)
    return torch.autocast(o.device_type, { enabled = ctx._fwd_used_autocast == true, dtype = ctx._dtype },
      function() return bwd(ctx, table.unpack(args, 1, args.n)) end)
  end
end)

-- torch.cuda.amp.custom_fwd / custom_bwd: deprecated spellings with device_type "cuda"
local function cuda_form(name)
  return function(fn, opts)
    U.warn(string.format("torch.cuda.amp.%s(args...) is deprecated. Please use torch.amp.%s(args..., device_type='cuda') instead.", name, name))
    local o = {}
    for k, v in pairs(U.is_opts(fn) and fn or opts or {}) do o[k] = v end
    o.device_type = "cuda"
    if U.is_opts(fn) or fn == nil then return torch.amp[name](o) end
    return torch.amp[name](fn, o)
  end
end
torch.cuda.amp.custom_fwd = cuda_form("custom_fwd")
torch.cuda.amp.custom_bwd = cuda_form("custom_bwd")

torch.GradScaler = torch.amp.GradScaler
