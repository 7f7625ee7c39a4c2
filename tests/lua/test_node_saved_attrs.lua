-- grad_fn._saved_self / _saved_other / _saved_result / _saved_exponent: what an elementwise node
-- kept for backward, as PyTorch names it (values against the inputs; nil where the node did
-- not need it; through the unpack hook; errors after backward and for unknown names).
local T = ...

local function run(device)
  local o = { device = device }
  local a = torch.tensor({ 1.0, -2.0, 3.0 }, o):requires_grad_()
  local b = torch.tensor({ 4.0, 5.0, 6.0 }, o):requires_grad_()
  local y = a * b
  T.check(torch.equal(y.grad_fn._saved_self, a) and torch.equal(y.grad_fn._saved_other, b), device .. ": mul keeps self and other")
  T.check(y.grad_fn._saved_self.requires_grad, device .. ": a saved input keeps requires_grad")

  -- mul by a tensor that needs no gradient does not keep self (PyTorch: None)
  local c = torch.tensor({ 2.0, 2.0, 2.0 }, o)
  T.check((a * c).grad_fn._saved_self == nil, device .. ": self not needed, nil")

  local e = torch.exp(a)
  local r = e.grad_fn._saved_result
  T.check(torch.equal(r, e) and not rawequal(r, e), device .. ": exp keeps its result, a new value")
  T.eq(r.grad_fn and r.grad_fn:name(), "ExpBackward0", device .. ": the saved result has the node as grad_fn")

  local p = torch.pow(a, b)
  T.check(torch.equal(p.grad_fn._saved_exponent, b), device .. ": PowBackward1 names its tensor exponent")

  -- through saved-tensor hooks: the access calls unpack
  local unpacked = 0
  do
    local _ <close> = torch.autograd.graph.saved_tensors_hooks(function(t) return { t * 10 } end,
      function(v) unpacked = unpacked + 1; return v[1] / 10 end)
    y = a * b
  end
  T.check(torch.equal(y.grad_fn._saved_self, a:detach()) and unpacked == 1, device .. ": through unpack")

  T.raises(function() return y.grad_fn._saved_nothing end, "'MulBackward0' object has no attribute '_saved_nothing'",
    device .. ": an unknown name")
  y:sum():backward()
  T.raises(function() return y.grad_fn._saved_self end, "~Trying to backward through the graph a second time",
    device .. ": freed after backward")
end

T.test("saved attributes of a node (cpu)", function() run("cpu") end)
T.test("saved attributes of a node (cuda)", function()
  if not torch.cuda.is_available() then return T.skip("no CUDA device", 1) end
  run("cuda")
end)
