-- timeit: Python's timeit module (`import timeit` -> `local timeit = require "timeit"`).
--   timeit.Timer(stmt, setup, {timer =, globals =}): stmt and setup are Lua functions or Lua
--   source ("pass" is nothing; an expression such as "x * y" is accepted as Python's); source
--   runs with `globals` (default: the Lua globals; names not in it are looked up in the Lua
--   globals, as CPython's builtins) readable and its own assignments kept apart, as CPython's
--   exec in a fresh local namespace.
--   t:timeit(number = 1000000): seconds for number runs after one setup; t:repeat_(rep = 5,
--   number = 1000000) (`repeat` is a Lua keyword; t["repeat"] works too): a list of timeit
--   results; t:autorange(callback): number of 1, 2, 5, 10, 20, 50, ... until a run takes at
--   least 0.2 s, returns number, time_taken.
--   timeit.timeit(stmt, setup, {timer =, number =, globals =}), timeit.repeat_(...),
--   timeit.default_timer (time.perf_counter).
-- Differences: no garbage-collector switch-off (Lua's collector keeps running); no print_exc.
local U = require "nn_util"

local M = { default_timer = require("time").perf_counter }

local Timer = {}
Timer.__index = Timer
Timer.__name = "timeit.Timer"
M.Timer = setmetatable(Timer, { __call = function(cls, ...) return cls.new(...) end })

-- a snippet as a function in env: a statement, else an expression evaluated and dropped
local function compile(what, code, env)
  if type(code) == "function" then return code end
  if type(code) ~= "string" then U.errorf("%s is neither a string nor callable", what) end
  if code == "pass" or not code:find("%S") then return function() end end
  local f, err = load(code, "=" .. what, "t", env)
  if not f then f = load("local _ = (" .. code .. ")", "=" .. what, "t", env) end
  if not f then U.errorf("%s does not compile: %s", what, err) end
  return f
end

function Timer.new(...)
  local o = U.parse("Timer", { { "stmt", "pass" }, { "setup", "pass" }, { "timer" }, { "globals" } }, ...)
  -- the snippets' own assignments go to a namespace of their own; reads fall through to globals
  -- (a globals table falls back to Lua's globals, as CPython's to its builtins)
  local g = o.globals and setmetatable({}, { __index = function(_, k)
    local v = o.globals[k]
    if v == nil then v = _G[k] end
    return v
  end }) or _G
  local env = setmetatable({}, { __index = g })
  return setmetatable({ _stmt = compile("stmt", o.stmt, env), _setup = compile("setup", o.setup, env),
    _timer = o.timer or M.default_timer }, Timer)
end

function Timer:timeit(number)
  number = number or 1000000
  if math.type(number) ~= "integer" or number < 0 then U.errorf("timeit: number must be a non-negative integer, got %s", tostring(number)) end
  local stmt, timer = self._stmt, self._timer
  self._setup()
  local t0 = timer()
  for _ = 1, number do stmt() end
  return timer() - t0
end

function Timer:repeat_(rep, number)
  local out = {}
  for i = 1, rep or 5 do out[i] = self:timeit(number) end
  return out
end
Timer["repeat"] = Timer.repeat_

-- autorange's search with time_of(number) as the timer: numbers 1, 2, 5, 10, ... until one takes 0.2 s
function M._autorange(time_of, callback)
  local i = 1
  while true do
    for _, j in ipairs({ 1, 2, 5 }) do
      local number = i * j
      local taken = time_of(number)
      if callback then callback(number, taken) end
      if taken >= 0.2 then return number, taken end
    end
    i = i * 10
  end
end

function Timer:autorange(callback)
  return M._autorange(function(n) return self:timeit(n) end, callback)
end

local function opts_timer(fname, ...)
  local o = U.parse(fname, { { "stmt", "pass" }, { "setup", "pass" }, { "timer" }, { "number", 1000000 }, { "repeat", 5 },
    { "globals" } }, ...)
  return Timer.new(o.stmt, o.setup, { timer = o.timer, globals = o.globals }), o
end

function M.timeit(...)
  local t, o = opts_timer("timeit", ...)
  return t:timeit(o.number)
end

function M.repeat_(...)
  local t, o = opts_timer("repeat", ...)
  return t:repeat_(o["repeat"], o.number)
end
M["repeat"] = M.repeat_

return M
