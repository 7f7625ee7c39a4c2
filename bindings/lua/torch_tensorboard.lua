-- torch.utils.tensorboard.SummaryWriter: TensorBoard event files
-- (events.out.tfevents.<time>.<host>.<pid>.<n>) that TensorBoard reads; the
-- record format is in engine/tfevents.h.
--
--   local SummaryWriter = torch.utils.tensorboard.SummaryWriter  -- or require "torch.utils.tensorboard"
--   local writer = SummaryWriter("runs/exp1")    -- or SummaryWriter{log_dir=, comment=, filename_suffix=}
--   writer:add_scalar("train_loss", loss:item(), step)
--   writer:add_scalars("loss", {train = 0.5, valid = 0.7}, step)  -- one run per key: runs/exp1/loss_train ...
--   writer:add_histogram("fc.weight", model.fc.weight, epoch)     -- bins: "tensorflow" (default), a count or edges
--   writer:add_image("input", img_chw, step)                      -- dataformats "CHW" (default), "HWC", "HW", "NCHW" ...
--   writer:add_text("note", "hello", step)
--   writer:close()
-- The plugins' methods (add_hparams, add_pr_curve, add_embedding, add_audio, add_mesh, ...) are in
-- torch_tensorboard_more.lua.
--
-- Every event reaches the file in one write() as it is logged, so a crash
-- loses nothing already logged; flush() has nothing left to do, and
-- flush_secs / max_queue are accepted for compatibility. Positional
-- arguments follow PyTorch's order; keyword arguments go in a trailing table
-- (writer:add_scalar("lr", lr, {global_step = epoch})). Writing after close()
-- opens a new event file, as PyTorch does.
local torch = require "torch"
local time = require "time"
local C = torch._io
local image_C = torch._image

local M = {}

local function fail(fmt, ...) error(string.format(fmt, ...), 3) end

-- Positional values in spec order and/or a trailing keyword table.
local function args(fname, spec, ...)
  local n = select("#", ...)
  local last = n > 0 and select(n, ...) or nil -- select(0, ...) raises: SummaryWriter()
  local out = {}
  if n > 0 and type(last) == "table" and getmetatable(last) == nil and rawget(last, 1) == nil and n > spec.min then
    local known = {}
    for _, name in ipairs(spec) do known[name] = true end
    for k, v in pairs(last) do
      if not known[k] then fail("%s() got an unexpected keyword argument '%s'", fname, tostring(k)) end
      out[k] = v
    end
    n = n - 1
  end
  if n > #spec then fail("%s() takes at most %d arguments (%d given)", fname, #spec, n) end
  for i = 1, n do
    local v = (select(i, ...))
    if v ~= nil then out[spec[i]] = v end
  end
  return out
end

local function number_of(fname, v, what)
  if torch.is_tensor(v) then
    if v:numel() ~= 1 then fail("%s: %s must be a number or a one-element tensor, got shape %s", fname, what, tostring(v.shape)) end
    return v:item()
  end
  if type(v) ~= "number" then fail("%s: %s must be a number, got %s", fname, what, type(v)) end
  return v
end

local function step_of(fname, v)
  if v == nil then return nil end
  return math.tointeger(math.floor(number_of(fname, v, "global_step")))
end

-- ---- the writer ----

local SummaryWriter = {}
SummaryWriter.__index = SummaryWriter
SummaryWriter.__name = "SummaryWriter"
M.SummaryWriter = SummaryWriter

-- PyTorch's default: runs/<Mon><day>_<H-M-S>_<host><comment>
function M._default_log_dir(comment)
  return "runs/" .. os.date("%b%d_%H-%M-%S") .. "_" .. C.hostname() .. (comment or "")
end

local uid = 0
local function new_file(dir, suffix)
  C.makedirs(dir)
  local name = string.format("events.out.tfevents.%010d.%s.%d.%d%s", math.floor(time.time()), C.hostname(), C.getpid(),
    uid, suffix)
  uid = uid + 1
  return C.event_writer(dir .. "/" .. name, time.time())
end

local INIT = { "log_dir", "comment", "purge_step", "max_queue", "flush_secs", "filename_suffix", min = 0 }

setmetatable(SummaryWriter, {
  __call = function(cls, ...)
    local o = args("SummaryWriter", INIT, ...)
    local self = setmetatable({}, cls)
    local comment = o.comment or ""
    local dir = o.log_dir
    if dir == nil then
      dir = M._default_log_dir(comment)
    elseif type(dir) ~= "string" then
      fail("SummaryWriter: log_dir must be a string, got %s", type(dir))
    end
    self.log_dir = dir
    self.filename_suffix = o.filename_suffix or ""
    self.purge_step, self.max_queue, self.flush_secs = o.purge_step, o.max_queue or 10, o.flush_secs or 120
    self.all_writers = {}
    self:_writer() -- the event file exists from the start, as in PyTorch
    return self
  end,
})

function SummaryWriter:_writer()
  if not self.file_writer then self.file_writer = new_file(self.log_dir, self.filename_suffix) end
  return self.file_writer
end

function SummaryWriter:get_logdir() return self.log_dir end

local function walltime_of(fname, v)
  if v == nil then return time.time() end
  return number_of(fname, v, "walltime")
end

function SummaryWriter:add_scalar(...)
  local o = args("add_scalar", { "tag", "scalar_value", "global_step", "walltime", "new_style", "double_precision", min = 2 }, ...)
  if type(o.tag) ~= "string" then fail("add_scalar: tag must be a string, got %s", type(o.tag)) end
  local v = number_of("add_scalar", o.scalar_value, "scalar_value")
  self:_writer():scalar(o.tag, v, step_of("add_scalar", o.global_step), walltime_of("add_scalar", o.walltime))
end

function SummaryWriter:add_scalars(...)
  local o = args("add_scalars", { "main_tag", "tag_scalar_dict", "global_step", "walltime", min = 2 }, ...)
  if type(o.main_tag) ~= "string" then fail("add_scalars: main_tag must be a string, got %s", type(o.main_tag)) end
  if type(o.tag_scalar_dict) ~= "table" then fail("add_scalars: tag_scalar_dict must be a table") end
  local step, wall = step_of("add_scalars", o.global_step), walltime_of("add_scalars", o.walltime)
  local tags = {}
  for k in pairs(o.tag_scalar_dict) do tags[#tags + 1] = k end
  if getmetatable(o.tag_scalar_dict) == nil then table.sort(tags, function(a, b) return tostring(a) < tostring(b) end) end
  for _, tag in ipairs(tags) do
    local dir = self.log_dir .. "/" .. o.main_tag:gsub("/", "_") .. "_" .. tostring(tag)
    local w = self.all_writers[dir]
    if not w then
      w = new_file(dir, self.filename_suffix)
      self.all_writers[dir] = w
    end
    w:scalar(o.main_tag, number_of("add_scalars", o.tag_scalar_dict[tag], "value of '" .. tostring(tag) .. "'"), step, wall)
  end
end

-- TensorBoard's default buckets: +-1e-12 * 1.1^k up to 1e20, and 0
local default_bins
local function tensorflow_bins()
  if default_bins then return default_bins end
  local pos, v = {}, 1e-12
  while v < 1e20 do pos[#pos + 1] = v; v = v * 1.1 end
  local out = {}
  for i = #pos, 1, -1 do out[#out + 1] = -pos[i] end
  out[#out + 1] = 0.0
  for i = 1, #pos do out[#out + 1] = pos[i] end
  default_bins = out
  return out
end

function SummaryWriter:add_histogram(...)
  local o = args("add_histogram", { "tag", "values", "global_step", "bins", "walltime", "max_bins", min = 2 }, ...)
  if type(o.tag) ~= "string" then fail("add_histogram: tag must be a string, got %s", type(o.tag)) end
  local values = o.values
  if type(values) == "number" then values = { values } end
  if type(values) == "table" and not torch.is_tensor(values) then values = torch.tensor(values, { dtype = torch.float64 }) end
  if not torch.is_tensor(values) then fail("add_histogram: values must be a tensor or a list of numbers") end
  local bins = o.bins or "tensorflow"
  if bins == "tensorflow" then
    bins = tensorflow_bins()
  elseif torch.is_tensor(bins) then
    bins = bins:tolist()
  elseif type(bins) ~= "table" and math.type(bins) ~= "integer" then
    fail("add_histogram: bins must be 'tensorflow', an integer or a list of bin edges, got %s", tostring(bins))
  end
  local max_bins = o.max_bins and math.tointeger(o.max_bins) or 0
  self:_writer():histogram(o.tag, values:detach(), bins, max_bins, step_of("add_histogram", o.global_step),
    walltime_of("add_histogram", o.walltime))
end

-- torch.utils.tensorboard's make_grid: N images in rows of ncols (8) on a black canvas
local function make_grid(nchw, ncols)
  if nchw:size(1) == 1 then nchw = nchw:expand(nchw:size(0), 3, nchw:size(2), nchw:size(3)) end
  if nchw:size(1) ~= 3 then fail("add_images: images must have 1 or 3 channels, got %d", nchw:size(1)) end
  local n, h, w = nchw:size(0), nchw:size(2), nchw:size(3)
  ncols = math.min(n, ncols or 8)
  local nrows = (n + ncols - 1) // ncols
  local canvas = torch.zeros(3, h * nrows, w * ncols, { dtype = nchw.dtype })
  for i = 0, n - 1 do
    local y, x = i // ncols, i % ncols
    canvas:narrow(1, y * h, h):narrow(2, x * w, w):copy_(nchw:select(0, i))
  end
  return canvas
end

-- An image tensor in the given layout as uint8 H x W x 3 (or 4), PyTorch's scaling:
-- uint8 as it is, other dtypes times 255, clipped to [0, 255], truncated.
local function to_hwc(fname, img, fmt)
  if not torch.is_tensor(img) then fail("%s: img_tensor must be a tensor", fname) end
  if type(fmt) ~= "string" then fail("%s: dataformats must be a string", fname) end
  fmt = fmt:upper()
  img = img:detach():cpu()
  if #fmt ~= img:dim() then
    fail("%s: dataformats '%s' does not match an image tensor of %d dims", fname, fmt, img:dim())
  end
  local seen = {}
  for c in fmt:gmatch(".") do
    if seen[c] or not ("NCHW"):find(c, 1, true) then fail("%s: bad dataformats '%s'", fname, fmt) end
    seen[c] = true
  end
  local function perm(order)
    local dims = {}
    for c in order:gmatch(".") do
      local p = fmt:find(c, 1, true)
      if not p then fail("%s: dataformats '%s' lacks '%s'", fname, fmt, c) end
      dims[#dims + 1] = p - 1
    end
    return img:permute(dims)
  end
  local hwc
  if #fmt == 4 then
    hwc = make_grid(perm("NCHW")):permute({ 1, 2, 0 })
  elseif #fmt == 3 then
    hwc = perm("HWC")
    if hwc:size(2) == 1 then hwc = hwc:expand(hwc:size(0), hwc:size(1), 3) end
  elseif #fmt == 2 then
    local hw = perm("HW")
    hwc = hw:unsqueeze(2):expand(hw:size(0), hw:size(1), 3)
  else
    fail("%s: dataformats must have 2 to 4 letters, got '%s'", fname, fmt)
  end
  local c = hwc:size(2)
  if c ~= 3 and c ~= 4 then fail("%s: images must have 1, 3 or 4 channels, got %d", fname, c) end
  local scale = hwc.dtype == torch.uint8 and 1 or 255
  hwc = (hwc:to(torch.float32) * scale):clamp(0, 255):to(torch.uint8):contiguous()
  return hwc
end

local function write_image(self, fname, o, default_fmt)
  if type(o.tag) ~= "string" then fail("%s: tag must be a string, got %s", fname, type(o.tag)) end
  local hwc = to_hwc(fname, o.img_tensor, o.dataformats or default_fmt)
  local png = image_C.encode_png(hwc, 6)
  self:_writer():image(o.tag, png, hwc:size(0), hwc:size(1), hwc:size(2), step_of(fname, o.global_step),
    walltime_of(fname, o.walltime))
end

function SummaryWriter:add_image(...)
  local o = args("add_image", { "tag", "img_tensor", "global_step", "walltime", "dataformats", min = 2 }, ...)
  write_image(self, "add_image", o, "CHW")
end

function SummaryWriter:add_images(...)
  local o = args("add_images", { "tag", "img_tensor", "global_step", "walltime", "dataformats", min = 2 }, ...)
  write_image(self, "add_images", o, "NCHW")
end

function SummaryWriter:add_text(...)
  local o = args("add_text", { "tag", "text_string", "global_step", "walltime", min = 2 }, ...)
  if type(o.tag) ~= "string" then fail("add_text: tag must be a string, got %s", type(o.tag)) end
  if type(o.text_string) ~= "string" then fail("add_text: text_string must be a string, got %s", type(o.text_string)) end
  self:_writer():text(o.tag .. "/text_summary", o.text_string, step_of("add_text", o.global_step),
    walltime_of("add_text", o.walltime))
end

-- Every event is already in the file (see the header); kept for PyTorch's API.
function SummaryWriter:flush() end

function SummaryWriter:close()
  if self.file_writer then self.file_writer:close() end
  self.file_writer = nil
  for dir, w in pairs(self.all_writers) do
    w:close()
    self.all_writers[dir] = nil
  end
end

SummaryWriter.__close = SummaryWriter.close

function SummaryWriter:__tostring()
  return string.format("<torch.utils.tensorboard.writer.SummaryWriter log_dir='%s'>", self.log_dir)
end

-- for the plugins' methods in torch_tensorboard_more.lua
M._helpers = { args = args, number_of = number_of, step_of = step_of, walltime_of = walltime_of, to_hwc = to_hwc,
  make_grid = make_grid, new_file = new_file }

torch.utils = torch.utils or {}
torch.utils.tensorboard = M
package.loaded["torch.utils.tensorboard"] = M
return M
