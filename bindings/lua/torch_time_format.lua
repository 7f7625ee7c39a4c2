-- Python's time.ctime and time.strftime, which the C time module (bindings/time.c) lacks:
-- training scripts stamp their log lines and file names with them.
--   time.ctime([secs])            'Sat Nov 28 19:31:18 2026' (the day padded with a space)
--   time.strftime(format[, secs]) the local time now (or at secs since the epoch), C's strftime
-- Python's second argument is a struct_time; here it is seconds since the epoch (time.time()).
local time = require "time"

local function when(fname, secs)
  if secs == nil then return os.time() end
  if type(secs) ~= "number" then
    error(string.format("time.%s: secs must be a number of seconds since the epoch, got %s", fname, type(secs)), 3)
  end
  return math.floor(secs)
end

function time.ctime(secs)
  return os.date("%a %b %e %H:%M:%S %Y", when("ctime", secs))
end

function time.strftime(format, secs)
  if type(format) ~= "string" then error("time.strftime: format must be a string, got " .. type(format), 2) end
  return os.date(format, when("strftime", secs))
end

return time
