-- torch.futures: Future (set_result, set_exception, done, wait, value, add_done_callback,
-- then), collect_all, wait_all; errors carried down then() chains; the error messages.
-- Futures of collectives (Work:get_future()) and DDP hooks: tests/dist/comm_hooks.lua.
local T = ...
local Future = torch.futures.Future

T.test("completion and then() chains", function()
  local f = Future()
  T.check(not f:done(), "a new Future is not done")
  T.raises(function() f:value() end, "Future.value: the Future is not completed yet (call wait() first, or read it in a then() callback)")
  T.raises(function() f:wait() end, "~nothing will give it one", "wait() on a Future nothing completes")
  local plus = f:then_(function(x) return x:value() + 1 end)
  local times = plus["then"](plus, function(x) return x:value() * 10 end)
  local order = {}
  f:add_done_callback(function() order[#order + 1] = "first" end)
  f:add_done_callback(function() order[#order + 1] = "second" end)
  T.check(not times:done(), "a chained Future waits for its parent")
  f:set_result(1)
  T.check(f:done() and f:value() == 1 and f:wait() == 1, "set_result completes it")
  T.eq(times:wait(), 20, "then() chains run in order: (1 + 1) * 10")
  T.eq(order, { "first", "second" }, "done callbacks in the order added")
  T.raises(function() f:set_result(2) end, "Future can only be marked completed once.")
  T.raises(function() f:set_exception("x") end, "Future can only be marked completed once.")
  local late = f:then_(function(x) return x:value() - 1 end)
  T.check(late:done() and late:value() == 0, "then() on a completed Future runs at once")
  local ran
  f:add_done_callback(function(x) ran = x end)
  T.check(ran == f, "add_done_callback on a completed Future runs at once, with the Future")
end)

T.test("errors", function()
  local g = Future()
  local bad = g:then_(function() error("boom in the callback", 0) end)
  local after = bad:then_(function(x) return x:value() + 1 end)
  local caught = bad:then_(function(x)
    local ok, err = pcall(x.value, x)
    return ok and "no error" or err
  end)
  g:set_result(0)
  T.raises(function() bad:wait() end, "boom in the callback", "an error in a then() callback is the new Future's")
  T.raises(function() after:value() end, "boom in the callback", "the error travels down the chain")
  T.eq(caught:wait(), "boom in the callback", "a callback sees its parent's error from value()")
  local e = Future()
  e:set_exception("failed on purpose")
  T.raises(function() e:wait() end, "failed on purpose", "set_exception: wait() raises")
  T.check(e:done(), "a Future with an error is done")
  T.raises(function() Future():set_exception(nil) end, "Future.set_exception: an error value expected, got nil")
  T.raises(function() Future():then_(5) end, "Future.then: callback must be callable, got int")
  T.raises(function() Future():add_done_callback("x") end, "Future.add_done_callback: callback must be callable, got str")
  T.raises(function() Future({ device = "cpu" }) end, "~unknown keyword", "Future's keywords are checked")
  T.check(not Future({ devices = { "cpu" } }):done(), "Future{devices=} is taken")
  T.check(torch.futures.is_future(Future()) and not torch.futures.is_future({}), "is_future")
end)

T.test("collect_all and wait_all", function()
  local a, b = Future(), Future()
  local all = torch.futures.collect_all({ a, b })
  a:set_result("x")
  T.check(not all:done(), "collect_all waits for every Future")
  b:set_result("y")
  local got = all:wait()
  T.check(all:done() and got[1] == a and got[2] == b, "collect_all's value is the list of Futures")
  T.eq(torch.futures.wait_all({ a, b }), { "x", "y" }, "wait_all returns the values")
  local e = Future()
  e:set_exception("failed on purpose")
  local with_error = torch.futures.collect_all({ a, e })
  T.check(with_error:done() and with_error:value()[2] == e, "collect_all completes even when a Future failed")
  T.raises(function() torch.futures.wait_all({ a, e }) end, "failed on purpose", "wait_all raises a Future's error")
  T.check(torch.futures.collect_all({}):done(), "collect_all of nothing is done")
  T.raises(function() torch.futures.collect_all({ a, 3 }) end, "collect_all: entry 2 is not a torch.futures.Future (int)")
  T.raises(function() torch.futures.wait_all(a) end, "~wait_all: a list of torch.futures.Future expected")
end)

local function tensors(device)
  local f = Future()
  local doubled = f:then_(function(x) return x:value() * 2 end)
  f:set_result(torch.arange(3, { device = device }):float())
  local v = doubled:wait()
  T.check(v.device.type == device, "the value stays on " .. device)
  T.eq(v:cpu():tolist(), { 0.0, 2.0, 4.0 }, "a tensor through then() on " .. device)
end

T.test("tensor values", function() tensors("cpu") end)
if torch.cuda.is_available() then
  T.test("tensor values on cuda", function() tensors("cuda") end)
else
  T.skip("no GPU", 2)
end
