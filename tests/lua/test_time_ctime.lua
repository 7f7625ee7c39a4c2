-- time.ctime and time.strftime (torch_time_format.lua) against the local time's fields from
-- os.date("*t") put together by hand, as C's asctime lays them out.
local T = ...
local time = require "time"

local DAYS = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" }
local MONTHS = { "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" }

local function by_hand(secs)
  local t = os.date("*t", secs)
  return string.format("%s %s %2d %02d:%02d:%02d %d", DAYS[t.wday], MONTHS[t.month], t.day, t.hour, t.min, t.sec, t.year)
end

T.test("ctime", function()
  for _, secs in ipairs({ 0, 1e9, 1700000000, 86400 * 3 + 3661, 1234567890 }) do
    T.eq(time.ctime(secs), by_hand(secs), "ctime(" .. secs .. ")")
  end
  T.eq(#time.ctime(0), 24, "always 24 characters: the day padded with a space")
  T.eq(time.ctime(1e9 + 0.9), time.ctime(1e9), "fractions of a second dropped")
  local before = os.time()
  local now = time.ctime()
  T.check(now == by_hand(before) or now == by_hand(before + 1), "no argument: now")
  T.raises(function() time.ctime("0") end, "time.ctime: secs must be a number of seconds since the epoch, got string")
end)

T.test("strftime", function()
  local secs = 1234567890
  local t = os.date("*t", secs)
  T.eq(time.strftime("%Y-%m-%d_%H-%M-%S", secs),
    string.format("%04d-%02d-%02d_%02d-%02d-%02d", t.year, t.month, t.day, t.hour, t.min, t.sec))
  T.eq(time.strftime("%%%j", secs), string.format("%%%03d", t.yday))
  T.check(time.strftime("%Y"):match("^%d%d%d%d$") ~= nil, "no secs: now")
  T.raises(function() time.strftime(5) end, "time.strftime: format must be a string, got number")
end)
