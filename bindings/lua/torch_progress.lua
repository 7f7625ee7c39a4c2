-- torch.utils.progress(iterable, {desc=, total=, ...}): tqdm's progress bar.
--
--   for x, y in torch.utils.progress(loader, {desc = "epoch 1"}) do ... end
--   local bar = torch.utils.progress(100); for i in bar do bar:set_postfix{loss = 0.5} end
--
-- iterable: a DataLoader or anything with :iter() (and #), a Lua list, a count n
-- (0 .. n-1), or an iterator function (give total= for a percentage). The call
-- returns the bar, which the generic for calls for each item, plus the bar again
-- as the loop's closing value, so break finishes the bar and stops the loader.
--
-- On a terminal (stderr by default) the bar redraws in place, at most every
-- mininterval seconds: "desc:  45%|████▌     | 211/469 [00:01<00:01, 180.52it/s]".
-- Off a terminal it prints nothing, unless lines=true: then one line per update.
-- Options: desc, total, leave (true: keep the last bar), disable, mininterval
-- (0.1 s; 1 s for lines), unit ("it"), file (io.stderr or io.stdout), ncols,
-- ascii (bar of "#"), lines, initial, postfix.
local torch = require "torch"
local clock = require("time").perf_counter
local C = torch._data

torch.utils = torch.utils or {}

local Bar = {}
Bar.__index = Bar

local keys = {desc = true, total = true, leave = true, disable = true, mininterval = true, unit = true, file = true,
  ncols = true, ascii = true, lines = true, initial = true, postfix = true}

local function fmt_time(s)
  s = math.floor(s + 0.5)
  local h, m = s // 3600, s % 3600 // 60
  if h > 0 then return string.format("%d:%02d:%02d", h, m, s % 60) end
  return string.format("%02d:%02d", m, s % 60)
end

local function fmt_rate(rate, unit)
  if not rate or rate ~= rate then return "?" .. unit .. "/s" end
  if rate > 0 and rate < 1 then return string.format("%.2fs/%s", 1 / rate, unit) end
  return string.format("%.2f%s/s", rate, unit)
end

local blocks = {" ", "▏", "▎", "▍", "▌", "▋", "▊", "▉", "█"}

local function bar_text(frac, width, ascii)
  if width <= 0 then return "" end
  frac = math.max(0, math.min(1, frac))
  if ascii then
    local full = math.floor(frac * width)
    return string.rep("#", full) .. string.rep(" ", width - full)
  end
  local eighths = math.floor(frac * width * 8)
  local full, part = eighths // 8, eighths % 8
  local s = string.rep("█", full)
  if full < width then s = s .. blocks[part + 1] .. string.rep(" ", width - full - 1) end
  return s
end

local function postfix_text(p)
  if p == nil then return "" end
  if type(p) ~= "table" then return ", " .. tostring(p) end
  local names = {}
  for k in pairs(p) do names[#names + 1] = tostring(k) end
  table.sort(names)
  local parts = {}
  for _, k in ipairs(names) do
    local v = p[k]
    if torch.is_tensor(v) and v:numel() == 1 then v = v:item() end
    if math.type(v) == "float" then v = string.format("%.3g", v) end
    parts[#parts + 1] = k .. "=" .. tostring(v)
  end
  return #parts > 0 and ", " .. table.concat(parts, ", ") or ""
end

-- The bar's line, tqdm's layout.
function Bar:line(now)
  local elapsed = (now or clock()) - self.start
  local n, total = self.n, self.total
  local rate = (elapsed > 0 and n > self.initial) and (n - self.initial) / elapsed or nil
  local desc = self.desc and (self.desc .. ": ") or ""
  local post = postfix_text(self.postfix)
  if not total then
    return string.format("%s%d%s [%s, %s%s]", desc, n, self.unit, fmt_time(elapsed), fmt_rate(rate, self.unit), post)
  end
  local frac = total > 0 and n / total or 1
  local remaining = (rate and rate > 0) and fmt_time((total - n) / rate) or "?"
  local left = string.format("%s%3d%%|", desc, math.floor(frac * 100))
  local right = string.format("| %d/%d [%s<%s, %s%s]", n, total, fmt_time(elapsed), remaining, fmt_rate(rate, self.unit), post)
  local width = self.ncols - utf8.len(left) - utf8.len(right)
  if width < 1 then return left:sub(1, -2) .. right:sub(2) end
  return left .. bar_text(frac, width, self.ascii) .. right
end

function Bar:display(final)
  if not self.show then return end
  local now = clock()
  if not final and now - self.last < self.mininterval then return end
  self.last = now
  local text = self:line(now)
  if self.tty then
    local pad = math.max(0, (self.shown or 0) - utf8.len(text))
    self.file:write("\r", text, string.rep(" ", pad))
    self.shown = utf8.len(text)
  else
    self.file:write(text, "\n")
  end
  self.file:flush()
end

function Bar:update(n)
  self.n = self.n + (n or 1)
  self:display(false)
end

function Bar:refresh() self:display(true) end
function Bar:set_description(desc) self.desc = desc; self:display(false) end
function Bar:set_postfix(p) self.postfix = p; self:display(false) end

-- Print a message on stdout without breaking the bar (tqdm.write): the bar's line is
-- cleared, the message written (to stdout, even when stdout is not the bar's terminal),
-- and the bar drawn again.
function Bar:write(msg)
  if self.show and self.tty then
    self.file:write("\r", string.rep(" ", self.shown or 0), "\r")
    self.file:flush()
    io.stdout:write(tostring(msg), "\n")
    io.stdout:flush()
    self.shown = 0
    self:display(true)
  else
    io.stdout:write(tostring(msg), "\n")
  end
end

function Bar:close()
  if self.closed then return end
  self.closed = true
  if self.closer then self.closer:finish_if_any() end
  if not self.show then return end
  if self.tty then
    if self.leave then
      self:display(true)
      self.file:write("\n")
    else
      self.file:write("\r", string.rep(" ", self.shown or 0), "\r")
    end
  elseif self.lines then
    self:display(true)
  end
  self.file:flush()
end

Bar.__close = function(self) self:close() end

-- The generic for calls the bar: count the item just done, then fetch the next.
Bar.__call = function(self)
  if self.closed then return nil end
  if self.started then self:update(1) else self.started = true end
  return self.forward(self.it())
end

Bar.__len = function(self) return self.total or 0 end
Bar.__tostring = function(self) return self:line() end

-- the iterator, the total and the loop's closing value for what we wrap
local function source_of(x)
  if math.type(x) == "integer" then
    local i = -1
    return function() i = i + 1; if i < x then return i end end, x
  end
  if type(x) == "function" then return x, nil end
  if (type(x) == "table" or type(x) == "userdata") and type(x.iter) == "function" then
    local ok, n = pcall(function() return #x end)
    local fn, _, _, closer = x:iter()
    return fn, ok and math.type(n) == "integer" and n or nil, closer
  end
  if type(x) == "table" then
    local i = 0
    return function() i = i + 1; return x[i] end, #x
  end
  error("progress: expected a DataLoader, a list, a count or an iterator function, got " .. type(x), 3)
end

function torch.utils.progress(iterable, opts)
  opts = opts or {}
  for k in pairs(opts) do
    if not keys[k] then error(string.format("progress: unknown keyword '%s'", tostring(k)), 2) end
  end
  local it, total, closer = source_of(iterable)
  local file = opts.file or io.stderr
  local fd = file == io.stdout and 1 or file == io.stderr and 2 or nil
  local tty = fd ~= nil and C.isatty(fd)
  local self = setmetatable({
    it = it, total = opts.total or total, desc = opts.desc, unit = opts.unit or "it", file = file, tty = tty,
    lines = opts.lines or false, leave = opts.leave ~= false, ascii = opts.ascii or false,
    n = opts.initial or 0, initial = opts.initial or 0, postfix = opts.postfix, last = -math.huge,
    ncols = opts.ncols or (fd and C.term_width(fd)) or tonumber(os.getenv("COLUMNS") or "") or 80,
  }, Bar)
  self.mininterval = opts.mininterval or (tty and 0.1 or 1.0)
  self.show = not opts.disable and (tty or self.lines)
  self.start = clock()
  if closer then
    self.closer = {finish_if_any = function()
      local mt = getmetatable(closer)
      if mt and mt.__close then mt.__close(closer) end
    end}
  end
  self.forward = function(a, ...)
    if a == nil then self:close(); return nil end
    return a, ...
  end
  self:display(true)
  return self, nil, nil, self
end

return torch.utils.progress
