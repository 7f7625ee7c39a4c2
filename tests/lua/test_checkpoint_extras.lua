-- torch.utils.checkpoint extras: detach_variable, noop_context_fn and context_fn=,
-- set_checkpoint_early_stop, device states, CheckpointPolicy, selective checkpointing's refusal
local T = ...
local cp = torch.utils.checkpoint

local function run(dev)
  T.test("detach_variable on " .. dev, function()
    local a = torch.ones(2, { device = dev }):requires_grad_()
    local b = torch.zeros(2, { device = dev })
    local out = cp.detach_variable({ a * 2, b, "s" })
    T.eq(#out, 3)
    T.eq(out[1].requires_grad, true, "requires_grad kept")
    T.eq(out[1].is_leaf, true, "detached")
    T.eq(out[1]:cpu():tolist(), { 2.0, 2.0 })
    T.eq(out[2].requires_grad, false)
    T.eq(out[3], "s", "non-tensors kept")
    T.raises(function() cp.detach_variable(a) end, "Only tuple of tensors is supported. Got Unsupported input type: Tensor")
  end)

  T.test("checkpoint with context_fn on " .. dev, function()
    local w = torch.tensor({ 1.0, -2.0, 3.0 }, { dtype = torch.float64, device = dev }):requires_grad_()
    local calls = 0
    local f = function(x) calls = calls + 1; return (x * w):tanh():sum() end
    local x = torch.tensor({ 0.5, 0.25, -1.0 }, { dtype = torch.float64, device = dev }):requires_grad_()
    local y = cp.checkpoint(f, x, { use_reentrant = false, context_fn = cp.noop_context_fn })
    y:backward()
    T.eq(calls, 2, "forward, then the recomputation")
    -- d/dx sum(tanh(x*w)) = w * (1 - tanh(x*w)^2), by hand
    local xs, ws = { 0.5, 0.25, -1.0 }, { 1.0, -2.0, 3.0 }
    local want = {}
    for i = 1, 3 do want[i] = ws[i] * (1 - math.tanh(xs[i] * ws[i]) ^ 2) end
    T.near(x.grad:cpu():tolist(), want, 1e-12)
    T.raises(function() cp.checkpoint(f, x, { use_reentrant = true, context_fn = cp.noop_context_fn }) end,
      "~Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    local sac = function() return cp.create_selective_checkpoint_contexts({ "aten.mm.default" }) end
    T.raises(function() cp.checkpoint(f, x, { use_reentrant = false, context_fn = sac }) end,
      "~selective activation checkpointing (create_selective_checkpoint_contexts) is not supported")
    T.raises(function() cp.checkpoint(f, x, { use_reentrant = false, context_fn = function() return 1, 2 end }) end,
      "~context_fn other than noop_context_fn is not supported")
  end)

  T.test("determinism_check on " .. dev, function()
    local x = torch.ones(3, { device = dev }):requires_grad_()
    local n = 0
    local changing = function(a) n = n + 1; return n == 1 and a * 2 or (a * 2):double() end
    local y = cp.checkpoint(changing, x, { use_reentrant = false })
    local ok, err = pcall(function() y:sum():backward() end)
    T.check(not ok and cp.CheckpointError:matches(err), "a recomputation with another dtype is a CheckpointError")
    local want = string.format("saved metadata: {'shape': torch.Size([3]), 'dtype': torch.float32, 'device': device(type='%s'%s)}\n" ..
      "recomputed metadata: {'shape': torch.Size([3]), 'dtype': torch.float64", dev, dev == "cuda" and ", index=0" or "")
    T.check(type(err) == "string" and err:find("tensor at position 0:\n" .. want, 1, true) ~= nil, "the report: " .. tostring(err))
    local w = torch.tensor({ 1.0, 2.0 }, { dtype = torch.float64, device = dev }):requires_grad_()
    cp.checkpoint(function(a) return a * a end, w, { use_reentrant = false, determinism_check = "none" }):sum():backward()
    T.eq(w.grad:cpu():tolist(), { 2.0, 4.0 }, "d/dw sum(w^2) = 2w")
    T.raises(function() cp.checkpoint(function(a) return a end, w, { use_reentrant = false, determinism_check = "strict" }) end,
      "determinism_check should be one of ['default', 'none'], but got strict")
  end)
end

run("cpu")
if torch.cuda.is_available() then
  run("cuda")
  T.test("device states on cuda", function()
    local ids, states = cp.get_device_states(torch.ones(1), { torch.ones(1, { device = "cuda:0" }) }, 3)
    T.eq(ids, { 0 })
    local a = torch.rand(3, { device = "cuda" })
    cp.set_device_states(ids, states)
    local b = torch.rand(3, { device = "cuda" })
    torch.cuda.set_rng_state(states[1], 0)
    T.check(torch.equal(torch.rand(3, { device = "cuda" }), b), "the state put back draws the same numbers")
  end)
else
  T.skip("no CUDA device", 4)
end

T.test("get_device_states with CPU tensors", function()
  local ids, states = cp.get_device_states(torch.ones(1), "x")
  T.eq(ids, {})
  T.eq(states, {})
  T.raises(function() cp.set_device_states({ 0 }, {}) end, "~devices and states must be lists of the same length")
  T.raises(function() cp.set_device_states({}, {}, { device_type = "xpu" }) end, "~device_type xpu is not supported")
end)

T.test("set_checkpoint_early_stop", function()
  T.eq(cp._early_stop, true)
  do
    local _ <close> = cp.set_checkpoint_early_stop(false)
    T.eq(cp._early_stop, false)
  end
  T.eq(cp._early_stop, true, "restored at the end of the block")
  T.eq(cp.set_checkpoint_early_stop(false, function() return cp._early_stop end), false, "function form")
  T.raises(function() cp.set_checkpoint_early_stop(1) end, "~enable must be a boolean")
end)

T.test("CheckpointPolicy and contexts", function()
  local P = cp.CheckpointPolicy
  T.eq({ P.MUST_SAVE.value, P.PREFER_SAVE.value, P.MUST_RECOMPUTE.value, P.PREFER_RECOMPUTE.value }, { 0, 1, 2, 3 })
  T.eq(tostring(P.PREFER_RECOMPUTE), "CheckpointPolicy.PREFER_RECOMPUTE")
  local fwd, rec = cp.create_selective_checkpoint_contexts(function() return P.MUST_SAVE end)
  T.eq({ fwd.is_recompute, rec.is_recompute }, { false, true })
  T.raises(function() cp.create_selective_checkpoint_contexts(3) end, "policy_fn_or_list must be either a function or a list of ops.")
  T.eq(cp.SelectiveCheckpointContext({ is_recompute = true }).is_recompute, true)
  local a, b = cp.noop_context_fn()
  do local _ <close> = a end
  T.check(b ~= nil)
  local ok, err = pcall(error, "torch.utils.checkpoint: Recomputed values for the following tensors have different metadata", 0)
  T.check(not ok and cp.CheckpointError:matches(err), "CheckpointError matches checkpoint's errors")
  T.check(not cp.CheckpointError:matches("other"))
end)

-- PyTorch's non-reentrant checkpoint records the module's parameters: a first layer (input without
-- grad) still trains, with the gradients of a plain forward; the reentrant one gives an output
-- without grad (PyTorch warns "None of the inputs have requires_grad=True")
T.test("use_reentrant=false: a module's parameters get gradients when the input needs none", function()
  torch.manual_seed(0)
  local net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Dropout(0.3))
  local x = torch.randn(2, 3, 8, 8)
  local state = torch.get_rng_state()
  local y = torch.utils.checkpoint.checkpoint(net, x, { use_reentrant = false })
  T.check(y.requires_grad, "the output requires grad")
  y:pow(2):sum():backward()
  local g = net[0].weight.grad:clone()
  net:zero_grad()
  torch.set_rng_state(state)
  net(x):pow(2):sum():backward()
  T.eq((g - net[0].weight.grad):abs():max():item(), 0.0, "the plain forward's gradients (the same dropout mask)")
  T.eq(torch.utils.checkpoint.checkpoint(net, x, { use_reentrant = true }).requires_grad, false, "reentrant: no grad")
end)
