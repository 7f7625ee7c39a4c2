-- torch.futures: Future, collect_all, wait_all (PyTorch's torch.futures).
--
--   local fut = torch.futures.Future()
--   local doubled = fut["then"](fut, function(f) return f:value() * 2 end)   -- or fut:then_(...)
--   fut:set_result(torch.ones(2)); doubled:wait()                            -- tensor([2., 2.])
--   dist.all_reduce(t, {async_op = true}):get_future()                       -- value: {t}
--
-- nnrepl runs Lua on one thread, so a Future is completed by whoever waits for it: a Future
-- made from a Work (Work:get_future()) completes when the work is waited for, or when done()
-- finds the work finished; then() callbacks run at that moment, in the thread that waits.
-- A Future that nothing can complete (made by Future() and never given a result) raises
-- an error from wait() instead of blocking forever.
local torch = require "torch"
local U = require "nn_util"

local futures = torch.futures or {}
torch.futures = futures

local Future = { __name = "torch.futures.Future" }
Future.__index = Future
Future.__tostring = function() return "<torch.futures.Future>" end

local function new_future(source)
  return setmetatable({ _done = false, _callbacks = {}, _source = source }, Future)
end

function futures.Future(...)
  if select("#", ...) > 0 then
    local o = ... -- PyTorch's keyword: devices (CUDA devices the value lives on; nothing to do here)
    U.parse("Future", { { "devices" } }, o)
  end
  return new_future(nil)
end

function futures.is_future(v) return getmetatable(v) == Future end

local function callable(f)
  local mt = getmetatable(f)
  return type(f) == "function" or (type(mt) == "table" and mt.__call ~= nil)
end
futures._callable = callable

local function check(f, name)
  if getmetatable(f) ~= Future then U.errorf("Future.%s: a torch.futures.Future expected, got %s", name, U.typename(f)) end
end

local function complete(f, value, err)
  if f._done then U.error("Future can only be marked completed once.") end
  f._done, f._value, f._error = true, value, err
  local cbs = f._callbacks
  f._callbacks = {}
  for _, cb in ipairs(cbs) do cb(f) end
end

function Future:set_result(result)
  check(self, "set_result")
  complete(self, result, nil)
end

-- PyTorch takes an exception object; here the error value (a message) wait() raises
function Future:set_exception(result)
  check(self, "set_exception")
  if result == nil then U.error("Future.set_exception: an error value expected, got nil") end
  complete(self, nil, result)
end

-- complete it from its source (a work, the futures it depends on) if it has one
local function settle(f, block)
  if not f._done and f._source then f._source(block) end
end

function Future:done()
  check(self, "done")
  settle(self, false)
  return self._done
end

function Future:wait()
  check(self, "wait")
  settle(self, true)
  if not self._done then
    U.error("Future.wait: this Future has no result and nothing will give it one (nnrepl runs Lua on one thread: " ..
      "call set_result() before waiting)")
  end
  if self._error ~= nil then error(self._error, 0) end
  return self._value
end

function Future:value()
  check(self, "value")
  if not self._done then U.error("Future.value: the Future is not completed yet (call wait() first, or read it in a then() callback)") end
  if self._error ~= nil then error(self._error, 0) end
  return self._value
end

-- cb(fut) once fut completes (at once if it has); an error in cb reaches whoever completes fut
function Future:add_done_callback(callback)
  check(self, "add_done_callback")
  if not callable(callback) then U.errorf("Future.add_done_callback: callback must be callable, got %s", U.typename(callback)) end
  if self._done then callback(self) else self._callbacks[#self._callbacks + 1] = callback end
end

-- A new Future holding cb(fut)'s result once fut completes; an error in cb (fut's own error
-- included, raised by fut:value()) becomes the new Future's error.
Future["then"] = function(self, callback)
  check(self, "then")
  if not callable(callback) then U.errorf("Future.then: callback must be callable, got %s", U.typename(callback)) end
  local parent = self
  local child = new_future(function(block) settle(parent, block) end)
  local function run(f)
    local ok, r = pcall(callback, f)
    if ok then complete(child, r, nil) else complete(child, nil, r) end
  end
  if self._done then run(self) else self._callbacks[#self._callbacks + 1] = run end
  return child
end
Future.then_ = Future["then"] -- `then` is a Lua keyword: fut:then_(cb) reads better than fut["then"](fut, cb)

-- A Future whose value is `value` once waitable w (a Work: wait(), is_completed()) is done.
function futures._from_work(w, value)
  local f
  f = new_future(function(block)
    if f._done or not (block or w:is_completed()) then return end
    local ok, err = pcall(w.wait, w)
    if ok then complete(f, value, nil) else complete(f, nil, err) end
  end)
  return f
end

local function future_list(list, fn)
  if type(list) ~= "table" or getmetatable(list) ~= nil then
    U.errorf("%s: a list of torch.futures.Future expected, got %s", fn, U.typename(list))
  end
  for i, f in ipairs(list) do
    if getmetatable(f) ~= Future then U.errorf("%s: entry %d is not a torch.futures.Future (%s)", fn, i, U.typename(f)) end
  end
  return list
end

-- A Future completed (with the list itself as value) once every one of futures is; errors
-- stay in the futures of the list.
function futures.collect_all(list)
  future_list(list, "collect_all")
  local all = new_future(function(block)
    for _, f in ipairs(list) do settle(f, block) end
  end)
  local left = #list
  local function one()
    left = left - 1
    if left == 0 then complete(all, list, nil) end
  end
  if left == 0 then complete(all, list, nil) end
  for _, f in ipairs(list) do f:add_done_callback(one) end
  return all
end

-- Waits for every future and returns their values; the first error is raised.
function futures.wait_all(list)
  future_list(list, "wait_all")
  local out = {}
  for _, f in ipairs(list) do settle(f, true) end
  for i, f in ipairs(list) do out[i] = f:wait() end
  return out
end

return futures
