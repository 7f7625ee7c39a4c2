-- Mixed precision: torch.autocast and GradScaler (the C half is bindings/amp.c, the
-- policy engine/autocast.c).
--
--   local _ <close> = torch.autocast("cuda")                -- with autocast(): ...
--   local _ <close> = torch.autocast("cpu", { dtype = torch.bfloat16, enabled = true, cache_enabled = true })
--   torch.autocast("cuda", function() ... end)              -- runs the function in a region
--   torch.autocast("cuda", { dtype = torch.bfloat16 }, function() ... end)
--   Net.forward = torch.autocast.wrap(Net.forward)          -- @autocast() on forward: the policy
--   Net.forward = torch.cuda.amp.autocast.wrap(Net.forward, { dtype = torch.bfloat16 })
--                                                           -- holds inside the module, DataParallel's replicas too
--   torch.amp.autocast = torch.autocast; torch.cuda.amp.autocast(opts) and torch.cpu.amp.autocast(opts) imply the device
--   torch.is_autocast_enabled([device_type]), get_autocast_dtype, set_autocast_enabled, ...
--
--   local scaler = torch.amp.GradScaler("cuda", { init_scale = 65536, growth_factor = 2, backoff_factor = 0.5,
--                                                 growth_interval = 2000, enabled = true })   -- torch.cuda.amp.GradScaler(opts)
--   scaler:scale(loss):backward(); scaler:unscale_(opt) (optional: clip after it); scaler:step(opt); scaler:update()
--
-- GradScaler keeps the scale (float32) and the growth tracker (int32) as device tensors.
-- unscale_ is one fused pass over every gradient of a device (multiply by 1/scale, set
-- found_inf on inf/nan); update runs on the device. step() without unscale_ before it
-- checks for inf/nan in a pass that only reads (a float32 .grad that autocast's float16
-- gradient was cast into carries flags from that cast, and only they are read), and hands found_inf and the scale to the
-- optimizer, whose fused kernels skip the update on the device when found_inf is set
-- (their step counters then live on the device too) and unscale each gradient as they
-- read it (.grad stays scaled, as with PyTorch's fused optimizers); a training step reads
-- nothing back. Only an
-- optimizer without that support (a user's own), or params spread over several devices,
-- make step() read found_inf on the host as PyTorch's GradScaler does for its unfused
-- optimizers. get_scale() and state_dict() read the scale, and only they.
local torch = require "torch"
local C = torch._amp

local warn = require("nn_util").warn -- a UserWarning, once per message

local function is_opts(v) return type(v) == "table" and getmetatable(v) == nil end

local function check_keys(fname, opts, allowed, argno)
  for k in pairs(opts) do
    if not allowed[k] then
      error(string.format("bad argument #%d to '%s' (unknown keyword '%s')", argno, fname, tostring(k)), 3)
    end
  end
end

-- "cuda", "cpu" from a string ("cuda:1" too) or a torch.device
local function type_of(device)
  if type(device) == "string" then return (device:match("^[^:]*")) end
  local ok, t = pcall(function() return device.type end)
  return ok and t or nil
end

local function cuda_available() return torch.cuda ~= nil and torch.cuda.is_available() end

-- ---- autocast ----

local region_keys = { dtype = true, enabled = true, cache_enabled = true, device_type = true }

-- enter a region: device_type, opts (may be nil)
local function enter(fname, device, opts)
  opts = opts or {}
  check_keys(fname, opts, region_keys, 2)
  device = device or opts.device_type
  if device == nil then error(string.format("bad argument #1 to '%s' (device_type expected)", fname), 3) end
  local dt = type_of(device)
  if dt ~= "cuda" and dt ~= "cpu" then
    error(string.format("bad argument #1 to '%s' (User specified an unsupported autocast device_type '%s')", fname, tostring(device)), 3)
  end
  local enabled = opts.enabled
  if enabled == nil then enabled = true end
  if enabled and dt == "cuda" and not cuda_available() then
    warn("User provided device_type of 'cuda', but CUDA is not available. Disabling")
    enabled = false
  end
  local cache = opts.cache_enabled
  if cache == nil then cache = true end
  return C.region(device, enabled, opts.dtype, cache)
end

-- fn(...) inside region r, which closes however fn ends
local function run_in(r, fn, ...)
  local _ <close> = r
  return fn(...)
end

-- autocast(device_type [, opts] [, fn]) for a given device_type (nil: the first argument)
local function make_autocast(fname, fixed_device)
  local function call(...)
    local n, args = select("#", ...), { ... }
    local i, device = 1, fixed_device
    if not device and not is_opts(args[1]) then device, i = args[1], 2 end
    local opts, fn
    if is_opts(args[i]) then opts, i = args[i], i + 1 end
    if type(args[i]) == "function" then fn, i = args[i], i + 1 end
    if i <= n then error(string.format("bad argument #%d to '%s' (options table or function expected, got %s)", i, fname, type(args[i])), 2) end
    local r = enter(fname, device, opts)
    if fn then return run_in(r, fn) end
    return r
  end
  local ac = {}
  -- wrap(fn [, device_type] [, opts]): fn running inside a region at every call (a decorator)
  function ac.wrap(fn, a, b)
    if type(fn) ~= "function" then error(string.format("bad argument #1 to '%s.wrap' (function expected, got %s)", fname, type(fn)), 2) end
    local device, opts = fixed_device, nil
    if is_opts(a) then opts = a elseif a ~= nil then device, opts = a, b end
    device = device or (opts and opts.device_type) or "cuda"
    return function(...) return run_in(enter(fname, device, opts), fn, ...) end
  end
  return setmetatable(ac, {
    __call = function(_, ...) return call(...) end,
    __name = fname,
    __tostring = function() return "<" .. fname .. ">" end,
  })
end

torch.autocast = make_autocast("autocast")
torch.amp = torch.amp or {}
torch.amp.autocast = torch.autocast
torch.cuda = torch.cuda or {}
torch.cuda.amp = torch.cuda.amp or {}
torch.cuda.amp.autocast = make_autocast("torch.cuda.amp.autocast", "cuda")
torch.cpu = torch.cpu or {}
torch.cpu.amp = torch.cpu.amp or {}
torch.cpu.amp.autocast = make_autocast("torch.cpu.amp.autocast", "cpu")

local U = require "nn_util"
torch.is_autocast_enabled = U.checked("is_autocast_enabled", { "device_type:str?" },
  function(device) return C.is_enabled(device or "cuda") end)
function torch.is_autocast_cpu_enabled() return C.is_enabled("cpu") end
torch.get_autocast_dtype = U.checked("get_autocast_dtype", { "device_type:str" }, function(device) return C.get_dtype(device) end)
function torch.get_autocast_gpu_dtype() return C.get_dtype("cuda") end
function torch.get_autocast_cpu_dtype() return C.get_dtype("cpu") end
-- set_autocast_enabled([device_type,] enabled)
function torch.set_autocast_enabled(a, b)
  if b == nil and type(a) == "boolean" then return C.set_enabled("cuda", a) end
  return C.set_enabled(a, b)
end
function torch.set_autocast_dtype(device, dtype) return C.set_dtype(device, dtype) end
torch.is_autocast_cache_enabled = C.is_cache_enabled
torch.set_autocast_cache_enabled = C.set_cache_enabled
torch.clear_autocast_cache = C.clear_cache
torch.autocast_increment_nesting = C.increment_nesting
torch.autocast_decrement_nesting = C.decrement_nesting

-- PyTorch's kernels by their names
torch._amp_foreach_non_finite_check_and_unscale_ = C.unscale_
function torch._amp_update_scale_(scale, tracker, found_inf, growth_factor, backoff_factor, growth_interval)
  C.update_scale_(scale, tracker, found_inf, growth_factor, backoff_factor, growth_interval)
  return scale
end

-- ---- GradScaler ----

local READY, UNSCALED, STEPPED = "READY", "UNSCALED", "STEPPED"

local GradScaler = {}
GradScaler.__index = GradScaler
GradScaler.__name = "GradScaler"

local scaler_keys = { device = true, init_scale = true, growth_factor = true, backoff_factor = true, growth_interval = true,
  enabled = true }

local function new_states() return setmetatable({}, { __mode = "k" }) end

local function new_scaler(fname, device, opts)
  opts = opts or {}
  check_keys(fname, opts, scaler_keys, 2)
  local self = setmetatable({}, GradScaler)
  self._device = type_of(device or opts.device or "cuda")
  local enabled = opts.enabled
  if enabled == nil then enabled = true end
  if enabled and self._device == "cuda" and not cuda_available() then
    warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
    enabled = false
  end
  self._enabled = enabled
  if enabled then
    self._init_scale = opts.init_scale or 2.0 ^ 16
    self._growth_factor = opts.growth_factor or 2.0
    self._backoff_factor = opts.backoff_factor or 0.5
    self._growth_interval = opts.growth_interval or 2000
    if not (self._growth_factor > 1.0) then error("The growth factor must be > 1.0.", 3) end
    if not (self._backoff_factor < 1.0) then error("The backoff factor must be < 1.0.", 3) end
    if math.type(self._growth_interval) ~= "integer" or self._growth_interval <= 0 then
      error("growth_interval must be a positive integer", 3)
    end
    self._init_growth_tracker = 0
    self._per_optimizer_states = new_states()
  end
  return self
end

-- GradScaler([device,] [opts]) or GradScaler{device=, ...}
local function scaler_ctor(fname, fixed_device)
  return function(a, b)
    if is_opts(a) then return new_scaler(fname, fixed_device, a) end
    if b ~= nil and not is_opts(b) then
      error(string.format("%s: the options must be a keyword table, got %s", fname, require("nn_util").typename(b)), 2)
    end
    return new_scaler(fname, fixed_device or a, b)
  end
end

torch.amp.GradScaler = scaler_ctor("GradScaler")
torch.cuda.amp.GradScaler = scaler_ctor("torch.cuda.amp.GradScaler", "cuda")
torch.cpu.amp.GradScaler = scaler_ctor("torch.cpu.amp.GradScaler", "cpu")
torch.amp.grad_scaler = { GradScaler = torch.amp.GradScaler }

function GradScaler:_lazy_init_scale_growth_tracker(dev)
  self._scale = torch.full({}, self._init_scale, { dtype = torch.float32, device = dev })
  self._growth_tracker = torch.full({}, self._init_growth_tracker, { dtype = torch.int32, device = dev })
end

function GradScaler:_check_scale_growth_tracker(fname)
  local fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
  if self._scale == nil then error("Attempted " .. fname .. " but _scale is None.  " .. fix, 3) end
  return self._scale, self._growth_tracker
end

function GradScaler:_state(optimizer)
  local s = self._per_optimizer_states[optimizer]
  if not s then
    s = { stage = READY, found_inf_per_device = {} }
    self._per_optimizer_states[optimizer] = s
  end
  return s
end

-- scale(outputs): a tensor times the scale, or a (nested) list of them
function GradScaler:scale(outputs)
  if not self._enabled then return outputs end
  if torch.is_tensor(outputs) then
    if self._scale == nil then self:_lazy_init_scale_growth_tracker(outputs.device) end
    return outputs * self._scale:to(outputs.device)
  end
  if type(outputs) ~= "table" then error("outputs must be a Tensor or an iterable of Tensors", 2) end
  local out = {}
  for k, v in pairs(outputs) do out[k] = self:scale(v) end
  return out
end

-- the gradients of optimizer's params, unscaled in one pass per device (inv_scale nil: only
-- checked for inf/nan); found_inf per device
function GradScaler:_unscale_grads_(optimizer, inv_scale, allow_fp16)
  local per_device, order = {}, {}
  local _ <close> = torch.no_grad()
  for _, group in ipairs(optimizer.param_groups) do
    for _, p in ipairs(group.params) do
      local key, half = C.grad_device(p) -- (p.grad would make a Tensor userdata a step)
      if key then
        if not allow_fp16 and half then error("Attempting to unscale FP16 gradients.", 3) end
        if not per_device[key] then
          per_device[key] = {}
          order[#order + 1] = key
        end
        table.insert(per_device[key], p)
      end
    end
  end
  local found = {}
  for _, key in ipairs(order) do
    local f = torch.zeros({}, { dtype = torch.float32, device = key })
    if inv_scale then C.unscale_grads_(per_device[key], f, inv_scale:to(f.device)) else C.check_grads_(per_device[key], f) end
    found[key] = f
  end
  return found
end

function GradScaler:unscale_(optimizer)
  if not self._enabled then return end
  self:_check_scale_growth_tracker("unscale_")
  local st = self:_state(optimizer)
  if st.stage == UNSCALED then
    error("unscale_() has already been called on this optimizer since the last update().", 2)
  elseif st.stage == STEPPED then
    error("unscale_() is being called after step().", 2)
  end
  -- the reciprocal in float64, then float32 (PyTorch's way: FP32 division can be imprecise)
  local inv_scale = (1 / self._scale:double()):to(torch.float32)
  st.found_inf_per_device = self:_unscale_grads_(optimizer, inv_scale, false)
  st.stage = UNSCALED
end

-- step(optimizer, ...): unscale_ if not done, then optimizer:step(...) unless a gradient
-- held an inf or nan. Returns what optimizer:step returned (nil when skipped).
function GradScaler:step(optimizer, ...)
  if not self._enabled then return optimizer:step(...) end
  local first = ...
  if is_opts(first) and first.closure ~= nil then
    error("Closure use is not currently supported if GradScaler is enabled.", 2)
  end
  self:_check_scale_growth_tracker("step")
  local st = self:_state(optimizer)
  if st.stage == STEPPED then error("step() has already been called since the last update().", 2) end
  local supported = optimizer._step_supports_amp_scaling and select("#", ...) == 0
  local fused = false
  if st.stage == READY then
    if supported then
      -- as PyTorch with its fused optimizers: the inf check alone (a pass that writes
      -- nothing), and the update divides each gradient by the scale as it reads it, so
      -- .grad stays scaled (unscale_ first, e.g. to clip, and it is unscaled in place)
      st.found_inf_per_device = self:_unscale_grads_(optimizer, nil, false) -- fp16 gradients: the error of PyTorch's default optimizers
      local devices = 0
      for _ in pairs(st.found_inf_per_device) do devices = devices + 1 end
      fused = devices == 1
    end
    if not fused then self:unscale_(optimizer) end
  end
  local any = false
  for _ in pairs(st.found_inf_per_device) do any = true end
  if not any then error("No inf checks were recorded for this optimizer.", 2) end
  local devices, only = 0, nil
  for _, f in pairs(st.found_inf_per_device) do devices, only = devices + 1, f end
  local ret
  if fused then
    ret = optimizer:step({ found_inf = only, grad_scale = self._scale:to(only.device) })
  elseif supported and devices == 1 then
    ret = optimizer:step({ found_inf = only }) -- skipped on the device if it holds an inf or nan
  else
    local found = 0
    for _, f in pairs(st.found_inf_per_device) do found = found + f:item() end -- reads back: a sync
    if found == 0 then ret = optimizer:step(...) end
  end
  st.stage = STEPPED
  return ret
end

-- update([new_scale]): the scale for the next iteration, on the device
function GradScaler:update(new_scale)
  if not self._enabled then return end
  local scale, tracker = self:_check_scale_growth_tracker("update")
  if new_scale ~= nil then
    if type(new_scale) == "number" then
      scale:fill_(new_scale)
    else
      local reason = "new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor with requires_grad=False."
      if not torch.is_tensor(new_scale) or new_scale.device.type ~= scale.device.type or new_scale:numel() ~= 1 or
          new_scale.requires_grad then
        error(reason, 2)
      end
      scale:copy_(new_scale:reshape({}))
    end
  else
    local combined
    for _, st in pairs(self._per_optimizer_states) do
      for _, f in pairs(st.found_inf_per_device) do
        f = f:to(scale.device)
        combined = combined and combined + f or f
      end
    end
    if combined == nil then error("No inf checks were recorded prior to update.", 2) end
    C.update_scale_(scale, tracker, combined, self._growth_factor, self._backoff_factor, self._growth_interval)
  end
  self._per_optimizer_states = new_states()
end

function GradScaler:_get_scale_async() return self._scale end

function GradScaler:get_scale()
  if not self._enabled then return 1.0 end
  if self._scale == nil then return self._init_scale + 0.0 end
  return self._scale:item()
end

function GradScaler:get_growth_factor() return self._growth_factor end
function GradScaler:set_growth_factor(v) self._growth_factor = v end
function GradScaler:get_backoff_factor() return self._backoff_factor end
function GradScaler:set_backoff_factor(v) self._backoff_factor = v end
function GradScaler:get_growth_interval() return self._growth_interval end
function GradScaler:set_growth_interval(v) self._growth_interval = v end
function GradScaler:is_enabled() return self._enabled end

function GradScaler:_get_growth_tracker()
  if not self._enabled then return 0 end
  if self._growth_tracker == nil then return self._init_growth_tracker end
  return math.tointeger(self._growth_tracker:item())
end

-- PyTorch's keys; {} when disabled
function GradScaler:state_dict()
  if not self._enabled then return {} end
  return { scale = self:get_scale(), growth_factor = self._growth_factor, backoff_factor = self._backoff_factor,
    growth_interval = self._growth_interval, _growth_tracker = self:_get_growth_tracker() }
end

local function number_of(v)
  if torch.is_tensor(v) then return v:item() end
  return v
end

function GradScaler:load_state_dict(sd)
  if not self._enabled then return end
  if next(sd) == nil then
    error("The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.", 2)
  end
  self._init_scale = number_of(sd.scale)
  if self._scale ~= nil then self._scale:fill_(self._init_scale) end
  self._growth_factor = number_of(sd.growth_factor)
  self._backoff_factor = number_of(sd.backoff_factor)
  self._growth_interval = math.tointeger(number_of(sd.growth_interval))
  self._init_growth_tracker = math.tointeger(number_of(sd._growth_tracker))
  if self._growth_tracker ~= nil then self._growth_tracker:fill_(self._init_growth_tracker) end
end

function GradScaler:__tostring()
  if not self._enabled then return "GradScaler(enabled=False)" end
  return string.format("GradScaler(device='%s', scale=%s, growth_factor=%s, backoff_factor=%s, growth_interval=%d)", self._device,
    self._scale and "<on device>" or tostring(self._init_scale), tostring(self._growth_factor), tostring(self._backoff_factor),
    self._growth_interval)
end

return torch.amp
